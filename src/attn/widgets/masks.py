"""The mask explorer: a mask, a fill choice, and what the softmax makes of them.

Controls: the mask (none, causal, padding, causal + left padding — the last leaves the first
queries with no key they may see), the sequence length (2..12) and the fill used for
blocked scores: the chapter's ``-inf``, the article's ``-1e9`` or the package's
``masked_softmax``. A fully blocked row comes out as NaN, as uniform weights, or as zeros.

Mask convention: bool, **True = may attend**.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import matplotlib
import torch

from .._checks import check_positive_int
from ..functional import masked_softmax, softmax_with_fill
from ..language import mark, tr
from ..masks import causal_mask, padding_mask
from ..drawing.plotting import new_figure, text_font
from ._base import Explorer, options
from ._mapview import MapView

__all__ = ["MASK_KINDS", "FILLS", "MAX_LEN", "MaskedMap", "mask_and_tokens", "masked_map",
           "mask_explorer"]

MASK_KINDS: tuple[str, ...] = (mark("none"), mark("causal"), mark("padding"), mark("causal + left padding"))
#: Fill choices: the chapter's, the article's, the package's.
FILLS: tuple[str, ...] = (mark("-inf"), mark("-1e9"), mark("package"))
MAX_LEN = 12
_BLOCKED_TEXT = {"-inf": "-inf", "-1e9": "-1e9", "package": "×"}


@dataclass(frozen=True)
class MaskedMap:
    """Scores, mask and weights for one (mask kind, length, fill).

    Attributes:
        kind, length, fill: the inputs.
        tokens: L labels; padded positions read "[PAD]".
        scores: (L, L) float64 scores before masking (seeded, the same for every fill).
        mask: (L, L) bool, True = may attend.
        weights: (L, L) the softmax under this fill (may hold NaN for "-inf").
        blocked_rows: queries whose mask allows no key.
        nan_rows: rows of ``weights`` that contain NaN.
        row_sums: the sum of each row of ``weights`` (NaN for a NaN row).
        n_blocked: number of blocked (query, key) cells.
        fills_agree: the largest difference between the three fills over the rows that have
            an allowed key (0.0 means they agree exactly there).
    """

    kind: str
    length: int
    fill: str
    tokens: tuple[str, ...]
    scores: torch.Tensor
    mask: torch.Tensor
    weights: torch.Tensor
    blocked_rows: tuple[int, ...]
    nan_rows: tuple[int, ...]
    row_sums: tuple[float, ...]
    n_blocked: int
    fills_agree: float


@lru_cache(maxsize=4, typed=True)
def _score_table(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(MAX_LEN, MAX_LEN, generator=g, dtype=torch.float64)  # (12, 12)


def mask_and_tokens(kind: str, length: int) -> tuple[torch.Tensor, tuple[str, ...]]:
    """The (L, L) mask of one kind and the position labels.

    "padding" pads the last max(1, L // 3) keys on the right (every query may still see the
    real tokens); "causal + left padding" pads the first max(1, L // 3) positions and adds
    the causal rule, so each of the first queries sees only padding: a fully blocked row.

    Returns:
        mask (L, L) bool, True = may attend; tokens (L labels, "[PAD]" for padding).
    """
    if kind not in MASK_KINDS:
        raise ValueError(f"kind: expected one of {MASK_KINDS}, got {kind!r}")
    check_positive_int("length", length)
    if length > MAX_LEN:
        raise ValueError(f"length: expected 1..{MAX_LEN}, got {length}")
    L = length
    n_pad = max(1, L // 3)
    tokens = [str(i) for i in range(L)]
    if kind == "none":
        return torch.ones(L, L, dtype=torch.bool), tuple(tokens)
    if kind == "causal":
        return causal_mask(L), tuple(tokens)
    if kind == "padding":
        keys = padding_mask([L - n_pad], L)[0, 0]  # (1, 1, 1, L) -> (1, L)
        tokens[L - n_pad:] = ["[PAD]"] * n_pad
        return keys.expand(L, L).clone(), tuple(tokens)  # (1, L) -> (L, L)
    keys = torch.arange(L) >= n_pad  # (L,): the first n_pad positions are padding
    tokens[:n_pad] = ["[PAD]"] * n_pad
    return causal_mask(L) & keys[None, :], tuple(tokens)  # (L, L) & (1, L) -> (L, L)


def _weights(scores: torch.Tensor, mask: torch.Tensor, fill: str) -> torch.Tensor:
    if fill == "package":
        return masked_softmax(scores, mask)
    return softmax_with_fill(scores, mask, float(fill))


@lru_cache(maxsize=128, typed=True)
def masked_map(kind: str = "causal", length: int = 6, fill: str = "package", *,
               seed: int = 0) -> MaskedMap:
    """Softmax of seeded scores (L, L) under a mask and a fill choice.

    Args:
        kind: one of ``MASK_KINDS``.
        length: L, 1..12.
        fill: "-inf" (the chapter: ``masked_fill(mask == 0, float('-inf'))``), "-1e9" (the
            article) or "package" (``attn.masked_softmax``: a fully blocked row -> zeros).
        seed: seeds the scores (standard normal, the top-left L x L of one 12 x 12 table).

    Returns:
        A ``MaskedMap``.
    """
    if fill not in FILLS:
        raise ValueError(f"fill: expected one of {FILLS}, got {fill!r}")
    mask, tokens = mask_and_tokens(kind, length)
    scores = _score_table(seed)[:length, :length].clone()  # (L, L)
    weights = _weights(scores, mask, fill)  # (L, L)
    has_key = mask.any(-1)  # (L,)
    all_fills = torch.stack([_weights(scores, mask, f) for f in FILLS])  # (3, L, L)
    ok = all_fills[:, has_key]  # (3, L', L)
    agree = (ok - ok[0]).abs().max().item() if ok.numel() else 0.0
    nan_rows = tuple(int(i) for i in torch.nonzero(weights.isnan().any(-1)).flatten())
    return MaskedMap(
        kind=kind, length=length, fill=fill, tokens=tokens, scores=scores, mask=mask,
        weights=weights,
        blocked_rows=tuple(int(i) for i in torch.nonzero(~has_key).flatten()),
        nan_rows=nan_rows,
        row_sums=tuple(weights.sum(-1).tolist()),
        n_blocked=int((~mask).sum()),
        fills_agree=agree,
    )


def _readout(m: MaskedMap) -> str:
    L = m.length
    lines = [tr("{kind}, L = {L}: {blocked} of {cells} (query, key) cells blocked.", kind=tr(m.kind),
                L=L, blocked=m.n_blocked, cells=L * L)]
    if not m.blocked_rows:
        lines.append(tr("Every query has at least one key it may see: the three fills give the same "
                        "weights (largest difference {difference:.1e}).", difference=m.fills_agree))
    else:
        rows = ", ".join(str(i) for i in m.blocked_rows)
        lines.append(tr("Row(s) {rows}: every key blocked.", rows=rows))
        if m.fill == "-inf":
            lines.append(tr("Fill -inf: softmax of a row of -inf is 0/0 = <b>NaN</b>. The NaN flows "
                            "into the output (weights @ V) and into the loss and its gradients."))
        elif m.fill == "-1e9":
            lines.append(tr("Fill -1e9: every score of the row is -1e9, so the row is <b>uniform</b>, "
                            "1/{L} = {share:.3f} per key: the query reads the padding as if it were "
                            "text.", L=L, share=1 / L))
        else:
            lines.append(tr("Package (masked_softmax): the row is <b>zeros</b>: the query reads "
                            "nothing and its attention output is zero."))
        if m.fills_agree == 0.0:
            lines.append(tr("The other rows are identical under all three fills."))
        else:
            lines.append(tr("The other rows differ across fills by at most {difference:.1e}.",
                            difference=m.fills_agree))
    sums = ", ".join("NaN" if math.isnan(s) else f"{s:.2f}" for s in m.row_sums)
    lines.append(tr("Row sums: {sums}.", sums=sums))
    lines.append(tr("Left: scores, blocked cells show what is written there "
                    "(× = skipped by masked_softmax). Right: weights."))
    return "<br>".join(lines)


def _fmt_score(v: float) -> str:
    text = f"{v:.1f}"
    return "0.0" if text == "-0.0" else text


def mask_explorer(kind: str = "causal + left padding", length: int = 6,
                  fill: str = "-inf") -> Explorer:
    """Mask kind, length 2..12 and fill: the scores and the softmaxed map, annotated.

    Both maps are ``MapView``s: cells, the text in each cell, the token labels and the
    titles are live bitmap artists, so no move redraws the whole figure.

    Returns:
        An ``Explorer``; ``.maps["scores"|"weights"]`` are the two ``MapView``s:
        ``.cells.values`` / ``.cells.blocked`` what the cells show, ``.cells.text.strings``
        the text of every cell (rows = queries), e.g. "NaN", "-inf" or "0.25", and
        ``.labels`` the token labels.
    """
    masked_map(kind, length, fill)  # validates the arguments
    if length < 2:
        raise ValueError(f"length: expected 2..{MAX_LEN} for the explorer, got {length}")
    controls = {
        "kind": widgets.Dropdown(options=options(MASK_KINDS), value=kind, description=tr("mask"),
                                 layout=widgets.Layout(width="260px")),
        "length": widgets.IntSlider(value=length, min=2, max=MAX_LEN, description=tr("length"),
                                    continuous_update=True),
        "fill": widgets.ToggleButtons(options=options(FILLS), value=fill, description=tr("fill")),
    }
    fig = new_figure(10, 4.6, dpi=72)
    # A fixed layout with room for 12 rotated labels: no layout engine to run per redraw.
    fig.subplots_adjust(left=0.075, right=0.99, bottom=0.12, top=0.93, wspace=0.16)
    ax_s, ax_w = fig.subplots(1, 2)
    # Scores: a diverging map (blue below 0, red above), blocked cells grey with the fill
    # written in them. Weights: light to dark blue; NaN is pink and says "NaN".
    map_s = MapView(ax_s, cmap="RdBu_r", clim=(-3.0, 3.0), numbers=True, label_size=9, title_size=12,
                    title_font=text_font(12))
    map_w = MapView(ax_w, cmap=matplotlib.colormaps["Blues"].with_extremes(bad="#f4a3a3"),
                    numbers=True, label_size=9, title_size=12, title_font=text_font(12))

    def update(kind: str, length: int, fill: str) -> tuple[MaskedMap, str]:
        m = masked_map(kind, length, fill)
        blocked = ~m.mask.numpy()  # blocked: the fill replaces the score
        scores = [[_BLOCKED_TEXT[fill] if b else _fmt_score(v) for b, v in zip(brow, srow)]
                  for brow, srow in zip(blocked.tolist(), m.scores.tolist())]
        rotate = m.length > 8
        map_s.set(m.scores, blocked=blocked, strings=scores, x_tokens=m.tokens, rotate=rotate,
                  title=tr("scores (query ↓, key →; blocked: the fill)"))
        how = "attn.masked_softmax" if fill == "package" else tr("fill {fill}", fill=fill)
        map_w.set(m.weights, x_tokens=m.tokens, rotate=rotate, title=tr("weights, {how}", how=how))
        return m, _readout(m)

    def live() -> list:
        return [*map_s.artists(), *map_w.artists()]

    explorer = Explorer(controls, fig, update, live, title=tr("Masks and what a blocked row becomes"),
                        maps={"scores": map_s, "weights": map_w})
    return explorer
