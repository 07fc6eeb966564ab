"""Each notebook's explorers, read from the notebook's own cells (no cell is run).

An explorer cell is a code cell that

- carries the cell tag ``nbval-ignore-output`` (``tools.execute.IGNORE_TAG``),
- ends in one call of a course explorer, a function whose name ends in ``_explorer`` and that
  the notebook imports from ``attn`` (``from attn.widgets.scaling import scaling_explorer``),
- and, once executed, shows that explorer (its saved output is an explorer's widget view:
  ``tools.site.explorer_outputs``).

The call is the one source of the explorer's settings: the website (tools/live_states.py)
builds each explorer from the call it finds here, and app mode (tools/app.py) serves the
explorer cells. An argument written as a literal (``d_k=16``, ``"causal"``, ``(1, 2)``) is
taken as written; any other (``seconds=seconds``, 08's trained runs) is ``Computed``: the
notebook computes it in its own cells, and whoever builds the explorer without running the
notebook must supply it (tools/live_states.py's ``PROVIDERS``).

A cell that breaks these rules raises ``ExplorerCellError`` naming the notebook, the cell and
what to write.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from tools.execute import IGNORE_TAG, output_ignored

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "attn"
EXPLORER_SUFFIX = "_explorer"


class ExplorerCellError(ValueError):
    """An explorer cell that cannot be read as one call of a course explorer."""


@dataclass(frozen=True)
class Computed:
    """An argument the notebook computes in its cells: its source as written (``seconds``,
    ``{**shipped, ...}``)."""

    source: str


@dataclass(frozen=True)
class ExplorerCell:
    """One explorer cell of a notebook.

    Attributes:
        notebook: the notebook's name without .ipynb (``"02_qkv"``).
        cell: the cell's index in the notebook's list of cells (0 = the first cell).
        function: the explorer called (``"scaling_explorer"``).
        module: the module the notebook imports it from (``"attn.widgets.scaling"``).
        args: the positional arguments: literal values, or ``Computed``.
        kwargs: (keyword, value) pairs in the call's order: literal values, or ``Computed``.
        call: the call as written, normalised by ``ast.unparse`` (``"scaling_explorer(d_k=16)"``).
        heading: the text of the markdown cell just above it (``""`` if there is none).
    """

    notebook: str
    cell: int
    function: str
    module: str
    args: tuple = ()
    kwargs: tuple[tuple[str, object], ...] = ()
    call: str = ""
    heading: str = ""

    @property
    def where(self) -> str:
        return f"{self.notebook}.ipynb, cell {self.cell} (`{self.call}`)"


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def parse(source: str) -> ast.Module | None:
    """A code cell's code as Python (its IPython magics, ``%config ...``, as the calls IPython
    makes of them); None if it is not Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None


def imported_names(notebook: dict) -> dict[str, str]:
    """name -> module, for every ``from attn... import name`` of the notebook's code cells."""
    names = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(parse(_source(cell)) or ast.Module(body=[], type_ignores=[])):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "attn":
                names.update({alias.asname or alias.name: node.module for alias in node.names})
    return names


def _last_call(source: str) -> ast.Call | None:
    """The call a cell's code ends with, if its last statement is one expression that is a
    call of a plain name (``scaling_explorer(...)``)."""
    body = (parse(source) or ast.Module(body=[], type_ignores=[])).body
    if body and isinstance(body[-1], ast.Expr) and isinstance(body[-1].value, ast.Call) \
            and isinstance(body[-1].value.func, ast.Name):
        return body[-1].value
    return None


def _value(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return Computed(ast.unparse(node))


def _heading(cells: list[dict], index: int) -> str:
    before = cells[index - 1] if index else None
    return _source(before).strip() if before and before["cell_type"] == "markdown" else ""


def explorer_cells(path: Path) -> list[ExplorerCell]:
    """The explorer cells of the notebook at ``path``, in order.

    Raises:
        ExplorerCellError: a cell shows an explorer but does not end in a call of a course
            explorer the notebook imports from ``attn`` (or lacks the tag); a cell that ends
            in such a call but shows no explorer (not executed since it was written).
    """
    from tools.site import explorer_outputs

    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    name = Path(path).stem
    cells = notebook["cells"]
    showing = {i for i, _j in explorer_outputs(notebook)}
    imported = imported_names(notebook)
    found = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        call = _last_call(_source(cell))
        calls_explorer = call is not None and call.func.id.endswith(EXPLORER_SUFFIX)
        if not calls_explorer and i not in showing:
            continue
        last_line = (_source(cell).strip().splitlines() or [""])[-1]
        where = f"{name}.ipynb, cell {i} (`{ast.unparse(call) if call is not None else last_line}`)"
        if not calls_explorer:
            raise ExplorerCellError(
                f"{where}: the cell shows an explorer, but its code does not end in a call of one "
                f"(`something_explorer(...)`). Make the explorer call the cell's last line, e.g. "
                f"`scaling_explorer(d_k=16)`, so that the website and app mode can build it.")
        if i not in showing:
            raise ExplorerCellError(
                f"{where}: the cell calls an explorer but its saved output shows none. Re-execute "
                f"the notebook: python -m tools.execute {name.removesuffix('_solutions')} (CONTRIBUTING.md, "
                f"'Re-executing notebooks'); a solutions notebook shows no explorer.")
        function = call.func.id
        if function not in imported:
            raise ExplorerCellError(
                f"{where}: no cell of the notebook imports {function} from attn. Import it in the "
                f"first code cell, e.g. `from attn.widgets.scaling import scaling_explorer`.")
        if not output_ignored(cell):
            raise ExplorerCellError(f"{where}: an explorer cell needs the cell tag {IGNORE_TAG!r} "
                                    f"(its picture is not compared by nbval).")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            raise ExplorerCellError(f"{where}: write each argument of the explorer out (no *args or **kwargs).")
        found.append(ExplorerCell(
            notebook=name, cell=i, function=function, module=imported[function],
            args=tuple(_value(a) for a in call.args),
            kwargs=tuple((k.arg, _value(k.value)) for k in call.keywords),
            call=ast.unparse(call), heading=_heading(cells, i)))
    return found


# --- the explorer a call names, read from the package's source (nothing is imported) ----------

def module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "attn":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported_module(package: str, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` in ``package`` reads from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    return ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))


def explorer_signature(module: str, function: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Where ``function``, imported from ``module``, is defined (followed through a package's
    ``from .tiny import ...``), and its positional and keyword-only parameters, read from the
    source (nothing is imported).

    Raises:
        ExplorerCellError: no such function in ``attn``.
    """
    path = module_file(module)
    tree = ast.parse(path.read_text(encoding="utf-8")) if path else ast.Module(body=[], type_ignores=[])
    package = module if path and path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            a = node.args
            return module, tuple(x.arg for x in a.posonlyargs + a.args), tuple(x.arg for x in a.kwonlyargs)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == function:
                    return explorer_signature(imported_module(package, node), alias.name)
    raise ExplorerCellError(f"{module}: no function {function} in src/attn (the notebook imports it from there)")
