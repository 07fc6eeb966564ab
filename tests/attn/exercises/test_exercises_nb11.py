"""Checkers of notebook 11: correct backward passes pass, each classic mistake gets its own hint."""
import torch

from attn.exercises import nb11


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


def test_softmax_backward_accepts_correct_ones():
    _reset()
    assert nb11.check_softmax_backward(softmax_backward_formula)
    assert nb11.check_softmax_backward(softmax_backward_jacobian)


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


def test_softmax_backward_names_each_mistake_then_where_to_look():
    for fn, symptom, where in SOFTMAX_SLIPS:
        _reset()
        first = nb11.check_softmax_backward(fn)
        assert not first and symptom in first.message and "Where to look" not in first.message, first.message
        second = nb11.check_softmax_backward(fn)
        assert not second and symptom in second.message and where in second.message, second.message
        for fb in (first, second):  # never the formula of the fix
            assert "rowsum(dw * w)" not in fb.message and "sum of dw * w" not in fb.message, fb.message


def test_softmax_backward_counts_each_mistake_apart():
    _reset()
    missing, sign = SOFTMAX_SLIPS[0][0], SOFTMAX_SLIPS[4][0]
    assert "Where to look" not in nb11.check_softmax_backward(missing).message
    assert "Where to look" not in nb11.check_softmax_backward(sign).message  # a new mistake: tier 1
    assert "Where to look" in nb11.check_softmax_backward(missing).message


def test_softmax_backward_checker_input_errors():
    _reset()
    assert "Pass your function" in nb11.check_softmax_backward(None).message

    def todo(w, dw):
        raise NotImplementedError

    assert "Not implemented yet" in nb11.check_softmax_backward(todo).message
    assert "shape" in nb11.check_softmax_backward(lambda w, dw: w.T).message
    assert "Return a torch.Tensor" in nb11.check_softmax_backward(lambda w, dw: 1.0).message


def test_score_backward():
    _reset()
    right = lambda dS, Q, K, scale: (scale * dS @ K, scale * dS.T @ Q)  # noqa: E731
    assert nb11.check_score_backward(right)
    cases = [
        (lambda dS, Q, K, s: (dS @ K, dS.T @ Q), "1/scale", "what the factor scale"),
        (lambda dS, Q, K, s: (s * dS.T @ Q, s * dS @ K), "holds dK's numbers", "the shape of"),
        (lambda dS, Q, K, s: (s * dS @ K, s * dS @ K), "dQ is right", "through K^T"),
        (lambda dS, Q, K, s: (s * dS @ K * 3, s * dS.T @ Q), "dK is right", "one row of Q"),
        (lambda dS, Q, K, s: (dS, dS), "Both differ", "differentiate"),
    ]
    for fn, symptom, where in cases:
        _reset()
        first = nb11.check_score_backward(fn)
        assert not first and symptom in first.message and "Where to look" not in first.message, first.message
        second = nb11.check_score_backward(fn)
        assert not second and where in second.message, second.message
        assert "dS^T Q" not in second.message and "dS K" not in second.message
    assert "Return a pair" in nb11.check_score_backward(lambda dS, Q, K, s: s * dS @ K).message


def test_saved_bytes():
    L = nb11.SAVED_L
    assert nb11.check_saved_bytes(L * L * 4)
    assert "counts entries" in nb11.check_saved_bytes(L * L).message
    assert "per position" in nb11.check_saved_bytes(3 * L * nb11.SAVED_E * 4).message
    assert "Replace the placeholder" in nb11.check_saved_bytes(None).message
    assert "whole number" in nb11.check_saved_bytes("big").message
    assert not nb11.check_saved_bytes(L * L * 8)


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
