"""The pattern explorer: hand-built heads (``attn.lessons.handbuilt.heads``) drawn as a grid of maps.

Controls: which pattern (diagonal, vertical, block, mixed, random), how many heads (1..8,
each a variant: another offset, key or segmentation), the mask (none, causal, padding),
d_k, the strength, whether scores are divided by sqrt(d_k), and how many tokens of
``attn.lessons.handbuilt.heads.TOKENS`` to use (3..12).

The d_k control follows ``attn.lessons.handbuilt.heads``' size convention: coordinates of RMS size
sqrt(strength), so an aligned pair scores strength * sqrt(d_k) after scaling
(strength * d_k without it) and an orthogonal pair scores 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_positive_int
from ..masks import causal_mask
from ..examples import TWO_SENTENCE_TOKENS as TOKENS
from ..lessons.handbuilt.heads import (
            HeadSpec,
            head_qk,
            head_specs,
            head_weights,
            segments_for,
)
from ..language import get_language, mark, tr
from ..lessons.pattern_scores import PatternProfile, pattern_profile
from ..drawing.plotting import new_figure, token_font
from ._base import Explorer, listing, options
from ._mapview import MapView

__all__ = [
    "map_boxes",
    "PATTERN_CHOICES",
    "PATTERN_MASKS",
    "D_K_CHOICES",
    "PatternHeads",
    "pattern_heads",
    "pattern_explorer",
]

PATTERN_CHOICES: tuple[str, ...] = (mark("diagonal"), mark("vertical"), mark("block"), mark("mixed"),
                                    mark("random"))
PATTERN_MASKS: tuple[str, ...] = (mark("none"), mark("causal"), mark("padding"))
D_K_CHOICES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
MAX_HEADS = 8
MIN_TOKENS, MAX_TOKENS = 3, len(TOKENS)


@dataclass(frozen=True)
class PatternHeads:
    """What the pattern explorer shows for one setting of its controls.

    Attributes:
        pattern, n_heads, n_tokens, d_k, strength, scaled, mask_kind: the inputs.
        tokens: n labels (padded keys read "[PAD]").
        titles: one short title per head.
        weights: (H, n, n) float64 attention maps.
        mask: (n, n) bool, True = may attend (all True for "none").
        aligned_score: the score of a perfectly aligned pair (c = 1).
        profiles: one ``PatternProfile`` per head (segments = phrases).
        notes: plain sentences about what limits the picture (small d_k, masking).
    """

    pattern: str
    n_heads: int
    n_tokens: int
    d_k: int
    strength: float
    scaled: bool
    mask_kind: str
    tokens: tuple[str, ...]
    titles: tuple[str, ...]
    weights: np.ndarray
    mask: np.ndarray
    aligned_score: float
    profiles: tuple[PatternProfile, ...]
    notes: tuple[str, ...]


def _mask(kind: str, n: int) -> tuple[torch.Tensor, tuple[str, ...], int]:
    """(n, n) bool mask (True = may attend), labels, number of padded keys."""
    tokens = list(TOKENS[:n])
    if kind == "none":
        return torch.ones(n, n, dtype=torch.bool), tuple(tokens), 0
    if kind == "causal":
        return causal_mask(n), tuple(tokens), 0
    n_pad = max(1, n // 4)
    keys = torch.arange(n) < n - n_pad  # (n,): the last n_pad keys are padding
    tokens[n - n_pad:] = ["[PAD]"] * n_pad
    return keys[None, :].expand(n, n).clone(), tuple(tokens), n_pad  # (1, n) -> (n, n)


def _name(spec: HeadSpec) -> str:
    """A head's name (``HeadSpec.name``, marked where it is written) in the current language;
    a random head's is "random {seed}"."""
    return tr("random {seed}", seed=spec.seed) if spec.kind == "random" else tr(spec.name)


def _title(spec: HeadSpec, tokens: tuple[str, ...], h: int) -> str:
    if spec.kind == "vertical":
        return tr("{h}: all → {token}", h=h + 1, token=tokens[spec.key % len(tokens)])
    return tr("{h}: {name}", h=h + 1, name=_name(spec))


