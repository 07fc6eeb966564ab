"""Attention as plain functions on tensors.

Shape legend used throughout:
    ... : any batch dims (B, or B, H)
    L   : number of queries (target length)
    S   : number of keys and values (source length)
    E   : query/key feature size (d_k)
    Ev  : value feature size (d_v)

Mask convention (the only one in this package): a **bool** tensor, broadcastable to
(..., L, S), where **True = may attend** and False = blocked. This is the convention of
``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention`` uses
the opposite one (see ``attn.masks.to_torch_mha_mask``).
"""
from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_bool_mask, check_float, check_min_rank, check_qkv, check_scale, shape_str

__all__ = [
    "masked_softmax",
    "softmax_with_fill",
    "attention_from_scores",
    "scaled_dot_product_attention",
]


def _check_scores_and_mask(scores: object, mask: object | None) -> tuple[Tensor, Tensor | None]:
    scores = check_float("scores", scores)
    check_min_rank("scores", scores, 2, "(..., L, S)")
    if mask is not None:
        mask = check_bool_mask("mask", mask, tuple(scores.shape), "(..., L, S)")
    return scores, mask


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last dim (keys), ignoring blocked keys.

    Args:
        scores: (..., L, S) float scores.
        mask: optional bool, broadcastable to (..., L, S); True = may attend.

    Returns:
        weights: (..., L, S). Each row sums to 1 over its allowed keys. A row whose mask
        allows **no** key gets weights of **zeros** (not NaN, not uniform).
    """
    scores, mask = _check_scores_and_mask(scores, mask)
    return _masked_softmax(scores, mask, own_scores=False)


def _masked_softmax(scores: Tensor, mask: Tensor | None, *, own_scores: bool) -> Tensor:
    """``masked_softmax`` without the checks. ``own_scores=True`` lets it write the blocked
    positions into ``scores`` itself (the caller made that tensor and will not read it again),
    which saves one (..., L, S) copy."""
    if mask is None:
        return torch.softmax(scores, dim=-1)
    blocked = ~mask  # (..., L, S) or any shape that broadcasts to it
    if own_scores:
        filled = scores.masked_fill_(blocked, float("-inf"))  # in place
    else:
        filled = scores.masked_fill(blocked, float("-inf"))  # a new (..., L, S) tensor
    row_has_key = mask.any(dim=-1, keepdim=True)  # (..., L, 1)
    if bool(row_has_key.all()):
        return torch.softmax(filled, dim=-1)  # the common case: every query sees some key
    # A row with no allowed key is all -inf, and softmax would give NaN: give it finite
    # scores, then zero its weights. Its gradient is zero as well.
    row_is_empty = ~row_has_key
    filled = filled.masked_fill_(row_is_empty, 0.0)  # filled is ours in both branches
    weights = torch.softmax(filled, dim=-1)
    return weights.masked_fill(row_is_empty, 0.0)  # not in place: softmax's backward reads it


def softmax_with_fill(scores: Tensor, mask: Tensor, fill_value: float) -> Tensor:
    """Softmax after writing `fill_value` into blocked positions (the textbook recipe).

    Shown in the course to compare choices: the chapter fills with ``-inf`` (a fully
    blocked row becomes NaN), the article with ``-1e9`` (a fully blocked row becomes
    uniform). ``masked_softmax`` is the package's safe choice.

    Args:
        scores: (..., L, S) float scores.
        mask: bool, broadcastable to (..., L, S); True = may attend.
        fill_value: the number written where the mask is False.

    Returns:
        weights: (..., L, S)
    """
    scores, mask = _check_scores_and_mask(scores, mask)
    if mask is None:
        raise TypeError("mask: expected a bool tensor (True = may attend), got None")
    return torch.softmax(scores.masked_fill(~mask, fill_value), dim=-1)


def attention_from_scores(
    scores: Tensor, value: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Turn scores into weights (masked softmax) and take the weighted sum of values.

    Args:
        scores: (..., L, S) from any scoring function.
        value: (..., S, Ev)
        mask: optional bool, broadcastable to (..., L, S); True = may attend.

    Returns:
        output: (..., L, Ev); zeros for a query row whose mask allows no key.
        weights: (..., L, S)
    """
    value = check_float("value", value)
    check_min_rank("value", value, 2, "(..., S, Ev)")
    if scores.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"value: expected {scores.shape[-1]} rows (S, the number of keys), "
            f"got shape {shape_str(value)}"
        )
    weights = masked_softmax(scores, mask)  # (..., L, S)
    return weights @ value, weights  # (..., L, Ev), (..., L, S)


def _attend(scores: Tensor, value: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """``attention_from_scores`` for checked inputs and scores the caller owns."""
    weights = _masked_softmax(scores, mask, own_scores=True)  # (..., L, S)
    return weights @ value, weights  # (..., L, Ev), (..., L, S)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T * scale) V, returning the weights too.

    Args:
        query: (..., L, E)
        key: (..., S, E)
        value: (..., S, Ev)
        mask: optional bool, broadcastable to (..., L, S); **True = may attend**
            (as in ``torch.nn.functional.scaled_dot_product_attention``).
        scale: multiplies the scores; defaults to 1/sqrt(E).

    Returns:
        output: (..., L, Ev), same dtype and device as ``query``.
        weights: (..., L, S); rows sum to 1. A query row whose mask allows no key gets
        weights **and** output of zeros, never NaN.

    Raises:
        TypeError: non-tensor, integer or mixed dtypes, non-bool mask.
        ValueError: fewer than 2 dims, E or S mismatch, batch dims that do not
            broadcast, a mask of the wrong shape, a scale that is not positive.
    """
    batch = check_qkv(query, key, value)
    scale = check_scale(scale, query.shape[-1])
    if mask is not None:
        target = (*batch, query.shape[-2], key.shape[-2])
        check_bool_mask("mask", mask, target, "(..., L, S)")
    # Scaling the queries (..., L, E) costs less than scaling the scores (..., L, S), and
    # gives the same numbers up to rounding: (q * scale) . k = (q . k) * scale.
    scores = (query * scale) @ key.transpose(-2, -1)  # (..., L, E) @ (..., E, S) -> (..., L, S)
    return _attend(scores, value, mask)
