"""Checkers of notebook 11: correct backward passes pass, each classic mistake gets its own hint.
A test that takes ``language`` runs in English and in Chinese, and hears each reply in both
(tests/_replies.py)."""
import pytest
import torch

from attn.exercises import nb11

from _replies import reply, says


def softmax_backward_formula(w, dw):
    return w * (dw - (dw * w).sum(dim=-1, keepdim=True))


def softmax_backward_jacobian(w, dw):
    rows = []
    for wr, dr in zip(w, dw):
        jac = torch.diag(wr) - torch.outer(wr, wr)  # (S, S), symmetric
        rows.append(jac @ dr)
    return torch.stack(rows)


def softmax_backward_autograd(w, dw):
    s = w.log().requires_grad_()  # softmax(log w) = w: the scores up to a constant per row
    (ds,) = torch.autograd.grad(torch.softmax(s, dim=-1), s, dw)
    return ds


def score_backward_autograd(dS, Q, K, scale):
    Q, K = Q.clone().requires_grad_(), K.clone().requires_grad_()
    return torch.autograd.grad(scale * Q @ K.T, (Q, K), dS)


def _reset():
    nb11.SOFTMAX_BACKWARD_HINTS.reset()
    nb11.SCORE_BACKWARD_HINTS.reset()


def test_softmax_backward_accepts_correct_ones(language):
    _reset()
    assert reply(nb11.check_softmax_backward, softmax_backward_formula)
    assert reply(nb11.check_softmax_backward, softmax_backward_jacobian)


SOFTMAX_SLIPS = [
    (lambda w, dw: w * dw, "rows do not sum to 0", "the product rule"),
    (lambda w, dw: w * (dw - (dw * w).sum(0, keepdim=True)), "depends on the other rows", "the dim"),
    (lambda w, dw: dw - (dw * w).sum(-1, keepdim=True), "not proportional to the weights",
     "multiplies the whole bracket"),
    (lambda w, dw: w * (dw - dw.sum(-1, keepdim=True)), "does not change when the weights change",
     "what is summed"),
    (lambda w, dw: -softmax_backward_formula(w, dw), "exactly the negative", "order of the two terms"),
    (lambda w, dw: w, "not by one of the usual slips", "write the terms"),
]


@pytest.mark.parametrize("fn, symptom, where", SOFTMAX_SLIPS)
def test_softmax_backward_names_each_mistake_then_where_to_look(fn, symptom, where, language):
    _reset()
    first = reply(nb11.check_softmax_backward, fn)
    assert not first and says(first, symptom) and not says(first, "Where to look"), first.message
    second = reply(nb11.check_softmax_backward, fn)
    assert not second and second.message.startswith(first.message), second.message
    assert says(second, "Where to look") and says(second, where), second.message
    for fb in (first, second):  # never the formula of the fix
        assert "rowsum(dw * w)" not in fb.message and "sum of dw * w" not in fb.message, fb.message


def test_softmax_backward_counts_each_mistake_apart(language):
    _reset()
    missing, sign = SOFTMAX_SLIPS[0][0], SOFTMAX_SLIPS[4][0]
    assert not says(reply(nb11.check_softmax_backward, missing), "Where to look")
    assert not says(reply(nb11.check_softmax_backward, sign), "Where to look")  # a new mistake: tier 1
    assert says(reply(nb11.check_softmax_backward, missing), "Where to look")


def test_softmax_backward_checker_input_errors(language):
    _reset()
    check = nb11.check_softmax_backward
    assert says(reply(check, None), "Pass your function")

    def todo(w, dw):
        raise NotImplementedError

    assert says(reply(check, todo), "Not implemented yet")
    assert says(reply(check, lambda w, dw: w.T), "has the shape of the scores")
    assert says(reply(check, lambda w, dw: 1.0), "Return a torch.Tensor")
    assert says(reply(check, lambda w, dw: 1 / 0), "raised {error}", error="ZeroDivisionError")


def test_score_backward(language):
    _reset()
    right = lambda dS, Q, K, scale: (scale * dS @ K, scale * dS.T @ Q)  # noqa: E731
    assert reply(nb11.check_score_backward, right)
    assert reply(nb11.check_score_backward, score_backward_autograd)
    cases = [
        (lambda dS, Q, K, s: (dS @ K, dS.T @ Q), "1/scale", "what the factor scale"),
        (lambda dS, Q, K, s: (s * dS.T @ Q, s * dS @ K), "holds dK's numbers", "the shape of"),
        (lambda dS, Q, K, s: (s * dS @ K, s * dS @ K), "dQ is right", "through K^T"),
        (lambda dS, Q, K, s: (s * dS @ K * 3, s * dS.T @ Q), "dK is right", "one row of Q"),
        (lambda dS, Q, K, s: (dS, dS), "Both differ", "differentiate"),
    ]
    for fn, symptom, where in cases:
        _reset()
        first = reply(nb11.check_score_backward, fn)
        assert not first and says(first, symptom) and not says(first, "Where to look"), first.message
        second = reply(nb11.check_score_backward, fn)
        assert not second and second.message.startswith(first.message), second.message
        assert says(second, "Where to look") and says(second, where), second.message
        assert "dS^T Q" not in second.message and "dS K" not in second.message
    assert says(reply(nb11.check_score_backward, lambda dS, Q, K, s: s * dS @ K), "Return a pair")
    assert says(reply(nb11.check_score_backward, None), "Pass your function")


def test_saved_bytes(language):
    L = nb11.SAVED_L
    check = nb11.check_saved_bytes
    assert reply(check, L * L * 4)
    assert says(reply(check, L * L), "That counts entries")
    assert says(reply(check, 3 * L * nb11.SAVED_E * 4), "per position")
    assert says(reply(check, None), "Replace the placeholder")
    assert says(reply(check, "big"), "whole number")
    assert not reply(check, L * L * 8)


def test_near_misses_are_rejected():
    _reset()
    # autograd's own answer passes; the same answer off by 1e-3 in every entry does not: the
    # checkers compare to 1e-9, far below any mistake but far above float64 rounding
    off = 1e-3
    assert nb11.check_softmax_backward(softmax_backward_autograd)
    assert not nb11.check_softmax_backward(lambda w, dw: softmax_backward_autograd(w, dw) + off)
    assert nb11.check_score_backward(score_backward_autograd)
    for dq_off, dk_off in ((off, 0.0), (0.0, off), (off, off)):
        def nearly(dS, Q, K, scale, dq_off=dq_off, dk_off=dk_off):
            dq, dk = score_backward_autograd(dS, Q, K, scale)
            return dq + dq_off, dk + dk_off
        assert not nb11.check_score_backward(nearly), (dq_off, dk_off)
    L = nb11.SAVED_L
    for near in (L * L * 4 - 1, L * L * 4 + 1):  # a byte off
        assert not nb11.check_saved_bytes(near), near
