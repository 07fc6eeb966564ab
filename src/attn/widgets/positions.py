"""Slide the sentence along: which position scheme notices where it stands, and its order?

The chapter's six words, with seeded random embeddings and projections (d = 16), are placed at
positions shift .. shift + 5, in their order or reversed. Three schemes: no positions at all,
sinusoidal codes added to the input, or RoPE applied to queries and keys. The picture puts the
attention map at shift 0 beside the map now, and their difference, rows and columns always by
word (so a reversed sentence is compared word for word).

What moving it shows: with RoPE the map never changes as the sentence slides (scores depend on
the distance between words only), but reversing the words changes it; with added codes both
sliding and reversing change it; with no positions neither does: that model cannot tell order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_choice, check_int
from ..examples import SENTENCE
from ..functional import scaled_dot_product_attention
from ..language import mark, tr
from ..positions import apply_rope, sinusoidal
from ..drawing.plotting import new_figure, text_font, token_font
from ._base import Explorer, options
from ._mapview import MapView

__all__ = ["ENCODINGS", "ORDERS", "MAX_SHIFT", "ShiftView", "shift_view", "positions_explorer"]

ENCODINGS = (mark("none"), mark("sinusoidal, added"), mark("RoPE"))
ORDERS = (mark("as written"), mark("reversed"))
MAX_SHIFT = 60
_D = 16


@lru_cache(maxsize=1, typed=True)
def _setup() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(9)
    x = torch.randn(len(SENTENCE), _D, dtype=torch.float64, generator=g)  # (6, d) the words
    w_q = torch.randn(_D, _D, dtype=torch.float64, generator=g) / math.sqrt(_D)
    w_k = torch.randn(_D, _D, dtype=torch.float64, generator=g) / math.sqrt(_D)
    return x, w_q, w_k


@lru_cache(maxsize=512, typed=True)
def _weights(encoding: str, shift: int, order: str) -> np.ndarray:
    """(6, 6) weights, rows and columns by word (SENTENCE order), whatever order they stand in."""
    x, w_q, w_k = _setup()
    n = len(SENTENCE)
    perm = list(range(n)) if order == "as written" else list(range(n))[::-1]  # word at each slot
    words = x[perm]  # (n, d): slot s holds word perm[s]
    pos = torch.arange(shift, shift + n)  # (n,) positions of the slots
    if encoding == "sinusoidal, added":
        words = words + sinusoidal(shift + n, _D)[shift:]
    q, k = words @ w_q, words @ w_k  # (n, d)
    if encoding == "RoPE":
        q, k = apply_rope(q, pos), apply_rope(k, pos)
    _, w = scaled_dot_product_attention(q, k, k)  # (n, n) weights by slot (the values are not drawn)
    back = torch.tensor(np.argsort(perm))  # slot of each word
    return w[back][:, back].numpy()  # by word


@dataclass(frozen=True)
class ShiftView:
    """The numbers behind the picture.

    Attributes:
        encoding, shift, order: the inputs.
        reference: (6, 6) weights at shift 0, as written; now: at this shift and order;
        difference: now - reference; largest: max |difference|.
    """

    encoding: str
    shift: int
    order: str
    reference: np.ndarray
    now: np.ndarray
    difference: np.ndarray
    largest: float


def shift_view(encoding: str = "RoPE", shift: int = 0, order: str = "as written") -> ShiftView:
    """The attention map of the sentence placed at ``shift``, against the one at shift 0."""
    check_choice("encoding", encoding, ENCODINGS)
    shift = check_int("shift", shift, low=0, high=MAX_SHIFT)
    check_choice("order", order, ORDERS)
    ref = _weights(encoding, 0, "as written")
    now = _weights(encoding, shift, order)
    diff = now - ref
    return ShiftView(encoding, shift, order, ref, now, diff, float(np.abs(diff).max()))


def _readout(v: ShiftView) -> str:
    if v.largest < 1e-12:
        verdict = tr("the map has not changed at all")
    else:
        verdict = tr("the map changed: the largest weight moved by {largest:.3f}", largest=v.largest)
    if v.encoding == "none":
        why = tr("With no positions the words carry no place at all: sliding and reversing change "
                 "nothing, so this model cannot tell 小明 学习 from 学习 小明.")
    elif v.encoding == "sinusoidal, added":
        why = tr("Added codes tell each word where it is: sliding the sentence or reversing it "
                 "changes every score.")
    else:
        why = tr("RoPE scores depend on the distance between two words only: sliding the whole "
                 "sentence keeps every distance, reversing the words does not.")
    return ("<p>" + tr("<b>{encoding}</b>, sentence at positions {start}..{end}, {order}: {verdict} "
                       "(largest |difference| = {largest:.2e}).", encoding=tr(v.encoding),
                       start=v.shift, end=v.shift + 5, order=tr(v.order), verdict=verdict,
                       largest=v.largest) + f"<br>{why}</p>")


def positions_explorer(encoding: str = "RoPE", shift: int = 0, order: str = "as written") -> Explorer:
    """Controls: the position scheme, where the sentence starts, its order. Three maps: at shift
    0 (as written), now, and now minus shift 0.

    Returns:
        An ``Explorer``; ``.maps`` is name -> ``MapView`` ("reference", "now", "difference").
    """
    first = shift_view(encoding, shift, order)  # validates the arguments
    fig = new_figure(10, 3.6, dpi=72)
    font = token_font(8)
    boxes = ((0.06, 0.2, 0.22, 0.64), (0.36, 0.2, 0.22, 0.64), (0.66, 0.2, 0.22, 0.64))
    title_font = text_font(9)
    reference = MapView(fig.add_axes(boxes[0]), font=font, numbers=True, number_size=7, rotate=True,
                        title_font=title_font)
    now = MapView(fig.add_axes(boxes[1]), font=font, numbers=True, number_size=7, rotate=True,
                  title_font=title_font)
    difference = MapView(fig.add_axes(boxes[2]), cmap="PuOr", clim=(-0.3, 0.3), font=font, numbers=True,
                         number_size=7, fmt="{:+.2f}", rotate=True, title_font=title_font)
    difference.colorbar(fig.add_axes((0.9, 0.2, 0.012, 0.64))).set_label(tr("difference"),
                                                                         fontproperties=text_font(10))

    def update(encoding: str, shift: int, order: str) -> tuple[ShiftView, str]:
        v = shift_view(encoding, shift, order)
        reference.set(v.reference, x_tokens=SENTENCE, title=tr("at positions 0..5, as written"))
        now.set(v.now, x_tokens=SENTENCE, title=tr("at {start}..{end}, {order}", start=v.shift,
                                                   end=v.shift + 5, order=tr(v.order)))
        difference.set(v.difference, x_tokens=SENTENCE,
                       title=tr("now - before: max {largest:.2f}", largest=v.largest))
        return v, _readout(v)

    def live() -> list:
        return [*reference.artists(), *now.artists(), *difference.artists()]

    controls = {
        "encoding": widgets.Dropdown(options=options(ENCODINGS), value=first.encoding,
                                     description=tr("positions")),
        "shift": widgets.IntSlider(value=first.shift, min=0, max=MAX_SHIFT, description=tr("start at"),
                                   continuous_update=True),
        "order": widgets.ToggleButtons(options=options(ORDERS), value=first.order, description=tr("order")),
    }
    explorer = Explorer(controls, fig, update, live,
                        title=tr("Slide the sentence along: does the attention map notice?"),
                        maps={"reference": reference, "now": now, "difference": difference})
    return explorer
