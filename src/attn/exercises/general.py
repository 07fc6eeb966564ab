"""Checkers that any lesson can call, with the exercise's setting as literal arguments.

A new lesson (``python -m tools.lesson new``) needs a checker before it has a module of its own in
``attn.exercises``; these take what the exercise is about as arguments, so that the lesson's
notebook says it in the cell (``general.check_mask(answer, kind="causal", length=6)``), build
the expected answer from the package's own functions, and, like every checker, reply right or
wrong with the mistake named, never with the expected answer.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..language import tr
from ..masks import causal_mask
from ._base import Feedback, Refused, as_array, checker

__all__ = ["MASK_KINDS", "check_mask"]

#: The masks ``check_mask`` knows, by the names the course's mask explorer gives them.
MASK_KINDS: tuple[str, ...] = ("none", "causal")


def _expected_mask(kind: str, length: int) -> np.ndarray:
    if kind not in MASK_KINDS:
        raise ValueError(f"kind: expected one of {MASK_KINDS}, got {kind!r}")
    if not isinstance(length, int) or length < 2:
        raise ValueError(f"length: expected a whole number of at least 2, got {length!r}")
    if kind == "none":
        return np.ones((length, length), dtype=bool)
    return causal_mask(length).numpy()  # (L, L): True = may attend


@checker
def check_mask(answer: Any, *, kind: str = "causal", length: int = 6) -> Feedback:
    """A boolean mask written by the learner, (length, length), True = may attend.

    Args:
        answer: the learner's mask: a tensor, an array or a nested list of True/False (or 1/0),
            rows = queries, columns = keys.
        kind: which mask the exercise asks for, one of ``MASK_KINDS``.
        length: the number of tokens, L.

    Returns:
        ``Feedback``: right, or wrong with the mistake named (the rows and columns swapped, the
        diagonal left out, a count of cells), never the expected mask.

    Raises:
        ValueError: ``kind`` or ``length`` is not one the checker knows (a mistake in the
            notebook, not in the answer).
    """
    expected = _expected_mask(kind, length)
    if answer is None:
        raise Refused(tr("answer is still None: write a {rows} x {cols} matrix of True/False.",
                         rows=length, cols=length))
    arr = as_array("answer", answer, (length, length))
    if not np.isin(arr, (0.0, 1.0)).all():
        raise Refused(tr("answer should hold only True/False (or 1/0), one per (query, key) cell."))
    mask = arr.astype(bool)
    if (mask == expected).all():
        return Feedback(True, tr("True exactly where a query may attend to a key: {allowed} of the "
                                 "{cells} cells.", allowed=int(expected.sum()), cells=expected.size))
    if (mask == expected.T).all():
        return Feedback(False, tr("your mask is the right one with rows and columns swapped: rows are "
                                  "queries, columns are keys."))
    if (mask | np.eye(length, dtype=bool) == expected).all():
        return Feedback(False, tr("every query may attend to itself: the diagonal is True."))
    return Feedback(False, tr("{got} cells are True; row by row, ask which keys that query may see.",
                              got=int(mask.sum())))
