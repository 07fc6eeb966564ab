"""How many threads torch computes with, for one block of code.

The course's tensors are small: a second thread brings no speed there, only waiting (badly so
on a busy machine), and one thread makes training repeatable bit for bit on one machine and
timings less disturbed by other programs.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

from ._checks import check_positive_int

__all__ = ["torch_threads"]


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch threads (``torch.set_num_threads``), then restore the
    previous number, also when the block raises."""
    check_positive_int("n", n)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
