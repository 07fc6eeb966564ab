"""Multi-head latent attention (MLA, DeepSeek-V2), worked out on a small example (notebook 14).

MLA caches, per token and layer, one **latent** vector c = x W_dkv of d_c numbers, whatever the
number of heads. Each head h rebuilds its keys and values from it:

    k_h = c W_uk[h],   v_h = c W_uv[h]          (T, d_c) @ (d_c, D) -> (T, D)

Rebuilding every key at every step would cost what the cache saved, but it need not happen:
a score is q_h . k_h = q_h (c W_uk[h])^T = (q_h W_uk[h]^T) c^T, so W_uk[h] can be **absorbed**
into the query, and the scores are taken against the cached latents themselves
(``scores_absorbed`` equals ``scores_direct``, to float64 round-off). Likewise the values:
w (c W_uv[h]) = (w c) W_uv[h], and W_uv[h] folds into the output projection.

**The catch with positions.** Rotary positions (RoPE, ``attn.positions.apply_rope``) rotate a
query at position i by R_i and a key at position j by R_j: the score becomes
q_h R_i (c_j W_uk[h] R_j)^T = q_h R_i R_j^T W_uk[h]^T c_j^T. The rotation R_j sits between
W_uk and the latent and changes with every key's position, so no single matrix q_h W_uk[h]^T
serves all keys: rotating the rebuilt keys breaks the absorption (``scores_absorbed(...,
rope=True)`` differs from ``scores_direct(..., rope=True)``). DeepSeek-V2's way out: leave the
rebuilt keys unrotated, and carry beside the latent one small **decoupled** rotary key
k_r = RoPE(x W_kr) of d_r numbers per token, shared by every head; each head adds the score of
its own rotary query against it (``scores_decoupled``). The cache holds d_c + d_r numbers per
token and layer, and the absorbed form again equals the direct one.

Everything is float64, seeded: the equalities are exact to ~1e-15.

Shape legend: T tokens, E = d_model, H heads, D head size, d_c latent size, d_r rotary key size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ..._checks import check_float, check_positive_int, check_rank, shape_str
from ...functional import masked_softmax
from ...masks import causal_mask
from ...positions import apply_rope

__all__ = ["LatentLayer", "latent_layer", "sample_input", "latent_cache", "rebuilt_keys_values",
           "scores_direct", "scores_absorbed", "scores_decoupled", "outputs", "cache_numbers_per_token"]


@dataclass(frozen=True)
class LatentLayer:
    """The projections of one MLA layer (float64, one matrix per head stacked first).

    Attributes:
        W_q: (H, E, D), each head's (content) query.
        W_dkv: (E, d_c), the shared down-projection to the cached latent.
        W_uk: (H, d_c, D), each head's key, rebuilt from the latent.
        W_uv: (H, d_c, D), each head's value, rebuilt from the latent.
        W_qr: (H, E, d_r), each head's rotary query.
        W_kr: (E, d_r), the rotary key, one for all heads (cached beside the latent).
    """

    W_q: Tensor
    W_dkv: Tensor
    W_uk: Tensor
    W_uv: Tensor
    W_qr: Tensor
    W_kr: Tensor

    @property
    def sizes(self) -> dict[str, int]:
        """E, H, D, d_c and d_r."""
        H, E, D = self.W_q.shape
        return {"E": E, "H": H, "D": D, "d_c": self.W_dkv.shape[1], "d_r": self.W_kr.shape[1]}


def latent_layer(d_model: int = 16, num_heads: int = 4, head_dim: int = 4, latent: int = 6,
                 rope_dim: int = 4, *, seed: int = 0) -> LatentLayer:
    """A seeded MLA layer with random float64 projections (scaled by 1/sqrt(fan-in)).

    Args:
        d_model: E; num_heads: H; head_dim: D (even: RoPE rotates pairs); latent: d_c;
        rope_dim: d_r (even).
        seed: the projections' seed.
    """
    E, H, D, d_c, d_r = (check_positive_int(n, v) for n, v in (
        ("d_model", d_model), ("num_heads", num_heads), ("head_dim", head_dim), ("latent", latent),
        ("rope_dim", rope_dim)))
    for name, v in (("head_dim", D), ("rope_dim", d_r)):
        if v % 2:
            raise ValueError(f"{name}: expected an even int (RoPE rotates pairs of features), got {v}")
    g = torch.Generator().manual_seed(seed)

    def rand(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(shape[-2])

    return LatentLayer(W_q=rand(H, E, D), W_dkv=rand(E, d_c), W_uk=rand(H, d_c, D), W_uv=rand(H, d_c, D),
                       W_qr=rand(H, E, d_r), W_kr=rand(E, d_r))


def sample_input(tokens: int = 6, d_model: int = 16, *, seed: int = 1) -> Tensor:
    """A seeded float64 sequence x: (T, E)."""
    T, E = check_positive_int("tokens", tokens), check_positive_int("d_model", d_model)
    return torch.randn(T, E, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _check_x(layer: LatentLayer, x: Tensor) -> Tensor:
    if not isinstance(layer, LatentLayer):
        raise TypeError(f"layer: expected a LatentLayer (see latent_layer), got {type(layer).__name__}")
    check_float("x", x)
    check_rank("x", x, 2, "(T, E)")
    if x.shape[1] != layer.sizes["E"] or x.dtype != torch.float64:
        raise ValueError(f"x: expected a float64 (T, E={layer.sizes['E']}) sequence, got {x.dtype} "
                         f"of shape {shape_str(x)}")
    return x


def latent_cache(layer: LatentLayer, x: Tensor) -> tuple[Tensor, Tensor]:
    """What MLA caches for the tokens x (T, E): the latents c = x W_dkv (T, d_c) and the
    decoupled rotary keys k_r = RoPE(x W_kr) (T, d_r), at positions 0..T-1."""
    x = _check_x(layer, x)
    return x @ layer.W_dkv, apply_rope(x @ layer.W_kr)  # (T, d_c), (T, d_r)


def rebuilt_keys_values(layer: LatentLayer, c: Tensor) -> tuple[Tensor, Tensor]:
    """Every head's keys and values rebuilt from the latents c (T, d_c): (H, T, D) each."""
    return c @ layer.W_uk, c @ layer.W_uv  # (T, d_c) @ (H, d_c, D) -> (H, T, D)


