"""Checkers for notebook 03, the chapter's worked example computed by hand.

The exercises change the example: the third word's input row ``X[2]`` becomes ``CHANGED_ROW``
(``changed_inputs()``), so that every number the learner computes is one the notebook never
printed (the chapter's own numbers are all printed, and checked, above the exercises).

1. ``check_projection_rows``: row 2 of Q, K and V for the changed input, by hand.
2. ``check_softmax_row``: row 2 of the attention weights: the changed query against the keys
   (two of them the chapter's, one changed), scaled, softmaxed.
3. ``check_output_row``: row 2 of the output: those weights times the changed V.

Each takes the learner's answer and returns a ``Feedback`` (right/wrong and a hint). The
expected values are computed here from the example's matrices, never stored, never shown.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..examples import worked_example_inputs
from ..lessons.worked_example import row_softmax, worked_steps
from ..language import tr
from ._base import Feedback, Refused, as_array, checker, close

__all__ = ["CHANGED_ROW", "changed_inputs", "check_projection_rows", "check_softmax_row", "check_output_row"]

#: The changed third word: X[2] of the exercises, in place of the chapter's [1, 1, 0, 0].
CHANGED_ROW: tuple[int, ...] = (0, 1, 1, 2)
_ROW = 2  # the row the exercises follow: the changed word's
_HAND_ATOL = 0.01  # weights worked out by hand to 2 decimals
_OUTPUT_ATOL = 0.02  # an output row from weights rounded to 2 decimals carries their rounding


def changed_inputs() -> dict[str, Tensor]:
    """The chapter's example with row 2 of X replaced by ``CHANGED_ROW``: X (3, 4), W_Q, W_K,
    W_V (4, 2), float64, as ``attn.examples.worked_example_inputs`` gives them."""
    ex = worked_example_inputs()
    ex["X"][_ROW] = torch.tensor(CHANGED_ROW, dtype=ex["X"].dtype)
    return ex


def _changed_steps(**overrides: Tensor) -> dict[str, Tensor]:
    """Every step of the changed example (``worked_steps`` on ``changed_inputs()``)."""
    ex = changed_inputs()
    return worked_steps(ex["X"], ex["W_Q"], ex["W_K"], ex["W_V"], overrides=overrides or None)


def _given(answer: Any, what: str) -> Any:
    """``answer``, once it is no longer the placeholder (None or ...).

    Raises:
        Refused: "Replace the placeholder with {what}", ``what`` in the learner's language.
    """
    if answer is None or answer is ...:
        raise Refused(tr("Replace the placeholder with {what}.", what=what))
    return answer


@checker
def check_projection_rows(answer: Any) -> Feedback:
    """Exercise 1: row 2 of Q, K and V for ``changed_inputs()``, X[2] @ W_Q, X[2] @ W_K and
    X[2] @ W_V, as three rows of two numbers (q, k, v in that order)."""
    answer = _given(answer, tr("three rows of two numbers: [q, k, v] of the changed word"))
    arr = as_array(tr("the rows q, k, v"), answer, (3, 2))
    steps = _changed_steps()
    right = np.stack([steps[name][_ROW].numpy() for name in "QKV"])  # (3, 2)
    if close(arr, right, 1e-9):
        return Feedback(True, tr("A changed input row changes its own row of Q, K and V, and no other: each "
                                 "is X[2] times one W, one dot product per column."))
    chapter = worked_steps()
    if close(arr, np.stack([chapter[name][_ROW].numpy() for name in "QKV"]), 1e-9):
        return Feedback(False, tr("Those are the chapter's rows 2, from its X[2] = [1, 1, 0, 0]: use the "
                                  "changed row."))
    names = {0: "q", 1: "k", 2: "v"}
    if sorted(map(tuple, arr)) == sorted(map(tuple, right)):
        return Feedback(False, tr("Each of your rows is right, not in the order q, k, v: the first row goes "
                                  "with W_Q, the second with W_K, the third with W_V."))
    wrong = [names[i] for i in range(3) if not close(arr[i], right[i], 1e-9)]
    return Feedback(False, tr("Not X[2] times its W: your row {rows}. Column j of X[2] @ W is the sum over "
                              "i of X[2][i] * W[i][j], and X[2] now has three non-zero entries.",
                              rows=", ".join(wrong)))


@checker
def check_softmax_row(answer: Any) -> Feedback:
    """Exercise 2: row 2 of the attention weights of the changed example: the changed query
    against the keys (rows 0 and 1 the chapter's, row 2 changed), divided by sqrt(2), softmaxed."""
    answer = _given(answer, tr("three weights, e.g. [0.2, 0.3, 0.5]"))
    arr = as_array(tr("weights row 2"), answer, (3,))
    steps = _changed_steps()
    right = steps["weights"][_ROW].numpy()
    if close(arr, right, _HAND_ATOL):
        return Feedback(True, tr("The changed query scores every key, its own changed key too; the softmax "
                                 "turns the three scaled scores into weights that are positive and sum to 1."))
    if close(arr, worked_steps()["weights"][_ROW].numpy(), _HAND_ATOL):
        return Feedback(False, tr("Those are the chapter's weights of row 2, from its X[2]: with X[2] changed, "
                                  "query 2 and key 2 change, and so do the scores of row 2."))
    if abs(arr.sum() - 1) > 0.02:
        return Feedback(False, tr("Your weights sum to {total:.2f}; a softmax row always sums to 1. Divide "
                                  "each exp by the sum of the three exps.", total=arr.sum()))
    q = steps["Q"][_ROW]  # (2,)
    chapter_keys = worked_steps()["K"]  # (3, 2): row 2 from the chapter's X[2]
    if close(arr, row_softmax((chapter_keys @ q)[None] / math.sqrt(2)).numpy()[0], _HAND_ATOL):
        return Feedback(False, tr("You kept the chapter's K row 2: the changed X[2] changes key 2 as well "
                                  "(exercise 1)."))
    scores = steps["QK^T"][_ROW]  # (3,)
    if close(arr, row_softmax(scores[None]).numpy()[0], _HAND_ATOL):
        return Feedback(False, tr("Those are the weights of the unscaled scores: divide q · k by sqrt(d_k) "
                                  "= sqrt(2) first."))
    if close(arr, row_softmax(scores[None] / 2).numpy()[0], _HAND_ATOL):
        return Feedback(False, tr("Your scores were divided by d_k = 2: the scale is sqrt(d_k)."))
    if close(arr, row_softmax(steps["scaled"][:, _ROW][None]).numpy()[0], _HAND_ATOL):
        return Feedback(False, tr("That is the softmax of column 2 of the scores (every query against key 2): "
                                  "row 2 is query 2 against every key."))
    return Feedback(False, tr("Score query 2 against each key (q_2 · k_j for j = 0, 1, 2), divide by "
                              "sqrt(2), then exp(s_j) / (exp(s_0) + exp(s_1) + exp(s_2))."))


@checker
def check_output_row(answer: Any) -> Feedback:
    """Exercise 3: row 2 of the output of the changed example: the weights of exercise 2 times
    the changed V."""
    answer = _given(answer, tr("the two numbers of the output's row 2"))
    arr = as_array(tr("output row 2"), answer, (2,))
    steps = _changed_steps()
    right = steps["output"][_ROW].numpy()
    if close(arr, right, _OUTPUT_ATOL):
        return Feedback(True, tr("An output row is a weighted average of the rows of V; once the rows of V "
                                 "no longer share their first entry, neither does the output."))
    chapter = worked_steps()
    if close(arr, chapter["output"][_ROW].numpy(), _OUTPUT_ATOL):
        return Feedback(False, tr("That is the chapter's output row 2; the changed X[2] changes its weights "
                                  "and its row of V."))
    kept_v = _changed_steps(V=chapter["V"])["output"][_ROW].numpy()
    if close(arr, kept_v, _OUTPUT_ATOL):
        return Feedback(False, tr("You kept the chapter's V row 2: the changed X[2] changes its value as well."))
    if abs(arr[0] - 1) <= _OUTPUT_ATOL:
        return Feedback(False, tr("The first entry is 1 for any weights only while every row of V starts "
                                  "with 1: look at V's row 2 now (exercise 1)."))
    return Feedback(False, tr("Multiply each weight of row 2 by its row of V (rows 0 and 1 the chapter's, "
                              "row 2 yours from exercise 1) and add the three rows."))
