"""How a head's attention pattern is measured: a pattern is a set of (query, key) cells, and a
head's score is the share of its attention that falls on them.

The chapter names the common patterns (常见的注意力模式) seen in trained models: diagonal
(对角线模式), vertical (垂直模式) and block (块状模式). Each is a bool mask here, rows =
queries i, columns = keys j, **True = a cell of the pattern**:

=============  ===============================================================
pattern        cells
=============  ===============================================================
diagonal       |i - j| <= 1: the token itself and its two neighbours
anti-diagonal  j = L - 1 - i: the mirrored position
previous       j = i - 1: the token before (one half of the diagonal band)
next           j = i + 1: the token after (the other half)
vertical       j = key: one column, every query on the same key (such as [CLS])
block          i and j in the same segment (word, phrase or sentence)
=============  ===============================================================

A head's **pattern score** on one map is the weight inside the mask, averaged over the query
rows that can score: rows with at least one cell in the mask (the first token has no previous
token) and with some weight at all (a query that may attend to nothing has a row of zeros).
Each row of weights sums to 1, so the score lies in [0, 1]: 1 means the head attends only to
the pattern; a head that spreads its weight evenly scores the mask's share of each row.

Shape legend: L queries, S keys (L = S in self-attention), and any leading dims before them
(B examples, N layers, H heads).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .._checks import (check_bool, check_bool_tensor, check_choice, check_float, check_int,
                       check_min_rank, check_positive_int, check_rank, check_tensor, shape_str,
                       to_numpy)
from ..language import mark

__all__ = [
    "PATTERNS",
    "pattern_mask",
    "check_segments",
    "pattern_score",
    "head_scores",
    "TIE_TOLERANCE",
    "PatternProfile",
    "pattern_profile",
]

#: Every pattern ``pattern_mask`` builds: name -> its cells (in English, marked for the
#: catalogue: shown as ``attn.language.tr(PATTERNS[name])``).
PATTERNS: dict[str, str] = {
    "diagonal": mark("|i - j| <= 1: the token itself and its two neighbours"),
    "anti-diagonal": mark("j = L - 1 - i: the mirrored position"),
    "previous": mark("j = i - 1: the token before"),
    "next": mark("j = i + 1: the token after"),
    "vertical": mark("j = key: one column (key 0, the first token, by default)"),
    "block": mark("i and j in the same segment"),
}


def check_segments(segments: object, seq_len: int | None = None) -> Tensor:
    """Segment ids as a long tensor (L,) or (B, L): from a tensor or a list of ints, with last
    dim ``seq_len`` if one is given (also used by the hand-built block heads)."""
    if segments is None:
        raise TypeError("segments: expected a (L,) or (B, L) tensor or a list of ints (one "
                        "segment id per token), got None")
    if isinstance(segments, (list, tuple)):
        if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in segments):
            raise TypeError(f"segments: expected ints (one segment id per token), got {segments!r}")
        segments = torch.tensor(list(segments), dtype=torch.long)
    check_tensor("segments", segments)
    check_rank("segments", segments, (1, 2), "(L,) or (B, L)")
    if segments.is_floating_point() or segments.dtype == torch.bool:
        raise TypeError(f"segments: expected an integer tensor, got dtype {segments.dtype}")
    if segments.shape[-1] == 0 or (seq_len is not None and segments.shape[-1] != seq_len):
        want = "L >= 1" if seq_len is None else f"L={seq_len}"
        raise ValueError(f"segments: expected last dim {want}, got shape {shape_str(segments)}")
    return segments


def pattern_mask(pattern: str, seq_len: int, *, segments: Sequence[int] | Tensor | None = None,
                 key: int = 0, include_self: bool = True) -> Tensor:
    """The cells of one pattern (see ``PATTERNS``), True = a cell of the pattern.

    Args:
        pattern: a name of ``PATTERNS``.
        seq_len: L, the number of tokens (queries = keys).
        segments: for "block": the segment id of each position, (L,) or (B, L) (a tensor or a
            list of ints). A negative id belongs to no segment (e.g. [CLS] and [SEP]).
        key: for "vertical": the key every query looks at; negative counts from the end
            (-1 = the last token, such as the final [SEP]).
        include_self: for "block": whether a token's own cell counts (False = only the *other*
            tokens of its segment, so that a head looking at itself is not a block head).

    Returns:
        (L, L) bool, or (B, L, L) for "block" with (B, L) segments.
    """
    check_choice("pattern", pattern, tuple(PATTERNS))
    L = check_positive_int("seq_len", seq_len)
    i = torch.arange(L)
    query, keys = i[:, None], i[None, :]  # (L, 1) and (1, L): they broadcast to (L, L)
    if pattern == "diagonal":
        return (query - keys).abs() <= 1
    if pattern == "anti-diagonal":
        return query + keys == L - 1
    if pattern == "previous":
        return keys == query - 1
    if pattern == "next":
        return keys == query + 1
    if pattern == "vertical":
        key = check_int("key", key, low=-L, high=L - 1) % L
        return (keys == key).expand(L, L)  # (1, L) -> (L, L)
    seg = check_segments(segments, L)
    check_bool("include_self", include_self)
    same = seg[..., :, None] == seg[..., None, :]  # (..., L, 1) vs (..., 1, L) -> (..., L, L)
    in_a_segment = (seg >= 0)[..., :, None]  # (..., L, 1): a negative id is in no segment
    mask = same & in_a_segment
    return mask if include_self else mask & (query != keys)


def pattern_score(weights: Tensor, mask: Tensor) -> Tensor:
    """A head's score for a pattern, per map: the weight inside ``mask``, averaged over the query
    rows that have a cell in the mask and some weight at all (see the module docstring).

    Args:
        weights: (..., L, S) attention weights, e.g. (H, L, S), (B, H, L, S) or (N, H, L, S).
        mask: bool, True = a cell of the pattern: (L, S) for every map, or one mask per map with
            as many dims as ``weights`` (e.g. (B, 1, L, S): one per example, the same for every
            head).

    Returns:
        (...) one score per map, in [0, 1]; 0 for a map none of whose rows can score.
    """
    check_float("weights", weights)
    check_min_rank("weights", weights, 2, "(..., L, S)")
    check_bool_tensor("mask", mask, convention="True = a cell of the pattern")
    L, S = weights.shape[-2:]
    fits = mask.dim() in (2, weights.dim()) and mask.shape[-2:] == (L, S) and all(
        m in (1, w) for m, w in zip(mask.shape[:-2], weights.shape[:-2]))
    if not fits:
        raise ValueError(f"mask: expected shape (L, S) = {(L, S)}, or {weights.dim()} dims that "
                         f"broadcast to weights {shape_str(weights)}, got shape {shape_str(mask)}")
    inside = (weights * mask).sum(-1)  # (..., L): each row's weight on the pattern
    scoring = mask.any(-1) & (weights.sum(-1) > 0)  # (..., L): rows that can score
    count = scoring.sum(-1)  # (...)
    total = (inside * scoring).sum(-1)  # (...)
    return torch.where(count > 0, total / count.clamp(min=1), torch.zeros_like(total))


def head_scores(weights: Tensor, masks: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """``pattern_score`` for several patterns at once: name -> (...) scores.

    Args:
        weights: (..., L, S) attention weights, e.g. (N, H, L, L) for N layers of H heads.
        masks: pattern name -> bool mask (see ``pattern_score``).
    """
    if not isinstance(masks, Mapping):
        raise TypeError(f"masks: expected a dict of pattern name -> bool mask, got {type(masks).__name__}")
    return {name: pattern_score(weights, m) for name, m in masks.items()}


#: Mean weights closer than this are a tie: far above float64 round-off (about 1e-16 on a
#: weight), far below any difference the course prints (two decimals).
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PatternProfile:
    """Numbers that read one map (L, S); averages over the rows that attend somewhere.

    Attributes:
        self_weight: mean weight a query gives to its own position (the diagonal).
        top_keys: the key with the largest mean weight (a vertical stripe if that weight is
            high), or every key that ties with it: two keys whose mean weights differ by less
            than ``TIE_TOLERANCE`` are equal up to round-off, and which of them an argmax picks
            would depend on the CPU.
        top_key_weight: that mean weight.
        segment_weight: mean weight a query keeps inside its own segment (None without
            segments); 1 = a perfect block pattern.
        max_weight: mean over rows of the row's largest weight (1/S = flat, 1 = one-hot).
    """

    self_weight: float
    top_keys: tuple[int, ...]
    top_key_weight: float
    segment_weight: float | None
    max_weight: float

    def top_key_label(self, tokens: Sequence[str]) -> str:
        """The most-attended key by name: ``"[CLS]"``, or ``"小明 = 人工智能"`` for a tie."""
        if len(tokens) <= max(self.top_keys):
            raise ValueError(f"tokens: expected at least {max(self.top_keys) + 1} tokens "
                             f"(one per key), got {len(tokens)}")
        return " = ".join(str(tokens[k]) for k in self.top_keys)


def pattern_profile(weights: Tensor | np.ndarray,
                    segments: Sequence[int] | None = None) -> PatternProfile:
    """How diagonal, vertical and block-like one map is, in pattern scores.

    Args:
        weights: (L, S) attention weights (rows = queries, columns = keys), tensor or array.
        segments: optional segment id per token (needs L == S), for ``segment_weight``.

    Returns:
        A ``PatternProfile``. Rows of zeros (queries that may attend to nothing) are left out;
        if every row is zero, every number is 0 and every key ties.
    """
    w = torch.tensor(to_numpy("weights", weights, ndim=2))  # (L, S) float64, a copy
    L, S = w.shape
    if segments is not None and L != S:
        raise ValueError(f"segments: expected a square (L, L) map, got weights of shape ({L}, {S})")
    block = None if segments is None else pattern_mask("block", L, segments=segments)
    live = w.sum(-1) > 0  # (L,)
    if not live.any():
        return PatternProfile(0.0, tuple(range(S)), 0.0, None if block is None else 0.0, 0.0)
    columns = w[live].mean(0)  # (S,): mean weight on each key
    best = columns.max()
    tied = torch.nonzero(columns > best - TIE_TOLERANCE).flatten()  # every key within the tolerance
    return PatternProfile(
        self_weight=pattern_score(w, torch.eye(L, S, dtype=torch.bool)).item(),
        top_keys=tuple(tied.tolist()),
        top_key_weight=best.item(),
        segment_weight=None if block is None else pattern_score(w, block).item(),
        max_weight=w[live].amax(-1).mean().item(),
    )
