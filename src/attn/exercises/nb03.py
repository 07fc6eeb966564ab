"""Checkers for notebook 03, the chapter's worked example computed by hand.

Each takes the learner's answer and returns a ``Feedback`` (right/wrong and a hint). The
expected values are computed here from the example's matrices, never stored, never shown.
"""
from __future__ import annotations

from typing import Any

from ..lessons.worked_example import printed, row_softmax, worked_steps
from ..language import tr
from ._base import Feedback, Refused, as_array, checker, close

__all__ = ["check_q_row", "check_softmax_row", "check_output_row"]

_HAND_ATOL = 0.01  # answers worked out by hand to 2 decimals


def _given(answer: Any, what: str) -> Any:
    """``answer``, once it is no longer the placeholder (None or ...).

    Raises:
        Refused: "Replace the placeholder with {what}", ``what`` in the learner's language.
    """
    if answer is None or answer is ...:
        raise Refused(tr("Replace the placeholder with {what}.", what=what))
    return answer


@checker
def check_q_row(answer: Any) -> Feedback:
    """Row 1 of Q (the second row): X[1] @ W^Q, two numbers."""
    answer = _given(answer, tr("the two numbers of X[1] @ W_Q"))
    arr = as_array(tr("Q row 1"), answer, (2,))
    right = worked_steps()["Q"][1].numpy()
    if close(arr, right, 1e-9):
        return Feedback(True, tr("Row 1 of Q is X[1] @ W_Q, one dot product per column of W_Q."))
    if close(arr, printed("Q")[1].numpy(), 1e-9):
        return Feedback(False, tr("That is the chapter's printed row, which is the one to check. "
                                  "Multiply X[1] by each column of W_Q, term by term."))
    ex = worked_steps()
    if close(arr, ex["K"][1].numpy(), 1e-9) or close(arr, ex["V"][1].numpy(), 1e-9):
        return Feedback(False, tr("That is a row of K or V: use W_Q."))
    return Feedback(False, tr("Column j of the answer is sum over i of X[1][i] * W_Q[i][j]; "
                              "X[1] has two non-zero entries, so each column adds two terms."))


@checker
def check_softmax_row(answer: Any) -> Feedback:
    """Row 1 (the second row) of the attention weights, from the correctly computed scaled scores."""
    answer = _given(answer, tr("three weights, e.g. [0.2, 0.3, 0.5]"))
    arr = as_array(tr("weights row 1"), answer, (3,))
    steps = worked_steps()
    right = steps["weights"][1].numpy()
    if close(arr, right, _HAND_ATOL):
        return Feedback(True, tr("Exponentiate each scaled score, divide by the row's total: the "
                                 "three weights are positive and sum to 1."))
    if close(arr, printed("weights")[1].numpy(), _HAND_ATOL):
        return Feedback(False, tr("That is the chapter's printed row; it does not sum to 1 and "
                                  "comes from the wrong Q. Start from the right scaled scores."))
    if abs(arr.sum() - 1) > 0.02:
        return Feedback(False, tr("Your weights sum to {total:.2f}; a softmax row always sums "
                                  "to 1. Divide each exp by the sum of the three exps.", total=arr.sum()))
    if close(arr, row_softmax(printed("scaled")[1:2]).numpy()[0], _HAND_ATOL):
        return Feedback(False, tr("You used the chapter's scaled row, which follows from its wrong Q. "
                                  "Recompute Q row 1 first, then Q K^T / sqrt(2)."))
    if close(arr, row_softmax(steps["QK^T"][1:2]).numpy()[0], _HAND_ATOL):
        return Feedback(False, tr("Those are the weights of the unscaled scores: divide Q K^T "
                                  "by sqrt(d_k) = sqrt(2) first."))
    return Feedback(False, tr("Take the right row 1 of Q K^T, divide by sqrt(2), then "
                              "exp(s_j) / (exp(s_0) + exp(s_1) + exp(s_2))."))


@checker
def check_output_row(answer: Any) -> Feedback:
    """Row 1 (the second row) of the output: the right weights of row 1 times V."""
    answer = _given(answer, tr("the two numbers of the output's row 1"))
    arr = as_array(tr("output row 1"), answer, (2,))
    steps = worked_steps()
    if close(arr, steps["output"][1].numpy(), _HAND_ATOL):
        return Feedback(True, tr("An output row is a weighted average of the rows of V."))
    if close(arr, printed("output")[1].numpy(), _HAND_ATOL):
        return Feedback(False, tr("That is the chapter's printed row; recompute it from the right weights."))
    if abs(arr[0] - 1) > _HAND_ATOL:
        return Feedback(False, tr("Every row of V starts with 1 and the weights sum to 1: what must "
                                  "the first entry be?"))
    kept_q = worked_steps(overrides={"Q": printed("Q")})["output"][1].numpy()
    if close(arr, kept_q, _HAND_ATOL):
        return Feedback(False, tr("Those weights come from the chapter's Q row 1; use the right one."))
    return Feedback(False, tr("Multiply each weight of row 1 by its row of V and add the three rows "
                              "(column 1: 0*w0 + 2*w1 + 1*w2)."))
