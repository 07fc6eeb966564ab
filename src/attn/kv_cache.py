"""The KV cache: decoding one token at a time without recomputing the past.

A causal layer lets position t attend to positions 0..t. Generating token after token, the
keys and values of the earlier positions never change, so they are kept and only the new
positions' query, key and value are computed:

    cache = attn.KVCache()
    out, weights = mha(prompt, cache=cache)    # prefill: (B, T0, E), T0 positions cached
    out, weights = mha(x_next, cache=cache)    # one step: (B, 1, E), sees all T0 + 1 keys

Each step then costs O(T) instead of the O(T^2) of a full causal pass over all T positions,
and the cache holds 2 * T * H_kv * D numbers per sequence and per layer (keys and values, one
cache per layer): 2 * T * E for multi-head attention (H_kv = H, D = E / H), H / H_kv times
fewer for a grouped-query layer (``MultiHeadAttention(..., num_kv_heads=H_kv)``), whose query
heads share H_kv heads of keys and values, and H times fewer for multi-query attention
(H_kv = 1). The cache holds the H_kv heads, never copies for each query head.

A rolling buffer, ``KVCache(window=W)``: the cache keeps only the last W positions; when an
append would take it past W, the oldest are dropped. The layer then attends with a sliding
window (``attn.masks.sliding_window_mask``): each query sees the W keys ending at its own
position, and the cache holds 2 * min(T, W) * H_kv * D numbers however long the sequence
grows. Two counts: ``len(cache)`` is the number of positions **seen** (appended so far, the
position of the next token), ``cache.kept`` the number **kept** (min(len(cache), W); without
a window the two are equal).

A cache holds one layer's keys and values: the first layer to fill it owns it, and any other
layer that is handed it raises a ValueError (two layers of the same shape would otherwise mix
their keys without a word). ``clear()`` empties it for a new sequence and for any layer
(unless it was made for one: ``KVCache(module)``); it keeps its window.

Shape legend: B batch, H heads of keys and values (a grouped-query layer's H_kv), T kept
positions, T_new new positions, D = E // (query heads).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ._checks import check_float, check_positive_int, check_rank, check_same_dtype_and_device, shape_str

__all__ = ["KVCache"]


class KVCache:
    """The keys and values of the positions seen so far (or of the last ``window``), for one
    attention layer.

    Pass it to ``attn.MultiHeadAttention(..., cache=cache)`` (self-attention): the layer
    appends its new keys and values, and its new queries attend to every cached position and
    causally among themselves (with a window: to the ``window`` positions ending at their own).

    Args:
        module: optional, the layer this cache is for. Without it, the cache belongs to the
            first layer that appends to it (``append(..., module=layer)``, as
            ``MultiHeadAttention`` does).
        window: None (the default: keep every position), or W, an int >= 1: keep only the
            last W positions (a rolling buffer), for sliding-window attention.

    Attributes:
        key: (B, H, T, D), or None before the first ``append``; T = ``kept``.
        value: (B, H, T, D), or None before the first ``append``.
        module: the layer whose keys and values these are, or None while no layer has
            claimed the cache.
        window: W, or None.
        seen: the number of positions appended so far, kept or dropped (``len(cache)``).
    """

    def __init__(self, module: nn.Module | None = None, *, window: int | None = None) -> None:
        if module is not None and not isinstance(module, nn.Module):
            raise TypeError(
                f"module: expected the attention layer (a torch.nn.Module) this cache is for, "
                f"or None, got {type(module).__name__}"
            )
        self.window: int | None = None if window is None else check_positive_int("window", window)
        self.key: Tensor | None = None
        self.value: Tensor | None = None
        self.seen = 0  # positions appended so far: the position of the next one
        self.module: nn.Module | None = module
        self.module_given = module is not None  # given here: kept by clear()

    def __len__(self) -> int:
        """The number of positions seen (appended so far), dropped ones included: the offset of
        the next position. Equal to ``kept`` without a window."""
        return self.seen

    @property
    def kept(self) -> int:
        """T, the number of positions held: ``len(cache)``, or at most ``window`` with one."""
        return 0 if self.key is None else self.key.shape[-2]

    def __repr__(self) -> str:
        shape = None if self.key is None else tuple(self.key.shape)
        window = "" if self.window is None else f", window={self.window}"
        return f"KVCache(positions={len(self)}{window}, key shape={shape})"

    def append(self, key: Tensor, value: Tensor, *, module: nn.Module | None = None) -> tuple[Tensor, Tensor]:
        """Add the new positions' keys and values after the cached ones (with a window, then
        drop the oldest beyond the last ``window``).

        Args:
            key: (B, H, T_new, D)
            value: (B, H, T_new, D), the same shape; both of the cache's B, H, D, dtype and
                device once it holds something.
            module: the layer appending (``MultiHeadAttention`` passes itself): the cache's
                own layer, or any layer if the cache has none yet, which then becomes its own.

        Returns:
            key, value: (B, H, T + T_new, D), the T positions kept before this call and the
            new ones: every key the new queries may need. Without a window the cache keeps
            all of them (also as the attributes ``key`` and ``value``); with one, only the
            last ``window``.
        """
        check_float("key", key)
        check_float("value", value)
        check_rank("key", key, 4, "(B, H, T_new, D)")
        if value.shape != key.shape:
            raise ValueError(f"value: expected the shape of key {shape_str(key)}, got {shape_str(value)}")
        check_same_dtype_and_device(("key", "value"), (key, value))
        self.check_fits("key", key.shape[0], key.shape[1], key.shape[3], dtype=key.dtype, device=key.device,
                        module=module)
        if self.module is None:
            self.module = module  # the first layer to fill the cache owns it
        self.seen += key.shape[-2]
        if self.key is not None:
            key = torch.cat([self.key, key], dim=-2)  # (B, H, T, D) + (B, H, T_new, D) -> (B, H, T + T_new, D)
            value = torch.cat([self.value, value], dim=-2)  # likewise for the values
        if self.window is not None and key.shape[-2] > self.window:  # the rolling buffer is full:
            # keep the last W positions (a copy, so that the dropped ones free their memory)
            self.key = key[..., -self.window:, :].clone()  # (B, H, T + T_new, D) -> (B, H, W, D)
            self.value = value[..., -self.window:, :].clone()
        else:
            self.key, self.value = key, value
        return key, value

    def check_fits(self, name: str, B: int, H: int, D: int, *, dtype: torch.dtype,
                   device: torch.device, module: nn.Module | None = None) -> None:
        """Raise unless new keys (B, H, T_new, D) of this dtype and device can follow the
        cached ones (an empty cache takes anything), appended by ``module`` (if given: the
        cache's own layer, or any layer while the cache has none). A layer calls it before
        computing."""
        if self.key is not None:
            b, h, _, d = self.key.shape
            if (B, H, D) != (b, h, d):
                raise ValueError(
                    f"{name}: expected B={b}, H={h}, D={d} like the cached keys {shape_str(self.key)} "
                    f"(B, H, T, D), got B={B}, H={H}, D={D}"
                )
            if dtype != self.key.dtype:
                raise TypeError(f"{name}: expected dtype {self.key.dtype} like the cached keys, got {dtype}")
            if device != self.key.device:
                raise ValueError(f"{name}: expected device {self.key.device} like the cached keys, got {device}")
        if module is not None and self.module is not None and module is not self.module:
            whose, fix = (("the module it was made for", "give each layer its own KVCache")
                          if self.module_given else
                          ("the module that filled it", "give each layer its own KVCache, or clear() this one"))
            raise ValueError(
                f"{name}: expected the cache of {whose} (a {type(self.module).__name__}), got another "
                f"{type(module).__name__}: {fix}"
            )

    def clear(self) -> None:
        """Forget every position (start a new sequence); the window stays. A cache that its
        first ``append`` bound to a layer is free again for any layer; one made with
        ``KVCache(module)`` stays that module's."""
        self.key, self.value, self.seen = None, None, 0  # the window stays
        if not self.module_given:
            self.module = None
