"""Why divide by sqrt(d_k): the d_k explorer of notebook 02 (its numbers: ``attn.lessons.scaling``).

With q, k of d_k independent N(0, 1) entries, q . k has variance d_k. Unscaled, the scores
spread out as d_k grows, the softmax saturates towards one-hot, and its Jacobian (the
gradient that flows back through it) shrinks towards zero. Divided by sqrt(d_k), the
variance stays 1 and the softmax stays soft at every d_k. The explorer shows this where a
table of averages cannot: the scores' distribution, and query by query, each softmax row and
the gradient it passes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from .._checks import check_choice, check_int
from ..functional import masked_softmax
from ..language import tr
from ..drawing.plotting import new_figure, text_font
from ..lessons.scaling import D_K_GRID, ScalingStats, sample_scores, scaling_stats, softmax_jacobian_norm
from ._base import Explorer, sentences
from ._mapview import MapView

__all__ = ["ScalingView", "scaling_view", "scaling_explorer"]


@dataclass(frozen=True)
class ScalingView:
    """What the d_k explorer draws for one d_k: scores and softmax rows, unscaled and scaled.

    Attributes:
        d_k: the query/key size; stats: ``scaling_stats(d_k)`` (1000 rows, for the readout).
        bins: (B + 1,) edges of the score histogram; hist_raw, hist_scaled: (B,) the
            fraction of the sample's scores in each bin (scores outside the edges are left out).
        weights_raw, weights_scaled: (Q, n) softmax rows of the first Q queries.
        jac_raw, jac_scaled: (Q,) the Frobenius norm of each row's softmax Jacobian
            diag(p) - p pᵀ: how much the weights move when the scores move (0 = no gradient).
    """

    d_k: int
    stats: ScalingStats
    bins: np.ndarray
    hist_raw: np.ndarray
    hist_scaled: np.ndarray
    weights_raw: np.ndarray
    weights_scaled: np.ndarray
    jac_raw: np.ndarray
    jac_scaled: np.ndarray


#: The readout's table averages over STATS_QUERIES queries of VIEW_KEYS keys each; the
#: histogram shows the scores of the first HIST_QUERIES of them, the maps the first MAP_QUERIES.
STATS_QUERIES, HIST_QUERIES, MAP_QUERIES, VIEW_KEYS = 1000, 64, 8, 16
#: The histogram's bins: 2 wide, from -64 to 64 (the unscaled scores' spread at d_k = 512 is 22.6).
BINS = np.arange(-64.0, 64.1, 2.0)


@lru_cache(maxsize=32)
def scaling_view(d_k: int, *, seed: int = 0) -> ScalingView:
    """Scores q·k of 64 seeded queries with 16 keys each at this d_k, unscaled and divided by
    sqrt(d_k): their histogram, and the softmax rows and Jacobian norms of the first 8.

    The 64 queries are the first of the 1000 that the readout's numbers average over
    (``attn.lessons.scaling.sample_scores``): the picture and the readout show one sample.

    Args:
        d_k: one of ``D_K_GRID`` (1, 2, 4, ..., 512).
        seed: seeds the queries and keys (the same vectors for every d_k: a larger d_k adds
            coordinates).
    """
    check_choice("d_k", check_int("d_k", d_k), D_K_GRID)
    check_int("seed", seed)
    raw = sample_scores(d_k, n_keys=VIEW_KEYS, n_rows=STATS_QUERIES, seed=seed)[:HIST_QUERIES]  # (N, n): q·k, N = 64 of the 1000
    scaled = raw / math.sqrt(d_k)
    p_raw = masked_softmax(raw[:MAP_QUERIES])  # (Q, n)
    p_scaled = masked_softmax(scaled[:MAP_QUERIES])
    hist = [np.histogram(s.numpy(), bins=BINS)[0] / s.numel() for s in (raw, scaled)]  # (B,) each
    return ScalingView(
        d_k=d_k, stats=scaling_stats(d_k, n_keys=VIEW_KEYS, n_rows=STATS_QUERIES, seed=seed), bins=BINS, hist_raw=hist[0], hist_scaled=hist[1],
        weights_raw=p_raw.numpy(), weights_scaled=p_scaled.numpy(),
        jac_raw=softmax_jacobian_norm(p_raw).numpy(), jac_scaled=softmax_jacobian_norm(p_scaled).numpy(),
    )


def _readout(v: ScalingView) -> str:
    s = v.stats
    notes = []
    if s.d_k == 1:
        notes.append(tr("At d_k = 1, √d_k = 1: scaling changes nothing, both sides are equal."))
    else:
        notes.append(tr(
            "Unscaled, the variance of the scores is {ratio:.1f} times the scaled one (d_k = {d_k}); "
            "the largest weight averages {top_raw:.2f} against {top_scaled:.2f}, and the gradient "
            "through the softmax is {grad_ratio:.2f} times the scaled one.",
            ratio=s.score_var_raw / s.score_var_scaled, d_k=s.d_k, top_raw=s.max_weight_raw,
            top_scaled=s.max_weight_scaled, grad_ratio=s.grad_norm_raw / s.grad_norm_scaled))
    outside = 1 - v.hist_raw.sum()
    if outside > 0:
        notes.append(tr("{share:.1%} of the unscaled scores fall outside the histogram's ±64.",
                        share=outside))
    return (
        "<p>" + sentences([
            tr("The histogram: the scores of the first {shown} of the table's {queries} queries.",
               shown=HIST_QUERIES, queries=STATS_QUERIES),
            tr("The maps: one row per query, its softmax weights over 16 keys (dark = close to 1). "
               "The bars: ‖J‖ of each row, how much its weights can still move when its scores "
               "move.")]) + "</p>"
        f"<table><tr><th>{tr('d_k = {d_k}, {queries} queries × {keys} keys', d_k=s.d_k, queries=STATS_QUERIES, keys=VIEW_KEYS)}</th>"
        f"<th>{tr('unscaled q·k')}</th>"
        "<th>q·k / √d_k</th></tr>"
        f"<tr><td>{tr('variance of scores')}</td><td>{s.score_var_raw:.2f}</td><td>{s.score_var_scaled:.2f}</td></tr>"
        f"<tr><td>{tr('mean largest weight')}</td><td>{s.max_weight_raw:.3f}</td><td>{s.max_weight_scaled:.3f}</td></tr>"
        f"<tr><td>{tr('softmax gradient size ‖J‖')}</td><td>{s.grad_norm_raw:.4f}</td><td>{s.grad_norm_scaled:.4f}</td></tr>"
        "</table><p>" + sentences(notes) + "</p>"
    )


def scaling_explorer(d_k: int = 64) -> Explorer:
    """A d_k slider over 1, 2, 4, ..., 512: the scores' spread, the softmax rows and their
    gradient, unscaled (orange) against divided by sqrt(d_k) (blue).

    Panels: the histogram of the scores of 64 queries x 16 keys, both ways; the softmax rows of 8 queries over 16
    keys, unscaled and scaled (``MapView``s); each of those rows' softmax-Jacobian norm.

    Returns:
        An ``Explorer``; ``.maps`` is "unscaled" / "scaled" -> ``MapView``.
    """
    first = scaling_view(d_k)  # validates d_k
    fig = new_figure(10, 3.0, dpi=72)
    ax_h = fig.add_axes((0.05, 0.17, 0.27, 0.7))
    maps = {"unscaled": MapView(fig.add_axes((0.37, 0.17, 0.2, 0.7)), x_labels=False, y_labels=False,
                                title_size=10),
            "scaled": MapView(fig.add_axes((0.6, 0.17, 0.2, 0.7)), x_labels=False, y_labels=False,
                              title_size=10)}
    ax_j = fig.add_axes((0.84, 0.17, 0.13, 0.7))  # room at the right for the tick label "0.5"
    zeros = np.zeros(len(first.bins) - 1)
    h_raw = ax_h.stairs(zeros, first.bins, fill=True, color="tab:orange", alpha=0.7, label=tr("unscaled q·k"))
    h_scaled = ax_h.stairs(zeros, first.bins, color="tab:blue", lw=2, label="q·k / √d_k")
    ax_h.set_xlim(first.bins[0], first.bins[-1])
    ax_h.set_ylim(0, 0.55)
    ax_h.set_xlabel(tr("score"), fontproperties=text_font(10), labelpad=1)
    ax_h.set_ylabel(tr("share of scores"), fontproperties=text_font(10), labelpad=1)
    ax_h.set_title(tr("scores q·k: {queries} queries × {keys} keys", queries=HIST_QUERIES, keys=VIEW_KEYS),
                   fontproperties=text_font(10))
    ax_h.legend(prop=text_font(8), loc="upper left", frameon=False)
    rows = np.arange(MAP_QUERIES)
    # Bars as two line collections (one artist each): far cheaper to redraw than 16 rectangles.
    j_raw = ax_j.hlines(rows - 0.17, 0, np.zeros(MAP_QUERIES), colors="tab:orange", lw=4)
    j_scaled = ax_j.hlines(rows + 0.17, 0, np.zeros(MAP_QUERIES), colors="tab:blue", lw=4)
    ax_j.set_ylim(MAP_QUERIES - 0.5, -0.5)  # row 0 on top, like the maps
    ax_j.set_xlim(0, 0.5)  # ‖J‖ <= 0.5 (two keys sharing the weight)
    ax_j.set_yticks([])
    ax_j.set_xticks([0, 0.25, 0.5], ["0", "0.25", "0.5"])
    ax_j.set_xlabel(tr("‖J‖ of each row"), fontproperties=text_font(10), labelpad=1)
    ax_j.set_title(tr("gradient through softmax"), fontproperties=text_font(10))

    def update(d_k: int) -> tuple[ScalingView, str]:
        v = scaling_view(d_k)
        h_raw.set_data(v.hist_raw)
        h_scaled.set_data(v.hist_scaled)
        maps["unscaled"].set(v.weights_raw, title=f"softmax(q·k), d_k = {d_k}")
        maps["scaled"].set(v.weights_scaled, title=f"softmax(q·k / √{d_k})")
        j_raw.set_segments([[(0.0, y - 0.17), (x, y - 0.17)] for y, x in zip(rows, v.jac_raw)])
        j_scaled.set_segments([[(0.0, y + 0.17), (x, y + 0.17)] for y, x in zip(rows, v.jac_scaled)])
        return v, _readout(v)

    def live() -> list:
        return [h_raw, h_scaled, *maps["unscaled"].artists(), *maps["scaled"].artists(), j_raw, j_scaled]

    slider = widgets.SelectionSlider(options=D_K_GRID, value=d_k, description="d_k",
                                     continuous_update=True)
    explorer = Explorer({"d_k": slider}, fig, update, live, title=tr("Scaled vs unscaled dot products"),
                        maps=maps)
    return explorer
