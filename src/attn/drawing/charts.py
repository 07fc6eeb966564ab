"""The lessons' line charts, drawn with their words in the current language (``attn.language``).

* ``loglog_curves`` and ``STYLE``: notebook 07's measured costs, one line per method on
  log-log axes (the numbers come from ``attn.lessons.cost.measure``);
* ``plot_path_counts`` and ``plot_gradient_profile``: notebook 01's RNN against
  self-attention (the numbers come from ``attn.lessons.rnn_vs_attention``);
* ``plot_warmup_runs``: notebook 12's training loss of post-LN and pre-LN stacks, with and
  without a warm-up (the runs come from ``attn.lessons.trained.warmup``).

The lessons compute, this module draws: nothing here measures anything.
"""
from __future__ import annotations

from typing import Any, Sequence

from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from ..language import mark, tr
from .plotting import label_font, new_figure, power_of_ten_label, text_font, title_font
from ..lessons.rnn_vs_attention import GradientProfile, PathCounts
from ..lessons.trained.warmup import WarmupRun

__all__ = ["STYLE", "loglog_curves", "plot_path_counts", "plot_gradient_profile", "plot_warmup_runs"]


#: How each method is drawn: label, colour, and a marker and line style of its own, so that
#: the lines tell apart without colour vision too (no red against green). The labels are
#: English, marked for the catalogue: shown as ``attn.language.tr(label)``.
STYLE: dict[str, tuple[str, str, str]] = {
    "naive": (mark("naive (n×n weights)"), "tab:red", "o-"),
    "blockwise": (mark("blockwise"), "black", "s--"),
    "sdpa": (mark("PyTorch SDPA"), "tab:blue", "^-."),
}


def loglog_curves(
    ax: Any, lengths: Sequence[int], curves: dict[str, Sequence[float]], *,
    unit: float = 1.0, ylabel: str = "", title: str = "", slope: float | None = 2.0,
) -> list:
    """Draw one line per method on log-log axes, plus a dotted line of slope ``slope``.

    Args:
        ax: a matplotlib Axes.
        lengths: the x values (n).
        curves: method -> one y value per length (``attn.lessons.cost.measure.time_curve`` / ``memory_curve``).
        unit: multiplies every y (e.g. 1e3 for seconds -> ms).
        slope: the reference line's slope, drawn through the naive method's last point (or
            the first method's); None for none.
        ylabel, title: drawn in ``attn.drawing.plotting.text_font`` (so they may be Chinese). The
            methods' labels and the x axis' are in the current language (``attn.language``);
            a legend that shows them needs ``prop=text_font(size)`` for Chinese.

    Returns:
        the lines drawn, methods first.
    """
    xs = list(lengths)
    lines = []
    for m, ys in curves.items():
        label, color, fmt = STYLE.get(m, (m, None, "o-"))
        label = tr(label) if m in STYLE else label
        lines += ax.plot(xs, [y * unit for y in ys], fmt, ms=3, color=color, label=label)
    if slope is not None:
        ref = curves.get("naive", next(iter(curves.values())))
        top = ref[-1] * unit
        lines += ax.plot(xs, [top * (x / xs[-1]) ** slope for x in xs], ":", color="gray",
                         label=tr("slope {slope:g} (∝ $n^{{{slope:g}}}$)", slope=slope))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_minor_locator(NullLocator())  # fewer ticks: quicker to draw, easier to read
    ax.yaxis.set_minor_locator(NullLocator())
    # Plain-text tick labels (2, 4, ..., 10³): no mathtext, whose fonts matplotlib looks up
    # (and warns about on stderr) the first time a process draws them.
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten_label))
    ax.set_xlabel(tr("n (queries = keys)"), fontproperties=label_font())
    ax.set_ylabel(ylabel, fontproperties=label_font())
    if title:
        ax.set_title(title, fontproperties=text_font(10))
    return lines


