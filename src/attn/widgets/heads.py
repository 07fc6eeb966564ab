"""The heads explorer: pick d_model and the number of heads, see every shape and every head.

The input is the chapter's sentence (``attn.examples.SENTENCE``, 6 tokens) with seeded random
embeddings, fed to a seeded ``attn.MultiHeadAttention``. The projection matrices depend on
d_model only, so changing the number of heads cuts the *same* Q, K, V into a different number
of column blocks: what changes is how the columns are grouped before the softmax.

Speed: the 2 x 4 grid is drawn once with all eight cells; the cells of heads that do not exist
are covered by background-coloured rectangles (live artists), so changing the head count never
needs a full redraw, and the maps are drawn as blown-up colour lookups (``attn.widgets._bitmaps.CellMap``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._checks import check_positive_int
from ..cost.counts import multi_head_cost, trace_multi_head, valid_num_heads
from ..examples import SENTENCE
from ..modules import MultiHeadAttention
from ..plotting import head_grid
from ._bitmaps import CellMap
from ._base import Explorer

__all__ = ["D_MODELS", "MAX_HEADS", "HeadsState", "heads_state", "heads_explorer"]

#: d_model choices of the explorer (the chapter's 512 included).
D_MODELS: tuple[int, ...] = (4, 6, 8, 12, 16, 24, 32, 64, 128, 512)
#: The grid holds 2 x 4 maps, like the chapter's figure.
MAX_HEADS: int = 8

_NOTATION = {
    "X": "X (n, d_model)",
    "Q = X W^Q": "Q = [Q_1 … Q_h] (n, h·d_k)",
    "K = X W^K": "K (n, h·d_k)",
    "V = X W^V": "V (n, h·d_v)",
    "Q split into heads": "Q_i (n, d_k) for each i",
    "K split into heads": "K_i (n, d_k)",
    "V split into heads": "V_i (n, d_v)",
    "weights per head": "softmax(Q_i K_iᵀ/√d_k) (n, n)",
    "head outputs": "head_i (n, d_v)",
    "concat(heads)": "Concat(head_1..head_h) (n, h·d_v)",
    "concat W^O": "MultiHead (n, d_model)",
}


@dataclass(frozen=True)
class HeadsState:
    """What the explorer shows for one (d_model, num_heads).

    Attributes:
        d_model, num_heads, head_dim: E, H and D = E // H.
        tokens: the n token labels.
        shapes: [(step, shape)] of every intermediate tensor, batch dim included (B = 1).
        weights: (H, n, n) attention maps, one per head.
        params, macs, softmax_entries: the layer's counts (``attn.cost.counts.multi_head_cost``).
    """

    d_model: int
    num_heads: int
    head_dim: int
    tokens: tuple[str, ...]
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    weights: np.ndarray
    params: int
    macs: int
    softmax_entries: int


@lru_cache(maxsize=16)
def _inputs(d_model: int, seed: int) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """Seeded embeddings (1, n, E) and the four (E, E) projection weights for this d_model.

    Weights are N(0, 1/E), so each entry of Q and K has variance about 1 and the maps are
    neither flat nor one-hot. A private generator: the global random state is untouched.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, len(SENTENCE), d_model, generator=g, dtype=torch.float64)  # (1, n, E)
    ws = tuple(torch.randn(d_model, d_model, generator=g, dtype=torch.float64) / d_model**0.5
               for _ in range(4))  # W_q, W_k, W_v, W_o as nn.Linear weights (out, in)
    return x, ws


def _module(d_model: int, num_heads: int, seed: int) -> MultiHeadAttention:
    _, ws = _inputs(d_model, seed)
    with torch.random.fork_rng(devices=[]):  # nn.Linear's own init draws from the global RNG
        mha = MultiHeadAttention(d_model, num_heads).to(torch.float64)
    with torch.no_grad():
        for lin, w in zip((mha.W_q, mha.W_k, mha.W_v, mha.W_o), ws):
            lin.weight.copy_(w)
    return mha


