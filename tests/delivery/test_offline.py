"""The course works without a network: a classroom's Wi-Fi may be down, a hub may be firewalled.

1. ``make test`` runs the suite through ``tools.offline``: in a network namespace that has only
   the loopback interface. Strict nbval executes every notebook there, and every Lab, Voilà,
   hub and browser the tests start runs there too, so a notebook that fetched anything fails
   under nbval. ``test_this_run_has_no_network`` checks, from inside the run, that the
   namespace is real: no interface but loopback, no route, and a connection to a public
   address fails at once. (Without the namespace, as under a plain ``pytest``, it skips,
   saying why; under CI, CI=true, it fails.)
2. Nothing in src/attn or in the notebooks' code fetches from the network at run time: no
   HTTP client calls, no model/data hub downloads, no CDN scripts, no URL literals in code;
   and no notebook or module starts a process: no shell line (``!cmd``, ``x = !cmd``), no
   magic outside a short allow-list (``ALLOWED_MAGICS``), no subprocess or ``os.system``.
   Notebook cells are read the way the kernel runs them: IPython's own transformer turns
   ``!`` and ``%`` lines into calls of ``get_ipython()`` methods first.
"""
from __future__ import annotations

import ast
import errno
import json
import os
import re
import socket
from pathlib import Path

import pytest

from IPython.core.inputtransformer2 import TransformerManager

from _support import REPO, unavailable

SRC = REPO / "src" / "attn"


def test_this_run_has_no_network():
    if os.environ.get("ATTN_OFFLINE") != "netns":
        unavailable("this run has the network: `make test` runs the suite in a network namespace "
                    "(tools/offline.py), where the notebooks are shown to run offline")
    interfaces = sorted(name for _index, name in socket.if_nameindex())
    assert interfaces == ["lo"], interfaces
    routes = Path("/proc/net/route").read_text().splitlines()[1:]
    assert routes == [], routes  # not even a default route
    # 192.0.2.1 is TEST-NET-1 (RFC 5737), never routed: with no interface but loopback the
    # connection fails at once with "network unreachable", and no packet leaves the machine.
    with pytest.raises(OSError) as failed:
        socket.create_connection(("192.0.2.1", 80), timeout=5)
    assert failed.value.errno == errno.ENETUNREACH, failed.value
    with socket.create_server(("127.0.0.1", 0)) as server:  # loopback is up: servers still work
        socket.create_connection(server.getsockname(), timeout=5).close()


# --- no fetching at run time ----------------------------------------------------------------

# Calls and names that fetch over the network (HTTP clients, model / data hubs, CDNs).
FETCH = re.compile(
    r"urlopen|urllib\.request|urlretrieve|\brequests\.(get|post|Session)|\bhttpx\b|http\.client"
    r"|\baiohttp\b|\bhf_hub|huggingface_hub|from_pretrained|snapshot_download|load_dataset"
    r"|torch\.hub|download_url|\bwget\b|\bcurl\b|\bcdn\b|cdn\.|\bsocket\.",
    re.IGNORECASE,
)
URL = re.compile(r"\b(https?|ftp)://", re.IGNORECASE)
# In HTML / JavaScript outputs: something the browser would load from elsewhere.
REMOTE_LOAD = re.compile(r"""(src|href)\s*=\s*["']?(https?:)?//|import\s*\(?\s*["']https?://""",
                         re.IGNORECASE)


# Magics a notebook may use: (name, what may follow it, why it is safe). Every other magic
# (``%pip``, ``%%bash``, ``%sx``, ``%load URL``, ``%run``, ...) fails the check.
ALLOWED_MAGICS = [
    ("matplotlib", r"inline", "picks the inline backend: figures become PNG outputs"),
    ("config", r"InlineBackend\.\w+ *=.*", "a setting of that backend (e.g. no tight bbox)"),
]
# Calls that start a process, by their dotted name, and modules that exist to start them.
PROCESS_CALL = re.compile(r"^(os\.(system|popen|exec\w*|spawn\w*|posix_spawn\w*|fork\w*)"
                          r"|subprocess\.\w+|pty\.spawn|asyncio\.create_subprocess_\w+"
                          r"|get_ipython\(\)\.(system\w*|getoutput))$")
PROCESS_MODULES = {"subprocess", "pty"}


def _as_the_kernel_runs_it(source: str) -> str:
    """A cell's source as IPython runs it: ``!cmd`` -> ``get_ipython().system('cmd')``,
    ``%magic args`` -> ``get_ipython().run_line_magic('magic', 'args')``, ``%%magic`` ->
    ``run_cell_magic``."""
    return TransformerManager().transform_cell(source)


def _dotted(node: ast.AST) -> str:
    """``os.system`` for the node of ``os.system``; ``get_ipython().system`` likewise."""
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{_dotted(node.func)}()"
    return node.id if isinstance(node, ast.Name) else "?"