def plot_path_counts(rows: Sequence[PathCounts], ax: Axes | None = None) -> list[Line2D]:
    """Sequential steps and longest path against n, both layers, on one log-log axes, with its
    words in the current language (``attn.language``).

    Returns the four ``Line2D`` drawn (RNN steps, RNN path, attention steps, attention path).
    """
    if ax is None:
        ax = new_figure(4.5, 3).add_subplot()
    ns = [r.n for r in rows]
    lines = [
        ax.plot(ns, [r.rnn_steps for r in rows], "o-", color="tab:red", label=tr("RNN: sequential steps"))[0],
        ax.plot(ns, [r.rnn_path for r in rows], "x--", color="tab:orange", ms=8,
                label=tr("RNN: longest path"))[0],
        ax.plot(ns, [r.attention_steps for r in rows], "o-", color="tab:blue",
                label=tr("attention: sequential steps"))[0],
        ax.plot(ns, [r.attention_path for r in rows], "x--", color="tab:cyan", ms=8,
                label=tr("attention: longest path"))[0],
    ]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_yticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set_xlabel(tr("sequence length n"), fontproperties=label_font())
    ax.set_ylabel(tr("count"), fontproperties=label_font())
    ax.set_title(tr("counted on the computation graphs"), fontproperties=title_font())
    ax.legend(prop=text_font(8))
    return lines


def plot_gradient_profile(profile: GradientProfile, ax: Axes | None = None) -> list[Line2D]:
    """Gradient norm against distance from the last position, log scale, both layers, with its
    words in the current language (``attn.language``).

    Returns the two ``Line2D`` drawn (RNN, attention).
    """
    if ax is None:
        ax = new_figure(4.5, 3).add_subplot()
    lines = [
        ax.plot(profile.distance, profile.rnn, "o-", color="tab:red", ms=3, label=tr("tanh RNN"))[0],
        ax.plot(profile.distance, profile.attention, "o-", color="tab:blue", ms=3,
                label=tr("self-attention"))[0],
    ]
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten_label))
    ax.set_xlabel(tr("distance from the last position, n - 1 - j"), fontproperties=label_font())
    ax.set_ylabel("‖∂ y_last / ∂ x_j‖")  # symbols only, the same in every language
    ax.set_title(tr("random layers, n = {n}, d = {d}, seed {seed}", n=profile.n, d=profile.d, seed=profile.seed),
                 fontproperties=title_font())
    ax.legend(prop=text_font(8))
    return lines


#: How each run of ``plot_warmup_runs`` is drawn: (norm_first, warmed up) -> colour, line style.
#: Post-LN red, pre-LN blue; without a warm-up solid, with one dashed (apart without colour too).
WARMUP_STYLE: dict[tuple[bool, bool], tuple[str, str]] = {
    (False, False): ("tab:red", "-"), (False, True): ("tab:red", "--"),
    (True, False): ("tab:blue", "-"), (True, True): ("tab:blue", "--"),
}


def plot_warmup_runs(runs: Sequence[WarmupRun], ax: Axes | None = None) -> list[Line2D]:
    """The training loss against the step, one line per run of
    ``attn.lessons.trained.warmup.warmup_runs``, the warm-up's steps shaded, with its words in
    the current language (``attn.language``).

    Returns the ``Line2D`` drawn, in the order of ``runs``.
    """
    if ax is None:
        ax = new_figure(6.5, 3.4).add_subplot()
    lines = []
    for run in runs:
        colour, style = WARMUP_STYLE[run.norm_first, run.warmup > 0]
        placement = tr(run.placement)
        name = (tr("{placement}, warm-up of {steps} steps", placement=placement, steps=run.warmup)
                if run.warmup else tr("{placement}, no warm-up", placement=placement))
        steps = range(1, len(run.losses) + 1)
        lines.append(ax.plot(steps, run.losses, style, color=colour, linewidth=1.4, label=name)[0])
    warm = max(run.warmup for run in runs)
    if warm:
        ax.axvspan(0, warm, color="0.9", zorder=0)
        ax.text(warm / 2, 0.98, tr("warm-up"), transform=ax.get_xaxis_transform(), ha="center", va="top",
                fontproperties=text_font(8))
    ax.set_xlim(0, len(runs[0].losses))
    ax.set_xlabel(tr("training step"), fontproperties=label_font())
    ax.set_ylabel(tr("training loss (cross-entropy)"), fontproperties=label_font())
    ax.legend(prop=text_font(8), loc="center right")
    return lines