def scores_direct(layer: LatentLayer, x: Tensor, *, rope: bool = False) -> Tensor:
    """q_h k_h^T with the keys rebuilt, k_h = c W_uk[h]: (H, T, T). ``rope``: rotate the
    queries and the rebuilt keys by their positions first (what the absorption cannot follow)."""
    c, _ = latent_cache(layer, x)
    q = x @ layer.W_q  # (T, E) @ (H, E, D) -> (H, T, D)
    k, _ = rebuilt_keys_values(layer, c)  # (H, T, D)
    if rope:
        q, k = apply_rope(q), apply_rope(k)  # query i turned by R_i, key j by R_j
    return q @ k.transpose(-2, -1)  # (H, T, D) @ (H, D, T) -> (H, T, T)


def scores_absorbed(layer: LatentLayer, x: Tensor, *, rope: bool = False) -> Tensor:
    """(q_h W_uk[h]^T) c^T, the keys never rebuilt: (H, T, T). ``rope``: rotate the queries
    before absorbing; the keys' rotation R_j has nowhere to go, so this differs from
    ``scores_direct(..., rope=True)``."""
    c, _ = latent_cache(layer, x)
    q = x @ layer.W_q  # (H, T, D)
    if rope:
        q = apply_rope(q)
    q_latent = q @ layer.W_uk.transpose(-2, -1)  # (H, T, D) @ (H, D, d_c) -> (H, T, d_c)
    return q_latent @ c.T  # (H, T, d_c) @ (d_c, T) -> (H, T, T)


def scores_decoupled(layer: LatentLayer, x: Tensor, *, absorbed: bool) -> Tensor:
    """DeepSeek-V2's scores: the content part (unrotated keys rebuilt from the latent, direct or
    absorbed) plus each head's rotary query against the shared rotary key: (H, T, T)."""
    content = scores_absorbed(layer, x) if absorbed else scores_direct(layer, x)  # (H, T, T)
    _, k_rope = latent_cache(layer, x)  # (T, d_r): cached, rotated once, shared by the heads
    q_rope = apply_rope(x @ layer.W_qr)  # (T, E) @ (H, E, d_r) -> (H, T, d_r)
    return content + q_rope @ k_rope.T  # (H, T, d_r) @ (d_r, T) -> (H, T, T)


def outputs(layer: LatentLayer, x: Tensor, *, absorbed: bool) -> Tensor:
    """Every head's causal attention output: (H, T, D). Direct: the weights times the rebuilt
    values, w (c W_uv[h]); absorbed: the weights times the latents, then W_uv[h], (w c) W_uv[h]."""
    sizes = layer.sizes
    scores = scores_decoupled(layer, x, absorbed=absorbed) / math.sqrt(sizes["D"] + sizes["d_r"])
    w = masked_softmax(scores, causal_mask(x.shape[0]))  # (H, T, T), query i sees keys 0..i
    c, _ = latent_cache(layer, x)  # (T, d_c)
    if absorbed:
        return (w @ c) @ layer.W_uv  # (H, T, T) @ (T, d_c) -> (H, T, d_c) @ (H, d_c, D) -> (H, T, D)
    _, v = rebuilt_keys_values(layer, c)  # (H, T, D)
    return w @ v  # (H, T, T) @ (H, T, D) -> (H, T, D)


def cache_numbers_per_token(layer: LatentLayer) -> dict[str, int]:
    """The numbers one token adds to one layer's cache, for this layer's sizes: MLA's latent and
    rotary key, d_c + d_r, against multi-head attention's 2 H D and multi-query's 2 D."""
    s = layer.sizes
    return {"MLA": s["d_c"] + s["d_r"], "MHA": 2 * s["H"] * s["D"], "MQA": 2 * s["D"]}
