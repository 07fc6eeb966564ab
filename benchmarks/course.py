"""Course run time: every notebook under strict nbval, one by one, then the whole course at once.

Each figure is the wall time of ``python -m pytest --nbval <notebook(s)> -q`` in a fresh
process, as a learner or CI runs it: pytest's start, the kernel's start, every cell, the
comparison of every output. The whole course is one pytest run over the course notebooks of
both languages (``notebooks/*.ipynb`` and the Chinese twins ``notebooks/zh/*.ipynb``; the
solutions notebooks are timed one by one, not counted in it), run
``WHOLE_RUNS`` times: its time moved by up to 15 % from one run to the next on this machine
(60-71 s), so the table gives the median and the JSON every run. A baseline notebook that
only imports the usual packages shows the fixed part of each figure.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import machine, median, say, table, write_json

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_TARGET_S = 10.0
COURSE_TARGET_S = 140.0  # both languages (issue 21); English alone was 60 s
WHOLE_RUNS = 3  # whole-course runs; the median is the figure


def _nbval(paths: list[Path], timeout: float) -> dict[str, Any]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider",
           *[str(p) for p in paths]]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - t0, "ok": False, "summary": f"timed out after {timeout} s"}
    seconds = time.perf_counter() - t0
    lines = [line for line in proc.stdout.strip().splitlines() if line.strip()]
    return {"seconds": seconds, "ok": proc.returncode == 0, "summary": lines[-1] if lines else ""}


BASELINE_IMPORTS = """import matplotlib.pyplot as plt
import numpy as np
import torch
import ipywidgets

import attn
print(attn.__version__)"""


def _baseline_notebook(folder: Path) -> Path:
    """A notebook with only the usual imports: the fixed cost every notebook pays."""
    import nbformat

    import attn

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(BASELINE_IMPORTS, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=attn.__version__ + "\n")]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                                 "name": "python3"}
    path = folder / "baseline_imports_only.ipynb"
    nbformat.write(nb, path)
    return path


def run(
    *, quick: bool = False, results=None, notebooks: list[Path] | None = None, whole: bool = True,
    baseline: bool = True,
) -> dict[str, Any]:
    course = notebooks if notebooks is not None else [
        *sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))]
    solutions = [] if notebooks is not None else [
        *sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb")),
        *sorted((ROOT / "notebooks" / "zh" / "solutions").glob("*.ipynb"))]
    if quick:  # one notebook, no solutions, no whole-course run
        course, solutions = course[:1], []
    say(f"\n== Course run time under strict nbval ({len(course)} notebooks, "
        f"{len(solutions)} solutions) ==")
    rows = []
    base = None
    if baseline:
        with tempfile.TemporaryDirectory() as tmp:
            base = {"notebook": "(baseline: imports only)",
                    **_nbval([_baseline_notebook(Path(tmp))], timeout=600)}
        say(f"  {base['notebook']:55s} {base['seconds']:6.1f} s  {base['summary']}")
    for nb in course + solutions:
        shown = nb.relative_to(ROOT) if nb.is_relative_to(ROOT) else nb.name
        r = {"notebook": str(shown), **_nbval([nb], timeout=600),
             "size_kib": nb.stat().st_size / 1024}
        rows.append(r)
        say(f"  {r['notebook']:55s} {r['seconds']:6.1f} s  {r['summary']}")
    runs = [_nbval(course, timeout=1800) for _ in range(WHOLE_RUNS)] if whole and course and not quick else []
    for r in runs:
        say(f"  {'whole course (one pytest run)':55s} {r['seconds']:6.1f} s  {r['summary']}")
    whole = {"seconds": median([r["seconds"] for r in runs]), "runs_s": [r["seconds"] for r in runs],
             "ok": all(r["ok"] for r in runs), "summary": runs[-1]["summary"]} if runs else None
    trows = []
    if base:
        trows.append([base["notebook"], f"{base['seconds']:.1f}", "", "", "pass" if base["ok"] else "FAIL"])
    trows += [[r["notebook"], f"{r['seconds']:.1f}", f"{r['size_kib']:.0f}",
              "yes" if r["seconds"] <= NOTEBOOK_TARGET_S else "no", "pass" if r["ok"] else "FAIL"]
             for r in rows]
    if whole:
        spread = f"{min(whole['runs_s']):.1f}–{max(whole['runs_s']):.1f}"
        languages = "both languages, " if any("zh" in p.parts for p in course) else ""
        trows.append([f"whole course ({languages}{len(course)} notebooks), median of {len(runs)} runs ({spread} s)",
                      f"{whole['seconds']:.1f}", "",
                      "yes" if whole["seconds"] <= COURSE_TARGET_S else "no",
                      "pass" if whole["ok"] else "FAIL"])
    target = f"≤ {NOTEBOOK_TARGET_S:.0f} s (course ≤ {COURSE_TARGET_S:.0f} s)"
    text = table(["notebook", "seconds", "KiB", target, "nbval"], trows)
    say("\n" + text)
    payload = {"machine": machine(), "command": "python -m pytest --nbval -q <notebook>",
               "baseline": base, "notebooks": rows, "course": whole, "table": text,
               "targets_s": {"notebook": NOTEBOOK_TARGET_S, "course": COURSE_TARGET_S}}
    write_json("course", payload, **({"results": results} if results else {}))
    return payload
