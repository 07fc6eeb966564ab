"""The KV cache: decoding one token at a time without recomputing the past.

A causal layer lets position t attend to positions 0..t. Generating token after token, the
keys and values of the earlier positions never change, so they are kept and only the new
positions' query, key and value are computed:

    cache = attn.KVCache()
    out, weights = mha(prompt, cache=cache)    # prefill: (B, T0, E), T0 positions cached
    out, weights = mha(x_next, cache=cache)    # one step: (B, 1, E), sees all T0 + 1 keys

Each step then costs O(T) instead of the O(T^2) of a full causal pass over all T positions,
and the cache holds 2 * T * E numbers per sequence and per layer (one cache per layer).

Shape legend: B batch, H heads, T cached positions, T_new new positions, D = E // H.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_float, check_rank, check_same_dtype_and_device, shape_str

__all__ = ["KVCache"]


class KVCache:
    """The keys and values of every position seen so far, for one attention layer.

    Pass it to ``attn.MultiHeadAttention(..., cache=cache)`` (self-attention): the layer
    appends its new keys and values, and its new queries attend to every cached position and
    causally among themselves.

    Attributes:
        key: (B, H, T, D), or None before the first ``append``.
        value: (B, H, T, D), or None before the first ``append``.
    """

    def __init__(self) -> None:
        self.key: Tensor | None = None
        self.value: Tensor | None = None

    def __len__(self) -> int:
        """T, the number of cached positions."""
        return 0 if self.key is None else self.key.shape[-2]

    def __repr__(self) -> str:
        shape = None if self.key is None else tuple(self.key.shape)
        return f"KVCache(positions={len(self)}, key shape={shape})"

    def append(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new positions' keys and values after the cached ones.

        Args:
            key: (B, H, T_new, D)
            value: (B, H, T_new, D), the same shape; both of the cache's B, H, D, dtype and
                device once it holds something.

        Returns:
            key, value: (B, H, T + T_new, D), every position so far (also kept as the
            attributes ``key`` and ``value``).
        """
        check_float("key", key)
        check_float("value", value)
        check_rank("key", key, 4, "(B, H, T_new, D)")
        if value.shape != key.shape:
            raise ValueError(f"value: expected the shape of key {shape_str(key)}, got {shape_str(value)}")
        check_same_dtype_and_device(("key", "value"), (key, value))
        self.check_fits("key", key.shape[0], key.shape[1], key.shape[3], dtype=key.dtype, device=key.device)
        if self.key is None:
            self.key, self.value = key, value
        else:
            self.key = torch.cat([self.key, key], dim=-2)  # (B, H, T, D) + (B, H, T_new, D) -> (B, H, T + T_new, D)
            self.value = torch.cat([self.value, value], dim=-2)  # likewise for the values
        return self.key, self.value

    def check_fits(self, name: str, B: int, H: int, D: int, *, dtype: torch.dtype,
                   device: torch.device) -> None:
        """Raise unless new keys (B, H, T_new, D) of this dtype and device can follow the
        cached ones (an empty cache takes anything): a layer calls it before computing."""
        if self.key is None:
            return
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

    def clear(self) -> None:
        """Forget every position (start a new sequence)."""
        self.key, self.value = None, None
