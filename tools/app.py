"""App mode's page of a lesson: only its explorers, each under its heading (``make app NB=02_qkv``).

    python -m tools.app 02_qkv        # writes build/app/02_qkv.ipynb, prints its path
    python -m tools.app zh/02_qkv     # the Chinese edition: build/app/zh/02_qkv.ipynb

Voilà runs a whole notebook before it shows it, so the whole lesson of 02 took 11-15 s before
its explorer appeared, far down the page. The app page runs only what the explorers need:

- the lesson's title (the first line of its first markdown cell) and its first code cell (its
  imports and ``set_language``);
- for each explorer cell (tools/explorer_cells.py), in order: the markdown cell above it (its
  heading and what to look at), the earlier code cells that compute a name its call uses (07's
  measured ``seconds``, 08's ``shipped`` and ``run``; followed back through the names those
  cells use in turn), then the explorer cell itself.

Each explorer's heading starts with an anchor, ``explorer-1``, ``explorer-2``, ... (``ANCHOR``),
so that a presenter can open the page at one explorer: ``.../02_qkv.ipynb#explorer-1``. The page
is made from the lesson each time (nothing is copied by hand) and holds no outputs: Voilà runs
it. A notebook without an explorer (00) is served as it is: its own path is printed.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

from tools.explorer_cells import ROOT, explorer_cells, parse

NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "build" / "app"
ANCHOR = "explorer-{n}"  # the id of the n-th explorer's heading (1 = the first)


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names the code binds at its top level, names it reads) of a cell's code."""
    tree = parse(source)
    if tree is None:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return bound, read


def needed_cells(cells: list[dict], index: int, given: set[str]) -> list[int]:
    """The code cells before cell ``index`` that compute what it reads, in order: for each name it
    reads that ``given`` does not hold (the first code cell's names), the nearest earlier cell
    that binds it, and, the same way, what that cell reads."""
    bound, read = _names(_source(cells[index]))
    wanted = read - bound - given
    found = []
    for i in range(index - 1, -1, -1):
        if cells[i]["cell_type"] != "code" or not wanted:
            continue
        bound, read = _names(_source(cells[i]))
        if bound & wanted:
            found.append(i)
            wanted = (wanted - bound) | (read - bound - given)
    return sorted(found)


def app_notebook(path: Path) -> dict | None:
    """The app page of the notebook at ``path`` (see the module's docstring); None if it shows
    no explorer."""
    explorers = explorer_cells(path)
    if not explorers:
        return None
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = notebook["cells"]
    first = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    given = _names(_source(cells[first]))[0]
    title = next((_source(c).strip().splitlines()[0] for c in cells
                  if c["cell_type"] == "markdown" and _source(c).startswith("#")), None)
    keep: list[dict] = ([{"cell_type": "markdown", "metadata": {}, "source": title}] if title else []) + [cells[first]]
    taken = {first}
    for n, explorer in enumerate(explorers, start=1):
        anchor = f'<a id="{ANCHOR.format(n=n)}"></a>\n\n'
        heading = explorer.heading or ""
        keep.append({"cell_type": "markdown", "metadata": {}, "source": anchor + heading})
        for i in needed_cells(cells, explorer.cell, given):
            if i not in taken:
                keep.append(cells[i])
                taken.add(i)
        keep.append(cells[explorer.cell])
    for cell in keep:
        cell.pop("id", None)  # nbformat 4.4: ids are optional; copied ones could clash
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    notebook["metadata"].pop("widgets", None)
    return {**notebook, "cells": keep, "nbformat": 4, "nbformat_minor": 4}


def write_app(name: str, out: Path = OUT) -> Path:
    """Write the app page of lesson ``name`` (``02_qkv``, ``zh/02_qkv``) under ``out``; return the
    path to serve (the notebook itself when it shows no explorer).

    Raises:
        ValueError: no such notebook under notebooks/.
    """
    relative = Path(name.removesuffix(".ipynb") + ".ipynb")
    path = NOTEBOOKS / relative
    if not path.is_file():
        raise ValueError(f"NB: expected a notebook of notebooks/ such as 02_qkv or zh/02_qkv, got {name!r}")
    page = app_notebook(path)
    if page is None:
        return path
    target = out / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(page, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", help="02_qkv, or zh/02_qkv for the Chinese edition")
    args = parser.parse_args(argv)
    try:
        print(write_app(args.notebook))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
