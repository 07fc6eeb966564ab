"""Attention that never holds the L x S matrix: walk the keys in blocks, online softmax.

The softmax of a row needs its maximum (for stability) and the sum of its exponentials
(to normalise). Both can be kept *running* while the keys arrive block by block:

    m_new = max(m, max_j s_j)                                  running maximum
    l_new = l * exp(m - m_new) + sum_j exp(s_j - m_new)        running sum
    o_new = o * exp(m - m_new) + sum_j exp(s_j - m_new) v_j    running output

and at the end ``output = o / l``. When the maximum grows, everything summed so far is
rescaled by ``exp(m - m_new)``, so the result equals ``softmax(s) @ V`` exactly (up to
rounding). ``OnlineSoftmax`` is these three lines; ``blockwise_attention`` feeds it one
block of scores, (L_block, S_block), at a time, and notebook 07's step-by-step trace
(``online_softmax_trace``) feeds it one query's blocks and prints each
state. This is the idea behind FlashAttention, which also walks the queries in blocks and
keeps each block in fast on-chip memory.

Shape legend:
    ... : any batch dims (B, or B, H)
    L   : number of queries;  S : number of keys and values;  Lq, Sb : one block of them
    E   : query/key size;     Ev: value size
Mask convention (the package's only one): bool, **True = may attend**. A query row that may
attend to no key gets an output of zeros (as ``attn.functional.masked_softmax``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import (check_bool, check_bool_mask, check_float, check_positive_int, check_qkv, check_rank,
                      check_same_dtype_and_device, check_scale, shape_str)
from .functional import repeat_kv
from .modules import MultiHeadAttention

__all__ = ["OnlineSoftmax", "OnlineStep", "OnlineSoftmaxTrace", "online_softmax_trace", "blockwise_attention", "blockwise_multi_head_attention", "causal_blocks"]


class OnlineSoftmax:
    """softmax(s) @ V for rows of scores s that arrive block by block.

    Args:
        shape: (..., Lq), the rows (one per query).
        value_size: Ev.
        dtype, device: of the running quantities.

    Attributes:
        running_max: m, (..., Lq, 1); -inf until a row has seen an allowed key.
        running_sum: l, (..., Lq, 1), the sum of exp(s - m) so far.
        running_output: o, (..., Lq, Ev), the sum of exp(s - m) v so far (not yet divided by l).
    """

    def __init__(self, shape: Sequence[int], value_size: int, *, dtype: torch.dtype,
                 device: torch.device | str | None = None) -> None:
        self.running_max = torch.full((*shape, 1), float("-inf"), dtype=dtype, device=device)
        self.running_sum = torch.zeros((*shape, 1), dtype=dtype, device=device)
        self.running_output = torch.zeros((*shape, value_size), dtype=dtype, device=device)

    def update(self, scores: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Take in one block of keys.

        Args:
            scores: (..., Lq, Sb), -inf where a key is blocked.
            values: (..., Sb, Ev), the block's values.

        Returns:
            rescale: (..., Lq, 1), exp(m - m_new), what the old sums were multiplied by.
            exps: (..., Lq, Sb), exp(s - m_new), the block's unnormalised weights.
        """
        new_max = torch.maximum(self.running_max, scores.amax(dim=-1, keepdim=True))  # (..., Lq, 1)
        # A row that has seen no allowed key yet has new_max = -inf: subtract 0 instead,
        # so that exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
        shift = new_max.masked_fill(new_max == float("-inf"), 0.0)
        rescale = torch.exp(self.running_max - shift)  # (..., Lq, 1); 0 on the first block
        exps = torch.exp(scores - shift)  # (..., Lq, Sb); 0 where blocked
        self.running_sum = self.running_sum * rescale + exps.sum(dim=-1, keepdim=True)
        self.running_output = self.running_output * rescale + exps @ values  # (..., Lq, Sb) @ (..., Sb, Ev) -> (..., Lq, Ev)
        self.running_max = new_max
        return rescale, exps

    def result(self) -> Tensor:
        """output = o / l, (..., Lq, Ev); zeros for a row with no allowed key (l = 0, o = 0)."""
        return self.running_output / self.running_sum.masked_fill(self.running_sum == 0, 1.0)


# --- the online softmax of one query, step by step (notebook 07) ---------------------------

@dataclass(frozen=True)
class OnlineStep:
    """One block of keys: what the running statistics were, and what they become."""

    block: int
    keys: tuple[int, int]  # key positions j0 (included) to j1 (excluded)
    scores: tuple[float, ...]
    block_max: float
    max_before: float  # -inf before the first block
    max_after: float
    rescale: float  # exp(max_before - max_after): what the old sums are multiplied by
    block_sum: float  # sum of exp(score - max_after) over this block
    sum_before: float
    sum_after: float  # sum_before * rescale + block_sum
    output_after: tuple[float, ...]  # running (unnormalised) weighted sum of values


@dataclass(frozen=True)
class OnlineSoftmaxTrace:
    steps: tuple[OnlineStep, ...]
    weights: Tensor  # (S,) exp(s - final max) / final sum
    output: Tensor  # (Ev,) final running output / final sum
    softmax: Tensor  # (S,) torch.softmax of all scores at once, to compare
    full_output: Tensor  # (Ev,) softmax @ values, to compare


