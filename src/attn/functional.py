"""Attention as plain functions on tensors: softmax(Q K^T / sqrt(d_k)) V, and its gradient.

Shape legend used throughout:
    ... : any batch dims (B, or B, H)
    L   : number of queries (target length)
    S   : number of keys and values (source length)
    E   : query/key feature size (d_k)
    Ev  : value feature size (d_v)

Mask convention (the only one in this package): a **bool** tensor, broadcastable to
(..., L, S), where **True = may attend** and False = blocked. This is the convention of
``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention`` uses
the opposite one (see ``attn.masks.to_torch_mha_mask``). A query whose mask allows no key
gets weights and output of zeros, never NaN, and a zero gradient (for finite scores). Scores
of -inf are not a mask: a row of them only, unmasked, is NaN (see ``masked_softmax``).

Layout: the computation is written once, in two steps that do not check their inputs,
``softmax_over_allowed_keys`` and ``attend`` (softmax(Q K^T * scale) V, in that order). Each
public function checks its arguments at its door, then calls them; so does
``attn.MultiHeadAttention``, which checks its own inputs once per call. ``repeat_kv`` is the
one step grouped-query attention adds: key/value heads shared by groups of query heads.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from ._checks import (
    check_bool_mask,
    check_float,
    check_mask_reading,
    check_min_rank,
    check_qkv,
    check_same_dtype_and_device,
    check_scale,
    shape_str,
)

__all__ = [
    "masked_softmax",
    "softmax_with_fill",
    "attention_from_scores",
    "scaled_dot_product_attention",
    "attention_backward",
    "BackwardSteps",
    "attention_backward_steps",
]


# --- the computation, written once; inputs not checked: the public functions check them ---


def softmax_over_allowed_keys(scores: Tensor, mask: Tensor | None) -> Tensor:
    """The masked softmax of ``masked_softmax``; inputs are not checked: the public functions
    check them.

    Args:
        scores: (..., L, S) float scores.
        mask: None, or bool broadcastable to (..., L, S) on the device of ``scores``;
            True = may attend.

    Returns:
        weights: (..., L, S), as ``masked_softmax`` documents.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    no_key = ~mask.any(dim=-1, keepdim=True)  # (..., L, 1): a query that may attend to nothing
    # exp(-inf) = 0: no weight on a blocked key. A row of -inf only would give 0 / 0 = NaN,
    # so a query that may attend to nothing keeps its scores here (no -inf written) and
    # gets zero weights after the softmax.
    allowed = mask | no_key  # (..., L, S), or any shape that broadcasts to it
    filled = torch.where(allowed, scores, float("-inf"))  # (..., L, S)
    weights = torch.softmax(filled, dim=-1)  # (..., L, S)
    return torch.where(no_key, 0.0, weights)


