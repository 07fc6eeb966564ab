"""Boolean attention masks. Convention: **True = may attend**, False = blocked.

This is the convention of ``torch.nn.functional.scaled_dot_product_attention`` and of every
function in this package. ``torch.nn.MultiheadAttention`` (``attn_mask``,
``key_padding_mask``) uses the opposite one, True = blocked: convert with
``to_torch_mha_mask`` / ``from_torch_mha_mask``.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ._checks import (check_bool_tensor, check_device, check_entries, check_int, check_not_meta,
                      check_positive_int, check_tensor, shape_str)

__all__ = ["causal_mask", "sliding_window_mask", "padding_mask", "to_torch_mha_mask", "from_torch_mha_mask"]


def causal_mask(
    L: int, S: int | None = None, *, offset: int = 0, device: torch.device | str | None = None
) -> Tensor:
    """Query i may attend to keys 0..offset+i (the lower triangle, diagonal included).

    Args:
        L: number of queries.
        S: number of keys; defaults to L. With S > L and ``offset=0`` the triangle is aligned
            to the top left: query i still sees keys 0..i.
        offset: the position of the first query among the keys. Decoding with a cache of
            T earlier positions, the L new queries sit at positions T..T+L-1 of the S = T + L
            keys: ``causal_mask(L, T + L, offset=T)`` lets each see the cache and the new
            positions up to its own.
        device: where to build the mask: a ``torch.device``, a string such as "cpu", or None
            (torch's default).

    Returns:
        mask: bool (L, S); True = may attend.

    Raises:
        ValueError: L * S above 2**28 entries (``attn._checks.MAX_ENTRIES``), or a device
            this machine does not have.
    """
    check_positive_int("L", L)
    S = L if S is None else check_positive_int("S", S)
    offset = check_int("offset", offset, low=0)
    check_entries("L/S", (L, S), "(L, S)")
    device = check_device("device", device)
    return torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=offset)  # (L, S)


def sliding_window_mask(
    L: int, window: int, S: int | None = None, *, offset: int = 0,
    device: torch.device | str | None = None,
) -> Tensor:
    """Query i may attend to the ``window`` keys ending at its own position: keys
    offset+i-window+1 .. offset+i (a band of the causal triangle, clipped at 0 and at S-1).

    Sliding-window attention (Longformer, Mistral): each position sees itself and the
    window - 1 positions before it, so a step costs O(window) however long the sequence.
    ``window=1``: each query sees only its own position; a window of offset + L or more: the
    whole causal triangle, ``causal_mask(L, S, offset=offset)``. The mask already holds the
    causal rule; combine it with others by ``&``, e.g. ``sliding_window_mask(L, w) &
    padding_mask(lengths, L)``.

    Args:
        L: number of queries.
        window: how many keys each query sees, its own included: an int >= 1.
        S: number of keys; defaults to L.
        offset: the position of the first query among the keys, as in ``causal_mask``:
            the L new queries after T cached positions are ``sliding_window_mask(L, window,
            T + L, offset=T)``.
        device: where to build the mask: a ``torch.device``, a string such as "cpu", or None
            (torch's default).

    Returns:
        mask: bool (L, S); True = may attend.

    Raises:
        TypeError / ValueError naming the argument: L, window or S not an int >= 1 (a bool is
            not one), offset not an int >= 0, L * S above 2**28 entries, a device this
            machine does not have.
    """
    check_positive_int("L", L)
    window = check_positive_int("window", window)
    S = L if S is None else check_positive_int("S", S)
    offset = check_int("offset", offset, low=0)
    check_entries("L/S", (L, S), "(L, S)")
    device = check_device("device", device)
    allowed = torch.ones(L, S, dtype=torch.bool, device=device)  # (L, S)
    # the band between two diagonals: key j <= offset + i (causal) and j >= offset + i - window + 1
    return allowed.tril(diagonal=offset).triu(diagonal=offset - window + 1)  # (L, S)


def padding_mask(lengths: Tensor | list[int], max_len: int, *,
                 device: torch.device | str | None = None) -> Tensor:
    """Keys at positions >= length are padding and may not be attended to.

    Args:
        lengths: (B,) integer tensor or list of ints, each in 0..max_len.
        max_len: S, the padded length.
        device: where to build the mask; None: where ``lengths`` is (the CPU for a list).

    Returns:
        mask: bool (B, 1, 1, S); True = may attend. The two singleton dims make it
        broadcast against per-head weights (B, H, L, S); use ``mask[:, 0]`` for
        single-head weights (B, L, S).

    Raises:
        ValueError: B * S above 2**28 entries (``attn._checks.MAX_ENTRIES``), lengths on
            the meta device (it has no values to compare), or a device this machine does
            not have.
    """
    check_positive_int("max_len", max_len)
    device = check_device("device", device)
    if isinstance(lengths, (list, tuple)):
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in lengths):
            raise TypeError(f"lengths: expected a list of ints, got {lengths!r}")
        if any(not 0 <= n <= max_len for n in lengths):  # before torch.tensor: 10**30 overflows it
            raise ValueError(f"lengths: expected values in 0..max_len={max_len}, got {list(lengths)}")
        lengths = torch.tensor(lengths, dtype=torch.long)
    lengths = check_tensor("lengths", lengths)
    if lengths.is_floating_point() or lengths.dtype == torch.bool or lengths.is_complex():
        raise TypeError(f"lengths: expected an integer tensor, got dtype {lengths.dtype}")
    if lengths.dim() != 1:
        raise ValueError(f"lengths: expected 1 dim (B,), got shape {shape_str(lengths)}")
    check_not_meta("lengths", lengths, "each is compared with max_len")
    check_entries("lengths/max_len", (lengths.shape[0], max_len), "(B, S)")
    if (lengths < 0).any():
        raise ValueError(f"lengths: expected values >= 0, got {lengths.tolist()}")
    if (lengths > max_len).any():
        raise ValueError(f"lengths: expected values <= max_len={max_len}, got {lengths.tolist()}")
    device = lengths.device if device is None else device
    positions = torch.arange(max_len, device=device)  # (S,)
    mask = positions[None, :] < lengths.to(device)[:, None]  # (1, S) < (B, 1) -> (B, S)
    return mask[:, None, None, :]  # (B, S) -> (B, 1, 1, S)


def to_torch_mha_mask(mask: Tensor) -> Tensor:
    """This package's mask (True = may attend) -> ``nn.MultiheadAttention``'s (True = blocked)."""
    return ~check_bool_tensor("mask", mask)


def from_torch_mha_mask(mask: Tensor) -> Tensor:
    """``nn.MultiheadAttention``'s mask (True = blocked) -> this package's (True = may attend)."""
    return ~check_bool_tensor("mask", mask, convention="True = blocked")