def online_softmax_trace(scores: Tensor, values: Tensor, *, block_size: int) -> OnlineSoftmaxTrace:
    """Run the online softmax of one query's scores, block by block, and keep every number.

    The running state is ``OnlineSoftmax``, the one that ``blockwise_attention``
    uses; this function only records it after every block.

    Args:
        scores: (S,) float, one query's scores against S keys (-inf for a blocked key).
        values: (S, Ev) float, the keys' values, of the dtype and device of ``scores``.
        block_size: keys per block (need not divide S).

    Returns:
        an ``OnlineSoftmaxTrace``: one ``OnlineStep`` per block, then the weights and output
        it gives and, to compare, the ones computed from all the scores at once.
    """
    scores = check_float("scores", scores)
    values = check_float("values", values)
    check_rank("scores", scores, 1, "(S,)")
    check_rank("values", values, 2, "(S, Ev)")
    if values.shape[0] != scores.shape[0]:
        raise ValueError(
            f"values: expected S={scores.shape[0]} rows to match scores {shape_str(scores)}, "
            f"got shape {shape_str(values)}"
        )
    check_same_dtype_and_device(("scores", "values"), (scores, values))
    check_positive_int("block_size", block_size)
    S = scores.shape[0]
    state = OnlineSoftmax((1,), values.shape[1], dtype=values.dtype, device=values.device)  # one query row
    steps = []
    for b, j0 in enumerate(range(0, S, block_size)):
        j1 = min(j0 + block_size, S)
        block = scores[j0:j1]  # (Sb,)
        max_before, sum_before = state.running_max.item(), state.running_sum.item()
        rescale, exps = state.update(block[None, :], values[j0:j1])  # (1, Sb) and (Sb, Ev) in
        steps.append(OnlineStep(
            block=b, keys=(j0, j1), scores=tuple(block.tolist()), block_max=block.max().item(),
            max_before=max_before, max_after=state.running_max.item(), rescale=rescale.item(),
            block_sum=exps.sum().item(), sum_before=sum_before, sum_after=state.running_sum.item(),
            output_after=tuple(state.running_output[0].tolist()),
        ))
    weights = torch.exp(scores - state.running_max[0]) / state.running_sum[0]  # (S,): exp(s - m) / l
    full = torch.softmax(scores, dim=0)  # (S,)
    return OnlineSoftmaxTrace(
        steps=tuple(steps), weights=weights, output=state.result()[0],  # (1, Ev) -> (Ev,)
        softmax=full, full_output=full @ values,  # (S,) @ (S, Ev) -> (Ev,)
    )


def _mask_block(mask: Tensor, i0: int, i1: int, j0: int, j1: int) -> Tensor:
    """The part of a broadcastable mask for queries i0:i1 and keys j0:j1 (a view, no copy)."""
    rows = slice(None) if mask.shape[-2] == 1 else slice(i0, i1)
    cols = slice(None) if mask.shape[-1] == 1 else slice(j0, j1)
    return mask[..., rows, cols]


def _attend_query_block(
    q: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, *, causal: bool,
    first: int, block_size: int, scale: float, batch: Sequence[int],
) -> Tensor:
    """The output of the queries first : first + Lq, walking the keys in blocks."""
    Lq, S = q.shape[-2], key.shape[-2]
    last = first + Lq  # one past the last query of the block
    stop = min(S, last) if causal else S  # causal: the keys after the last query are never seen
    state = OnlineSoftmax((*batch, Lq), value.shape[-1], dtype=q.dtype, device=q.device)
    query_pos = torch.arange(first, last, device=q.device)[:, None]  # (Lq, 1)
    for j0 in range(0, stop, block_size):
        j1 = min(j0 + block_size, stop)
        scores = q @ key[..., j0:j1, :].transpose(-2, -1)  # (..., Lq, E) @ (..., E, Sb) -> (..., Lq, Sb)
        scores = scores * scale
        allowed = None if mask is None else _mask_block(mask, first, last, j0, j1)  # (..., Lq, Sb)
        if causal:
            below = torch.arange(j0, j1, device=q.device) <= query_pos  # (Lq, Sb): key j <= query i
            allowed = below if allowed is None else allowed & below
        if allowed is not None:
            scores = torch.where(allowed, scores, float("-inf"))  # blocked keys get no weight
        state.update(scores, value[..., j0:j1, :])
    return state.result()  # (..., Lq, Ev)


def _check_blocks(causal: object, block_size: object, query_block_size: object) -> None:
    check_bool("causal", causal)
    check_positive_int("block_size", block_size)
    if query_block_size is not None:
        check_positive_int("query_block_size", query_block_size)


