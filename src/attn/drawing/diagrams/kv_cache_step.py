"""One decoding step with a KV cache, drawn from a real step (notebook 10): what is appended,
what is read.

Shape legend: B batch (1), H heads, T cached positions, D = E // H per head.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.text import Text
from torch import Tensor

from ..._checks import check_float, check_int, check_like_parameters, check_rank, shape_str
from ...functional import repeat_kv
from ...kv_cache import KVCache
from ...language import tr
from ...modules import MultiHeadAttention
from ._drawing import (MAX_TOKENS, SMALL, WORDS, Grid, arrow, canvas, frame, grid, number, shape_text,
                       words)

__all__ = ["KVCacheDiagram", "kv_cache_diagram"]

@dataclass
class KVCacheDiagram:
    """What ``kv_cache_diagram`` drew: one step of one head, and the numbers behind it.

    Attributes:
        ax: the axes drawn on; ``figure`` its figure.
        head: the head drawn (0-based).
        shapes: the real shapes: "x_new" (B, 1, E), "keys before" (B, H, T, D),
            "keys after" (B, H, T + 1, D), "weights" (B, H, 1, T + 1), "output" (B, H, 1, D).
        q, k, v: (D,) the new position's query, key and value in this head.
        keys, values: (T + 1, D) this head's cache after the step (the last row: k and v).
        weights: (T + 1,) the new query's weights over every cached position.
        output: (D,) its attention output, weights @ values.
        grids: name -> the drawn heatmap: "q", "k", "v", "keys", "values", "weights", "output".
        texts: every word and number drawn.
    """

    ax: Axes
    head: int
    shapes: dict[str, tuple[int, ...]]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    grids: dict[str, Grid]
    texts: list[Text] = field(default_factory=list)

    @property
    def figure(self) -> Figure:
        return self.ax.figure

    def description(self) -> str:
        """The text alternative, in the current language, from the numbers drawn."""
        T = len(self.weights) - 1
        return tr("A diagram of one decoding step with a KV cache, for head {head} of {H}, drawn as small "
                  "heatmaps whose rows are positions and whose columns are the {D} numbers of a query, key "
                  "or value. The new position {T} computes one query, one key and one value; the key and "
                  "the value are appended as the last row of the key cache and of the value cache, which "
                  "grow from {before} to {after}. The query reads every row: the column of weights between "
                  "the two caches gives one weight per position, from {first} on position 0 to {last} on "
                  "the new one, summing to 1, and the output {output_shape} is their weighted sum of the "
                  "{count} value rows. Nothing earlier is recomputed.",
                  head=self.head + 1, H=self.shapes["keys after"][1], D=len(self.q), T=T,
                  before=shape_text(self.shapes["keys before"]), after=shape_text(self.shapes["keys after"]),
                  first=number(self.weights[0]), last=number(self.weights[-1]),
                  output_shape=shape_text(self.shapes["output"]), count=T + 1)


def kv_cache_diagram(mha: MultiHeadAttention, prompt: Tensor, x_new: Tensor, *, head: int = 0,
                     ax: Axes | None = None) -> KVCacheDiagram:
    """Draw one decoding step of ``mha`` with an ``attn.KVCache``: what is appended, what is read.

    The layer first reads ``prompt`` into a new cache (the prefill: T positions), then takes
    one step on ``x_new``, as generation does: the new position's query, key and value are
    computed, the key and value are appended to the cache (T + 1 rows), and the one new query
    attends to all T + 1 keys and takes the weighted sum of all T + 1 values. The picture shows
    one head: its q, k and v, its key and value caches after the step (the appended row framed),
    the weights between them, row by row, and the output.

    Args:
        mha: an ``attn.MultiHeadAttention`` with D = d_model / num_heads <= 4.
        prompt: (1, T, E), 1 <= T <= 7 earlier positions.
        x_new: (1, 1, E), the new position.
        head: which head to draw (0-based).
        ax: an axes covering a whole figure of about 10.8 x 4 inches (for T = 4, D = 4; the
            layout is in inches); None: a new figure of the size the layout needs.

    Returns:
        A ``KVCacheDiagram``.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha: expected attn.MultiHeadAttention, got {type(mha).__name__}")
    if mha.head_dim > 4:
        raise ValueError(f"mha: expected D = d_model / num_heads <= 4 to draw, got D={mha.head_dim}")
    E = mha.d_model
    check_float("prompt", prompt)
    check_rank("prompt", prompt, 3, "(1, T, E)")
    if prompt.shape[0] != 1 or not 1 <= prompt.shape[1] <= MAX_TOKENS - 1 or prompt.shape[2] != E:
        raise ValueError(f"prompt: expected (1, T, E) with 1 <= T <= {MAX_TOKENS - 1} and E = d_model = {E}, "
                         f"got shape {shape_str(prompt)}")
    check_like_parameters("prompt", prompt, mha.W_q.weight)
    check_float("x_new", x_new)
    check_rank("x_new", x_new, 3, "(1, 1, E)")
    if tuple(x_new.shape) != (1, 1, E):
        raise ValueError(f"x_new: expected (1, 1, E) with E = d_model = {E}, one new position, got shape "
                         f"{shape_str(x_new)}")
    check_like_parameters("x_new", x_new, mha.W_q.weight)
    h = check_int("head", head, low=0, high=mha.num_heads - 1)

    cache = KVCache()
    with torch.no_grad():
        mha(prompt, cache=cache)  # the prefill: T positions cached
        keys_before = cache.key  # (B, H, T, D)
        q = mha.split_heads(mha.W_q(x_new))  # (B, 1, E) -> (B, H, 1, D), as the step computes it
        out, weights = mha(x_new, cache=cache)  # one step: (B, 1, E), (B, H, 1, T + 1)
        groups = mha.num_heads // mha.num_kv_heads  # G query heads read each cached head (1: multi-head)
        heads = weights @ repeat_kv(cache.value, groups)  # (B, H, 1, T + 1) @ (B, H, T + 1, D) -> (B, H, 1, D)
    kv = h // groups  # the cached head that query head h reads
    keys, values = cache.key[0, kv].numpy(), cache.value[0, kv].numpy()  # (T + 1, D) each
    w = weights[0, h, 0].numpy()  # (T + 1,)
    shapes = {"x_new": tuple(x_new.shape), "keys before": tuple(keys_before.shape),
              "keys after": tuple(cache.key.shape), "weights": tuple(weights.shape),
              "output": tuple(heads.shape)}
    T1, D = keys.shape  # T + 1 positions, D numbers

    # the layout, in inches: q | K cache | weights | V cache | output, the new k and v under
    # their caches
    cw, ch, margin = 0.4, 0.26, 0.15
    x_q = margin + 0.05
    x_k = x_q + D * cw + 1.3
    x_w = x_k + D * cw + 0.35
    x_v = x_w + cw + 0.5
    x_o = x_v + D * cw + 1.35
    width = x_o + D * cw + margin + 0.1
    header, titles = 0.65, 0.5
    top = margin + 0.25 + ch + 0.7 + T1 * ch  # the grids' top (below them: the new k and v rows)
    height = top + titles + header + margin
    ax = canvas((width, height), ax)
    texts: list[Text] = []
    key_norm = Normalize(float(min(keys.min(), 0)), float(max(keys.max(), 0)))
    value_norm = Normalize(float(min(values.min(), 0)), float(max(values.max(), 0)))
    every = [(r, c) for r in range(T1) for c in range(D)]

    grids = {
        "keys": grid(ax, keys, x_k, top, norm=key_norm, cell=(cw, ch), written=every),
        "weights": grid(ax, w[:, None], x_w, top, norm=Normalize(0, 1), cell=(cw, ch),
                        written=[(r, 0) for r in range(T1)]),
        "values": grid(ax, values, x_v, top, norm=value_norm, cell=(cw, ch), written=every),
    }
    q_vec = q[0, h, 0].numpy()  # (D,)
    q_row = grid(ax, q_vec[None, :], x_q, top - (T1 // 2) * ch,
                 norm=Normalize(float(q_vec.min()), float(q_vec.max())), cell=(cw, ch),
                 written=[(0, c) for c in range(D)])
    grids["q"] = q_row
    below = top - T1 * ch - 0.7  # the new k and v rows' top
    grids["k"] = grid(ax, keys[-1:], x_k, below, norm=key_norm, cell=(cw, ch), written=[(0, c) for c in range(D)])
    grids["v"] = grid(ax, values[-1:], x_v, below, norm=value_norm, cell=(cw, ch),
                      written=[(0, c) for c in range(D)])
    o = heads[0, h, 0].numpy()
    grids["output"] = grid(ax, o[None, :], x_o, top - (T1 // 2) * ch,
                           norm=Normalize(float(o.min()), float(o.max())), cell=(cw, ch),
                           written=[(0, c) for c in range(D)])
    for g in grids.values():
        texts.extend(g.numbers.values())
    for name in ("keys", "values", "weights"):
        frame(ax, grids[name], T1 - 1)  # the appended row

    # positions, left of the key cache
    for r in range(T1):
        label = tr("{t} new", t=r) if r == T1 - 1 else str(r)
        texts.append(words(ax, x_k - 0.07, grids["keys"].row_y(r), label, size=SMALL, ha="right",
                           va="center"))
    # the new position's q, k, v, each with where it comes from
    t_new = T1 - 1
    for name, g, label in (("q", q_row, tr("query q = x_{t} W^Q", t=t_new)),
                           ("k", grids["k"], tr("key k = x_{t} W^K: appended", t=t_new)),
                           ("v", grids["v"], tr("value v = x_{t} W^V: appended", t=t_new))):
        texts.append(words(ax, (g.left + g.right) / 2, g.bottom - 0.06, label, size=SMALL, ha="center",
                           va="top"))
    for name in ("k", "v"):  # appended: up into the cache's last row
        g, cache_grid = grids[name], grids["keys" if name == "k" else "values"]
        xa = (g.left + g.right) / 2
        arrow(ax, (xa, g.top + 0.03), (xa, cache_grid.bottom - 0.03))
    # reading: q against every key, the weights against every value, the sum out
    arrow(ax, (q_row.right + 0.08, q_row.row_y(0)), (x_k - 0.62, q_row.row_y(0)))
    texts.append(words(ax, (q_row.right + x_k - 0.55) / 2, q_row.row_y(0) + 0.2,
                       tr("reads every key"), size=SMALL, ha="center", va="bottom"))
    arrow(ax, (grids["values"].right + 0.08, grids["output"].row_y(0)), (x_o - 0.08, grids["output"].row_y(0)))
    texts.append(words(ax, (grids["values"].right + x_o) / 2, grids["output"].row_y(0) + 0.2,
                       tr("weighted sum of\nevery value row"), size=SMALL, ha="center", va="bottom",
                       linespacing=1.3))
    texts.append(words(ax, (grids["output"].left + grids["output"].right) / 2, grids["output"].bottom - 0.06,
                       tr("output {shape}", shape=shape_text(shapes["output"])), size=SMALL, ha="center", va="top"))
    # titles above the caches and the weights
    for g, title in ((grids["keys"], tr("key cache") + "\n" + shape_text(shapes["keys before"]) + " \u2192 "
                      + shape_text(shapes["keys after"])),
                     (grids["weights"], tr("weights") + "\n" + shape_text(shapes["weights"])),
                     (grids["values"], tr("value cache") + "\n" + shape_text(shapes["keys before"]) + " \u2192 "
                      + shape_text(shapes["keys after"]))):
        texts.append(words(ax, (g.left + g.right) / 2, g.top + 0.06, title, size=SMALL, ha="center",
                           va="bottom", linespacing=1.3))
    g = grids["weights"]
    texts.append(words(ax, (g.left + g.right) / 2, g.bottom - 0.06, "softmax(q K^T / \u221aD)", size=SMALL,
                       ha="center", va="top"))
    texts.append(words(ax, margin, height - margin,
                       tr("One decoding step with a KV cache: position {t}, head {head} of {H}", t=t_new,
                           head=h + 1, H=mha.num_heads), size=WORDS + 1, ha="left", va="top"))
    texts.append(words(ax, margin, height - margin - 0.3,
                       tr("Computed this step: one row of q, k and v. Read: all {n} rows of both caches. "
                           "The caches' shapes are (B, H, T, D); the framed rows are new.", n=T1),
                        size=SMALL, ha="left", va="top"))
    return KVCacheDiagram(ax, h, shapes, q_vec, keys[-1], values[-1], keys, values, w,
                          o, grids, texts)
