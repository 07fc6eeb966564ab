"""Re-execute notebooks so that their stored files change only where their results changed.

    python -m tools.execute 02_qkv                  # the lesson, its Chinese twin and both solutions
    python -m tools.execute 02_qkv 06_visualization
    python -m tools.execute notebooks/zh/02_qkv.ipynb   # one file
    python -m tools.execute --all                   # every notebook of the course

A notebook is run top to bottom in a fresh kernel, in its own folder, with one OpenMP thread
(as the tests run it), and saved with its outputs. Three things that ``jupyter nbconvert
--execute`` would change on every run, whatever the code did, are left out, so that a two-line
edit is a small diff a reviewer can read:

- the times at which each cell started and finished (``metadata.execution``);
- the ids of the widgets' models, new random ones on every run: each is renamed by its place in
  the notebook (``widget_order``: the explorers in the order the cells show them, then the models
  each refers to), the same on every run (``stable_widget_id``);
- a cell's printed text split into several outputs by when it arrived: consecutive outputs of
  one stream are joined.

nbval (``make test``) checks that the stored outputs are what the code prints; the stored
file's form is checked by tests/notebooks/test_notebooks.py (``test_stored_in_stable_form``).

A cell whose output nbval does not compare (an explorer, a timing, the versions) carries the
cell tag ``nbval-ignore-output`` (``IGNORE_TAG``): a tag, not a comment, so that the learner
never reads test plumbing in the cell.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: A reference from one widget model to another inside the saved state.
MODEL_REFERENCE = re.compile(r"IPY_MODEL_([0-9a-f]{32})")

#: The cell tag that tells nbval not to compare a cell's output (nbval's own name for it).
IGNORE_TAG = "nbval-ignore-output"


def output_ignored(cell: dict) -> bool:
    """Whether nbval leaves this cell's output uncompared: the cell carries ``IGNORE_TAG``."""
    return IGNORE_TAG in cell.get("metadata", {}).get("tags", [])


def lesson_files(name: str) -> list[Path]:
    """The files of lesson ``name`` (``02_qkv``) that exist: the lesson, its Chinese twin, and
    the solutions of both."""
    stem = name.removesuffix(".ipynb")
    candidates = [NOTEBOOKS / f"{stem}.ipynb", NOTEBOOKS / "zh" / f"{stem}.ipynb",
                  NOTEBOOKS / "solutions" / f"{stem}_solutions.ipynb",
                  NOTEBOOKS / "zh" / "solutions" / f"{stem}_solutions.ipynb"]
    found = [p for p in candidates if p.exists()]
    if not found:
        known = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
        raise ValueError(f"lesson: expected one of {known}, got {name!r}")
    return found


def all_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.rglob("[0-9][0-9]_*.ipynb"))


def widget_order(nb: nbformat.NotebookNode) -> list[str]:
    """The ids of the notebook's saved widget models in an order that does not depend on the run:
    from each widget a cell shows, in the order of the cells, every model it refers to, depth
    first; then the models no output shows, by their content."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    order: list[str] = []

    def visit(model: str) -> None:
        if model in state and model not in order:
            order.append(model)
            for ref in MODEL_REFERENCE.findall(json.dumps(state[model], sort_keys=True)):
                visit(ref)

    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if WIDGET_VIEW in out.get("data", {}):
                visit(out["data"][WIDGET_VIEW]["model_id"])
    content = {m: MODEL_REFERENCE.sub("", json.dumps(state[m], sort_keys=True)) for m in state}
    for model in sorted(set(state) - set(order), key=content.__getitem__):
        visit(model)
    return order


def stable_widget_id(path: Path, number: int) -> str:
    """The id of the ``number``-th widget model of ``widget_order``: 32 hex digits, as a random
    id would be, but the same on every run (a hash of the notebook's path and the number)."""
    relative = path.resolve().relative_to(NOTEBOOKS).as_posix()
    return hashlib.sha256(f"{relative}:{number}".encode()).hexdigest()[:32]


def joined_streams(outputs: list) -> list:
    """``outputs`` with each run of consecutive outputs of one stream joined into one."""
    joined: list = []
    for out in outputs:
        last = joined[-1] if joined else None
        if (out.get("output_type") == "stream" and last is not None
                and last.get("output_type") == "stream" and last.get("name") == out.get("name")):
            last["text"] = "".join(last["text"]) + "".join(out["text"])
        else:
            joined.append(out)
    return joined


def stable_form(nb: nbformat.NotebookNode, path: Path) -> str:
    """The notebook as it is stored: no cell timings, joined streams, stable widget ids."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
    text = nbformat.writes(nb) + "\n"
    for number, old in enumerate(widget_order(nb)):
        text = text.replace(old, stable_widget_id(path, number))
    return nbformat.writes(nbformat.reads(text, as_version=4)) + "\n"  # the state's keys sorted again


def execute(path: Path) -> tuple[Path, float, bool]:
    """Run the notebook at ``path`` and store it in stable form. Returns (path, seconds, changed)."""
    from nbclient import NotebookClient

    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    # the kernel's log at ERROR: its warning that the local connection is not encrypted is noise here
    NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                   extra_arguments=["--IPKernelApp.log_level=ERROR"],
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    text = stable_form(nb, path)
    changed = text != path.read_text(encoding="utf-8")
    if changed:
        path.write_text(text, encoding="utf-8")
    return path, time.perf_counter() - start, changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.execute", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="lessons (02_qkv) or notebook files")
    parser.add_argument("--all", action="store_true", help="every notebook of the course")
    parser.add_argument("--workers", type=int, default=2, help="notebooks run at once (default 2)")
    args = parser.parse_args(argv)
    if args.all == bool(args.names):
        parser.error("name the lessons or files to run, or give --all")
    paths: list[Path] = []
    for name in args.names:
        paths += [Path(name).resolve()] if name.endswith(".ipynb") else lesson_files(name)
    paths = all_notebooks() if args.all else paths
    missing = [p for p in paths if not p.exists()]
    if missing:
        parser.error(f"no such notebook: {', '.join(map(str, missing))}")
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for path, future in [(p, pool.submit(execute, p)) for p in paths]:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            try:
                _, seconds, changed = future.result()
            except Exception as err:  # a cell raised: say which notebook, go on with the others
                failed += 1
                print(f"{shown}: FAILED\n{err}", file=sys.stderr)
                continue
            print(f"{shown}: {seconds:.0f} s, {'stored' if changed else 'stored already: the same file'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