def blockwise_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    block_size: int = 128,
    query_block_size: int | None = None,
    scale: float | None = None,
) -> Tensor:
    """softmax(Q K^T * scale) V computed block by block, without the (L, S) matrix.

    Walks the keys (and, if ``query_block_size`` is given, the queries) in blocks and
    keeps a running maximum, a running sum and a running output per query (the online
    softmax). Peak extra memory is a few blocks of scores, (..., L_block, block_size), instead
    of (..., L, S). The result equals ``torch.nn.functional.scaled_dot_product_attention``
    up to rounding.

    Args:
        query: (..., L, E)
        key: (..., S, E)
        value: (..., S, Ev)
        mask: optional bool, broadcastable to (..., L, S); **True = may attend**.
        causal: query i may attend to keys 0..i only (top-left aligned, as
            ``causal_mask`` and SDPA's ``is_causal``), without building an (L, S) mask.
            With ``mask`` too, a key must be allowed by both.
        block_size: keys per block (need not divide S).
        query_block_size: queries per block; None walks all L queries at once. With
            ``causal``, query blocks let whole key blocks above the diagonal be skipped.
        scale: multiplies the scores; defaults to 1/sqrt(E).

    Returns:
        output: (..., L, Ev), the broadcast batch dims of the inputs. A query row that may
        attend to no key gets zeros, never NaN.

    Raises:
        TypeError: non-tensor, integer or mixed dtypes, non-bool mask or causal, a
            non-int block size.
        ValueError: fewer than 2 dims, E = 0, E or S mismatch, batch dims that do not
            broadcast, inputs on different devices, a mask of the wrong shape, a block size
            or scale that is not positive.

    Gradients flow through it (it is made of differentiable torch ops), but autograd keeps
    every block's intermediates; FlashAttention instead recomputes them in the backward pass.
    """
    batch = check_qkv(query, key, value)
    _check_blocks(causal, block_size, query_block_size)
    scale = check_scale(scale, query.shape[-1])
    L, S = query.shape[-2], key.shape[-2]
    if mask is not None:
        mask = check_bool_mask("mask", mask, (*batch, L, S), "(..., L, S)", device=query.device)
        if mask.dim() < 2:
            mask = mask.reshape((1,) * (2 - mask.dim()) + tuple(mask.shape))  # (S,) -> (1, S)
    rows = max(L, 1) if query_block_size is None else query_block_size  # queries per block
    parts = [
        _attend_query_block(query[..., i0 : i0 + rows, :], key, value, mask, causal=causal,
                            first=i0, block_size=block_size, scale=scale, batch=batch)
        for i0 in range(0, max(L, 1), rows)  # (one empty block when L = 0)
    ]
    return torch.cat(parts, dim=-2)  # blocks of (..., Lq, Ev) -> (..., L, Ev)


def causal_blocks(L: int, S: int | None = None, *, block_size: int, query_block_size: int) -> int:
    """How many (query block, key block) pairs a causal blockwise pass computes.

    A key block is skipped when every key in it comes after the last query of the query
    block. Compare with ``ceil(L / query_block_size) * ceil(S / block_size)`` for the full
    grid.

    Args:
        L: queries; S: keys (defaults to L).
        block_size: keys per block; query_block_size: queries per block.

    Returns:
        the number of pairs computed.
    """
    check_positive_int("L", L)
    S = L if S is None else check_positive_int("S", S)
    check_positive_int("block_size", block_size)
    check_positive_int("query_block_size", query_block_size)
    total = 0
    for i0 in range(0, L, query_block_size):
        stop = min(S, i0 + query_block_size)
        total += -(-stop // block_size)  # ceil(stop / block_size)
    return total


def blockwise_multi_head_attention(
    module: MultiHeadAttention,
    query: Tensor,
    key: Tensor | None = None,
    value: Tensor | None = None,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    block_size: int = 128,
    query_block_size: int | None = None,
) -> Tensor:
    """An ``attn.MultiHeadAttention`` forward pass with ``blockwise_attention`` inside.

    The module's own ``project`` and ``combine`` around the attention, which is computed
    block by block, so no (B, H, L, S) tensor exists.

    Args:
        module: an ``attn.MultiHeadAttention``.
        query: (B, L, E); key (B, S, E) defaults to ``query``; value (B, S, E) to ``key``.
        mask: optional bool, broadcastable to (B, H, L, S); **True = may attend**.
        causal, block_size, query_block_size: as in ``blockwise_attention``.

    Returns:
        output: (B, L, E), equal to ``module(query, key, value, mask, causal=causal)[0]`` up
        to rounding.
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(f"module: expected attn.MultiHeadAttention, got {type(module).__name__}")
    query, key, value = module.check_inputs(query, key, value)
    _check_blocks(causal, block_size, query_block_size)
    if mask is not None:
        target = (query.shape[0], module.num_heads, query.shape[1], key.shape[1])
        check_bool_mask("mask", mask, target, "(B, H, L, S)", device=query.device)
    q, k, v = module.project(query, key, value)  # (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D)
    groups = module.num_heads // module.num_kv_heads  # grouped-query: key/value heads shared
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, H_kv, S, D) -> (B, H, S, D)
    heads = blockwise_attention(q, k, v, mask, causal=causal, block_size=block_size,
                                query_block_size=query_block_size)  # (B, H, L, D)
    return module.combine(heads)  # (B, H, L, D) -> (B, L, E)
