"""Generating one token at a time: a causal decoder, its KV cache, and what a step costs.

Training a decoder sees a whole sequence at once: every position attends to itself and the
positions before it (the causal mask), in one pass. Generation cannot: token t + 1 does not
exist until token t has been chosen. So the decoder runs once per new token. Run naively, step
t recomputes the keys and values of all t earlier positions, which have not changed. The **KV
cache** keeps them: each step computes the query, key and value of the new position only,
appends the key and value to the cache, and lets the one new query attend to every cached
position. Both ways give the same numbers; the cached step costs O(T d) instead of
O(T d^2 + T^2 d) for T positions so far.

Shape legend: B batch, T positions so far, L new positions, E = d_model, H heads,
D = E // H, N layers.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import check_float, check_int, check_rank, shape_str
from .kv_cache import KVCache
from .modules import MultiHeadAttention

__all__ = ["DecoderLayer", "Decoder", "StepCost", "step_cost", "cache_numbers"]


class DecoderLayer(nn.Module):
    """Causal self-attention, then a two-layer feed-forward network, each with a residual.

    (Normalisation layers are left out: they act on each position alone and change nothing
    in what this notebook measures.)
    """

    def __init__(self, d_model: int, num_heads: int, *, num_kv_heads: int | None = None) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: Tensor, cache: KVCache | None = None) -> tuple[Tensor, Tensor]:
        """x (B, L, E) -> (B, L, E) and the attention weights (B, H, L, T + L)."""
        if cache is None:
            a, weights = self.attn(x, causal=True)  # all positions at once, future blocked
        else:
            a, weights = self.attn(x, cache=cache)  # new positions; cache holds the T before them
        x = x + a
        return x + self.ffn(x), weights


class Decoder(nn.Module):
    """A stack of ``DecoderLayer``s on vectors (no embedding or output layer: the attention is
    what is studied here).

    Args:
        d_model: E.
        num_heads: H, dividing E.
        num_layers: N.
        num_kv_heads: H_kv, the heads of keys and values of each layer, dividing H; None (the
            default) means H. Below H: grouped-query attention, and caches H / H_kv times
            smaller.
    """

    def __init__(self, d_model: int, num_heads: int, num_layers: int, *,
                 num_kv_heads: int | None = None) -> None:
        super().__init__()
        check_int("num_layers", num_layers, low=1)
        self.d_model = d_model
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, num_kv_heads=num_kv_heads)
                                    for _ in range(num_layers))

    def new_caches(self, *, window: int | None = None) -> list[KVCache]:
        """One empty KV cache per layer; with a ``window`` W, each keeps the last W positions
        only, and each layer attends with a sliding window of W (``attn.KVCache``)."""
        return [KVCache(window=window) for _ in self.layers]

    def forward(self, x: Tensor, caches: list[KVCache] | None = None) -> tuple[Tensor, list[Tensor]]:
        """The causal pass over x, or its continuation after the cached positions.

        Args:
            x: (B, L, E): all positions (caches None), or the L new ones (with caches).
            caches: one ``KVCache`` per layer, as ``new_caches`` returns, or None.

        Returns:
            output: (B, L, E); weights: per layer, (B, H, L, T + L).
        """
        check_float("x", x)
        check_rank("x", x, 3, "(B, L, E)")
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected last dim E={self.d_model}, got shape {shape_str(x)}")
        if caches is not None and (not isinstance(caches, list) or len(caches) != len(self.layers)
                                   or not all(isinstance(c, KVCache) for c in caches)):
            raise TypeError(f"caches: expected a list of {len(self.layers)} attn.KVCache (one per layer), "
                            f"got {caches!r}")
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, None if caches is None else caches[i])
            weights.append(w)
        return x, weights


def cache_numbers(caches: list[KVCache]) -> int:
    """How many numbers the caches hold: keys and values of every layer and kept position,
    2 * B * T * H_kv * D per layer."""
    return sum(c.key.numel() + c.value.numel() for c in caches if c.key is not None)


@dataclass(frozen=True)
class StepCost:
    """Multiply-adds of one generation step at T earlier positions, with and without a cache."""

    T: int
    with_cache: int
    without_cache: int


def step_cost(T: int, d_model: int, num_layers: int) -> StepCost:
    """Multiply-adds of the step that produces position T + 1 (T positions already there).

    Per layer, for n positions that compute queries, keys and values and S keys they see:
    projections 4 n E^2, scores and weighted sum 2 n S E, feed-forward 8 n E^2.

    * with a cache: n = 1 new position, S = T + 1 keys;
    * without: the whole prefix again, n = S = T + 1, with the causal mask (half of the
      n x n scores are blocked, but the plain pass computes them all).
    """
    T = check_int("T", T, low=0)
    E = check_int("d_model", d_model, low=1)
    N = check_int("num_layers", num_layers, low=1)
    n = T + 1

    def layer(n_new: int, keys: int) -> int:
        return 4 * n_new * E * E + 2 * n_new * keys * E + 8 * n_new * E * E

    return StepCost(T=T, with_cache=N * layer(1, n), without_cache=N * layer(n, n))
