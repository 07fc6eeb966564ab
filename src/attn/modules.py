"""Attention layers as torch modules: the chapter's single head and a multi-head layer.

Shape legend: B batch, L queries (target length), S keys (source length), E = d_model,
H heads, D = E // H per-head size. Masks are bool, True = may attend.
"""
from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_bool_mask, check_float, check_positive_int, check_rank, shape_str
from .functional import scaled_dot_product_attention
from .masks import causal_mask

__all__ = ["SelfAttention", "MultiHeadAttention"]


class SelfAttention(nn.Module):
    """One attention head: Q = X W^Q, K = X W^K, V = X W^V, softmax(Q K^T / sqrt(d_k)) V.

    Args:
        d_model: size of each input vector.
        d_k: size of queries and keys.
        d_v: size of values (and of the output).
    """

    def __init__(self, d_model: int, d_k: int, d_v: int) -> None:
        super().__init__()
        for name, v in (("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
            check_positive_int(name, v)
        self.d_model, self.d_k, self.d_v = d_model, d_k, d_v
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (B, L, d_model); mask bool broadcastable to (B, L, L), True = may attend
        -> output (B, L, d_v), weights (B, L, L). A query row with no allowed key gets zeros."""
        check_float("x", x)
        check_rank("x", x, 3, "(B, L, d_model)")
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected last dim d_model={self.d_model}, got shape {shape_str(x)}")
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        return scaled_dot_product_attention(q, k, v, mask)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into H heads, attend per head, concatenate, project.

    Args:
        d_model: E, the model size; a positive multiple of ``num_heads``.
        num_heads: H. Each head works in D = E // H dims.
        bias: whether the four projections have biases (the chapter: no; the article and
            ``nn.MultiheadAttention``: yes).
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = False) -> None:
        super().__init__()
        check_positive_int("num_heads", num_heads)
        check_positive_int("d_model", d_model)
        if d_model % num_heads:
            raise ValueError(
                f"d_model: expected a positive multiple of num_heads={num_heads}, got {d_model}"
            )
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.bias = bool(bias)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _check_input(self, name: str, t: Tensor, legend: str) -> Tensor:
        check_float(name, t)
        check_rank(name, t, 3, legend)
        if t.shape[-1] != self.d_model:
            raise ValueError(f"{name}: expected last dim E={self.d_model}, got shape {shape_str(t)}")
        return t

    def split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, T, E) -> (B, H, T, D)

    def merge_heads(self, x: Tensor) -> Tensor:
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.d_model)  # (B, H, T, D) -> (B, T, E)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention when key and value are omitted, cross-attention when given.

        Args:
            query: (B, L, E)
            key: (B, S, E); defaults to ``query``.
            value: (B, S, E); defaults to ``key``.
            mask: bool, broadcastable to (B, H, L, S); **True = may attend**.
            need_weights: False takes the fast path, ``torch.nn.functional.
                scaled_dot_product_attention``, and returns ``None`` for the weights.
            causal: True blocks the future: query i sees keys 0..i, as ``causal_mask(L, S)``
                (combined with ``mask`` if both are given). Without a ``mask`` the fast path
                then passes ``is_causal=True``, so SDPA can skip the blocked half.

        Returns:
            output: (B, L, E)
            weights: (B, H, L, S) per head (not averaged), or None. A query row whose mask
            allows no key gets zero weights and a zero attention output (before W_o).
        """
        key = query if key is None else key
        value = key if value is None else value
        self._check_input("query", query, "(B, L, E)")
        self._check_input("key", key, "(B, S, E)")
        self._check_input("value", value, "(B, S, E)")
        B, L, _ = query.shape
        S = key.shape[1]
        if key.shape[0] != B or value.shape[:2] != key.shape[:2]:
            raise ValueError(
                f"key/value: expected shapes (B={B}, S, E) with equal S, got key {shape_str(key)}, "
                f"value {shape_str(value)}"
            )
        if mask is not None:
            check_bool_mask("mask", mask, (B, self.num_heads, L, S), "(B, H, L, S)")
        if not isinstance(causal, bool):
            raise TypeError(f"causal: expected a bool, got {type(causal).__name__} {causal!r}")
        q = self.split_heads(self.W_q(query))  # (B, L, E) -> (B, H, L, D)
        k = self.split_heads(self.W_k(key))  # (B, S, E) -> (B, H, S, D)
        v = self.split_heads(self.W_v(value))  # (B, S, E) -> (B, H, S, D)
        if causal and (need_weights or mask is not None):
            seen = causal_mask(L, S, device=q.device)  # (L, S): query i sees keys 0..i
            mask = seen if mask is None else mask & seen  # broadcasts to (B, H, L, S)
            causal = False  # now carried by the mask
        if need_weights:
            heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, L, D), (B, H, L, S)
        else:
            # (B, H, L, D); is_causal lets SDPA skip the upper triangle instead of reading a mask
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
            if mask is not None:
                row_has_key = mask.any(dim=-1, keepdim=True)  # (..., L, 1)
                if not bool(row_has_key.all()):
                    heads = heads.masked_fill(~row_has_key, 0.0)  # fully blocked rows: zeros, not NaN
            weights = None
        return self.W_o(self.merge_heads(heads)), weights  # (B, H, L, D) -> (B, L, E)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of ``nn.MultiheadAttention(E, H, batch_first=True)``.

        The packed ``in_proj_weight`` (3E, E) is split into W_q, W_k, W_v. Not supported:
        ``kdim``/``vdim`` different from E, ``add_bias_kv``, ``add_zero_attn``.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"module: expected nn.MultiheadAttention, got {type(module).__name__}")
        if not module.batch_first:
            raise ValueError("module: expected batch_first=True, got batch_first=False")
        if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
            raise ValueError(
                "module: expected kdim = vdim = embed_dim, add_bias_kv=False, add_zero_attn=False"
            )
        has_bias = module.in_proj_bias is not None
        ref = module.in_proj_weight
        out = cls(module.embed_dim, module.num_heads, bias=has_bias).to(ref.device, ref.dtype)
        E = module.embed_dim
        with torch.no_grad():
            for i, lin in enumerate((out.W_q, out.W_k, out.W_v)):
                lin.weight.copy_(module.in_proj_weight[i * E : (i + 1) * E])  # rows of (3E, E)
                if has_bias:
                    lin.bias.copy_(module.in_proj_bias[i * E : (i + 1) * E])
            out.W_o.weight.copy_(module.out_proj.weight)
            if has_bias:
                out.W_o.bias.copy_(module.out_proj.bias)
        return out

    def to_torch(self) -> nn.MultiheadAttention:
        """An ``nn.MultiheadAttention(E, H, bias=self.bias, batch_first=True)`` with these weights."""
        ref = self.W_q.weight
        mha = nn.MultiheadAttention(
            self.d_model, self.num_heads, bias=self.bias, batch_first=True,
            device=ref.device, dtype=ref.dtype,
        )
        with torch.no_grad():
            mha.in_proj_weight.copy_(
                torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight])  # 3 x (E, E) -> (3E, E)
            )
            mha.out_proj.weight.copy_(self.W_o.weight)
            if self.bias:
                mha.in_proj_bias.copy_(torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias]))
                mha.out_proj.bias.copy_(self.W_o.bias)
        return mha