def attend(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scale: float,
    *, dropout: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T * scale) V, the computation of ``scaled_dot_product_attention``; inputs
    are not checked: the public functions check them.

    Args:
        query: (..., L, E); key: (..., S, E); value: (..., S, Ev), float, of one dtype and
            device, batch dims that broadcast.
        mask: None, or bool broadcastable to (..., L, S) on that device; True = may attend.
        scale: a positive float, multiplying the scores (1/sqrt(E) in the textbook).
        dropout: p in [0, 1), the probability of zeroing each weight after the softmax (the
            kept ones are scaled by 1 / (1 - p)), before the weighted sum of the values, as
            ``nn.MultiheadAttention`` does in training. 0.0 (the default) changes nothing;
            a module passes 0.0 in eval mode.

    Returns:
        output: (..., L, Ev); weights: (..., L, S), after the dropout (the weights the
        output was made with, as ``nn.MultiheadAttention`` returns them).
    """
    scores = query @ key.transpose(-2, -1)  # (..., L, E) @ (..., E, S) -> (..., L, S)
    scores = scores * scale
    weights = softmax_over_allowed_keys(scores, mask)  # (..., L, S)
    if dropout > 0.0:
        weights = torch.nn.functional.dropout(weights, p=dropout)  # (..., L, S), some weights zeroed
    output = weights @ value  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
    return output, weights


def repeat_kv(x: Tensor, groups: int) -> Tensor:
    """Grouped-query attention's sharing: each key (or value) head repeated for the ``groups``
    consecutive query heads that read it; inputs are not checked (the layer checked them).

    Args:
        x: (B, H_kv, S, D), the keys or values of H_kv heads.
        groups: G = H / H_kv, the query heads per key/value head (1: multi-head attention,
            H_kv: multi-query attention).

    Returns:
        (B, H_kv * G, S, D): head h is x's head h // G (``torch.repeat_interleave``, as
        ``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)`` pairs
        them); x itself when G = 1.
    """
    if groups == 1:  # one query head per key/value head: nothing is shared
        return x
    return x.repeat_interleave(groups, dim=-3)  # (B, H_kv, S, D) -> (B, H_kv * G, S, D)


# --- the public functions: check the arguments, then compute ---------------------------------


def _check_scores_and_mask(scores: object, mask: object | None) -> tuple[Tensor, Tensor | None]:
    scores = check_float("scores", scores)
    check_min_rank("scores", scores, 2, "(..., L, S)")
    if mask is not None:
        mask = check_bool_mask("mask", mask, scores.shape, "(..., L, S)", device=scores.device)
    return scores, mask


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last dim (keys), ignoring blocked keys.

    Args:
        scores: (..., L, S) float scores.
        mask: optional bool, broadcastable to (..., L, S); True = may attend.

    Returns:
        weights: (..., L, S). Each row sums to 1 over its allowed keys. A row whose mask
        allows **no** key gets weights of **zeros** (not NaN, not uniform), whatever its
        scores; its gradient is zero when its scores are finite.

        Scores of -inf are weights of 0 (exp(-inf) = 0). A row whose scores are **all**
        -inf, with no mask (or with a mask that allows only keys scoring -inf), has nothing
        to share out: its weights are **NaN**, the softmax's 0 / 0. Only a mask says
        "this query attends to nothing"; a score of -inf does not.
    """
    scores, mask = _check_scores_and_mask(scores, mask)
    return softmax_over_allowed_keys(scores, mask)


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
    scores, mask = _check_scores_and_mask(scores, mask)
    value = check_float("value", value)
    check_min_rank("value", value, 2, "(..., S, Ev)")
    check_same_dtype_and_device(("scores", "value"), (scores, value))
    if scores.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"value: expected {scores.shape[-1]} rows (S, the number of keys), "
            f"got shape {shape_str(value)}"
        )
    weights = softmax_over_allowed_keys(scores, mask)  # (..., L, S)
    return weights @ value, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)