def _notes(specs: tuple[HeadSpec, ...], n: int, d_k: int, strength: float,
           mask_kind: str, n_pad: int) -> tuple[str, ...]:
    notes = []
    kinds = {s.kind for s in specs}
    if strength == 0:
        notes.append(tr("strength 0: every q and k is the zero vector, so every score is 0 and "
                        "each row spreads evenly over the keys it may see."))
    if d_k == 1 and kinds & {"diagonal", "block"}:
        notes.append(tr("d_k = 1: one coordinate gives every position and every segment the same "
                        "direction, so diagonal and block heads are flat."))
    elif "diagonal" in kinds and 2 * d_k <= n + 2:
        notes.append(tr("d_k = {d_k}: the positional codes repeat every {period} positions, so a "
                        "key {period} places away looks the same as the aimed-at one.",
                        d_k=d_k, period=2 * d_k))
    if "block" in kinds:
        most = max(len(set(segments_for(s, n))) for s in specs if s.kind == "block")
        if most > d_k:
            notes.append(tr("d_k = {d_k} directions for up to {most} segments: some segments share "
                            "a direction and attend to each other.", d_k=d_k, most=most))
    flat = []  # block heads with every token but [CLS] in one segment: nothing to tell apart
    for h, spec in enumerate(specs):
        if spec.kind == "block":
            segments = segments_for(spec, n)
            if len({seg for tok, seg in zip(TOKENS[:n], segments) if tok != "[CLS]"}) == 1:
                flat.append(tr("{h} ({name})", h=h + 1, name=_name(spec)))
    if flat:
        which = (tr("head {h}", h=flat[0]) if len(flat) == 1
                 else tr("heads {heads}", heads=listing(flat)))
        notes.append(tr("{which}: with {n} tokens every token after [CLS] falls in one segment, so "
                        "the map is one flat block; more tokens start the next segment.",
                        which=which, n=n))
    if mask_kind == "causal":
        notes.append(tr("causal: a query sees only keys at or before it, so a head aiming ahead "
                        "(or at a later key) finds nothing there and spreads over what it may see."))
    if mask_kind == "padding":
        notes.append(tr("padding: the last {n_pad} key(s) are [PAD] and get weight 0; the [PAD] "
                        "queries still attend to the real tokens.", n_pad=n_pad))
    return tuple(notes)


def pattern_heads(pattern: str = "mixed", n_heads: int = 8, *, n_tokens: int = 8, d_k: int = 16,
                  strength: float = 1.0, scaled: bool = True, mask: str = "none") -> PatternHeads:
    """Build the hand-built heads of one pattern and their attention maps.

    Args:
        pattern: one of ``PATTERN_CHOICES``.
        n_heads: 1..8; head h is the pattern's h-th variant (``attn.lessons.handbuilt.heads.HEAD_VARIANTS``).
        n_tokens: 3..12, the first n of ``attn.lessons.handbuilt.heads.TOKENS``.
        d_k: query/key size, >= 1.
        strength: squared RMS size of a coordinate, >= 0.
        scaled: divide scores by sqrt(d_k).
        mask: one of ``PATTERN_MASKS``; the mask is bool (n, n), True = may attend.

    Returns:
        A ``PatternHeads`` (weights (H, n, n), read-only); its titles and notes are in the
        current language.
    """
    return _pattern_heads(pattern, n_heads, n_tokens, d_k, strength, scaled, mask, get_language())


