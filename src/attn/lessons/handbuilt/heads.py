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

import torch
from torch import Tensor

from ..._checks import check_bool, check_choice, check_int, check_number, check_positive_int, check_tensor
from ...examples import TWO_SENTENCE_PHRASES, TWO_SENTENCE_SEGMENTS, TWO_SENTENCE_TOKENS
from ...functional import scaled_dot_product_attention
from ...language import mark
from ..pattern_scores import check_segments

__all__ = [
    "directions",
    "diagonal_qk",
    "vertical_qk",
    "block_qk",
    "random_qk",
    "head_weights",
    "HeadSpec",
    "HEAD_VARIANTS",
    "head_specs",
    "segments_for",
    "head_qk",
]

@lru_cache(maxsize=32, typed=True)
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
    strength = check_number("strength", strength, non_negative=True)
    offset = check_int("offset", offset)
    width = check_number("width", width, non_negative=True)
    pos = torch.arange(n, dtype=torch.float64)  # (n,)
    size = math.sqrt(strength)
    q = size * _positional_codes(pos + offset, d_k, width)  # (n, d_k)
    k = size * _positional_codes(pos, d_k, width)  # (n, d_k)
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
    strength = check_number("strength", strength, non_negative=True)
    key = check_int("key", key, low=-n, high=n - 1)
    basis = _directions(d_k)
    u = basis[0]  # (d_k,)
    other = basis[1] if d_k > 1 else -u  # (d_k,)
    size = math.sqrt(strength * d_k)
    q = size * u.expand(n, d_k).clone()  # (n, d_k)
    k = size * other.expand(n, d_k).clone()  # (n, d_k)
    k[key] = size * u
    return q, k


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
    ids = check_segments(segments)
    if ids.dim() != 1:
        raise ValueError(f"segments: expected one id per token (n,), got shape {tuple(ids.shape)}")
    ids = ids.tolist()
    check_positive_int("d_k", d_k)
    strength = check_number("strength", strength, non_negative=True)
    order = {s: g for g, s in enumerate(dict.fromkeys(ids))}
    rows = torch.tensor([order[s] % d_k for s in ids])  # (n,)
    q = math.sqrt(strength * d_k) * _directions(d_k)[rows]  # (n, d_k)
    return q, q.clone()


@lru_cache(maxsize=16, typed=True)
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
    strength = check_number("strength", strength, non_negative=True)
    seed = check_int("seed", seed)
    table = _random_table(seed, max(n, 12), max(d_k, 128))
    qk = math.sqrt(strength) * table[:, :n, :d_k]  # (2, n, d_k)
    return qk[0], qk[1]


def head_weights(q: Tensor, k: Tensor, mask: Tensor | None = None, *,
                 scaled: bool = True) -> Tensor:
    """Attention weights softmax(q k^T * scale) with scale 1/sqrt(d_k) (or 1 if not scaled).

    Args:
        q: (..., L, d_k); k: (..., S, d_k), float.
        mask: optional bool broadcastable to (..., L, S); **True = may attend**. A row with
            no allowed key gets zeros. One (L, S) mask for a stack of H = L heads is written
            ``mask[None]``, as ``attn.scaled_dot_product_attention`` asks.
        scaled: divide the scores by sqrt(d_k) (the Transformer) or not (plain dot product).

    Returns:
        weights (..., L, S).
    """
    check_tensor("q", q)
    check_bool("scaled", scaled)
    scale = None if scaled else 1.0
    _, weights = scaled_dot_product_attention(q, k, k, mask, scale=scale)
    return weights


