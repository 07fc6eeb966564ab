"""Checkers of notebook 03: right answers pass, typical mistakes get their hint, placeholders
and junk get a "Not yet", and no message gives the answer away. A test that takes
``language`` runs in English and in Chinese, and hears each reply in both (tests/_replies.py)."""
import numpy as np
import pytest
import torch

from attn.exercises import nb03
from attn.lessons.worked_example import printed, worked_steps

from _replies import no_leak, reply, says


STEPS = worked_steps()


@pytest.mark.parametrize("answer", [STEPS["Q"][1], STEPS["Q"][1].tolist(), np.array([0.0, 1.0])])
def test_q_row_right(answer, language):
    assert reply(nb03.check_q_row, answer).correct


@pytest.mark.parametrize("answer, hint", [
    (None, "placeholder"), (printed("Q")[1].tolist(), "chapter's printed"),
    (STEPS["K"][1].tolist(), "K or V"), ([3, 3], "two non-zero"), ([0, 1, 0], "shape"),
    ("zero one", "numbers"),
])
def test_q_row_wrong(answer, hint, language):
    fb = reply(nb03.check_q_row, answer)
    assert not fb.correct and says(fb, hint)


def test_softmax_row(language):
    right = STEPS["weights"][1]
    assert reply(nb03.check_softmax_row, right).correct
    assert reply(nb03.check_softmax_row, np.round(right.numpy(), 2)).correct  # by hand, 2 decimals
    cases = [
        (printed("weights")[1].tolist(), "printed row"),
        (torch.softmax(printed("scaled")[1], -1).tolist(), "chapter's scaled row"),
        (torch.softmax(STEPS["QK^T"][1], -1).tolist(), "unscaled"),
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
    right = STEPS["output"][1]
    assert reply(nb03.check_output_row, right).correct
    kept_q = worked_steps(overrides={"Q": printed("Q")})["output"][1].tolist()
    for answer, hint in [(printed("output")[1].tolist(), "printed row"), ([0.9, 0.56], "first entry"),
                         (kept_q, "chapter's Q row 1"), ([1.0, 1.0], "Multiply each weight"),
                         (None, "placeholder"), ([float("nan"), 1], "NaN")]:
        fb = reply(nb03.check_output_row, answer)
        assert not fb.correct and says(fb, hint), (answer, fb)
        no_leak(fb, *right.tolist())
