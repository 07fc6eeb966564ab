"""What a key really sends to a query: its attention weight times the size of its value.

An attention weight a_hij says what share of key j's value head h gives to query i, not how
large that value is. Through head h, key j adds a_hij * f_hj to query i's output, where
f_hj = W_O^h v_hj is j's value projected by head h's block of W^O (Kobayashi et al., 2020,
"Attention is not only a weight: analyzing transformers with vector norms"). So

    output_i = sum_h sum_j a_hij f_hj  (+ the bias of W^O),

and a key with a large weight but a small f_hj changes the output little. ``value_vectors``
gives every f_hj; ``norm_weighted`` turns weights into each key's share of what arrives,
a_hij ||f_hj|| / sum_j' a_hij' ||f_hj'||; ``attention_inputs`` records what each attention
layer of a model received, to feed ``value_vectors``.

Shape legend: B batch, H heads, L queries, S keys, E = d_model, D = E // H (head size).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .._checks import check_float, check_rank, shape_str
from ..functional import repeat_kv
from ..modules import MultiHeadAttention

__all__ = ["value_vectors", "norm_weighted", "attention_inputs"]


def value_vectors(mha: MultiHeadAttention, value: Tensor) -> Tensor:
    """f_hj = W_O^h v_hj: what key j sends through head h, in the output space.

    Args:
        mha: an ``attn.MultiHeadAttention``.
        value: (B, S, E), the layer's value input (its input x, for self-attention).

    Returns:
        f: (B, H, S, E). With the layer's weights a (B, H, L, S),
        ``(a[..., None] * f[:, :, None]).sum((1, 3))`` plus W^O's bias is the layer's output.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha: expected an attn.MultiHeadAttention, got {type(mha).__name__}")
    check_float("value", value)
    check_rank("value", value, 3, "(B, S, E)")
    E, H, D = mha.d_model, mha.num_heads, mha.head_dim
    if value.shape[-1] != E:
        raise ValueError(f"value: expected last dim E={E}, got shape {shape_str(value)}")
    v = mha.split_heads(mha.W_v(value))  # (B, S, H_kv * D) -> (B, H_kv, S, D)
    v = repeat_kv(v, H // mha.num_kv_heads)  # (B, H_kv, S, D) -> (B, H, S, D): each query head's values
    # W_o.weight is (E out, H*D in); head h's block is its columns h*D .. (h+1)*D - 1.
    w_o = mha.W_o.weight.view(E, H, D).permute(1, 2, 0)  # (E, H, D) -> (H, D, E)
    return v @ w_o[None]  # (B, H, S, D) @ (1, H, D, E) -> (B, H, S, E)


def norm_weighted(weights: Tensor, norms: Tensor) -> Tensor:
    """Each key's share of what arrives at a query: a_hij ||f_hj||, normalised over the keys.

    Args:
        weights: (..., H, L, S) attention weights.
        norms: (..., H, S), the sizes ||f_hj|| of ``value_vectors``.

    Returns:
        shares: (..., H, L, S); each row sums to 1, or is all zeros where nothing arrives
        (a row of zero weights, or keys whose values are all zero).
    """
    check_float("weights", weights)
    check_float("norms", norms)
    if weights.dim() < 3 or norms.shape != weights.shape[:-2] + weights.shape[-1:]:
        want = tuple(weights.shape[:-2] + weights.shape[-1:])
        raise ValueError(f"norms: expected shape (..., H, S) = {want} for weights {shape_str(weights)} "
                         f"(..., H, L, S), got {shape_str(norms)}")
    if (norms < 0).any():
        raise ValueError("norms: expected sizes >= 0, got a negative entry")
    sent = weights * norms[..., None, :]  # (..., H, L, S)
    total = sent.sum(-1, keepdim=True)  # (..., H, L, 1)
    return torch.where(total > 0, sent / total.clamp_min(torch.finfo(sent.dtype).tiny), torch.zeros_like(sent))


def attention_inputs(model: nn.Module, *args: Any, **kwargs: Any) -> list[Tensor]:
    """Run ``model(*args, **kwargs)`` once, without gradients, and return the value input of
    every ``attn.MultiHeadAttention`` inside it, in the order they ran.

    For self-attention the value input is the layer's input x, (B, S, E). Hooks on each layer's
    value projection ``W_v`` (``nn.Module.register_forward_pre_hook``), which every call goes
    through (``attn.TransformerBlock`` calls the layer's unchecked step, ``compute``, not the
    layer), record them and are removed afterwards.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected an nn.Module, got {type(model).__name__}")
    seen: list[Tensor] = []

    def record(projection: nn.Module, args: tuple) -> None:
        seen.append(args[0].detach())  # what W_v projects: the layer's value (B, S, E)

    layers = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not layers:
        raise ValueError(f"model: expected at least one attn.MultiHeadAttention inside, got none in "
                         f"{type(model).__name__}")
    hooks = [m.W_v.register_forward_pre_hook(record) for m in layers]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in hooks:
            h.remove()
    return seen