def _processes_started(source: str) -> list[str]:
    """Shell lines, magics not in ``ALLOWED_MAGICS``, and process-starting calls or imports."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:  # nothing unparsed may slip through
        return [f"not Python even after IPython's transformer: {e}"]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in PROCESS_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PROCESS_MODULES | {"os"}:
            names = [a.name for a in node.names]
            if node.module != "os" or any(PROCESS_CALL.match(f"os.{n}") for n in names):
                found.append(f"from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if PROCESS_CALL.match(name):
                found.append(f"{name}({', '.join(map(repr, args))})")
            elif name in ("get_ipython().run_line_magic", "get_ipython().run_cell_magic"):
                magic, rest = (args + ["", ""])[:2]
                if not any(magic == m and re.fullmatch(pattern, rest.strip())
                           for m, pattern, _why in ALLOWED_MAGICS):
                    found.append(f"magic %{magic} {rest}".strip())
    return found


def _urls_in_code(source: str) -> list[str]:
    """URL string literals in code, not counting docstrings (links for the reader)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # not plain Python: any URL outside a comment counts
        return [line for line in source.splitlines() if URL.search(line.split("#", 1)[0])]
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings and URL.search(n.value)]


def _without_comments_and_docstrings(source: str) -> str:
    """Source with comments dropped, docstrings blanked (what runs)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # not plain Python (e.g. `obj?`): check every non-comment line
        return "\n".join(line.split("#", 1)[0] for line in source.splitlines())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body[0].value.value = ""
    return ast.unparse(tree)


def _notebook_code(folder: Path) -> dict[str, str]:
    """The code cells of every notebook under ``folder``, as the kernel runs them."""
    code = {}
    for nb_path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in nb_path.parts:
            continue
        cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells, 1):
            if cell["cell_type"] == "code":
                code[f"{nb_path.relative_to(folder.parent)} cell {i}"] = _as_the_kernel_runs_it(
                    "".join(cell["source"]))
    return code


def _runtime_code() -> dict[str, str]:
    """Every piece of code that runs: src/attn/**/*.py and the notebooks' code cells."""
    code = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*.py"))}
    return code | _notebook_code(REPO / "notebooks")


def _network_or_process(code: dict[str, str]) -> list[str]:
    """What in ``code`` (where -> source) may fetch from the network or start a process."""
    problems = []
    for where, source in code.items():
        executable = _without_comments_and_docstrings(source)
        for m in FETCH.finditer(executable):
            line = executable[: m.start()].count("\n") + 1
            problems.append(f"{where}: {m.group(0)!r} (line {line} of the code without comments)")
        problems += [f"{where}: URL in code {u!r}" for u in _urls_in_code(source)]
        problems += [f"{where}: starts a process: {p}" for p in _processes_started(source)]
    return problems


def test_there_is_code_to_check():
    code = _runtime_code()
    assert any(k.startswith("src/attn/") for k in code)
    assert (SRC / "__init__.py").exists()


def test_no_code_fetches_from_the_network_or_starts_a_process():
    problems = _network_or_process(_runtime_code())
    assert problems == [], ("code that may fetch from the network or start a process at run "
                            "time:\n" + "\n".join(problems))


def test_a_shell_line_in_a_notebook_is_caught(tmp_path):
    """A copy of a real notebook passes; with a ``!curl`` cell added, it fails on that cell."""
    src = sorted((REPO / "notebooks").glob("*.ipynb"))[0]
    folder = tmp_path / "notebooks"
    folder.mkdir()
    copy = folder / src.name
    nb = json.loads(src.read_text(encoding="utf-8"))
    copy.write_text(json.dumps(nb), encoding="utf-8")
    assert _network_or_process(_notebook_code(folder)) == []
    nb["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {},
                        "outputs": [], "source": ["!curl https://example.com"]})
    copy.write_text(json.dumps(nb), encoding="utf-8")
    where = f"notebooks/{src.name} cell {len(nb['cells'])}"
    assert _network_or_process(_notebook_code(folder)) == [
        f"{where}: 'curl' (line 1 of the code without comments)",
        f"{where}: URL in code 'curl https://example.com'",
        f"{where}: starts a process: get_ipython().system('curl https://example.com')",
    ]


@pytest.mark.parametrize("snippet, caught", [
    ("import urllib.request\nurllib.request.urlopen('x')", True),
    ("from transformers import AutoModel\nAutoModel.from_pretrained('bert')", True),
    ("x = 'https://example.org/data.csv'", True),
    ("def f():\n    '''See https://arxiv.org/abs/1706.03762.'''\n    return 1  # https://x.org", False),
    ("import torch\ntorch.softmax(torch.zeros(3), 0)", False),
    ("!ls", True),
    ("files = !ls", True),
    ("for i in range(2):\n    !echo {i}", True),
    ("%%bash\necho hi", True),
    ("%pip install requests", True),
    ("%sx ls", True),
    ("%run other.py", True),
    ("import subprocess\nsubprocess.run(['ls'])", True),
    ("import os\nos.system('ls')", True),
    ("from os import popen", True),
    ("from os import path", False),
    ("%matplotlib inline", False),
    ("%matplotlib widget", True),
    ("%config InlineBackend.print_figure_kwargs = {'bbox_inches': None}", False),
    ("%config Application.log_level = 10", True),
])
def test_the_checks_see_fetching_and_process_starting_code(snippet, caught):
    assert bool(_network_or_process({"cell": _as_the_kernel_runs_it(snippet)})) == caught
