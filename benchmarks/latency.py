"""Control latency: from a control's new value to the finished redraw, kernel side.

``ctrl.value = x`` (``ctrl.index = i`` for drop-downs and selection sliders: that is what the
browser sends for them) runs the explorer's observers synchronously: the pure function, the
artists' update and the PNG encoding all happen before the assignment returns. So the time
of the assignment is the kernel's share of a move (the browser adds the message round trip
and the decoding of the picture: see ``browser.py``).

Explorers: every builder in ``attn.widgets.EXPLORERS``. Each control is moved back and forth
across its range, one notch at a time (``MOVES`` moves, after two untimed ones), first with the other controls at their
defaults, then (if the explorer has size controls: heads, tokens, length, n) with every size
control at its largest value.
"""
from __future__ import annotations

import re
import time
from typing import Any, Callable

from ._common import machine, median, p95, say, table, write_json

MOVES = 60
SIZE = re.compile(r"(head|token|length|^n$|^seq|d_model)", re.IGNORECASE)
TARGET_MS = 30.0


def builders() -> dict[str, Callable[[], Any]]:
    """name -> no-argument builder of every explorer of the course (``attn.widgets.EXPLORERS``)."""
    from attn.widgets import EXPLORERS

    return dict(EXPLORERS)


def _positions(ctrl: Any) -> tuple[str, list[Any]]:
    """How to move a control ('index' or 'value') and its positions, in order."""
    import ipywidgets as widgets

    if isinstance(ctrl, (widgets.Dropdown, widgets.Select, widgets.SelectionSlider,
                         widgets.ToggleButtons, widgets.RadioButtons)):
        return "index", list(range(len(ctrl.options)))
    if isinstance(ctrl, (widgets.Checkbox, widgets.ToggleButton)):
        return "value", [False, True]
    if isinstance(ctrl, (widgets.IntSlider, widgets.BoundedIntText)):
        lo, hi, step = ctrl.min, ctrl.max, max(1, ctrl.step)
        values = list(range(lo, hi + 1, step))
        if len(values) > 25:  # a long range: 25 evenly spread notches
            values = sorted({values[round(i * (len(values) - 1) / 24)] for i in range(25)})
        return "value", values
    if isinstance(ctrl, (widgets.FloatSlider, widgets.BoundedFloatText)):
        lo, hi = ctrl.min, ctrl.max
        n = 20 if not ctrl.step else min(20, int(round((hi - lo) / ctrl.step)) + 1)
        return "value", [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    if isinstance(ctrl, widgets.Combobox) and len(set(ctrl.options)) >= 2:
        # what a learner does in the browser: pick another of the box's suggestions
        # (new text: a new sentence through the model, new tokens on the axes)
        return "value", list(dict.fromkeys(ctrl.options))
    if isinstance(ctrl, widgets.Text) and not isinstance(ctrl, widgets.Combobox):
        # as the browser benchmark types: a word added, then taken away again
        return "value", [ctrl.value, f"{ctrl.value} again"]
    raise TypeError(f"no way to move a {type(ctrl).__name__}")


def _walk(positions: list[Any], start: Any, n: int) -> list[Any]:
    """n positions, back and forth one notch at a time from ``start``, each != the one before."""
    if len(positions) < 2:
        return []
    i = positions.index(start) if start in positions else 0
    step, out = 1, []
    while len(out) < n:
        if not 0 <= i + step < len(positions):
            step = -step
        i += step
        out.append(positions[i])
    return out


def time_control(ctrl: Any, moves: int = MOVES, top_only: bool = False) -> list[float]:
    """Seconds of each of ``moves`` value changes of ``ctrl`` (observers included)."""
    attr, positions = _positions(ctrl)
    if top_only:
        positions = positions[-2:]
    start = getattr(ctrl, attr)
    path = _walk(positions, start, moves + 2)
    times = []
    for k, x in enumerate(path):
        t0 = time.perf_counter()
        setattr(ctrl, attr, x)
        dt = time.perf_counter() - t0
        if k >= 2:  # the first two warm caches up
            times.append(dt)
    if start in positions:
        setattr(ctrl, attr, start)
    return times


def _set_largest(explorer: Any) -> dict[str, Any]:
    pinned = {}
    for name, ctrl in explorer.controls.items():
        if SIZE.search(name):
            attr, positions = _positions(ctrl)  # read now: options may depend on earlier ones
            setattr(ctrl, attr, positions[-1])
            pinned[name] = ctrl.value
    return pinned


def measure(name: str, build: Callable[[], Any], moves: int = MOVES) -> list[dict[str, Any]]:
    rows = []
    t0 = time.perf_counter()
    explorer = build()
    build_s = time.perf_counter() - t0
    has_size = any(SIZE.search(n) for n in explorer.controls)
    for scenario in ("default", "largest") if has_size else ("default",):
        pinned = _set_largest(explorer) if scenario == "largest" else {}
        for cname, ctrl in explorer.controls.items():
            try:
                times = time_control(ctrl, moves, top_only=bool(pinned) and cname in pinned)
            except TypeError as e:
                rows.append({"explorer": name, "scenario": scenario, "control": cname, "error": str(e)})
                continue
            if not times:
                continue
            rows.append({
                "explorer": name, "scenario": scenario, "control": cname,
                "sizes": pinned or {n: c.value for n, c in explorer.controls.items() if SIZE.search(n)},
                "moves": len(times), "median_ms": median(times) * 1e3, "p95_ms": p95(times) * 1e3,
                "max_ms": max(times) * 1e3, "build_s": build_s,
            })
    explorer.close()
    return rows


def run(*, quick: bool = False, results=None, threads: int | None = None) -> dict[str, Any]:
    import torch

    if threads:
        torch.set_num_threads(threads)
    moves = 5 if quick else MOVES
    say(f"\n== Control latency, kernel side (ctrl.value = x -> redraw done), {moves} moves per control ==")
    rows = []
    for name, build in builders().items():
        if quick and not name.startswith("scaling"):
            continue
        try:
            got = measure(name, build, moves)
        except Exception as e:  # an explorer that fails to build is reported, not fatal
            got = [{"explorer": name, "error": f"{type(e).__name__}: {e}"}]
        for r in got:
            say("  " + (f"{r['explorer']:10s} {r.get('scenario', ''):8s} {r.get('control', ''):12s} "
                        + (f"median {r['median_ms']:6.1f} ms  p95 {r['p95_ms']:6.1f} ms"
                           if "error" not in r else r["error"])))
        rows += got
    trows = [[r["explorer"], r["scenario"], r["control"],
              ", ".join(f"{k}={v}" for k, v in r["sizes"].items()) or "-",
              f"{r['median_ms']:.1f}", f"{r['p95_ms']:.1f}",
              "yes" if r["median_ms"] <= TARGET_MS else "no"]
             for r in rows if "error" not in r]
    text = table(["explorer", "sizes", "control", "size controls", "median ms", "p95 ms",
                  f"≤ {TARGET_MS:.0f} ms"], trows)
    say("\n" + text)
    payload = {"machine": machine(), "threads": threads, "moves_per_control": moves,
               "target_median_ms": TARGET_MS,
               "method": "time.perf_counter around ctrl.value = x (ctrl.index = i for selections)",
               "rows": rows, "table": text}
    name = f"latency_threads{threads}" if threads else "latency"
    write_json(name, payload, **({"results": results} if results else {}))
    return payload