def heads_state(d_model: int, num_heads: int, *, seed: int = 0) -> HeadsState:
    """Run a seeded multi-head layer on the chapter's sentence and record shapes and maps.

    Args:
        d_model: E, a positive int.
        num_heads: H, a divisor of E.
        seed: seeds the embeddings and the projections (same seed, same numbers).

    Returns:
        A ``HeadsState``; ``weights`` has shape (H, n, n) with n = len(SENTENCE).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"num_heads: expected a divisor of d_model={d_model} "
                         f"(one of {valid_num_heads(d_model)}), got {num_heads}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    return _cached_state(d_model, num_heads, seed)


@lru_cache(maxsize=64)
def _cached_state(d_model: int, num_heads: int, seed: int) -> HeadsState:
    x, _ = _inputs(d_model, seed)
    mha = _module(d_model, num_heads, seed)
    with torch.no_grad():
        steps = trace_multi_head(mha, x)
    shapes = tuple((name, tuple(t.shape)) for name, t in steps)
    weights = dict(steps)["weights per head"][0].numpy().copy()  # (1, H, n, n) -> (H, n, n)
    weights.setflags(write=False)  # cached and shared: read-only
    cost = multi_head_cost(len(SENTENCE), d_model, num_heads)
    return HeadsState(d_model=d_model, num_heads=num_heads, head_dim=d_model // num_heads,
                      tokens=SENTENCE, shapes=shapes, weights=weights, params=cost.params,
                      macs=cost.macs, softmax_entries=cost.softmax_entries)


def _readout(s: HeadsState) -> str:
    rows = "".join(f"<tr><td>{name}</td><td>{_NOTATION[name]}</td><td><code>{shape}</code></td></tr>"
                   for name, shape in s.shapes)
    n = len(s.tokens)
    heads = "1 head" if s.num_heads == 1 else f"{s.num_heads} heads"
    return (
        f"<p>d_model = {s.d_model}, {heads} of d_k = d_v = {s.d_model} / {s.num_heads} = "
        f"{s.head_dim}; n = {n} tokens, batch B = 1.</p>"
        f"<table><tr><th>step</th><th>the chapter's notation</th><th>shape (B, …)</th></tr>{rows}</table>"
        f"<p>parameters 4·d_model² = {s.params:,} (the same for every h); multiply-adds "
        f"{s.macs:,} (the same for every h); softmax entries h·n² = {s.softmax_entries:,}.</p>"
    )


def _cell_covers(fig: Figure, axes: list[Axes]) -> list[Rectangle]:
    """One rectangle per grid cell, the figure's colour, over the axes with its title and tick
    labels. Drawn over the cells of the heads that do not exist, it hides them without
    changing the kept background (hiding the axes would force a full redraw, ~120 ms)."""
    renderer = fig.canvas.get_renderer()
    to_fig = fig.transFigure.inverted()
    covers = []
    for ax in axes:
        (x0, y0), (x1, y1) = to_fig.transform(ax.get_tightbbox(renderer).padded(2).get_points())
        rect = Rectangle((x0, y0), x1 - x0, y1 - y0, transform=fig.transFigure,
                         facecolor=fig.get_facecolor(), edgecolor="none")
        rect.set_animated(True)  # drawn only when listed as live
        fig.add_artist(rect)
        covers.append(rect)
    return covers


def heads_explorer(d_model: int = 16, num_heads: int = 4, *, seed: int = 0) -> Explorer:
    """Drop-downs for d_model and the number of heads (divisors of d_model, at most 8).

    Changing d_model refreshes the heads drop-down to that d_model's divisors, keeping the
    current count when it still divides, else the largest valid count below it.
    """
    check_positive_int("d_model", d_model)
    if d_model not in D_MODELS:
        raise ValueError(f"d_model: expected one of {D_MODELS}, got {d_model}")
    valid = valid_num_heads(d_model, max_heads=MAX_HEADS)
    if num_heads not in valid:
        raise ValueError(f"num_heads: expected one of {valid} for d_model={d_model}, got {num_heads!r}")
    d_box = widgets.Dropdown(options=D_MODELS, value=d_model, description="d_model",
                             layout=widgets.Layout(width="180px"))
    h_box = widgets.Dropdown(options=valid, value=num_heads, description="heads",
                             layout=widgets.Layout(width="160px"))
    holder: dict[str, Explorer] = {}

    def retarget(change: dict) -> None:
        """New d_model: new head options. Runs before the explorer redraws (observed first);
        the explorer's own observer on ``h_box`` is paused so the move redraws once."""
        options = valid_num_heads(change["new"], max_heads=MAX_HEADS)
        keep = max(h for h in options if h <= h_box.value)
        explorer = holder.get("explorer")
        if explorer is not None:
            h_box.unobserve(explorer.redraw, names="value")
        try:
            h_box.options = options  # resets the value to the first option
            h_box.value = keep
        finally:
            if explorer is not None:
                h_box.observe(explorer.redraw, names="value")

    d_box.observe(retarget, names="value")

    first = heads_state(d_model, num_heads, seed=seed)
    padded = np.zeros((MAX_HEADS, *first.weights.shape[1:]))
    grid = head_grid(padded, list(SENTENCE), nrows=2, ncols=4, figsize=(10, 5), dpi=72)
    grid.fig.suptitle("Attention weights per head (rows: queries, columns: keys)", fontsize=11)
    for hm in grid.heatmaps:  # six Chinese labels side by side overlap: stand them up
        for label in hm.ax.get_xticklabels():
            label.set_rotation(90)
    # Fixed margins (what constrained layout found for this figure, without its cost):
    # room for the rotated Chinese labels below each map and for the suptitle.
    grid.fig.subplots_adjust(left=0.064, right=0.996, bottom=0.128, top=0.898,
                             wspace=0.374, hspace=0.612)
    covers = _cell_covers(grid.fig, [hm.ax for hm in grid.heatmaps])
    cells = []
    for hm in grid.heatmaps:  # the grid's images only set the axes up; CellMap draws the maps
        hm.image.set_visible(False)
        cells.append(CellMap(hm.ax, "Blues", hm.image.get_clim()))
    shown = {"heads": num_heads}

    def update(d_model: int, num_heads: int) -> tuple[HeadsState, str]:
        s = heads_state(d_model, num_heads, seed=seed)
        for c, w in zip(cells, s.weights):
            c.set_values(w)
        shown["heads"] = s.num_heads
        return s, _readout(s)

    def live() -> list:
        h = shown["heads"]
        return cells[:h] + covers[h:]

    explorer = Explorer({"d_model": d_box, "num_heads": h_box}, grid.fig, update, live,
                        title="Multi-head attention: shapes and per-head maps")
    holder["explorer"] = explorer
    return explorer
