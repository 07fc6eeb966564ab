"""Checkers of notebook 03: right answers pass, typical mistakes get their hint, placeholders
and junk get a "Not yet", and no message gives the answer away. A test that takes
``language`` runs in English and in Chinese, and hears each reply in both (tests/_replies.py)."""
import numpy as np
import pytest
import torch

from attn.exercises import nb03
from attn.lessons.worked_example import worked_steps

from _replies import no_leak, reply, says


STEPS = worked_steps()
CHANGED = nb03._changed_steps()  # the exercises' example: X[2] changed to nb03.CHANGED_ROW
ROWS = [CHANGED[name][2].tolist() for name in "QKV"]


@pytest.mark.parametrize("answer", [ROWS, torch.tensor(ROWS), np.array(ROWS)])
def test_projection_rows_right(answer, language):
    assert reply(nb03.check_projection_rows, answer).correct


@pytest.mark.parametrize("answer, hint", [
    (None, "placeholder"), ([STEPS[name][2].tolist() for name in "QKV"], "chapter's rows 2"),
    ([ROWS[1], ROWS[0], ROWS[2]], "order q, k, v"), ([ROWS[0], ROWS[1], [0, 0]], "Not X[2] times its W: your row {rows}"),
    (ROWS[0], "shape"), ("zero one", "numbers"),
])
def test_projection_rows_wrong(answer, hint, language):
    fb = reply(nb03.check_projection_rows, answer)
    assert not fb.correct and says(fb, hint), fb.message


def test_softmax_row(language):
    right = CHANGED["weights"][2]
    assert reply(nb03.check_softmax_row, right).correct
    assert reply(nb03.check_softmax_row, np.round(right.numpy(), 2)).correct  # by hand, 2 decimals
    kept_k = torch.softmax(STEPS["K"] @ CHANGED["Q"][2] / 2 ** 0.5, -1)
    cases = [
        (STEPS["weights"][2].tolist(), "chapter's weights of row 2"),
        (kept_k.tolist(), "kept the chapter's K row 2"),
        (torch.softmax(CHANGED["QK^T"][2], -1).tolist(), "unscaled"),
        (torch.softmax(CHANGED["QK^T"][2] / 2, -1).tolist(), "divided by d_k = 2"),
        (torch.softmax(CHANGED["scaled"][:, 2], -1).tolist(), "column 2"),
        ([0.5, 0.5, 0.5], "sum to"),
        ([0.2, 0.3, 0.5], "exp(s_j)"),
        (None, "placeholder"),
        ([[0.5, 0.5]], "shape"),
    ]
    for answer, hint in cases:
        fb = reply(nb03.check_softmax_row, answer)
        assert not fb.correct and says(fb, hint), (answer, fb)
        no_leak(fb, *right.tolist())


def test_output_row(language):
    right = CHANGED["output"][2]
    assert reply(nb03.check_output_row, right).correct
    by_hand = np.round(CHANGED["weights"][2].numpy(), 2) @ CHANGED["V"].numpy()
    assert reply(nb03.check_output_row, by_hand).correct
    kept_v = (CHANGED["weights"][2] @ STEPS["V"]).tolist()
    for answer, hint in [(STEPS["output"][2].tolist(), "chapter's output row 2"), ([1.0, 2.0], "first entry"),
                         (kept_v, "kept the chapter's V row 2"), ([1.5, 1.5], "Multiply each weight"),
                         (None, "placeholder"), ([float("nan"), 1], "NaN")]:
        fb = reply(nb03.check_output_row, answer)
        assert not fb.correct and says(fb, hint), (answer, fb)
        no_leak(fb, *right.tolist())
