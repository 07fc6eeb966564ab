"""What attention costs as the sequence grows: the explorer of notebook 07.

Two controls: the sequence length n and the block size b of the blockwise method. Three
panels: measured time and measured peak memory against n on log-log axes (a line of slope
2 for reference), and the n x n score matrix with the n x b block that the blockwise method
holds at once. The curves are measured once, when the explorer is built (or passed in);
moving a control only looks numbers up (``efficiency_view``) and moves markers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import ipywidgets as widgets
from matplotlib.patches import Rectangle

from .._checks import check_positive_int
from ..efficiency import (STYLE, AttentionCost, attention_cost, fit_slope, format_bytes, loglog_curves,
                          memory_curve, time_curve)
from ..plotting import new_figure
from ._base import Explorer

__all__ = ["LENGTHS", "BLOCK_SIZES", "EfficiencyView", "efficiency_view", "efficiency_explorer"]

LENGTHS: tuple[int, ...] = (64, 128, 256, 512, 1024)
BLOCK_SIZES: tuple[int, ...] = (16, 32, 64, 128, 256, 512)
_METHODS = ("naive", "blockwise", "sdpa")
_LABELS = {**{m: STYLE[m][0] for m in _METHODS}, "blockwise": "blockwise (measured with b = 128)"}


@dataclass(frozen=True)
class EfficiencyView:
    """The numbers shown for one (n, b)."""

    n: int
    block_size: int
    cost: AttentionCost  # exact counts for one head, d_k = 64, float32
    seconds: dict[str, float]  # measured, per method
    peak_bytes: dict[str, int]  # measured with TensorMemoryMeter, per method
    blocks: int  # key blocks per pass: ceil(n / b)
    block_bytes: int  # one block of scores, n x min(b, n) float32
    time_slope: float  # fitted over all lengths, naive method
    memory_slope: float  # fitted over all lengths, naive method


def _check_curves(name: str, curves: object, lengths: Sequence[int]) -> Mapping[str, Sequence[float]]:
    if not isinstance(curves, Mapping) or any(m not in curves for m in _METHODS):
        raise TypeError(f"{name}: expected a dict with keys {list(_METHODS)}, got {curves!r}")
    for m in _METHODS:
        if len(curves[m]) != len(lengths):
            raise ValueError(f"{name}: expected {len(lengths)} values per method (one per length), "
                             f"got {len(curves[m])} for {m!r}")
    return curves


def efficiency_view(
    n: int, block_size: int, *, seconds: Mapping[str, Sequence[float]],
    peak_bytes: Mapping[str, Sequence[int]], lengths: Sequence[int] = LENGTHS, d_k: int = 64,
) -> EfficiencyView:
    """Look up the measured curves at length n and count what a block of size b holds.

    Args:
        n: a length from ``lengths``.
        block_size: keys per block, b >= 1.
        seconds, peak_bytes: method -> one value per length (``time_curve``, ``memory_curve``).
        lengths: the lengths the curves were measured at.
    """
    check_positive_int("n", n)
    check_positive_int("block_size", block_size)
    lengths = list(lengths)
    if n not in lengths:
        raise ValueError(f"n: expected one of the measured lengths {lengths}, got {n}")
    _check_curves("seconds", seconds, lengths)
    _check_curves("peak_bytes", peak_bytes, lengths)
    i = lengths.index(n)
    return EfficiencyView(
        n=n, block_size=block_size, cost=attention_cost(n, d_k=d_k),
        seconds={m: float(seconds[m][i]) for m in _METHODS},
        peak_bytes={m: int(peak_bytes[m][i]) for m in _METHODS},
        blocks=math.ceil(n / block_size),
        block_bytes=n * min(block_size, n) * 4,
        time_slope=fit_slope(lengths, seconds["naive"]),
        memory_slope=fit_slope(lengths, peak_bytes["naive"]),
    )


def _readout(v: EfficiencyView) -> str:
    rows = "".join(
        f"<tr><td>{_LABELS[m]}</td><td>{v.seconds[m] * 1e3:.2f} ms</td>"
        f"<td>{v.seconds[m] / v.seconds['sdpa']:.1f}×</td><td>{format_bytes(v.peak_bytes[m])}</td></tr>"
        for m in _METHODS
    )
    return (
        f"<p>n = {v.n}: Q Kᵀ and weights·V take {v.cost.multiply_adds:,} multiply-adds; "
        f"the n×n float32 weights take {format_bytes(v.cost.score_bytes)}. "
        f"Blockwise with b = {v.block_size}: {v.blocks} block(s) of {format_bytes(v.block_bytes)} "
        f"each, one at a time.</p>"
        "<table><tr><th>method</th><th>time (measured)</th><th>vs SDPA</th><th>peak tensor memory</th></tr>"
        f"{rows}</table>"
        f"<p>Fitted slopes on log-log axes (naive): time {v.time_slope:.2f}, memory {v.memory_slope:.2f}.</p>"
    )


def efficiency_explorer(
    n: int = 512, block_size: int = 128, *,
    seconds: Mapping[str, Sequence[float]] | None = None,
    peak_bytes: Mapping[str, Sequence[int]] | None = None,
    lengths: Sequence[int] = LENGTHS,
) -> Explorer:
    """Sliders for n and the block size b; time and memory against n; the block held at once.

    Args:
        n, block_size: the controls' starting values.
        seconds, peak_bytes: curves from ``time_curve(lengths)`` / ``memory_curve(lengths)``
            (one head, d_k = 64); measured here when None (about a second).
        lengths: the lengths of the curves and of the n slider.
    """
    lengths = list(lengths)
    if seconds is None:
        seconds = time_curve(lengths, methods=_METHODS, repeats=3)
    if peak_bytes is None:
        peak_bytes = memory_curve(lengths, methods=_METHODS)
    efficiency_view(lengths[0], block_size, seconds=seconds, peak_bytes=peak_bytes, lengths=lengths)

    fig = new_figure(10, 3, dpi=72)
    ax_t, ax_m, ax_b = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 0.8]})
    markers = []
    for ax, curves, unit, title in ((ax_t, seconds, 1e3, "time per call (ms)"),
                                    (ax_m, peak_bytes, 2.0**-20, "peak tensor memory (MiB)")):
        loglog_curves(ax, lengths, {m: curves[m] for m in _METHODS}, unit=unit, title=title)
        row = [ax.plot([lengths[0]], [1], "s", ms=8, mfc="none", color=STYLE[m][1])[0] for m in _METHODS]
        markers.append((curves, unit, row))
    ax_t.legend(fontsize=7, loc="upper left")
    ax_b.set_xlim(0, 1)
    ax_b.set_ylim(1, 0)
    ax_b.set_aspect("equal")
    ax_b.set_xticks([])
    ax_b.set_yticks([])
    ax_b.set_xlabel("keys →")
    ax_b.set_ylabel("← queries")
    # Light against dark, not red against green: readable without colour vision.
    ax_b.add_patch(Rectangle((0, 0), 1, 1, color="0.85"))
    strip = ax_b.add_patch(Rectangle((0, 0), 1, 1, color="tab:blue"))
    ax_b.set_title("held at once: n×n weights (light)\nor one n×b block (dark)", fontsize=10)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.16, top=0.86, wspace=0.28)  # fixed: quick

    def update(n: int, block_size: int) -> tuple[EfficiencyView, str]:
        v = efficiency_view(n, block_size, seconds=seconds, peak_bytes=peak_bytes, lengths=lengths)
        for curves, unit, row in markers:
            i = lengths.index(n)
            for m, marker in zip(_METHODS, row):
                marker.set_data([n], [curves[m][i] * unit])
        width = min(block_size, n) / n
        strip.set_width(width)
        strip.set_x(min(1 - width, width))  # the second block, or the only one
        return v, _readout(v)

    def live() -> list:
        return [mk for _, _, row in markers for mk in row] + [strip]

    n_slider = widgets.SelectionSlider(options=lengths, value=n if n in lengths else lengths[0],
                                       description="n", continuous_update=True)
    b_slider = widgets.SelectionSlider(options=list(BLOCK_SIZES),
                                       value=block_size if block_size in BLOCK_SIZES else 128,
                                       description="block b", continuous_update=True)
    return Explorer({"n": n_slider, "block_size": b_slider}, fig, update, live,
                    title="Attention cost: time and memory against n")
