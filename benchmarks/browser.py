"""Control latency in a real browser: key press (or click) to the new picture on screen.

Uses the machinery of the browser test (``tests/_lab.py``): a private JupyterLab serving a
copy of the notebooks, Debian's Chromium driven by Playwright. For every notebook that shows
widgets: open it, Run All, then move each control as a user would (slider: arrow key, then
End / Home; drop-down: next option; toggle, checkbox: click) and read the probe's time from
the first input event to the frame after the new picture was decoded (to the readout's change
when the picture does not change). Every move waits for the kernel to be idle and the view to
settle before the next, so each figure is one isolated move.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from ._common import machine, median, p95, say, table, write_json

ROOT = Path(__file__).resolve().parent.parent
MOVES = 50  # per control; each waits for the kernel to be idle and the view to settle
SECONDS_PER_MOVE = 5.0  # give up on a control after MOVES * this many seconds


def _lab():
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import _lab  # noqa: PLC0415 - the browser test's machinery, shared

    return _lab


def _with_widgets(folder: Path) -> list[str]:
    names = []
    for nb in sorted(folder.glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        if any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])):
            names.append(nb.name)
    return names


def run(*, quick: bool = False, results=None, moves: int = MOVES) -> dict[str, Any]:
    say("\n== Control latency in the browser (input event -> new picture drawn) ==")
    payload: dict[str, Any] = {"machine": machine(), "rows": [], "skipped": None}
    try:
        lab_mod = _lab()
        reason = lab_mod.browser_unavailable()
    except ImportError as e:
        reason = f"tests/_lab.py not importable: {e}"
    names = _with_widgets(ROOT / "notebooks")
    if quick:
        names, moves = names[:1], 1
    if reason or not names:
        payload["skipped"] = reason or "no notebook shows widgets"
        say(f"  skipped: {payload['skipped']}")
        write_json("browser", payload, **({"results": results} if results else {}))
        return payload
    rows = []
    with lab_mod.running_lab(ROOT / "notebooks") as lab, lab_mod.chromium() as browser:
        for name in names:
            page = browser.new_page(viewport=lab_mod.VIEWPORT)
            try:
                nb = lab_mod.LabNotebook(page, lab, name)
                nb.open()
                run_all_s = nb.run_all()
                for control in nb.controls():
                    if control.disabled:
                        continue
                    lat: list[float] = []
                    error = None
                    t_end = time.monotonic() + moves * SECONDS_PER_MOVE
                    while len(lat) < moves and time.monotonic() < t_end:
                        before = len(lat)
                        try:
                            for mv in control.moves(pixels=False):
                                if mv.latency_s is not None:
                                    lat.append(mv.latency_s)
                        except AssertionError as e:
                            error = str(e).splitlines()[0]
                            break
                        if len(lat) == before:
                            break
                    row = {"notebook": name, "control": f"{control.kind} {control.label!r}",
                           "explorer": control.target.title, "cell": control.cell + 1,
                           "moves": len(lat), "run_all_s": run_all_s}
                    if lat:
                        row.update(median_ms=median(lat) * 1e3, p95_ms=p95(lat) * 1e3)
                    if error:
                        row["error"] = error
                    rows.append(row)
                    say(f"  {name:32s} {row['control'][:28]:28s} "
                        + (f"median {row['median_ms']:6.0f} ms  p95 {row['p95_ms']:6.0f} ms"
                           if lat else row.get("error", "no move")))
            finally:
                page.close()
                lab.shutdown_kernels()
    text = table(["notebook", "control", "moves", "median ms", "p95 ms"],
                 [[r["notebook"].removesuffix(".ipynb"), r["control"], r["moves"],
                   f"{r['median_ms']:.0f}" if "median_ms" in r else "-",
                   f"{r['p95_ms']:.0f}" if "p95_ms" in r else "-"] for r in rows])
    say("\n" + text)
    payload.update(rows=rows, table=text, moves_per_control=moves)
    write_json("browser", payload, **({"results": results} if results else {}))
    return payload
