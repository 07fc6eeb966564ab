"""Hand-built heads: the queries and keys behind the three common attention patterns.

The chapter names three patterns seen in trained models: **diagonal** (each token attends to
itself or a neighbour), **vertical** (one key, such as [CLS], is attended to by every query)
and **block** (tokens attend within their own phrase or sentence). Each builder here writes
down a Q and a K that produce one of them, so a learner can see *what in Q and K* makes it.

The size convention (used by every builder, and by the pattern explorer):
    Every hand-built q_i and k_j has d_k coordinates of root-mean-square size sqrt(strength),
    so ||q_i||^2 = ||k_j||^2 = strength * d_k. A head is then fixed by the cosines c_ij between
    q_i and k_j (1 = same direction, 0 = orthogonal), and

        q_i . k_j            = strength * d_k       * c_ij
        q_i . k_j / sqrt(d_k) = strength * sqrt(d_k) * c_ij      (the Transformer's score)

    This is the assumption behind the sqrt(d_k) argument (coordinates of size about 1, however
    many there are): spreading the same pattern over more coordinates makes an aligned pair's
    score grow like sqrt(d_k) after scaling (like d_k without it), while two random vectors'
    scaled score keeps the same spread at every d_k.

Shape legend: n tokens (L = S = n for self-attention), d_k the query/key size, H heads.
Returned tensors are float64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from .._checks import check_positive_int, check_tensor
from ..functional import scaled_dot_product_attention

__all__ = [
    "TOKENS",
    "PHRASES",
    "SENTENCES",
    "SENTENCE_PHRASES",
    "directions",
    "diagonal_qk",
    "vertical_qk",
    "block_qk",
    "random_qk",
    "head_weights",
    "PatternProfile",
    "pattern_profile",
    "HeadSpec",
    "HEAD_VARIANTS",
    "head_specs",
    "segments_for",
    "head_qk",
]

#: A two-sentence input with BERT-style special tokens: the chapter's sentence, then the
#: chapter's closing line shortened to 自注意力 是 灵魂 ("self-attention is the soul").
TOKENS: tuple[str, ...] = ("[CLS]", "小明", "在", "北京", "大学", "学习", "人工智能", "[SEP]",
                           "自注意力", "是", "灵魂", "[SEP]")
#: Phrase of each token of ``TOKENS``: [CLS] | 小明 | 在 北京 大学 | 学习 人工智能 | [SEP] |
#: 自注意力 | 是 灵魂 | [SEP].
PHRASES: tuple[int, ...] = (0, 1, 2, 2, 2, 3, 3, 4, 5, 6, 6, 7)
#: Sentence of each token of ``TOKENS`` (BERT's segments A and B).
SENTENCES: tuple[int, ...] = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1)
#: Phrases of ``attn.examples.SENTENCE`` (no special tokens): 小明 | 在 北京 大学 | 学习 人工智能.
SENTENCE_PHRASES: tuple[int, ...] = (0, 1, 1, 1, 2, 2)


def _check_strength(strength: object) -> float:
    if isinstance(strength, bool) or not isinstance(strength, (int, float)):
        raise TypeError(f"strength: expected a float >= 0, got {type(strength).__name__}")
    if not (math.isfinite(strength) and strength >= 0):
        raise ValueError(f"strength: expected a finite float >= 0, got {strength}")
    return float(strength)


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    return value


@lru_cache(maxsize=32)
def _directions(d_k: int) -> Tensor:
    m = torch.arange(d_k, dtype=torch.float64)
    basis = torch.cos(math.pi * (m[None, :] + 0.5) * m[:, None] / d_k)  # (d_k, d_k): row r, coord m
    basis[0] /= math.sqrt(2.0)
    return basis * math.sqrt(2.0 / d_k)


def directions(d_k: int) -> Tensor:
    """d_k orthonormal directions whose coordinates are spread out (the DCT-II basis).

    Returns:
        (d_k, d_k) float64; row r is a unit vector, rows are orthogonal. Row 0 is constant.
    """
    check_positive_int("d_k", d_k)
    return _directions(d_k).clone()


def _positional_codes(positions: Tensor, d_k: int, width: float) -> Tensor:
    """Unit-RMS codes (n, d_k) whose dot products depend on the position difference only.

    d_k // 2 frequencies w_m = pi (m + 1/2) / (d_k // 2), each a (cos, sin) pair with weight
    r_m; odd d_k adds one constant coordinate (frequency 0). code_i . code_j =
    2 sum_m r_m cos(w_m (i - j)) [+ r_0]. With width 0 (all r = 1) this is d_k at i = j and
    0 for 0 < |i - j| < d_k: distinct positions get orthogonal codes. width > 0 weights low
    frequencies more (r_m ~ exp(-(width w_m)^2 / 2)), so neighbours get positive cosines.
    """
    half = d_k // 2
    omega = math.pi * (torch.arange(half, dtype=torch.float64) + 0.5) / max(half, 1)  # (M,)
    r = torch.exp(-((width * omega) ** 2) / 2)  # (M,)
    r_const = 1.0 if d_k % 2 else 0.0
    total = 2 * r.sum().item() + r_const
    r, r_const = r * d_k / total, r_const * d_k / total
    angle = positions[:, None] * omega[None, :]  # (n, 1) * (1, M) -> (n, M)
    amp = torch.sqrt(2 * r)  # (M,)
    pairs = torch.stack([amp * torch.cos(angle), amp * torch.sin(angle)], dim=-1)  # (n, M, 2)
    codes = pairs.reshape(len(positions), 2 * half)  # (n, M, 2) -> (n, 2M)
    if d_k % 2:
        const = torch.full((len(positions), 1), math.sqrt(r_const), dtype=torch.float64)
        codes = torch.cat([codes, const], dim=-1)  # (n, 2M) -> (n, d_k)
    return codes


def diagonal_qk(n: int, d_k: int, *, strength: float = 1.0, offset: int = 0,
                width: float = 0.0) -> tuple[Tensor, Tensor]:
    """Queries and keys from positional codes: query i points where key i + offset points.

    The cosine c_ij depends on j - (i + offset) only and peaks (c = 1) at j = i + offset.
    With width = 0 every other key within distance d_k is orthogonal (c = 0): a sharp
    diagonal. The codes repeat with period 2 d_k (c = -1 at distance d_k), so with
    2 d_k <= n a far key can look like the aimed-at one: too few coordinates to tell
    n positions apart. With d_k = 1 all codes are equal and every row is flat.

    Args:
        n: number of tokens.
        d_k: query/key size.
        strength: squared RMS size of a coordinate (see the module docstring).
        offset: 0 = itself, -1 = the previous token, +1 = the next one.
        width: 0 = only the aimed-at key; about 1 = neighbours too; larger = wider.

    Returns:
        q (n, d_k), k (n, d_k), float64.
    """
    check_positive_int("n", n)
    check_positive_int("d_k", d_k)
    strength = _check_strength(strength)
    offset = _check_int("offset", offset)
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not width >= 0:
        raise ValueError(f"width: expected a float >= 0, got {width!r}")
    pos = torch.arange(n, dtype=torch.float64)  # (n,)
    size = math.sqrt(strength)
    q = size * _positional_codes(pos + offset, d_k, float(width))  # (n, d_k)
    k = size * _positional_codes(pos, d_k, float(width))  # (n, d_k)
    return q, k


def vertical_qk(n: int, d_k: int, *, strength: float = 1.0, key: int = 0) -> tuple[Tensor, Tensor]:
    """Every query shares one direction with a single special key (e.g. [CLS]).

    q_i = k_key = sqrt(strength d_k) u for every i; the other keys point along a direction
    orthogonal to u (c = 0), or along -u when d_k = 1 (c = -1).

    Args:
        n: number of tokens.
        d_k: query/key size.
        strength: squared RMS size of a coordinate.
        key: the position every query looks for; negative counts from the end.

    Returns:
        q (n, d_k), k (n, d_k), float64.
    """
    check_positive_int("n", n)
    check_positive_int("d_k", d_k)
    strength = _check_strength(strength)
    key = _check_int("key", key)
    if not -n <= key < n:
        raise ValueError(f"key: expected a position in -{n}..{n - 1}, got {key}")
    basis = _directions(d_k)
    u = basis[0]  # (d_k,)
    other = basis[1] if d_k > 1 else -u  # (d_k,)
    size = math.sqrt(strength * d_k)
    q = size * u.expand(n, d_k).clone()  # (n, d_k)
    k = size * other.expand(n, d_k).clone()  # (n, d_k)
    k[key] = size * u
    return q, k


def _check_segments(segments: object) -> list[int]:
    if isinstance(segments, Tensor):
        segments = segments.tolist()
    if not isinstance(segments, (list, tuple)) or not segments:
        raise TypeError(
            f"segments: expected a non-empty list of ints (one per token), got {segments!r}")
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in segments):
        raise TypeError(f"segments: expected ints (one segment id per token), got {segments!r}")
    return list(segments)


def block_qk(segments: Sequence[int], d_k: int, *, strength: float = 1.0) -> tuple[Tensor, Tensor]:
    """Queries and keys are segment indicators: q_i = k_i = sqrt(strength d_k) e_{segment(i)}.

    Tokens of the same segment have c = 1, of different segments c = 0: each query attends
    evenly within its own segment. Segment ids are numbered in order of first appearance;
    d_k orthogonal directions serve at most d_k segments, so with more segments than d_k
    the g-th segment reuses direction g mod d_k (two segments then look alike).

    Args:
        segments: one segment id per token (n ids).
        d_k: query/key size.
        strength: squared RMS size of a coordinate.

    Returns:
        q (n, d_k), k (n, d_k) (equal), float64.
    """
    ids = _check_segments(segments)
    check_positive_int("d_k", d_k)
    strength = _check_strength(strength)
    order = {s: g for g, s in enumerate(dict.fromkeys(ids))}
    rows = torch.tensor([order[s] % d_k for s in ids])  # (n,)
    q = math.sqrt(strength * d_k) * _directions(d_k)[rows]  # (n, d_k)
    return q, q.clone()


@lru_cache(maxsize=16)
def _random_table(seed: int, n: int, d: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, n, d, generator=g, dtype=torch.float64)  # (2, n, d): q rows, k rows


def random_qk(n: int, d_k: int, *, strength: float = 1.0, seed: int = 0) -> tuple[Tensor, Tensor]:
    """An untrained head: coordinates drawn from N(0, strength), no pattern built in.

    For n <= 12 and d_k <= 128 the draws are the first n rows and d_k columns of one seeded
    table, so a larger d_k adds coordinates to the same vectors. The scaled score
    q . k / sqrt(d_k) has variance strength^2 at every d_k.

    Returns:
        q (n, d_k), k (n, d_k), float64.
    """
    check_positive_int("n", n)
    check_positive_int("d_k", d_k)
    strength = _check_strength(strength)
    seed = _check_int("seed", seed)
    table = _random_table(seed, max(n, 12), max(d_k, 128))
    qk = math.sqrt(strength) * table[:, :n, :d_k]  # (2, n, d_k)
    return qk[0], qk[1]


def head_weights(q: Tensor, k: Tensor, mask: Tensor | None = None, *,
                 scaled: bool = True) -> Tensor:
    """Attention weights softmax(q k^T * scale) with scale 1/sqrt(d_k) (or 1 if not scaled).

    Args:
        q: (..., L, d_k); k: (..., S, d_k), float.
        mask: optional bool broadcastable to (..., L, S); **True = may attend**. A row with
            no allowed key gets zeros.
        scaled: divide the scores by sqrt(d_k) (the Transformer) or not (plain dot product).

    Returns:
        weights (..., L, S).
    """
    check_tensor("q", q)
    if not isinstance(scaled, bool):
        raise TypeError(f"scaled: expected a bool, got {type(scaled).__name__}")
    scale = None if scaled else 1.0
    _, weights = scaled_dot_product_attention(q, k, k, mask, scale=scale)
    return weights


@dataclass(frozen=True)
class PatternProfile:
    """Numbers that read a map (L, S); averages over the rows that attend somewhere.

    Attributes:
        self_weight: mean weight a query gives to its own position (the diagonal).
        top_key: the key with the largest mean weight (a vertical stripe if that is high).
        top_key_weight: that mean weight.
        segment_weight: mean weight a query keeps inside its own segment (None without
            segments); 1 = a perfect block pattern.
        max_weight: mean over rows of the row's largest weight (1/S = flat, 1 = one-hot).
    """

    self_weight: float
    top_key: int
    top_key_weight: float
    segment_weight: float | None
    max_weight: float


def pattern_profile(weights: Tensor | np.ndarray,
                    segments: Sequence[int] | None = None) -> PatternProfile:
    """Measure how diagonal, vertical and block-like a map is.

    Args:
        weights: (L, S) attention weights (rows = queries, columns = keys), tensor or array.
        segments: optional segment id per token (needs L == S).

    Returns:
        A ``PatternProfile``. Rows of zeros (fully masked queries) are left out; if every row
        is zero, every number is 0.
    """
    if isinstance(weights, Tensor):
        weights = weights.detach().cpu().numpy()
    if not isinstance(weights, np.ndarray):
        raise TypeError(f"weights: expected a tensor or an array (L, S), got {type(weights).__name__}")
    if weights.ndim != 2:
        raise ValueError(f"weights: expected 2 dims (L, S), got shape {tuple(weights.shape)}")
    w = weights.astype(np.float64)  # numpy: tiny maps, no thread-pool overhead per call
    L, S = w.shape
    ids = None
    if segments is not None:
        ids = _check_segments(segments)
        if len(ids) != L or L != S:
            raise ValueError(f"segments: expected {L} ids for a square (L, L) map, got {len(ids)} "
                             f"for shape ({L}, {S})")
    live = w.sum(-1) > 0  # (L,)
    if not live.any():
        return PatternProfile(0.0, 0, 0.0, 0.0 if ids is not None else None, 0.0)
    rows = w[live]  # (L', S)
    n = min(L, S)
    diag = np.diagonal(w[:n, :n])[live[:n]]
    columns = rows.mean(0)  # (S,)
    top = int(columns.argmax())
    seg_weight = None
    if ids is not None:
        arr = np.asarray(ids)
        same = arr[:, None] == arr[None, :]  # (L, L)
        seg_weight = float((w * same).sum(-1)[live].mean())
    return PatternProfile(
        self_weight=float(diag.mean()) if len(diag) else 0.0,
        top_key=top,
        top_key_weight=float(columns[top]),
        segment_weight=seg_weight,
        max_weight=float(rows.max(-1).mean()),
    )


@dataclass(frozen=True)
class HeadSpec:
    """One hand-built head: which builder and its parameters.

    Attributes:
        kind: "diagonal", "vertical", "block" or "random".
        name: a short label (the title of its map).
        offset, width: for "diagonal".
        key: for "vertical" (negative counts from the end; taken modulo n).
        segments: for "block": "phrases", "sentences" or a chunk size (int).
        gain: multiplies the strength for this head.
        seed: for "random".
    """

    kind: str
    name: str
    offset: int = 0
    width: float = 0.0
    key: int = 0
    segments: str | int = "phrases"
    gain: float = 1.0
    seed: int = 0


_D = HeadSpec
#: Eight variants per pattern (the explorer's heads); "mixed" mixes all kinds.
HEAD_VARIANTS: dict[str, tuple[HeadSpec, ...]] = {
    "diagonal": (
        _D("diagonal", "itself"), _D("diagonal", "previous", offset=-1),
        _D("diagonal", "next", offset=1), _D("diagonal", "self + neighbours", width=1.0),
        _D("diagonal", "2 back", offset=-2), _D("diagonal", "2 ahead", offset=2),
        _D("diagonal", "wide", width=2.0), _D("diagonal", "prev + neighbours", offset=-1, width=1.0),
    ),
    "vertical": tuple(_D("vertical", "", key=key) for key in (0, -1, 5, 3, 1, 6, 2, 4)),
    "block": (
        _D("block", "phrases"), _D("block", "sentences", segments="sentences"),
        _D("block", "pairs", segments=2), _D("block", "triples", segments=3),
        _D("block", "phrases, weak", gain=0.5),
        _D("block", "sentences, weak", segments="sentences", gain=0.5),
        _D("block", "fours", segments=4), _D("block", "sixes", segments=6),
    ),
    "random": tuple(_D("random", f"random {s}", seed=s) for s in range(8)),
    "mixed": (
        _D("diagonal", "itself"), _D("vertical", "", key=0), _D("block", "phrases"),
        _D("diagonal", "previous", offset=-1), _D("vertical", "", key=-1),
        _D("block", "sentences", segments="sentences"), _D("random", "random 0"),
        _D("diagonal", "self + neighbours", width=1.0),
    ),
}


def head_specs(pattern: str, n_heads: int) -> tuple[HeadSpec, ...]:
    """The first ``n_heads`` variants of a pattern ("diagonal", "vertical", "block",
    "random" or "mixed"); n_heads in 1..8."""
    if pattern not in HEAD_VARIANTS:
        raise ValueError(f"pattern: expected one of {tuple(HEAD_VARIANTS)}, got {pattern!r}")
    check_positive_int("n_heads", n_heads)
    if n_heads > len(HEAD_VARIANTS[pattern]):
        raise ValueError(f"n_heads: expected 1..{len(HEAD_VARIANTS[pattern])}, got {n_heads}")
    return HEAD_VARIANTS[pattern][:n_heads]


def segments_for(spec: HeadSpec, n: int) -> tuple[int, ...]:
    """Segment ids of the first n of ``TOKENS`` for a block head (phrases for other kinds)."""
    check_positive_int("n", n)
    if n > len(TOKENS):
        raise ValueError(f"n: expected at most {len(TOKENS)} tokens, got {n}")
    if spec.segments == "phrases" or spec.kind != "block":
        return PHRASES[:n]
    if spec.segments == "sentences":
        return SENTENCES[:n]
    return tuple(i // int(spec.segments) for i in range(n))


def head_qk(spec: HeadSpec, n: int, d_k: int, strength: float) -> tuple[Tensor, Tensor]:
    """Build q (n, d_k), k (n, d_k) for one ``HeadSpec`` on the first n of ``TOKENS``."""
    strength = _check_strength(strength) * spec.gain
    if spec.kind == "diagonal":
        return diagonal_qk(n, d_k, strength=strength, offset=spec.offset, width=spec.width)
    if spec.kind == "vertical":
        return vertical_qk(n, d_k, strength=strength, key=spec.key % n)
    if spec.kind == "block":
        return block_qk(segments_for(spec, n), d_k, strength=strength)
    if spec.kind == "random":
        return random_qk(n, d_k, strength=strength, seed=spec.seed)
    raise ValueError(f"spec.kind: expected diagonal, vertical, block or random, got {spec.kind!r}")