@lru_cache(maxsize=256)
def _pattern_heads(pattern: str, n_heads: int, n_tokens: int, d_k: int, strength: float,
                   scaled: bool, mask: str, language: str) -> PatternHeads:
    """``pattern_heads``, cached per language (the titles and notes are words)."""
    if pattern not in PATTERN_CHOICES:
        raise ValueError(f"pattern: expected one of {PATTERN_CHOICES}, got {pattern!r}")
    if mask not in PATTERN_MASKS:
        raise ValueError(f"mask: expected one of {PATTERN_MASKS}, got {mask!r}")
    check_positive_int("n_tokens", n_tokens)
    if not MIN_TOKENS <= n_tokens <= MAX_TOKENS:
        raise ValueError(f"n_tokens: expected {MIN_TOKENS}..{MAX_TOKENS}, got {n_tokens}")
    check_positive_int("d_k", d_k)
    specs = head_specs(pattern, n_heads)
    n = n_tokens
    m, tokens, n_pad = _mask(mask, n)
    pairs = [head_qk(s, n, d_k, strength) for s in specs]
    q = torch.stack([p[0] for p in pairs])  # H x (n, d_k) -> (H, n, d_k)
    k = torch.stack([p[1] for p in pairs])  # (H, n, d_k)
    weights = head_weights(q, k, m[None], scaled=scaled).numpy()  # (1, n, n): one mask for every head -> (H, n, n)
    profiles = tuple(pattern_profile(w, segments_for(s, n))
                     for w, s in zip(weights, specs))
    mask_np = m.numpy()
    weights.setflags(write=False)  # cached and shared: read-only
    mask_np.setflags(write=False)
    return PatternHeads(
        pattern=pattern, n_heads=n_heads, n_tokens=n, d_k=d_k, strength=float(strength),
        scaled=scaled, mask_kind=mask, tokens=tokens,
        titles=tuple(_title(s, tokens, h) for h, s in enumerate(specs)),
        weights=weights, mask=mask_np,
        aligned_score=float(strength) * (math.sqrt(d_k) if scaled else d_k),
        profiles=profiles, notes=_notes(specs, n, d_k, float(strength), mask, n_pad),
    )


def _readout(s: PatternHeads) -> str:
    how = tr("strength · √d_k") if s.scaled else tr("strength · d_k (not scaled)")
    root = f"{math.sqrt(s.d_k):.2f}" if s.scaled else f"{s.d_k}"
    head = ("<p>" + tr("Score of an aligned pair (cosine 1) = {how} = {strength:.2f} · {root} = "
                       "<b>{score:.2f}</b>; an orthogonal pair scores 0. A gap of g in score is a "
                       "factor e<sup>g</sup> in weight.", how=how, strength=s.strength, root=root,
                       score=s.aligned_score) + "</p>")
    rows = "".join(
        f"<tr><td>{t}</td><td>{p.self_weight:.2f}</td><td>{p.top_key_label(s.tokens)} "
        f"({p.top_key_weight:.2f})</td><td>{p.segment_weight:.2f}</td><td>{p.max_weight:.2f}</td></tr>"
        for t, p in zip(s.titles, s.profiles))
    table = (f"<table><tr><th>{tr('head')}</th><th>{tr('weight on itself')}</th>"
             f"<th>{tr('most-attended key (mean)')}</th><th>{tr('weight inside own phrase')}</th>"
             f"<th>{tr('largest weight per row')}</th></tr>{rows}</table>")
    notes = "".join(f"<li>{n}</li>" for n in s.notes)
    return head + table + (f"<ul>{notes}</ul>" if notes else "")


FIGURE_INCHES = (10, 5.3)
# Around each map, in pixels (at 72 dpi): its query labels on the left, its title on top, its
# key labels (up to 12, rotated) below.
_LEFT, _RIGHT, _TOP, _BOTTOM = 54, 8, 20, 48


def map_boxes(n_heads: int) -> list[tuple[float, float, float, float]]:
    """Where the explorer draws ``n_heads`` square maps, as figure fractions (left, bottom,
    width, height), head 0 first, row by row: in the rows (1 or 2) that give the largest maps."""
    check_positive_int("n_heads", n_heads)
    width, height = FIGURE_INCHES[0] * 72, FIGURE_INCHES[1] * 72

    def side(rows: int) -> float:
        cols = math.ceil(n_heads / rows)
        return min(width / cols - _LEFT - _RIGHT, height / rows - _TOP - _BOTTOM)

    rows = max((1, 2), key=side)  # (a tie: one row)
    cols, s = math.ceil(n_heads / rows), side(rows)
    boxes = []
    for h in range(n_heads):
        r, c = divmod(h, cols)
        x = c * width / cols + (width / cols - s + _LEFT - _RIGHT) / 2
        y = height - (r + 1) * height / rows + (height / rows - s + _BOTTOM - _TOP) / 2
        boxes.append((x / width, y / height, s / width, s / height))
    return boxes


