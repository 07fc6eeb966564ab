"""Checkers of notebooks 03 and 04: right answers pass, typical mistakes get their hint,
placeholders and junk get a "Not yet", and no message gives the answer away."""
import numpy as np
import pytest
import torch

from attn.cost.counts import multi_head_cost, valid_num_heads
from attn.exercises import nb03, nb04
from attn.exercises._base import Feedback
from attn.worked_example import printed, worked_steps

STEPS = worked_steps()


def _no_leak(fb: Feedback, *values: float) -> None:
    for v in values:
        for text in (f"{v:.2f}", f"{v:.3f}", f"{v:,}" if float(v).is_integer() else "\0"):
            if text not in ("1.00", "0.00", "1", "2"):
                assert text not in fb.message, (text, fb.message)


# ---- notebook 03 -------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [STEPS["Q"][1], STEPS["Q"][1].tolist(), np.array([0.0, 1.0])])
def test_q_row_right(answer):
    assert nb03.check_q_row(answer).correct


@pytest.mark.parametrize("answer, hint", [
    (None, "placeholder"), (printed("Q")[1].tolist(), "chapter's printed"),
    (STEPS["K"][1].tolist(), "K or V"), ([3, 3], "two non-zero"), ([0, 1, 0], "shape"),
    ("zero one", "numbers"),
])
def test_q_row_wrong(answer, hint):
    fb = nb03.check_q_row(answer)
    assert not fb.correct and hint in fb.message


def test_softmax_row():
    right = STEPS["weights"][1]
    assert nb03.check_softmax_row(right).correct
    assert nb03.check_softmax_row(np.round(right.numpy(), 2)).correct  # by hand, 2 decimals
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
        fb = nb03.check_softmax_row(answer)
        assert not fb.correct and hint in fb.message, (answer, fb)
        _no_leak(fb, *right.tolist())


def test_output_row():
    right = STEPS["output"][1]
    assert nb03.check_output_row(right).correct
    kept_q = worked_steps(overrides={"Q": printed("Q")})["output"][1].tolist()
    for answer, hint in [(printed("output")[1].tolist(), "printed row"), ([0.9, 0.56], "first entry"),
                         (kept_q, "chapter's Q row 1"), ([1.0, 1.0], "Multiply each weight"),
                         (None, "placeholder"), ([float("nan"), 1], "NaN")]:
        fb = nb03.check_output_row(answer)
        assert not fb.correct and hint in fb.message, (answer, fb)
        _no_leak(fb, *right.tolist())


# ---- notebook 04 -------------------------------------------------------------------------

def test_head_size():
    q = nb04.HEAD_SIZE_QUESTION
    right = q["d_model"] // q["num_heads"]
    assert nb04.check_head_size(right).correct and nb04.check_head_size(float(right)).correct
    for answer, hint in [(q["d_model"], "d_model"), (q["d_model"] * q["num_heads"], "split"),
                         (right + 1, "Concatenating"), (None, "placeholder"), (2.5, "whole"),
                         (True, "whole"), ("x", "whole")]:
        fb = nb04.check_head_size(answer)
        assert not fb.correct and hint in fb.message, (answer, fb)
        _no_leak(fb, right)


def test_param_count():
    q = nb04.PARAMS_QUESTION
    E, H = q["d_model"], q["num_heads"]
    right = multi_head_cost(1, E, H, bias=True).params
    assert right == 4 * E * E + 4 * E
    assert nb04.check_param_count(right).correct
    for answer, hint in [(4 * E * E, "biases"), (3 * E * E, "W^O"), (H * 4 * E * E, "share"),
                         (right + 1, "Count"), (None, "placeholder")]:
        fb = nb04.check_param_count(answer)
        assert not fb.correct and hint in fb.message, (answer, fb)
        _no_leak(fb, right)


def test_valid_heads():
    q = nb04.VALID_HEADS_QUESTION
    right = list(valid_num_heads(q["d_model"], max_heads=q["max_heads"]))
    assert nb04.check_valid_heads(right).correct
    assert nb04.check_valid_heads(tuple(reversed(right))).correct
    fb = nb04.check_valid_heads(right + [7])
    assert not fb.correct and "7 does not" in fb.message
    fb = nb04.check_valid_heads(right[:-2])
    assert not fb.correct and "2 valid head count(s) missing" in fb.message
    assert not nb04.check_valid_heads(None).correct
    assert "whole numbers" in nb04.check_valid_heads(["a"]).message
    assert "whole numbers" in nb04.check_valid_heads(5).message


def test_softmax_entries():
    q = nb04.SOFTMAX_QUESTION
    many = q["num_heads"] * q["n"] ** 2
    one = q["n"] ** 2
    assert nb04.check_softmax_entries((many, one)).correct
    for answer, hint in [((one, many), "other way"), ((one, one), "multiply-adds"),
                         ((many + 1, one), "one n x n map"), (None, "placeholder"), (5, "two numbers"),
                         (("a", 1), "whole number")]:
        fb = nb04.check_softmax_entries(answer)
        assert not fb.correct and hint in fb.message, (answer, fb)
        _no_leak(fb, many, one)
