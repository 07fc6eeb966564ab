"""Attention that never holds the L x S matrix: walk the keys in blocks, online softmax.

The softmax of a row needs its maximum (for stability) and the sum of its exponentials
(to normalise). Both can be kept *running* while the keys arrive block by block:

    m_new   = max(m, max_j s_j)                                  running maximum
    l_new   = l * exp(m - m_new) + sum_j exp(s_j - m_new)        running sum
    acc_new = acc * exp(m - m_new) + sum_j exp(s_j - m_new) v_j  running output

and at the end ``output = acc / l``. When the maximum grows, everything summed so far is
rescaled by ``exp(m - m_new)``, so the result equals ``softmax(s) @ V`` exactly (up to
rounding). Only one block of scores, (L_block, S_block), exists at a time. This is the idea
behind FlashAttention, which also walks the queries in blocks and keeps each block in fast
on-chip memory.

Shape legend:
    ... : any batch dims (B, or B, H)
    L   : number of queries;  S : number of keys and values
    E   : query/key size;     Ev: value size
Mask convention (the package's only one): bool, **True = may attend**. A query row that may
attend to no key gets an output of zeros (as ``attn.functional.masked_softmax``).
"""
from __future__ import annotations


import torch
from torch import Tensor

from ._checks import (
    broadcast_shapes,
    check_bool_mask,
    check_float,
    check_positive_int,
    check_qkv,
    check_rank,
    check_scale,
    shape_str,
)

__all__ = ["blockwise_attention", "blockwise_multi_head_attention", "causal_blocks"]


def _check_inputs(query: object, key: object, value: object) -> tuple[Tensor, Tensor, Tensor, torch.Size]:
    batch = check_qkv(query, key, value)
    return query, key, value, batch


def _mask_block(mask: Tensor, i0: int, i1: int, j0: int, j1: int) -> Tensor:
    """The part of a broadcastable mask for queries i0:i1 and keys j0:j1 (a view, no copy)."""
    rows = slice(None) if mask.shape[-2] == 1 else slice(i0, i1)
    cols = slice(None) if mask.shape[-1] == 1 else slice(j0, j1)
    return mask[..., rows, cols]


