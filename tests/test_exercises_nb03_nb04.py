"""Checkers of notebooks 03 and 04: right answers pass, typical mistakes get their hint,
placeholders and junk get a "Not yet", and no message gives the answer away."""
import numpy as np
import pytest
import torch

from attn.cost.counts import multi_head_cost
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

def _head_queries(weight, x, i, num_heads):
    d_k = weight.shape[0] // num_heads
    return x @ weight[i * d_k:(i + 1) * d_k].T  # rows of weight = columns of W^Q


def test_head_queries_right():
    assert nb04.check_head_queries(_head_queries).correct
    # another correct way: the whole Q, split with view + transpose, head i taken
    def by_split(weight, x, i, num_heads):
        q = x @ weight.T  # (B, n, E)
        return q.view(x.shape[0], x.shape[1], num_heads, -1).transpose(1, 2)[:, i]  # (B, h, n, D)
    assert nb04.check_head_queries(by_split).correct
    assert nb04.check_head_queries(lambda w, x, i, h: torch.nn.functional.linear(x, w).chunk(h, -1)[i]).correct


@pytest.mark.parametrize("answer, hint", [
    (None, "Replace None"),
    ("a string", "should be a function"),
    (lambda w, x, i, h: x @ w[:, i * (w.shape[0] // h):(i + 1) * (w.shape[0] // h)], "columns of weight"),
    (lambda w, x, i, h: x @ w[(i + 1) * (w.shape[0] // h):(i + 2) * (w.shape[0] // h)].T, "numbered from 0"),
    (lambda w, x, i, h: (x @ w.T).reshape(x.shape[0], h, x.shape[1], -1)[:, i], "mixes positions"),
    (lambda w, x, i, h: x @ w.T, "shape"),
    (lambda w, x, i, h: (x @ w.T).tolist(), "Return a tensor"),
    (lambda w, x, i, h: 2 * _head_queries(w, x, i, h), "differs from the layer's own split"),
    (lambda w, x, i, h: 1 / 0, "raised ZeroDivisionError"),
])
def test_head_queries_wrong(answer, hint):
    fb = nb04.check_head_queries(answer)
    assert not fb.correct and hint in fb.message, fb


def test_head_queries_hard_coded_for_two_heads_fails():
    """A function right for the first layer only (h = 2 hard-coded) must not pass."""
    fb = nb04.check_head_queries(lambda w, x, i, h: _head_queries(w, x, i, 2))
    assert not fb.correct


def _layer_macs(n, d_model, num_heads):
    return 4 * n * d_model ** 2 + 2 * n ** 2 * d_model


def test_layer_macs_right():
    assert nb04.check_layer_macs(_layer_macs).correct
    assert nb04.check_layer_macs(lambda n, E, h: float(_layer_macs(n, E, h))).correct


def test_layer_macs_compares_with_the_real_layer():
    """The expected counts come from running layers, and they agree with the formula."""
    for n, E, h in nb04.MACS_SIZES:
        assert nb04._counted_macs(n, E, h) == _layer_macs(n, E, h) == multi_head_cost(n, E, h).macs


@pytest.mark.parametrize("answer, hint", [
    (None, "Replace None"),
    (42, "should be a function"),
    (lambda n, E, h: 3 * n * E * E + 2 * n * n * E, "W^O"),
    (lambda n, E, h: 4 * n * E * E + n * n * E, "weights times V"),
    (lambda n, E, h: h * 4 * n * E * E + 2 * n * n * E, "once for all heads"),
    (lambda n, E, h: 4 * n * E * E + h * 2 * n * n * E, "d_k = d_model / h"),
    (lambda n, E, h: 4 * n * E * E, "grows with n^2"),
    (lambda n, E, h: _layer_macs(n, E, h) + 1, "differs from the layer's"),
    (lambda n, E, h: 2.5, "whole"),
    (lambda n, E, h: [1 / 0], "raised ZeroDivisionError"),
])
def test_layer_macs_wrong(answer, hint):
    fb = nb04.check_layer_macs(answer)
    assert not fb.correct and hint in fb.message, fb
    _no_leak(fb, *(_layer_macs(n, E, h) for n, E, h in nb04.MACS_SIZES))


def test_layer_macs_right_at_one_size_only_fails():
    fb = nb04.check_layer_macs(lambda n, E, h: _layer_macs(10, 512, 8))
    assert not fb.correct


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
