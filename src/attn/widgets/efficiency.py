"""What attention costs as the sequence grows: the explorer of notebook 07.

One control: the block size b of the blockwise method. Three panels: measured time and
measured peak memory against n on log-log axes (a line of slope 2 for reference), with the
blockwise method's curve for the chosen b; and, at one length n, the n x n weight matrix
beside the n x b block of scores that the blockwise method holds at once.

Measured once, not per move: a live measurement at n = 1024 takes 10-30 ms for the time and
40-200 ms for the memory meter, over the 30 ms a move may take. So the naive and SDPA curves
come in (or are measured when the explorer is built), and the blockwise method is measured at
build time for every (n, b) (``measure_block_sizes``, about a second). Moving b shows the
measurements for that b (``efficiency_view`` looks them up).

Only what a move changes is drawn as live: the blockwise curves, their markers at n and the
block. The naive and SDPA curves, and their markers at n, do not depend on b: they are part
of the background, drawn once. (There is no n slider: moving along curves already drawn
would measure nothing new; the curves show every n at once.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import ipywidgets as widgets
from matplotlib.patches import Rectangle

from .._checks import check_positive_int
from ..lessons.cost.counts import AttentionCost, attention_cost
from ..drawing.charts import STYLE, loglog_curves
from ..lessons.cost.measure import fit_slope, format_bytes, memory_curve, time_curve
from ..language import mark, tr
from ..drawing.plotting import new_figure, text_font
from ._base import Explorer

__all__ = ["LENGTHS", "BLOCK_SIZES", "BlockMeasurements", "measure_block_sizes", "EfficiencyView",
           "efficiency_view", "efficiency_explorer"]

LENGTHS: tuple[int, ...] = (64, 128, 256, 512, 1024)
BLOCK_SIZES: tuple[int, ...] = (16, 32, 64, 128, 256, 512)
#: The methods, by the names notebook 07 measures them under; marked for the catalogue, so that
#: a line that names one shows it translated (``tr(method)``: 朴素, 分块, SDPA).
_METHODS = (mark("naive"), mark("blockwise"), mark("sdpa"))
_WHOLE = ("naive", "sdpa")  # the methods that do not depend on b
# Each method's own marker and line style, so that no line is told apart by its colour alone.
_LINES = {m: fmt for m, (_label, _colour, fmt) in STYLE.items()}  # marker and line style


@dataclass(frozen=True)
class BlockMeasurements:
    """The blockwise method measured at every (b, n): b -> one value per length."""

    lengths: tuple[int, ...]
    seconds: dict[int, tuple[float, ...]]
    peak_bytes: dict[int, tuple[int, ...]]


def measure_block_sizes(lengths: Sequence[int] = LENGTHS, block_sizes: Sequence[int] = BLOCK_SIZES,
                        *, repeats: int = 2) -> BlockMeasurements:
    """Time (fastest of ``repeats``) and peak tensor memory of the blockwise method for every
    block size b and length n (one head, d_k = 64; ``time_curve`` and ``memory_curve``)."""
    lengths = tuple(check_positive_int("lengths", n) for n in lengths)
    seconds, peak = {}, {}
    for b in block_sizes:
        check_positive_int("block_sizes", b)
        seconds[b] = tuple(time_curve(list(lengths), methods=["blockwise"], block_size=b,
                                      repeats=repeats)["blockwise"])
        peak[b] = tuple(memory_curve(list(lengths), methods=["blockwise"], block_size=b)["blockwise"])
    return BlockMeasurements(lengths=lengths, seconds=seconds, peak_bytes=peak)


@dataclass(frozen=True)
class EfficiencyView:
    """The numbers shown for one (n, b); "blockwise" is measured with this b."""

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
    if not isinstance(curves, Mapping) or any(m not in curves for m in _WHOLE):
        raise TypeError(f"{name}: expected a dict with keys {list(_WHOLE)}, got {curves!r}")
    for m in _WHOLE:
        if len(curves[m]) != len(lengths):
            raise ValueError(f"{name}: expected {len(lengths)} values per method (one per length), "
                             f"got {len(curves[m])} for {m!r}")
    return curves


def efficiency_view(
    n: int, block_size: int, *, seconds: Mapping[str, Sequence[float]],
    peak_bytes: Mapping[str, Sequence[int]], blocks: BlockMeasurements,
    lengths: Sequence[int] = LENGTHS, d_k: int = 64,
) -> EfficiencyView:
    """Look up the measured curves at length n, the blockwise ones for block size b, and
    count what a block of size b holds.

    Args:
        n: a length from ``lengths``.
        block_size: keys per block, one of the block sizes ``blocks`` was measured with.
        seconds, peak_bytes: "naive" and "sdpa" -> one value per length (``time_curve``,
            ``memory_curve``).
        blocks: the blockwise method per block size (``measure_block_sizes``).
        lengths: the lengths the curves were measured at.
    """
    check_positive_int("n", n)
    check_positive_int("block_size", block_size)
    lengths = list(lengths)
    if n not in lengths:
        raise ValueError(f"n: expected one of the measured lengths {lengths}, got {n}")
    _check_curves("seconds", seconds, lengths)
    _check_curves("peak_bytes", peak_bytes, lengths)
    if not isinstance(blocks, BlockMeasurements) or list(blocks.lengths) != lengths:
        raise TypeError(f"blocks: expected BlockMeasurements at the lengths {lengths}, got {blocks!r}")
    if block_size not in blocks.seconds:
        raise ValueError(f"block_size: expected one of the measured {sorted(blocks.seconds)}, "
                         f"got {block_size}")
    i = lengths.index(n)
    return EfficiencyView(
        n=n, block_size=block_size, cost=attention_cost(n, d_k),  # one head, d_model = d_k
        seconds={"naive": float(seconds["naive"][i]), "blockwise": blocks.seconds[block_size][i],
                 "sdpa": float(seconds["sdpa"][i])},
        peak_bytes={"naive": int(peak_bytes["naive"][i]), "blockwise": blocks.peak_bytes[block_size][i],
                    "sdpa": int(peak_bytes["sdpa"][i])},
        blocks=math.ceil(n / block_size),
        block_bytes=n * min(block_size, n) * 4,
        time_slope=fit_slope(lengths, seconds["naive"]),
        memory_slope=fit_slope(lengths, peak_bytes["naive"]),
    )


def _readout(v: EfficiencyView) -> str:
    label = {**{m: tr(STYLE[m][0]) for m in _METHODS},
             "blockwise": tr("blockwise, b = {b}", b=v.block_size)}
    rows = "".join(
        f"<tr><td>{label[m]}</td><td>{v.seconds[m] * 1e3:.2f} ms</td>"
        f"<td>{v.seconds[m] / v.seconds['sdpa']:.1f}×</td><td>{format_bytes(v.peak_bytes[m])}</td></tr>"
        for m in _METHODS
    )
    return (
        "<p>" + tr("n = {n}: Q Kᵀ and weights·V take {macs:,} multiply-adds; the n×n float32 weights "
                   "take {weight_bytes}. Blockwise with b = {b}: {blocks} block(s) of {block_bytes} "
                   "each, one at a time.", n=v.n, macs=v.cost.macs_attention,
                   weight_bytes=format_bytes(v.cost.score_bytes), b=v.block_size, blocks=v.blocks,
                   block_bytes=format_bytes(v.block_bytes)) + "</p>"
        f"<table><tr><th>{tr('method')}</th><th>{tr('time (measured)')}</th><th>{tr('vs SDPA')}</th>"
        f"<th>{tr('peak tensor memory')}</th></tr>{rows}</table>"
        "<p>" + tr("Fitted slopes on log-log axes (naive): time {time:.2f}, memory {memory:.2f}.",
                   time=v.time_slope, memory=v.memory_slope) + "</p>"
    )


def efficiency_explorer(
    n: int = 1024, block_size: int = 128, *,
    seconds: Mapping[str, Sequence[float]] | None = None,
    peak_bytes: Mapping[str, Sequence[int]] | None = None,
    blocks: BlockMeasurements | None = None,
    lengths: Sequence[int] = LENGTHS,
) -> Explorer:
    """A slider for the block size b; time and memory against n; the block held at once at n.

    Args:
        n: the length the markers, the block picture and the readout refer to (one of
            ``lengths``; fixed: the curves show every length).
        block_size: the slider's starting value.
        seconds, peak_bytes: "naive" and "sdpa" curves from ``time_curve(lengths)`` /
            ``memory_curve(lengths)`` (one head, d_k = 64); measured here when None.
        blocks: the blockwise method for every b of the slider (``measure_block_sizes``);
            measured here when None (about a second).
        lengths: the lengths of the curves.

    Returns:
        An ``Explorer`` with one control, "block_size"; ``.live_artists`` are the blockwise
        curves, their markers and the block (everything else is drawn once).
    """
    lengths = list(lengths)
    check_positive_int("n", n)
    if n not in lengths:
        raise ValueError(f"n: expected one of the lengths {lengths}, got {n}")
    if seconds is None:
        seconds = time_curve(lengths, methods=_WHOLE, repeats=3)
    if peak_bytes is None:
        peak_bytes = memory_curve(lengths, methods=_WHOLE)
    if blocks is None:
        blocks = measure_block_sizes(lengths, BLOCK_SIZES)
    efficiency_view(n, block_size, seconds=seconds, peak_bytes=peak_bytes, blocks=blocks,
                    lengths=lengths)  # validates every argument
    i = lengths.index(n)

    fig = new_figure(10, 3, dpi=72)
    ax_t, ax_m, ax_b = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 0.8]})
    panels = []  # (blockwise per b, unit, the blockwise line, its marker at n)
    for ax, curves, per_b, unit, title in (
            (ax_t, seconds, blocks.seconds, 1e3, tr("time per call (ms)")),
            (ax_m, peak_bytes, blocks.peak_bytes, 2.0**-20, tr("peak tensor memory (MiB)"))):
        lines = loglog_curves(ax, lengths, {m: curves[m] for m in _WHOLE}, unit=unit, title=title)
        for line, m in zip(lines, _WHOLE):
            line.set_marker(_LINES[m][0])
            line.set_linestyle(_LINES[m][1:])
            ax.plot([n], [curves[m][i] * unit], _LINES[m][0], ms=9, mfc="none", color=STYLE[m][1])  # static
        (live_line,) = ax.plot(lengths, [y * unit for y in per_b[block_size]], _LINES["blockwise"],
                               ms=3, color=STYLE["blockwise"][1], label=tr("blockwise, chosen b"))
        every = [y * unit for m in _WHOLE for y in curves[m]] + [y * unit for ys in per_b.values() for y in ys]
        ax.set_ylim(min(every) / 1.5, max(every) * 1.5)  # every b's curve stays in view
        (marker,) = ax.plot([n], [per_b[block_size][i] * unit], _LINES["blockwise"][0], ms=9, mfc="none",
                            color=STYLE["blockwise"][1])
        ax.axvline(n, color="0.6", lw=0.8, ls=":", zorder=0)  # the n of the readout and the block
        panels.append((per_b, unit, live_line, marker))
    ax_t.legend(prop=text_font(7), loc="upper left")
    ax_b.set_xlim(0, 1)
    ax_b.set_ylim(1, 0)
    ax_b.set_aspect("equal")
    ax_b.set_xticks([])
    ax_b.set_yticks([])
    ax_b.set_xlabel(tr("keys → (n = {n})", n=n), fontproperties=text_font(10))
    ax_b.set_ylabel(tr("← queries"), fontproperties=text_font(10))
    ax_b.add_patch(Rectangle((0, 0), 1, 1, color="0.85"))
    strip = ax_b.add_patch(Rectangle((0, 0), 1, 1, color="tab:blue"))
    ax_b.set_title(tr("held at once: n×n weights (grey)\nor one n×b block (blue)"), fontproperties=text_font(10))
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.16, top=0.86, wspace=0.28)  # fixed: quick

    def update(block_size: int) -> tuple[EfficiencyView, str]:
        v = efficiency_view(n, block_size, seconds=seconds, peak_bytes=peak_bytes, blocks=blocks,
                            lengths=lengths)
        for per_b, unit, live_line, marker in panels:
            live_line.set_ydata([y * unit for y in per_b[block_size]])
            marker.set_data([n], [per_b[block_size][i] * unit])
        width = min(block_size, n) / n
        strip.set_width(width)
        strip.set_x(min(1 - width, width))  # the second block, or the only one
        return v, _readout(v)

    live_artists = [a for _, _, line, marker in panels for a in (line, marker)] + [strip]

    def live() -> list:
        return live_artists

    b_slider = widgets.SelectionSlider(options=list(BLOCK_SIZES),
                                       value=block_size if block_size in BLOCK_SIZES else 128,
                                       description=tr("block b"), continuous_update=True)
    explorer = Explorer({"block_size": b_slider}, fig, update, live,
                        title=tr("Attention cost: time and memory against n, and the block size b "
                                 "(at n = {n})", n=n))
    explorer.live_artists = live_artists
    return explorer
