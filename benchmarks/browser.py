"""Control latency in a real browser: input event to the new picture on screen.

The machinery is the browser test's (``tools.lab``): a private JupyterLab serving a copy
of the notebooks, Debian's Chromium driven by Playwright. For every notebook that shows
widgets: open it, Run All, then move each control of each explorer as a user would (slider:
arrow key, then End / Home; drop-down: next option; toggle, check box: click; text box: type,
then Enter) and read the probe's time from the first input event (for a text box: Enter) to
the first frame after the explorer's new picture was decoded. Every move waits for the kernel
to be idle and the picture to settle before the next, so each figure is one isolated move.
After a control's moves, every control of its explorer goes back to the notebook's setting.
"""
from __future__ import annotations

import time
from typing import Any

from ._common import machine, median, p95, say, table, write_json
from tools.lab import (LAUNCH_ARGS, VIEWPORT, Notebook, browser_unavailable, notebooks_folder, running_lab,
                  shows_widgets)

MOVES = 50  # per control
SECONDS_PER_MOVE = 5.0  # give up on a control after MOVES * this many seconds
TARGET_MS = 100.0


def _with_widgets(folder) -> list[str]:
    return [p.name for p in sorted(folder.glob("*.ipynb")) if shows_widgets(p)]


def measure_control(control, moves: int) -> tuple[list[float], str | None]:
    """Latencies (s) of up to ``moves`` moves of ``control``; an error text if one failed."""
    lat: list[float] = []
    t_end = time.monotonic() + moves * SECONDS_PER_MOVE
    while len(lat) < moves and time.monotonic() < t_end:
        before = len(lat)
        for mv in control.moves(timeout=10):
            if not mv.picture_changed or mv.latency_s is None:
                return lat, f"after {mv.action}, no new picture"
            lat.append(mv.latency_s)
        if len(lat) == before:
            break
    return lat[:moves], None


def run(*, quick: bool = False, results=None, moves: int = MOVES,
        notebooks: list[str] | None = None) -> dict[str, Any]:
    say("\n== Control latency in the browser (input event -> new picture drawn) ==")
    payload: dict[str, Any] = {"machine": machine(), "rows": [], "skipped": None,
                               "target_median_ms": TARGET_MS}
    folder = notebooks_folder()
    names = notebooks or _with_widgets(folder)
    if quick:
        names, moves = names[:1], 1
    reason = browser_unavailable() or (None if names else "no notebook shows widgets")
    if reason:
        payload["skipped"] = reason
        say(f"  skipped: {reason}")
        write_json("browser", payload, **({"results": results} if results else {}))
        return payload
    from playwright.sync_api import sync_playwright

    rows = []
    with running_lab(folder) as lab, sync_playwright() as pw:
        browser = pw.chromium.launch(**LAUNCH_ARGS)
        for name in names:
            page = browser.new_page(viewport=VIEWPORT)
            try:
                nb = Notebook(page, lab, name)
                nb.open(log_console=False)  # as a learner sees the notebook
                run_all_s = nb.run_all()
                for explorer in nb.explorers()[0]:
                    live = [c for c in explorer.controls if not c.disabled]
                    start = [(c, c.value()) for c in live]
                    for control in live:
                        lat, error = measure_control(control, moves)
                        for other, value in sorted(start, key=lambda cv: cv[0] is not control):
                            other.restore(value)  # the next control moves from the defaults
                        row = {"notebook": name, "control": f"{control.kind} {control.label!r}",
                               "explorer": explorer.title, "moves": len(lat), "run_all_s": run_all_s}
                        if lat:
                            row.update(median_ms=median(lat) * 1e3, p95_ms=p95(lat) * 1e3)
                        if error:
                            row["error"] = error
                        rows.append(row)
                        say(f"  {name:32s} {row['control'][:28]:28s} "
                            + (f"median {row['median_ms']:6.0f} ms  p95 {row['p95_ms']:6.0f} ms"
                               if lat else "") + (f"  {error}" if error else ""))
            finally:
                page.close()
                lab.shutdown_kernels()
        browser.close()
    text = table(["notebook", "control", "moves", "median ms", "p95 ms", f"≤ {TARGET_MS:.0f} ms"],
                 [[r["notebook"].removesuffix(".ipynb"), r["control"], r["moves"],
                   f"{r['median_ms']:.0f}" if "median_ms" in r else "-",
                   f"{r['p95_ms']:.0f}" if "p95_ms" in r else "-",
                   ("yes" if r["median_ms"] <= TARGET_MS else "no") if "median_ms" in r else "-"]
                  for r in rows])
    say("\n" + text)
    payload.update(rows=rows, table=text, moves_per_control=moves,
                   method="tools.lab probe: first input event (Enter for a text box) -> "
                          "first frame after the explorer's new picture was decoded")
    write_json("browser", payload, **({"results": results} if results else {}))
    return payload


if __name__ == "__main__":  # python -m benchmarks.browser [NOTEBOOK ...] [--moves N]
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks.browser", description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="*", help="notebook file names (default: all with widgets)")
    p.add_argument("--moves", type=int, default=MOVES)
    p.add_argument("--results", default=None, help="folder for browser.json (default: benchmarks/results)")
    a = p.parse_args()
    from pathlib import Path

    run(moves=a.moves, notebooks=a.notebooks or None, results=Path(a.results) if a.results else None)
