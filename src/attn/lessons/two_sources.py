"""One head or two: a task that needs two sources at once (notebook 04, section 3).

Every word from the second on must output the first half of the word **before** it and the
second half of **word 0**: a positional relation and a fixed one at the same time. One head
has one softmax row per query, so it must average what it reads from the two places; two heads
can each read one. ``error_left`` measures how much of the target is still missing: 04's
trained layers are judged by it, and so is the heads explorer's hand-set layer.

Shape legend: B batch, n words, d numbers per word.
"""
from __future__ import annotations

import torch

from .._checks import check_float, shape_str

__all__ = ["two_source_target", "error_left"]


def error_left(output: torch.Tensor, target: torch.Tensor) -> float:
    """The share of the target's variance left in the error: mean((output - target)^2) / var(target).

    0 is a perfect output; 1 is no better than always answering the target's mean. Notebook
    04's one-head-or-two experiment measures its trained layers with it; the heads explorer
    measures its hand-set layer with it.

    Args:
        output: (..., n, d) what the layer gives.
        target: (..., n, d) what it should give (same shape).

    Returns:
        A float (``target.var()`` is the unbiased variance over all its numbers).
    """
    check_float("output", output)
    check_float("target", target)
    if output.shape != target.shape:
        raise ValueError(f"target: expected the shape of output {shape_str(output)}, got {shape_str(target)}")
    return float(((output - target) ** 2).mean() / target.var())


def two_source_target(x: torch.Tensor) -> torch.Tensor:
    """Section 3's task on words x: word i >= 1 gets the first half of word i - 1's numbers and
    the second half of word 0's.

    Args:
        x: (B, n, d) the words (d even).

    Returns:
        (B, n - 1, d): the targets of words 1 to n - 1.
    """
    check_float("x", x)
    if x.dim() != 3 or x.shape[-1] % 2:
        raise ValueError(f"x: expected (B, n, d) with d even, got shape {shape_str(x)}")
    half = x.shape[-1] // 2
    n = x.shape[1]
    before = x[:, :-1, :half]  # (B, n - 1, d/2): the word before each of words 1..n-1
    first = x[:, :1, half:].expand(-1, n - 1, -1)  # (B, n - 1, d/2): word 0, for every word
    return torch.cat([before, first], dim=-1)  # (B, n - 1, d)
