"""Where a token is: positional encodings (位置编码), which give self-attention a sense of order.

Self-attention by itself ignores order: permute the tokens and the outputs are permuted the
same way (notebook 01). Models recover order in one of two places:

* **added to the input**: a code per position is added to each token's vector before the first
  layer. The Transformer's **sinusoidal** codes (Vaswani et al. 2017) are fixed,

      PE[p, 2i]   = sin(p / 10000^(2i / d))
      PE[p, 2i+1] = cos(p / 10000^(2i / d)),

  so each pair (2i, 2i+1) is a point on a circle turning at its own frequency
  w_i = 10000^(-2i/d). Moving k positions turns pair i by k * w_i, so for every fixed offset
  k the code at p + k is a fixed rotation of the code at p: PE[p + k] = PE[p] R_k^T
  (``offset_rotation``), the same R_k for every p. BERT-style models (MiniLM in notebook 08)
  *learn* one vector per position instead.
* **inside the score**: the **rotary position embedding** (RoPE, Su et al. 2021) rotates each
  pair (2i, 2i+1) of a query or key at position p by the angle p * w_i, with
  w_i = base^(-2i/E). A rotation by a and a rotation by b leave a dot product depending on
  b - a only, so the score of query m and key n depends on the offset n - m, never on m alone.

Both are computed in float64 whatever dtype is asked for, and cast at the end: an angle p * w_i
needs every digit of p. float32 keeps 24 bits, so at p = 65,536 its angle is off by up to
4e-3 radian and its codes by as much; at p = 10**9 by whole turns. float64 keeps 53 bits:
positions are exact up to 2**53, and the angle at p = 10**9 is off by about 1e-7.

Shape legend: L positions, d = d_model (even), E the rotated feature size (even),
... any batch dims.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ._checks import (check_device, check_entries, check_float, check_float_dtype, check_int,
                      check_min_rank, check_not_meta, check_number, shape_str)

__all__ = ["frequencies", "sinusoidal", "offset_rotation", "offset_spread", "apply_rope"]


def _check_even(name: str, value: object) -> int:
    value = check_int(name, value)
    if value <= 0 or value % 2:
        raise ValueError(f"{name}: expected a positive even int (features come in pairs), got {value}")
    return value


def frequencies(size: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> Tensor:
    """The angular frequency of each feature pair: w_i = base^(-2i / size), i = 0 .. size/2 - 1.

    Pair 0 turns by one radian per position; the last pair turns slowest, about base^(-1).

    Args:
        size: d (sinusoidal) or E (RoPE), a positive even int.
        base: the wavelength scale, 10000 in the Transformer and in RoPE.
        dtype: a floating-point dtype; computed in float64, then cast.

    Returns:
        (size // 2,) tensor of frequencies, largest first.
    """
    size = _check_even("size", size)
    base = check_number("base", base, positive=True)
    dtype = check_float_dtype("dtype", dtype)
    check_entries("size", (size // 2,), "(size/2,)")
    i = torch.arange(size // 2, dtype=torch.float64)  # (size/2,)
    return (base ** (-2 * i / size)).to(dtype)


def sinusoidal(length: int, d_model: int, *, base: float = 10000.0,
               dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The Transformer's fixed positional codes.

    PE[p, 2i] = sin(p * w_i) and PE[p, 2i+1] = cos(p * w_i), with w_i = base^(-2i / d_model).

    Args:
        length: L, the number of positions (0 gives an empty table).
        d_model: d, a positive even int.
        base: 10000 in the Transformer.
        dtype: a floating-point dtype; the table is computed in float64, then cast.
        device: where the table is returned (computed on the CPU); None: torch's default.

    Returns:
        (L, d) table; row p is the code added to the token at position p.

    Raises:
        TypeError: a dtype that is not floating point.
        ValueError: L * d above 2**28 entries (``attn._checks.MAX_ENTRIES``), or a device
            this machine does not have.
    """
    length = check_int("length", length, low=0)
    d_model = _check_even("d_model", d_model)
    dtype = check_float_dtype("dtype", dtype)
    device = check_device("device", device)
    check_entries("length/d_model", (length, d_model), "(L, d)")
    w = frequencies(d_model, base=base)  # (d/2,) float64
    p = torch.arange(length, dtype=torch.float64)  # (L,)
    angle = p[:, None] * w[None, :]  # (L, 1) * (1, d/2) -> (L, d/2)
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # even features
    pe[:, 1::2] = torch.cos(angle)  # odd features
    return pe.to(device=device, dtype=dtype)


def offset_rotation(offset: int | float, d_model: int, *, base: float = 10000.0) -> Tensor:
    """R_k, the rotation that moves a sinusoidal code by ``offset`` = k positions.

    Pair i of PE[p] is (sin p w_i, cos p w_i); moving k positions turns it by the angle k w_i:
    (sin(p+k)w, cos(p+k)w) = (s cos kw + c sin kw, c cos kw - s sin kw) for s, c = sin pw, cos pw.
    So PE[p + k] = PE[p] @ R_k.T for every p, with R_k block-diagonal, one 2 x 2 block
    [[cos kw_i, sin kw_i], [-sin kw_i, cos kw_i]] per pair (Vaswani et al. 2017: "PE[pos+k] can
    be represented as a linear function of PE[pos]").

    Args:
        offset: k, any real number of positions (negative moves back).
        d_model: d, a positive even int.
        base: 10000 in the Transformer.

    Returns:
        (d, d) float64 rotation matrix (orthogonal: R_k @ R_k.T is the identity).
    """
    offset = check_number("offset", offset)
    d_model = _check_even("d_model", d_model)
    angle = offset * frequencies(d_model, base=base)  # (d/2,) one angle per pair
    c, s = torch.cos(angle), torch.sin(angle)  # (d/2,) each
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (d/2, 2, 2)
    return torch.block_diag(*blocks)  # (d, d)


def offset_spread(scores: Tensor) -> float:
    """How far a score matrix is from depending on the offset only.

    For each diagonal (a fixed offset n - m between query m and key n), the largest minus the
    smallest score along it; the result is the largest of these over all diagonals. 0 means
    ``scores[m, n]`` is a function of n - m alone (to round-off, about 1e-14 in float64).

    Args:
        scores: (L, S) real matrix, L, S >= 1.

    Returns:
        the largest spread along a diagonal, a float >= 0.
    """
    scores = check_float("scores", scores)
    if scores.dim() != 2 or 0 in scores.shape:
        raise ValueError(f"scores: expected a non-empty (L, S) matrix, got shape {shape_str(scores)}")
    if not torch.isfinite(scores).all():
        raise ValueError("scores: expected finite numbers, got NaN or inf (a spread of them means nothing)")
    L, S = scores.shape
    spreads = [torch.diagonal(scores, k) for k in range(-(L - 1), S)]  # one per offset n - m
    return max((d.max() - d.min()).item() for d in spreads)


def apply_rope(x: Tensor, positions: Tensor | None = None, *, base: float = 10000.0) -> Tensor:
    """Rotate each feature pair (2i, 2i+1) of x by the angle p * base^(-2i / E).

    For a pair (a, b) and an angle t the rotation gives (a cos t - b sin t, a sin t + b cos t).
    Apply it to queries and keys (not values), after their projections: then
    ``apply_rope(q)[m] . apply_rope(k)[n]`` depends on q, k and n - m only.

    Args:
        x: (..., L, E) queries or keys, E even, floating point.
        positions: (L,) positions of the L rows, on x's device; defaults to 0 .. L-1.
            Integer or float.
        base: 10000 in RoPE.

    Returns:
        (..., L, E), a new tensor of x's dtype; x is not changed. The angles, their cosines
        and sines are computed in float64 on the CPU, then cast to x's dtype and device.
    """
    x = check_float("x", x)
    check_min_rank("x", x, 2, "(..., L, E)")
    L, E = x.shape[-2], x.shape[-1]
    if E == 0 or E % 2:
        raise ValueError(f"x: expected an even, positive last dim E (features come in pairs), "
                         f"got shape {shape_str(x)}")
    if positions is None:
        positions = torch.arange(L)  # (L,) on the CPU, where the angles are computed
    else:
        if not isinstance(positions, Tensor):
            raise TypeError(f"positions: expected a torch.Tensor of shape ({L},) or None, "
                            f"got {type(positions).__name__}")
        if positions.shape != (L,):
            raise ValueError(f"positions: expected shape ({L},) (one per row of x), "
                             f"got shape {shape_str(positions)}")
        if positions.dtype == torch.bool or positions.is_complex():
            raise TypeError(f"positions: expected integer or float positions, got dtype {positions.dtype}")
        check_not_meta("positions", positions, "the angles are computed from them")
        if positions.device != x.device:
            raise ValueError(f"positions: expected device {x.device} (the device of x), got {positions.device}")
    w = frequencies(E, base=base)  # (E/2,) float64
    angle = positions.to("cpu", torch.float64)[:, None] * w[None, :]  # (L, 1) * (1, E/2) -> (L, E/2)
    cos, sin = torch.cos(angle).to(x), torch.sin(angle).to(x)  # (L, E/2) each, x's dtype and device
    a, b = x[..., 0::2], x[..., 1::2]  # (..., L, E/2) each: the two halves of every pair
    rotated = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., L, E/2, 2)
    return rotated.flatten(-2)  # (..., L, E/2, 2) -> (..., L, E): pairs back in place