def _check_attention_inputs(
    query: object, key: object, value: object, mask: object | None, scale: object
) -> tuple[torch.Size, float]:
    batch = check_qkv(query, key, value)
    scale = check_scale(scale, query.shape[-1])
    if mask is not None:
        target = (*batch, query.shape[-2], key.shape[-2])
        check_bool_mask("mask", mask, target, "(..., L, S)", device=query.device)
        check_mask_reading("mask", mask, batch, query.shape[-2])
    return batch, scale


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
            (as in ``torch.nn.functional.scaled_dot_product_attention``). A 2-D mask is
            (L, S), the same for every sequence; when the first batch dim B equals L > 1 it
            must have more dims (``mask[None]``, or ``attn.padding_mask(lengths, S)`` for one
            row per sequence), since a (B, S) mask would read as (L, S).
        scale: multiplies the scores; defaults to 1/sqrt(E).

    Returns:
        output: (..., L, Ev), same dtype and device as ``query``.
        weights: (..., L, S); rows sum to 1. A query row whose mask allows no key gets
        weights **and** output of zeros, never NaN. (Infinite entries in ``query`` or
        ``key`` can make a row of scores all -inf: with no mask, that row is NaN, as
        ``masked_softmax`` documents.)

    The computation is ``attend``: scores = query @ key^T * scale, weights = the masked
    softmax of the scores over the keys, output = weights @ value.

    Raises:
        TypeError: non-tensor, integer or mixed dtypes, non-bool mask.
        ValueError: fewer than 2 dims, E = 0, E or S mismatch, batch dims that do not
            broadcast, inputs on different devices, a mask of the wrong shape (or of 2 dims
            when B = L > 1), a scale that is not positive.
    """
    _, scale = _check_attention_inputs(query, key, value, mask, scale)
    return attend(query, key, value, mask, scale)  # scores, masked softmax, weighted sum


class BackwardSteps(NamedTuple):
    """Every matrix of the backward pass, in the order it is computed (``attention_backward_steps``).

    weights: W (..., L, S), the forward's; grad_weights: dW (..., L, S); grad_scores: dS
    (..., L, S); grad_query (..., L, E), grad_key (..., S, E), grad_value (..., S, Ev), each of
    its input's shape.
    """

    weights: Tensor
    grad_weights: Tensor
    grad_scores: Tensor
    grad_query: Tensor
    grad_key: Tensor
    grad_value: Tensor


def attention_backward_steps(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    grad_output: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
) -> BackwardSteps:
    """``attention_backward``, keeping the matrices on the way: W, dW and dS as well as dQ, dK
    and dV (notebook 11's explorer draws them all). Arguments and checks as
    ``attention_backward``."""
    batch, scale = _check_attention_inputs(query, key, value, mask, scale)
    grad_output = check_float("grad_output", grad_output)
    expected = (*batch, query.shape[-2], value.shape[-1])
    if tuple(grad_output.shape) != expected:
        raise ValueError(
            f"grad_output: expected shape (..., L, Ev) = {expected}, got shape {shape_str(grad_output)}"
        )
    check_same_dtype_and_device(("query", "grad_output"), (query, grad_output))
    _, weights = attend(query, key, value, mask, scale)  # W (..., L, S), the forward's weights
    grad_value = weights.transpose(-2, -1) @ grad_output  # (..., S, L) @ (..., L, Ev) -> (..., S, Ev)
    grad_weights = grad_output @ value.transpose(-2, -1)  # (..., L, Ev) @ (..., Ev, S) -> (..., L, S)
    row_sum = (grad_weights * weights).sum(dim=-1, keepdim=True)  # (..., L, 1)
    grad_scores = weights * (grad_weights - row_sum)  # (..., L, S)
    grad_query = scale * (grad_scores @ key)  # (..., L, S) @ (..., S, E) -> (..., L, E)
    grad_key = scale * (grad_scores.transpose(-2, -1) @ query)  # (..., S, L) @ (..., L, E) -> (..., S, E)
    # An input broadcast along a batch dim receives the sum of that dim's gradients.
    return BackwardSteps(weights, grad_weights, grad_scores, grad_query.sum_to_size(query.shape),
                         grad_key.sum_to_size(key.shape), grad_value.sum_to_size(value.shape))


def attention_backward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    grad_output: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The gradient of ``scaled_dot_product_attention``'s output, derived by hand.

    With S = scale * Q K^T, W = masked_softmax(S) and O = W V, for a loss with gradient
    dO = d loss / d O:

        dV = W^T dO                              (the weighted sum, backwards)
        dW = dO V^T
        dS = W * (dW - rowsum(dW * W))           (the softmax's backward, row by row)
        dQ = scale * dS K,   dK = scale * dS^T Q (the scaled scores, backwards)

    A blocked key has W = 0, hence dS = 0: no gradient flows through it, and a query that
    may attend to no key gets dQ = 0 (never NaN).

    Args:
        query: (..., L, E)
        key: (..., S, E)
        value: (..., S, Ev)
        grad_output: (..., L, Ev), the gradient of the loss with respect to the output.
        mask: optional bool, broadcastable to (..., L, S); **True = may attend**.
        scale: multiplies the scores; defaults to 1/sqrt(E).

    Returns:
        grad_query: (..., L, E), grad_key: (..., S, E), grad_value: (..., S, Ev), each of
        the shape of its input (summed over the batch dims the input was broadcast along),
        equal to what autograd gives through ``scaled_dot_product_attention``.

    Raises:
        TypeError / ValueError: as ``scaled_dot_product_attention``, and for a grad_output
            that is not a float tensor of shape (..., L, Ev), dtype and device of query.
    """
    steps = attention_backward_steps(query, key, value, grad_output, mask, scale=scale)
    return steps.grad_query, steps.grad_key, steps.grad_value
