"""Sliding-window attention layer by layer: what reaches a token, what the cache keeps, what a
token no longer sees directly (notebook 14).

With a window of W (``attn.masks.sliding_window_mask``), position i attends to positions
i - W + 1 .. i. One layer later, each of those has itself gathered the W before it, so after
l layers the information of position j can reach i along a path of l hops of at most W - 1
positions each: the **receptive field** of position i after l layers is

    positions max(0, i - l (W - 1)) .. i,   a width of min(i + 1, l (W - 1) + 1).

``reachable`` computes it without the formula: the window's mask as a 0/1 matrix M (L, L),
composed l times ((M @ M ...) > 0: j reaches i in l hops); the tests check that the two agree.
Mistral 7B v0.1 (W = 4096, 32 layers) reaches about 131K positions back.

The cache stops growing: ``attn.KVCache(window=W)`` keeps the last W positions, so a layer
holds 2 x min(T, W) x H_kv x D numbers after T tokens (``cache_growth`` measures ``kept`` on
a real cache). The price: a token more than W - 1 positions back is no longer seen directly
(``out_of_window``), only through the layers below, mixed with everything else they gathered.

Shape legend: L positions, W window, H_kv heads of keys and values, D head size.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..._checks import check_int, check_positive_int
from ...kv_cache import KVCache
from ...masks import causal_mask, sliding_window_mask

__all__ = ["reachable", "receptive_width", "receptive_widths", "cache_growth", "out_of_window"]


def reachable(L: int, window: int, layers: int) -> Tensor:
    """Which positions can influence which after ``layers`` layers of windowed causal attention.

    Args:
        L: positions, >= 1.
        window: W >= 1.
        layers: l >= 0 (0: each position is only itself).

    Returns:
        bool (L, L): [i, j] True when position j's input can reach position i's output,
        through a path of ``layers`` hops each inside the window: (M^l > 0) for the window's
        0/1 mask M.
    """
    L = check_positive_int("L", L)
    window = check_positive_int("window", window)
    layers = check_int("layers", layers, low=0)
    hop = sliding_window_mask(L, window).to(torch.int64)  # (L, L): 1 where query i sees key j
    paths = torch.eye(L, dtype=torch.int64)  # (L, L): 0 layers, each position only itself
    for _ in range(layers):
        paths = ((paths @ hop) > 0).to(torch.int64)  # one more hop; > 0: "some path", not how many
    return paths.bool()


def receptive_width(i: int, window: int, layers: int) -> int:
    """How many positions reach position i after ``layers`` layers: min(i + 1, l (W - 1) + 1)."""
    i = check_int("i", i, low=0)
    window = check_positive_int("window", window)
    layers = check_int("layers", layers, low=0)
    return min(i + 1, layers * (window - 1) + 1)


def receptive_widths(L: int, window: int, layers: int) -> Tensor:
    """The width of every position's receptive field, counted on ``reachable``: (L,) int64."""
    return reachable(L, window, layers).sum(-1)  # (L, L) -> (L,)


def cache_growth(tokens: int, window: int, *, num_kv_heads: int = 1,
                 head_dim: int = 1) -> list[tuple[int, int, int]]:
    """The numbers one layer's cache holds, token after token, without and with a window,
    measured on two real ``attn.KVCache`` (``kept``), fed one position at a time.

    Args:
        tokens: T >= 1, the positions appended.
        window: W >= 1, the rolling cache's window.
        num_kv_heads, head_dim: H_kv and D of the keys and values appended.

    Returns:
        One (t, full, windowed) per step t = 1..T: the numbers held, 2 x kept x H_kv x D, by
        ``KVCache()`` (t positions) and by ``KVCache(window=W)`` (min(t, W) positions).
    """
    tokens = check_positive_int("tokens", tokens)
    window = check_positive_int("window", window)
    H, D = check_positive_int("num_kv_heads", num_kv_heads), check_positive_int("head_dim", head_dim)
    full, rolling = KVCache(), KVCache(window=window)
    step = torch.zeros(1, H, 1, D)  # (B, H_kv, 1, D): one new position's keys (the values alike)
    rows = []
    for t in range(1, tokens + 1):
        full.append(step, step)
        rolling.append(step, step)
        rows.append((t, 2 * full.kept * H * D, 2 * rolling.kept * H * D))
    return rows


def out_of_window(L: int, window: int) -> Tensor:
    """What each token can no longer see directly: earlier positions outside its window.

    Returns:
        bool (L, L): [i, j] True when j <= i - W (causally visible, but not inside the window):
        the causal mask minus the sliding window's.
    """
    L = check_positive_int("L", L)
    window = check_positive_int("window", window)
    return causal_mask(L) & ~sliding_window_mask(L, window)  # (L, L)
