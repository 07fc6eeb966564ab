"""Attention layers as torch modules: the chapter's single head and a multi-head layer.

The multi-head layer is also grouped-query attention (GQA, Ainslie et al. 2023): with
``num_kv_heads`` = H_kv < H, keys and values are projected to H_kv heads only, and each is
shared by H / H_kv consecutive query heads (query head h reads key/value head h // (H / H_kv)).
H_kv = 1 is multi-query attention (MQA, Shazeer 2019); H_kv = H, the default, is the layer
of the 2017 paper. The KV cache shrinks by H / H_kv; the outputs are those of
``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``.

Shape legend: B batch, L queries (target length), S keys (source length), E = d_model,
H heads (of queries), H_kv heads of keys and values, D = E // H per-head size. Masks are
bool, True = may attend.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import functional
from ._checks import (
    check_bool,
    check_bool_mask,
    check_entries,
    check_float,
    check_like_parameters,
    check_mask_reading,
    check_number,
    check_positive_int,
    check_rank,
    check_same_dtype_and_device,
    shape_str,
)
from .kv_cache import KVCache
from .masks import causal_mask, sliding_window_mask

__all__ = ["SelfAttention", "MultiHeadAttention"]


def check_dropout(dropout: object) -> float:
    """A dropout probability: a number in [0, 1) (1 would drop everything). Returns it as a float."""
    p = check_number("dropout", dropout)  # TypeError for a str, a bool, a tensor
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: expected a probability in [0, 1), got {p}")
    return p


def check_num_kv_heads(num_kv_heads: object, num_heads: int) -> int:
    """The heads of keys and values: None (as many as ``num_heads``) or a divisor of
    ``num_heads``. Returns it as an int."""
    if num_kv_heads is None:
        return num_heads
    num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)  # TypeError for a float, a bool
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads: expected a divisor of num_heads={num_heads} (each key/value head "
                         f"serves num_heads // num_kv_heads query heads), got {num_kv_heads}")
    return num_kv_heads


class SelfAttention(nn.Module):
    """One attention head: Q = X W^Q, K = X W^K, V = X W^V, softmax(Q K^T / sqrt(d_k)) V.

    Args:
        d_model: size of each input vector.
        d_k: size of queries and keys.
        d_v: size of values (and of the output).
    """

    def __init__(self, d_model: int, d_k: int, d_v: int) -> None:
        super().__init__()
        d_model, d_k, d_v = (check_positive_int(name, v) for name, v in
                             (("d_model", d_model), ("d_k", d_k), ("d_v", d_v)))
        check_entries("d_k", (d_k, d_model), "(d_k, d_model)", what="weight")
        check_entries("d_v", (d_v, d_model), "(d_v, d_model)", what="weight")
        self.d_model, self.d_k, self.d_v = d_model, d_k, d_v
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Self-attention of one sequence batch.

        Args:
            x: (B, L, d_model), of the dtype and device of the module's parameters.
            mask: optional bool, broadcastable to (B, L, L); True = may attend.

        Returns:
            output: (B, L, d_v); zeros for a query row with no allowed key.
            weights: (B, L, L)
        """
        check_float("x", x)
        check_rank("x", x, 3, "(B, L, d_model)")
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected last dim d_model={self.d_model}, got shape {shape_str(x)}")
        check_like_parameters("x", x, self.W_q.weight)
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        return functional.scaled_dot_product_attention(q, k, v, mask)  # (B, L, d_v), (B, L, L)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into H heads, attend per head, concatenate, project.

    Args:
        d_model: E, the model size; a positive multiple of ``num_heads``.
        num_heads: H. Each head works in D = E // H dims.
        num_kv_heads: H_kv, the heads of keys and values, a divisor of H; None (the default)
            means H: multi-head attention. Below H, grouped-query attention: W_k and W_v
            project E -> H_kv * D, and each key/value head serves H / H_kv consecutive query
            heads; 1 is multi-query attention. The parameters keep their names (W_q, W_k,
            W_v, W_o) whatever H_kv.
        bias: whether the four projections have biases (the chapter: no; the article and
            ``nn.MultiheadAttention``: yes).
        dropout: p in [0, 1): in training mode each attention weight is zeroed with
            probability p after the softmax (the others scaled by 1 / (1 - p)), before the
            weights multiply V, as in ``nn.MultiheadAttention``. No effect in eval mode or
            with p = 0.0 (the default).
    """

    def __init__(self, d_model: int, num_heads: int, *, num_kv_heads: int | None = None,
                 bias: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        num_heads = check_positive_int("num_heads", num_heads)
        d_model = check_positive_int("d_model", d_model)
        if d_model % num_heads:
            raise ValueError(
                f"d_model: expected a positive multiple of num_heads={num_heads}, got {d_model}"
            )
        num_kv_heads = check_num_kv_heads(num_kv_heads, num_heads)
        check_entries("d_model", (d_model, d_model), "(d_model, d_model)", what="weight")  # W_q..W_o
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.num_kv_heads = num_kv_heads
        self.bias = check_bool("bias", bias)
        self.dropout = check_dropout(dropout)
        kv_dim = num_kv_heads * self.head_dim  # H_kv * D: E for multi-head attention
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, kv_dim, bias=bias)
        self.W_v = nn.Linear(d_model, kv_dim, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    # --- the steps of the forward pass, each written once ---------------------------------

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, n * D) -> (B, n, T, D): the last dim cut into heads of D numbers, n = H for
        queries (E = H * D), n = H_kv for keys and values."""
        B, T, _ = x.shape
        return x.view(B, T, -1, self.head_dim).transpose(1, 2)  # (B, T, n * D) -> (B, n, T, D)

    def merge_heads(self, x: Tensor) -> Tensor:
        """(B, H, T, D) -> (B, T, E): the heads side by side again (concatenated)."""
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.d_model)  # (B, H, T, D) -> (B, T, E)

    def project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Q = query W^Q, K = key W^K, V = value W^V, each split into heads.

        Args:
            query: (B, L, E); key: (B, S, E); value: (B, S, E), checked by ``check_inputs``.

        Returns:
            q: (B, H, L, D), k: (B, H_kv, S, D), v: (B, H_kv, S, D)
        """
        q = self.split_heads(self.W_q(query))  # (B, L, E) -> (B, H, L, D)
        k = self.split_heads(self.W_k(key))  # (B, S, E) -> (B, S, H_kv * D) -> (B, H_kv, S, D)
        v = self.split_heads(self.W_v(value))  # (B, S, E) -> (B, S, H_kv * D) -> (B, H_kv, S, D)
        return q, k, v

    def combine(self, heads: Tensor) -> Tensor:
        """Concat(head_1, ..., head_H) W^O.

        Args:
            heads: (B, H, L, D), each head's attention output.

        Returns:
            output: (B, L, E)
        """
        return self.W_o(self.merge_heads(heads))  # (B, H, L, D) -> (B, L, E) -> (B, L, E)

    def check_inputs(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Check the inputs of a forward pass, before any computation; key defaults to query,
        value to key.

        Args:
            query, key, value, mask, cache: as in ``forward``.

        Returns:
            query (B, L, E), key (B, S, E), value (B, S, E), float, of the dtype and device
            of the module's parameters.

        Raises:
            TypeError / ValueError naming the argument: a cache that is not an
            ``attn.KVCache``, or given with a key or value, or holding keys the new ones
            cannot follow, or filled by another module; inputs of the wrong type, rank, size,
            dtype or device (a bool key or value is named as a mask given in its place); a mask
            that is not bool or does not broadcast to (B, H, L, S), or a 2-D mask when B = L > 1
            (it could be (L, S) or (B, S): write it with 3 or 4 dims).
        """
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache: expected an attn.KVCache or None, got {type(cache).__name__}")
            if key is not None or value is not None:
                raise ValueError("cache: expected self-attention (key and value None), got a key or value")
        for name, t in (("key", key), ("value", value)):  # layer(x, mask), as notebook 05's layers are called
            if isinstance(t, Tensor) and t.dtype == torch.bool:
                raise TypeError(f"{name}: expected a floating-point tensor (B, S, E), got a bool tensor of shape "
                                f"{shape_str(t)}, a mask? The call is layer(query, key=None, value=None, "
                                f"mask=None): pass the mask by keyword, layer(x, mask=mask)")
        key = query if key is None else key
        value = key if value is None else value
        for name, t, legend in (("query", query, "(B, L, E)"), ("key", key, "(B, S, E)"),
                                ("value", value, "(B, S, E)")):
            check_float(name, t)
            check_rank(name, t, 3, legend)
            if t.shape[-1] != self.d_model:
                raise ValueError(f"{name}: expected last dim E={self.d_model}, got shape {shape_str(t)}")
        check_same_dtype_and_device(("query", "key", "value"), (query, key, value))
        check_like_parameters("query", query, self.W_q.weight)
        if key.shape[0] != query.shape[0] or value.shape[:2] != key.shape[:2]:
            raise ValueError(
                f"key/value: expected shapes (B={query.shape[0]}, S, E) with equal S, got key "
                f"{shape_str(key)}, value {shape_str(value)}"
            )
        B, L, _ = query.shape
        past = 0  # T positions already cached
        if cache is not None:  # the new keys and values must fit after the cached ones
            cache.check_fits("cache", B, self.num_kv_heads, self.head_dim, dtype=query.dtype,
                             device=query.device, module=self)
            past = cache.kept
        if mask is not None:
            S = past + key.shape[1]
            check_bool_mask("mask", mask, (B, self.num_heads, L, S), "(B, H, L, S)", device=query.device)
            check_mask_reading("mask", mask, (B,), L)
        return query, key, value

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, causal: bool, past: int,
        need_weights: bool, window: int | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Every head's softmax(q k^T / sqrt(D)) v, on the teaching path or the fast path.

        Inputs are not checked: ``compute``'s caller checked them.

        Args:
            q: (B, H, L, D); k, v: (B, H_kv, S, D), the projected heads; query head h reads
                key/value head h // (H / H_kv).
            mask: None, or bool broadcastable to (B, H, L, S); True = may attend.
            causal: whether query i may see keys 0..past+i only.
            past: T, the number of keys (cached positions) before the first query's own.
            need_weights: True: ``attn.functional``'s attention, which returns the weights;
                False: one call to ``torch.nn.functional.scaled_dot_product_attention``.
            window: None, or W (with ``causal``): query i sees keys past+i-W+1..past+i only
                (``sliding_window_mask``), as a windowed ``KVCache`` needs.

        Returns:
            heads: (B, H, L, D); weights: (B, H, L, S), or None on the fast path.
        """
        L, S = q.shape[-2], k.shape[-2]
        groups = q.shape[-3] // k.shape[-3]  # G = H / H_kv query heads per key/value head
        p = self.dropout if self.training else 0.0  # dropout on the weights, in training only
        # The fast path without a mask hands the causal rule to SDPA (is_causal, top-left
        # aligned, so only without a cache); everywhere else it becomes part of the mask.
        is_causal = causal and not need_weights and mask is None and past == 0 and window is None
        if causal and not is_causal:  # (L, S): query i sees keys 0..past+i, or the last W of them
            seen = (causal_mask(L, S, offset=past, device=q.device) if window is None else
                    sliding_window_mask(L, window, S, offset=past, device=q.device))
            mask = seen if mask is None else mask & seen  # broadcasts to (B, H, L, S)
        if need_weights:  # the teaching path: heads (B, H, L, D) and weights (B, H, L, S)
            k, v = functional.repeat_kv(k, groups), functional.repeat_kv(v, groups)  # -> (B, H, S, D)
            return functional.attend(q, k, v, mask, 1.0 / math.sqrt(self.head_dim), dropout=p)
        if mask is not None and mask.dim() < 2:  # SDPA takes masks of 2 dims or more
            mask = mask.expand(L, S)  # (S,) or () -> (L, S), a view
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal,
                                               enable_gqa=groups > 1)  # (B, H, L, D)
        return heads, None

    # --- the forward pass ---------------------------------------------------------------------

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        causal: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention when key and value are omitted, cross-attention when given.

        Args:
            query: (B, L, E)
            key: (B, S, E); defaults to ``query``.
            value: (B, S, E); defaults to ``key``.
            mask: bool, broadcastable to (B, H, L, S); **True = may attend**. A 2-D mask is
                (L, S), the same for every sequence; when B = L > 1 it must have 3 or 4 dims
                (``mask[None]``, or ``attn.padding_mask(lengths, S)`` (B, 1, 1, S) for one row
                per sequence), since a (B, S) mask would read as (L, S) (ValueError).
            need_weights: True (the teaching path) computes each head with
                ``attn.functional.attend``, the computation of
                ``attn.scaled_dot_product_attention``, and returns the weights, at most
                2**28 of them (``attn._checks.MAX_ENTRIES``; ValueError above). False (the
                fast path) is one call to ``torch.nn.functional.scaled_dot_product_attention``
                and returns ``None`` for the weights. Both take the same masks.
            causal: True blocks the future: query i sees keys 0..i, as ``causal_mask(L, S)``
                (combined with ``mask`` if both are given). On the fast path without a
                ``mask`` this is SDPA's ``is_causal=True``, which skips the blocked half.
            cache: an ``attn.KVCache``, for decoding (self-attention only: no key or value).
                The new positions' keys and values (H_kv heads) are appended to it; the L
                new queries attend to the T = ``cache.kept`` cached positions and causally
                among themselves, so S = T + L (the mask's and the weights' columns: the kept
                positions, then the new) and the attention is causal whatever ``causal``
                says. With ``KVCache(window=W)`` each query sees only the W keys ending at
                its own position (``sliding_window_mask``), and the cache then keeps the last
                W. A cache belongs to one layer: the first to fill it (ValueError from any other).

        Returns:
            output: (B, L, E)
            weights: (B, H, L, S) per head (not averaged), or None. A query row whose mask
            allows no key gets zero weights and a zero attention output (before W_o) on
            both paths (on the fast path, SDPA's own rule, checked by the tests). In
            training mode with ``dropout`` > 0 these are the weights after the dropout, the
            ones the output was made with (as ``nn.MultiheadAttention`` returns them); with
            the same seed, each path drops what ``nn.MultiheadAttention`` drops with the same
            ``need_weights`` (checked by the tests).
        """
        check_bool("need_weights", need_weights)
        check_bool("causal", causal)
        query, key, value = self.check_inputs(query, key, value, mask, cache=cache)
        if need_weights:  # the teaching path holds every weight at once
            past = 0 if cache is None else cache.kept  # T positions cached before these queries
            check_entries("need_weights", (query.shape[0], self.num_heads, query.shape[1], past + key.shape[1]),
                          "(B, H, L, S)", what="tensor of attention weights",
                          hint=": pass need_weights=False, the fast path, which needs no weights tensor")
        return self.compute(query, key, value, mask, need_weights=need_weights, causal=causal, cache=cache)

    def compute(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None,
        *,
        need_weights: bool,
        causal: bool,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """The forward pass on inputs already checked: project, attend per head, combine.

        Inputs are not checked: ``forward`` checked them (``check_inputs``), and so does a
        layer that holds this one (``attn.TransformerBlock`` checks its own x and mask, then
        calls this), as ``attn.functional.attend`` serves ``scaled_dot_product_attention``.

        Args:
            query: (B, L, E); key, value: (B, S, E), given (not None); mask, need_weights,
                causal, cache: as in ``forward``.

        Returns:
            output: (B, L, E); weights: (B, H, L, S) or None, as ``forward`` returns them.
        """
        past = 0 if cache is None else cache.kept  # T positions cached before these queries
        window = None if cache is None else cache.window  # a windowed cache: sliding-window attention
        q, k, v = self.project(query, key, value)  # (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D)
        if cache is not None:
            k, v = cache.append(k, v, module=self)  # (B, H_kv, T + L, D): the cached keys, then the new
        heads, weights = self.attend(q, k, v, mask, causal=causal or cache is not None, past=past,
                                     need_weights=need_weights, window=window)  # (B, H, L, D), (B, H, L, S) or None
        return self.combine(heads), weights  # (B, H, L, D) -> (B, L, E)

    # --- weights to and from torch.nn.MultiheadAttention --------------------------------------

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights, the dropout and the train/eval mode of
        ``nn.MultiheadAttention(E, H, batch_first=True)``.

        The packed ``in_proj_weight`` (3E, E) is split into W_q, W_k, W_v. Not supported
        (ValueError): ``kdim``/``vdim`` different from E, ``add_bias_kv``, ``add_zero_attn``.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"module: expected nn.MultiheadAttention, got {type(module).__name__}")
        E = module.embed_dim
        if not module.batch_first:
            raise ValueError("module: expected batch_first=True, got batch_first=False")
        if module.kdim != E or module.vdim != E:
            raise ValueError(
                f"module: expected kdim = vdim = embed_dim = {E}, got kdim={module.kdim}, vdim={module.vdim}"
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module: expected add_bias_kv=False and add_zero_attn=False, got True")
        has_bias = module.in_proj_bias is not None
        ref = module.in_proj_weight
        out = cls(E, module.num_heads, bias=has_bias, dropout=module.dropout).to(ref.device, ref.dtype)
        with torch.no_grad():
            for i, lin in enumerate((out.W_q, out.W_k, out.W_v)):
                lin.weight.copy_(module.in_proj_weight[i * E : (i + 1) * E])  # rows of (3E, E)
                if has_bias:
                    lin.bias.copy_(module.in_proj_bias[i * E : (i + 1) * E])
            out.W_o.weight.copy_(module.out_proj.weight)
            if has_bias:
                out.W_o.bias.copy_(module.out_proj.bias)
        return out.train(module.training)

    def to_torch(self) -> nn.MultiheadAttention:
        """An ``nn.MultiheadAttention(E, H, bias=self.bias, dropout=self.dropout,
        batch_first=True)`` with these weights, in this module's train/eval mode.

        Raises:
            ValueError: a grouped-query layer (num_kv_heads < num_heads): nn.MultiheadAttention
                has no grouped-query attention.
        """
        if self.num_kv_heads != self.num_heads:
            raise ValueError(f"num_kv_heads: expected num_kv_heads = num_heads = {self.num_heads} to convert "
                             f"to nn.MultiheadAttention, which has no grouped-query attention (each of its "
                             f"heads has its own keys and values), got num_kv_heads={self.num_kv_heads}")
        ref = self.W_q.weight
        mha = nn.MultiheadAttention(
            self.d_model, self.num_heads, bias=self.bias, dropout=self.dropout, batch_first=True,
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
        return mha.train(self.training)