def pattern_explorer(pattern: str = "mixed", n_heads: int = 8, *, n_tokens: int = 8,
                     d_k: int = 16, strength: float = 1.0, scaled: bool = True,
                     mask: str = "none") -> Explorer:
    """A grid of up to 8 hand-built heads (rows = queries, columns = keys), redrawn in place.

    Eight ``MapView``s (cells, token labels and title, all live bitmap artists that fill their
    axes whatever the number of tokens); the first ``n_heads`` are drawn, laid out for that
    many (``map_boxes``: one head fills the picture, eight make a 2 x 4 grid). The figure
    holds nothing else, so no move, not even one of the head count, the tokens or the mask,
    redraws the whole figure: a new head count only moves the maps' boxes.

    Returns:
        An ``Explorer`` with ``.maps`` (8 ``MapView``s, the first ``n_heads`` drawn).
    """
    first = pattern_heads(pattern, n_heads, n_tokens=n_tokens, d_k=d_k, strength=strength,
                          scaled=scaled, mask=mask)  # validates every argument
    if d_k not in D_K_CHOICES:
        raise ValueError(f"d_k: expected one of {D_K_CHOICES}, got {d_k}")
    controls = {
        "pattern": widgets.Dropdown(options=options(PATTERN_CHOICES), value=pattern,
                                    description=tr("pattern"), layout=widgets.Layout(width="200px")),
        "n_heads": widgets.IntSlider(value=n_heads, min=1, max=MAX_HEADS, description=tr("heads"),
                                     continuous_update=True),
        "mask": widgets.Dropdown(options=options(PATTERN_MASKS), value=mask, description=tr("mask"),
                                 layout=widgets.Layout(width="180px")),
        "d_k": widgets.SelectionSlider(options=D_K_CHOICES, value=d_k, description="d_k",
                                       continuous_update=True),
        "strength": widgets.FloatSlider(value=strength, min=0.0, max=2.0, step=0.05,
                                        description=tr("strength"), continuous_update=True),
        "scaled": widgets.Checkbox(value=scaled, description=tr("divide by √d_k")),
        "n_tokens": widgets.IntSlider(value=n_tokens, min=MIN_TOKENS, max=MAX_TOKENS,
                                      description=tr("tokens"), continuous_update=True),
    }
    fig = new_figure(*FIGURE_INCHES, dpi=72)
    # Chinese labels side by side overlap: stand them up (rotate).
    maps = [MapView(fig.add_axes((0, 0, 0, 0)), font=token_font(8), rotate=True, title_font=token_font(9))
            for _ in range(MAX_HEADS)]
    shown = {"heads": first.n_heads}

    def update(pattern: str, n_heads: int, mask: str, d_k: int, strength: float, scaled: bool,
               n_tokens: int) -> tuple[PatternHeads, str]:
        s = pattern_heads(pattern, n_heads, n_tokens=n_tokens, d_k=d_k, strength=float(strength),
                          scaled=bool(scaled), mask=mask)
        boxes = map_boxes(s.n_heads)
        for h, m in enumerate(maps):  # a map not drawn keeps an empty box
            m.ax.set_position(boxes[h] if h < s.n_heads else (0, 0, 0, 0))
        for h in range(s.n_heads):
            maps[h].set(s.weights[h], x_tokens=s.tokens, title=s.titles[h])
        shown["heads"] = s.n_heads
        return s, _readout(s)

    def live() -> list:
        return [a for m in maps[:shown["heads"]] for a in m.artists()]

    explorer = Explorer(controls, fig, update, live,
                        title=tr("Attention patterns from hand-built queries and keys"), maps=maps)
    return explorer