def _attend_rows(
    q: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, causal: bool,
    i0: int, block_size: int, scale: float,
) -> Tensor:
    """Online softmax over key blocks for the queries i0 : i0 + q.shape[-2]."""
    Lq, S = q.shape[-2], key.shape[-2]
    i1 = i0 + Lq
    stop = min(S, i1) if causal else S  # causal: keys after the last query are never seen
    shapes = [q.shape[:-2], key.shape[:-2], value.shape[:-2]]
    if mask is not None:
        shapes.append(mask.shape[:-2])
    batch = broadcast_shapes(*shapes)  # checked by the caller
    m = q.new_full((*batch, Lq, 1), float("-inf"))  # running max        (..., Lq, 1)
    l = q.new_zeros((*batch, Lq, 1))  # running sum of exp(s - m)           (..., Lq, 1)
    acc = q.new_zeros((*batch, Lq, value.shape[-1]))  # running sum of exp(s - m) v  (..., Lq, Ev)
    rows = torch.arange(i0, i1, device=q.device)[:, None]  # (Lq, 1) query positions
    q = q * scale  # scale once here rather than every block of scores
    # Without autograd, work on each block of scores in place (fewer passes over memory);
    # only temporaries made in this loop are changed, never an argument.
    in_place = not (torch.is_grad_enabled()
                    and (q.requires_grad or key.requires_grad or value.requires_grad))
    for j0 in range(0, stop, block_size):
        j1 = min(j0 + block_size, stop)
        s = q @ key[..., j0:j1, :].transpose(-2, -1)  # (..., Lq, E) @ (..., E, Sb) -> (..., Lq, Sb)
        if s.shape[:-1] != m.shape[:-1]:  # value or mask has more batch entries than q and k
            s = s.expand(*m.shape[:-1], j1 - j0).clone()  # -> (..., Lq, Sb)
        allowed = None
        if mask is not None:
            allowed = _mask_block(mask, i0, i1, j0, j1)  # broadcastable to (..., Lq, Sb)
        if causal and j1 - 1 > i0:  # some key in this block comes after some query
            below = torch.arange(j0, j1, device=q.device) <= rows  # (Lq, Sb)
            allowed = below if allowed is None else allowed & below
        if allowed is not None:
            s = s.masked_fill_(~allowed, float("-inf")) if in_place else s.masked_fill(~allowed, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (..., Lq, 1)
        # A row that has seen no allowed key yet has m_new = -inf: subtract 0 instead,
        # so exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
        m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = s.sub_(m_safe).exp_() if in_place else torch.exp(s - m_safe)  # (..., Lq, Sb); 0 where blocked
        rescale = torch.exp(m - m_safe)  # (..., Lq, 1); 0 on the first block seen
        l = (l * rescale).add_(p.sum(dim=-1, keepdim=True))
        acc = (acc * rescale).add_(p @ value[..., j0:j1, :])  # (..., Lq, Sb) @ (..., Sb, Ev) -> (..., Lq, Ev)
        m = m_new
    # A row with no allowed key has l = 0 and acc = 0: give it zeros, not 0 / 0.
    return acc / l.masked_fill(l == 0, 1.0)


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
    softmax). Peak extra memory is one block of scores, (..., L_block, block_size), instead
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
        ValueError: fewer than 2 dims, E or S mismatch, batch dims that do not broadcast,
            a mask of the wrong shape, a block size or scale that is not positive.

    Gradients flow through it (it is made of differentiable torch ops), but autograd keeps
    every block's intermediates; FlashAttention instead recomputes them in the backward pass.
    """
    query, key, value, batch = _check_inputs(query, key, value)
    if not isinstance(causal, bool):
        raise TypeError(f"causal: expected a bool, got {type(causal).__name__}")
    check_positive_int("block_size", block_size)
    if query_block_size is not None:
        check_positive_int("query_block_size", query_block_size)
    scale = check_scale(scale, query.shape[-1])
    L, S = query.shape[-2], key.shape[-2]
    if mask is not None:
        mask = check_bool_mask("mask", mask, (*batch, L, S), "(..., L, S)")
        if mask.dim() < 2:
            mask = mask.reshape((1,) * (2 - mask.dim()) + tuple(mask.shape))  # (S,) -> (1, S)
    step = L if query_block_size is None else query_block_size
    if step >= L:
        return _attend_rows(query, key, value, mask, causal, 0, block_size, scale)
    parts = [
        _attend_rows(query[..., i0 : i0 + step, :], key, value, mask, causal, i0, block_size, scale)
        for i0 in range(0, L, step)
    ]
    return torch.cat(parts, dim=-2)  # blocks of (..., Lq, Ev) -> (..., L, Ev)


def causal_blocks(L: int, S: int | None = None, *, block_size: int, query_block_size: int) -> int:
    """How many (query block, key block) pairs a causal blockwise pass computes.

    A key block is skipped when every key in it comes after the last query of the query
    block. Compare with ``ceil(L / query_block_size) * ceil(S / block_size)`` for the full
    grid.
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
    module: torch.nn.Module,
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

    Same projections, head split and output projection as ``module.forward``; only the
    attention between them is computed block by block, so no (B, H, L, S) tensor exists.

    Args:
        module: an ``attn.modules.MultiHeadAttention``.
        query: (B, L, E); key (B, S, E) defaults to ``query``; value (B, S, E) to ``key``.
        mask: optional bool, broadcastable to (B, H, L, S); **True = may attend**.
        causal, block_size, query_block_size: as in ``blockwise_attention``.

    Returns:
        output: (B, L, E), equal to ``module(query, key, value, mask)[0]`` up to rounding.
    """
    from .modules import MultiHeadAttention

    if not isinstance(module, MultiHeadAttention):
        raise TypeError(f"module: expected attn.MultiHeadAttention, got {type(module).__name__}")
    key = query if key is None else key
    value = key if value is None else value
    for name, t, legend in (("query", query, "(B, L, E)"), ("key", key, "(B, S, E)"),
                            ("value", value, "(B, S, E)")):
        check_float(name, t)
        check_rank(name, t, 3, legend)
        if t.shape[-1] != module.d_model:
            raise ValueError(f"{name}: expected last dim E={module.d_model}, got shape {shape_str(t)}")
    q = module.split_heads(module.W_q(query))  # (B, L, E) -> (B, H, L, D)
    k = module.split_heads(module.W_k(key))  # (B, S, E) -> (B, H, S, D)
    v = module.split_heads(module.W_v(value))  # (B, S, E) -> (B, H, S, D)
    heads = blockwise_attention(q, k, v, mask, causal=causal, block_size=block_size,
                                query_block_size=query_block_size)  # (B, H, L, D)
    return module.W_o(module.merge_heads(heads))  # (B, H, L, D) -> (B, L, E)