@dataclass(frozen=True)
class HeadSpec:
    """One hand-built head: which builder and its parameters.

    Attributes:
        kind: "diagonal", "vertical", "block" or "random".
        name: a short label (the title of its map), in English and marked for the catalogue:
            show it as ``attn.language.tr(spec.name)``, but for an empty name and a "random"
            head's "random {seed}" (``tr("random {seed}", seed=spec.seed)``).
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
        _D("diagonal", mark("itself")), _D("diagonal", mark("previous"), offset=-1),
        _D("diagonal", mark("next"), offset=1), _D("diagonal", mark("self + neighbours"), width=1.0),
        _D("diagonal", mark("2 back"), offset=-2), _D("diagonal", mark("2 ahead"), offset=2),
        _D("diagonal", mark("wide"), width=2.0), _D("diagonal", mark("prev + neighbours"), offset=-1, width=1.0),
    ),
    "vertical": tuple(_D("vertical", "", key=key) for key in (0, -1, 5, 3, 1, 6, 2, 4)),
    "block": (
        _D("block", mark("phrases")), _D("block", mark("sentences"), segments="sentences"),
        _D("block", mark("pairs"), segments=2), _D("block", mark("triples"), segments=3),
        _D("block", mark("phrases, weak"), gain=0.5),
        _D("block", mark("sentences, weak"), segments="sentences", gain=0.5),
        _D("block", mark("fours"), segments=4), _D("block", mark("sixes"), segments=6),
    ),
    "random": tuple(_D("random", f"random {s}", seed=s) for s in range(8)),
    "mixed": (
        _D("diagonal", mark("itself")), _D("vertical", "", key=0), _D("block", mark("phrases")),
        _D("diagonal", mark("previous"), offset=-1), _D("vertical", "", key=-1),
        _D("block", mark("sentences"), segments="sentences"), _D("random", "random 0"),
        _D("diagonal", mark("self + neighbours"), width=1.0),
    ),
}


def head_specs(pattern: str, n_heads: int) -> tuple[HeadSpec, ...]:
    """The first ``n_heads`` variants of a pattern ("diagonal", "vertical", "block",
    "random" or "mixed"); n_heads in 1..8."""
    check_choice("pattern", pattern, tuple(HEAD_VARIANTS))
    check_int("n_heads", n_heads, low=1, high=len(HEAD_VARIANTS[pattern]))
    return HEAD_VARIANTS[pattern][:n_heads]


def segments_for(spec: HeadSpec, n: int) -> tuple[int, ...]:
    """Segment ids of the first n of ``attn.examples.TWO_SENTENCE_TOKENS`` for a block head
    (its phrases for other kinds). "sentences": [CLS] alone, then each sentence with its [SEP]."""
    check_int("n", n, low=1, high=len(TWO_SENTENCE_TOKENS))
    if spec.segments == "phrases" or spec.kind != "block":
        return TWO_SENTENCE_PHRASES[:n]
    if spec.segments == "sentences":
        # [CLS] sums up the input and belongs to no sentence: a block of its own, then one block
        # per sentence (its words and its [SEP]). So with 8 tokens or fewer, where only the
        # first sentence is in view, the map still shows a block, not one flat row after another.
        return tuple(0 if tok == "[CLS]" else 1 + s
                     for tok, s in zip(TWO_SENTENCE_TOKENS[:n], TWO_SENTENCE_SEGMENTS[:n]))
    return tuple(i // int(spec.segments) for i in range(n))


def head_qk(spec: HeadSpec, n: int, d_k: int, strength: float) -> tuple[Tensor, Tensor]:
    """Build q (n, d_k), k (n, d_k) for one ``HeadSpec`` on the first n of
    ``attn.examples.TWO_SENTENCE_TOKENS``."""
    strength = check_number("strength", strength, non_negative=True) * spec.gain
    if spec.kind == "diagonal":
        return diagonal_qk(n, d_k, strength=strength, offset=spec.offset, width=spec.width)
    if spec.kind == "vertical":
        return vertical_qk(n, d_k, strength=strength, key=spec.key % n)
    if spec.kind == "block":
        return block_qk(segments_for(spec, n), d_k, strength=strength)
    if spec.kind == "random":
        return random_qk(n, d_k, strength=strength, seed=spec.seed)
    raise ValueError(f"spec.kind: expected diagonal, vertical, block or random, got {spec.kind!r}")
