"""Why the scores are divided by sqrt(d_k): measured on random queries and keys (notebook 02).

With q, k of d_k independent N(0, 1) entries, q . k has variance d_k. Unscaled, the scores
spread out as d_k grows, the softmax saturates towards one-hot, and its Jacobian (the
gradient that flows back through it) shrinks towards zero. Divided by sqrt(d_k), the
variance stays 1 and the softmax stays soft at every d_k.

``scaling_stats(d_k)`` measures the three effects both ways on one seeded sample of scores
(``sample_scores``); ``attn.widgets.scaling`` draws the first queries of that same sample.

Shape legend: N query rows, n keys per query (the softmax width), D the largest d_k drawn.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from .._checks import check_float, check_int, check_min_rank, check_positive_int
from ..functional import masked_softmax

__all__ = [
    "D_K_GRID",
    "ScalingStats",
    "softmax_jacobian_norm",
    "sample_scores",
    "scaling_stats",
    "scaling_curves",
]

#: The d_k values notebook 02 measures: 1, 2, 4, ..., 512.
D_K_GRID: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class ScalingStats:
    """Averages over random rows for one d_k; ``raw`` = unscaled, ``scaled`` = / sqrt(d_k)."""

    d_k: int
    score_var_raw: float
    score_var_scaled: float
    max_weight_raw: float  # mean of a row's largest softmax weight (1/n_keys = flat, 1 = one-hot)
    max_weight_scaled: float
    grad_norm_raw: float  # mean Frobenius norm of the softmax Jacobian diag(p) - p p^T
    grad_norm_scaled: float
    example_raw: tuple[float, ...]  # one row of weights, to look at
    example_scaled: tuple[float, ...]


def softmax_jacobian_norm(weights: Tensor) -> Tensor:
    """Size of the gradient through the softmax, per row: ||J||_F with J = diag(p) - p p^T.

    J is the Jacobian d softmax(s) / d s at a row of weights p: entry (i, j) is
    p_i (1[i = j] - p_j). A flat row passes the gradient on, a one-hot row passes none (J = 0).

    Args:
        weights: (..., n) rows of softmax weights.

    Returns:
        (...) one norm per row.
    """
    check_float("weights", weights)
    check_min_rank("weights", weights, 1, "(..., n)")
    jac = torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]  # (..., n, n)
    return torch.linalg.matrix_norm(jac)  # Frobenius norm of each (n, n)


@lru_cache(maxsize=2, typed=True)
def _score_table(d_max: int, n_keys: int, n_rows: int, seed: int) -> Tensor:
    """Unscaled scores for every d_k in 1..d_max at once: (D, N, n), entry [d-1] uses d dims.

    Draw n_rows queries q (N, 1, D) and n_keys keys per query k (N, n, D) with N(0, 1)
    entries, once (float32: fast to draw). The score with d_k dims is the sum of the first
    d_k coordinate products, so one cumulative sum gives the scores for every d_k, and every
    d_k <= D shares the same vectors.
    """
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_rows, 1, d_max, generator=g)  # (N, 1, D)
    k = torch.randn(n_rows, n_keys, d_max, generator=g)  # (N, n, D)
    return (q * k).cumsum(-1).permute(2, 0, 1).contiguous()  # (N, n, D) -> (D, N, n)


def sample_scores(d_k: int, *, n_keys: int = 16, n_rows: int = 1000, seed: int = 0) -> Tensor:
    """The unscaled scores q . k of the sample that ``scaling_stats`` measures: (N, n) float64,
    one row per query (N = n_rows), one column per key (n = n_keys).

    Every d_k <= 512 uses the first d_k coordinates of the same vectors (see ``scaling_stats``).
    """
    check_positive_int("d_k", d_k)
    check_positive_int("n_keys", n_keys)
    check_positive_int("n_rows", n_rows)
    check_int("seed", seed)
    return _score_table(max(512, d_k), n_keys, n_rows, seed)[d_k - 1].double()  # (N, n)


@lru_cache(maxsize=1024, typed=True)
def _stats(d_k: int, n_keys: int, n_rows: int, seed: int) -> ScalingStats:
    raw = sample_scores(d_k, n_keys=n_keys, n_rows=n_rows, seed=seed)  # (N, n)
    scaled = raw / math.sqrt(d_k)
    p_raw, p_scaled = masked_softmax(raw), masked_softmax(scaled)  # (N, n): softmax over the keys
    return ScalingStats(
        d_k=d_k,
        score_var_raw=raw.var().item(),  # over all N n scores, with N n - 1 in the denominator
        score_var_scaled=scaled.var().item(),
        max_weight_raw=p_raw.amax(-1).mean().item(),
        max_weight_scaled=p_scaled.amax(-1).mean().item(),
        grad_norm_raw=softmax_jacobian_norm(p_raw).mean().item(),
        grad_norm_scaled=softmax_jacobian_norm(p_scaled).mean().item(),
        example_raw=tuple(p_raw[0].tolist()),
        example_scaled=tuple(p_scaled[0].tolist()),
    )


def scaling_stats(d_k: int, *, n_keys: int = 16, n_rows: int = 1000, seed: int = 0) -> ScalingStats:
    """Draw n_rows queries and n_keys keys per query with N(0, 1) entries; measure both ways.

    Args:
        d_k: the query/key size, >= 1.
        n_keys: keys per query (the softmax width).
        n_rows: how many query rows to average over.
        seed: the random generator's seed (same seed, same numbers).

    Returns:
        ``ScalingStats``: variance of the n_rows x n_keys scores, the mean over rows of the
        largest softmax weight, and the mean over rows of the Frobenius norm of the softmax
        Jacobian diag(p) - p p^T (``softmax_jacobian_norm``), each unscaled (``_raw``) and
        divided by sqrt(d_k) (``_scaled``); plus the weights of the first row both ways.

    The vectors for every d_k <= 512 come from one draw (the first d_k coordinates of the
    same vectors), so neighbouring d_k values differ only by the added dimensions. Results
    are cached: asking again for the same numbers costs nothing.
    """
    check_positive_int("d_k", d_k)
    check_positive_int("n_keys", n_keys)
    check_positive_int("n_rows", n_rows)
    check_int("seed", seed)
    return _stats(d_k, n_keys, n_rows, seed)


def scaling_curves(d_ks: tuple[int, ...] = D_K_GRID, **kwargs: int) -> list[ScalingStats]:
    """``scaling_stats`` over a grid of d_k values (the explorer's background curves)."""
    return [scaling_stats(d, **kwargs) for d in d_ks]
