"""Checkers for notebook 11 (the backward pass). Each returns a ``Feedback``; none reveals the answer.

1. ``check_softmax_backward``: a learner's ``softmax_backward(w, dw)`` for rows of weights.
2. ``check_score_backward``: a learner's ``score_backward(dS, Q, K, scale)`` -> (dQ, dK).
3. ``check_saved_bytes``: what the naive backward keeps for one head (SAVED_L, SAVED_E).

The checkers run the learner's function on seeded random inputs, compare with autograd, and
recognise the usual mistakes by computing what each one would give: the first wrong try
with a mistake hears its symptom, the next one where to look too (``Hints``), never the code.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..language import mark, tr
from ._base import Feedback, Hints, Refused, as_function, as_whole_number, checker

__all__ = [
    "SAVED_L", "SAVED_E", "SOFTMAX_BACKWARD_HINTS", "SCORE_BACKWARD_HINTS",
    "check_softmax_backward", "check_score_backward", "check_saved_bytes",
]

#: Exercise 3: one head, L = N = SAVED_L positions, d_k = d_v = SAVED_E, float32.
SAVED_L, SAVED_E = 2048, 64


def _run(fn: Callable[..., Any], *args: Any) -> Any:
    """What the learner's function returns.

    Raises:
        Refused: the function is not written yet, or raised.
    """
    try:
        return fn(*args)
    except NotImplementedError:
        raise Refused(tr("Not implemented yet: replace the `raise NotImplementedError` line."))
    except Exception as err:  # the learner's code raised: say what, not where
        raise Refused(tr("Your function raised {error}: {message}",
                         error=type(err).__name__, message=err))


def _close(a: object, b: Tensor) -> bool:
    return isinstance(a, Tensor) and a.shape == b.shape and bool(torch.allclose(a.double(), b, atol=1e-9))


#: The tiers of ``check_softmax_backward`` (``SOFTMAX_BACKWARD_HINTS.reset()`` starts again).
SOFTMAX_BACKWARD_HINTS = Hints()
#: The tiers of ``check_score_backward``.
SCORE_BACKWARD_HINTS = Hints()


@checker
def check_softmax_backward(fn: Callable[[Tensor, Tensor], Tensor]) -> Feedback:
    """Exercise 1: ``fn(w, dw)`` with w = softmax(s) over the last dim must return d loss / d s.

    Run on seeded random rows and compared with autograd. Each classic slip (the product rule's
    second term left out, the row sum over the wrong dim, the factor w left out, dw alone in the
    row sum, the sign flipped) is recognised by computing what it gives, and gets a symptom,
    then on the next try with it where to look too (``SOFTMAX_BACKWARD_HINTS``); never the code.
    """
    hints = SOFTMAX_BACKWARD_HINTS
    fn = as_function(fn)
    g = torch.Generator().manual_seed(11)
    s = torch.randn(4, 6, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.softmax(s, dim=-1)
    dw = torch.randn(4, 6, dtype=torch.float64, generator=g)
    (want,) = torch.autograd.grad(w, s, dw)
    w, dw_in = w.detach(), dw.clone()
    got = _run(fn, w.clone(), dw_in)
    if not isinstance(got, Tensor):
        return Feedback(False, tr("Return a torch.Tensor, got {kind}.", kind=type(got).__name__))
    if got.shape != w.shape:
        return Feedback(False, tr("The gradient has the shape of the scores {shape}, got {got}.",
                                  shape=tuple(w.shape), got=tuple(got.shape)))
    if _close(got, want):
        return Feedback(True, tr("Your softmax backward equals autograd's on every row, and each row of it "
                                 "sums to 0."))
    row_sum = (dw * w).sum(-1, keepdim=True)
    mistakes = [  # (mistake, the gradient it gives, symptom, where to look)
        ("second_term", w * dw,
         mark("Your rows do not sum to 0, though every row of the true gradient does (adding one number to "
              "all the scores of a row leaves its softmax unchanged). Yours would be right if each weight "
              "depended on its own score alone."),
         mark("the product rule: through the normalising sum, one score moves every weight of its row")),
        ("wrong_dim", w * (dw - (dw * w).sum(0, keepdim=True)),
         mark("Your gradient for one row depends on the other rows' dw, though each row is its own softmax."),
         mark("the dim your sum runs over")),
        ("no_w", dw - row_sum,
         mark("Your gradient is not proportional to the weights: a key with a weight near 0 gets as large a "
              "gradient as any other, though a weight near 0 hardly moves."),
         mark("what multiplies the whole bracket")),
        ("dw_only", w * (dw - dw.sum(-1, keepdim=True)),
         mark("Your subtracted term does not change when the weights change and dw stays the same."),
         mark("what is summed along each row")),
        ("sign", -want, mark("Your gradient is exactly the negative of the right one."),
         mark("the order of the two terms in the bracket")),
    ]
    for mistake, wrong, symptom, where in mistakes:
        if _close(got, wrong):
            return hints.wrong(mistake, tr(symptom), where=tr(where))
    return hints.wrong("other", tr("Some entries differ from autograd's, and not by one of the usual slips."),
                       where=tr("dS_k = sum_j dw_j * dw_j/ds_k, with dw_j/ds_k = w_j (1[j = k] - w_k): "
                                "write the terms j = k and j != k apart"))


@checker
def check_score_backward(fn: Callable[[Tensor, Tensor, Tensor, float], tuple[Tensor, Tensor]]) -> Feedback:
    """Exercise 2: S = scale * Q K^T; ``fn(dS, Q, K, scale)`` must return (dQ, dK).

    Compared with autograd on seeded random inputs; the usual slips get a symptom, then on the
    next try with it where to look too (``SCORE_BACKWARD_HINTS``).
    """
    hints = SCORE_BACKWARD_HINTS
    fn = as_function(fn)
    g = torch.Generator().manual_seed(12)
    L, N, E, scale = 3, 5, 4, 0.5  # L queries, N keys
    Q = torch.randn(L, E, dtype=torch.float64, generator=g, requires_grad=True)
    K = torch.randn(N, E, dtype=torch.float64, generator=g, requires_grad=True)
    dS = torch.randn(L, N, dtype=torch.float64, generator=g)
    want_q, want_k = torch.autograd.grad(scale * Q @ K.T, (Q, K), dS)
    Qd, Kd = Q.detach(), K.detach()
    got = _run(fn, dS.clone(), Qd.clone(), Kd.clone(), scale)
    if not (isinstance(got, tuple) and len(got) == 2):
        return Feedback(False, tr("Return a pair (dQ, dK)."))
    dq, dk = got
    if _close(dq, want_q) and _close(dk, want_k):
        return Feedback(True, tr("dQ and dK equal autograd's."))
    if _close(dq, want_q / scale) or _close(dk, want_k / scale):
        return hints.wrong("scale", tr("Close: your gradients are 1/scale = {factor:g} times the right ones.",
                                       factor=1 / scale),
                           where=tr("what the factor scale in S = scale * Q K^T does to each derivative"))
    if _close(dq, want_k) and _close(dk, want_q):
        return hints.wrong("swapped", tr("Close: your dQ holds dK's numbers and your dK holds dQ's."),
                           where=tr("which of Q and K each gradient must have the shape of"))
    if _close(dq, want_q):
        return hints.wrong("dk", tr("dQ is right; dK is not."),
                           where=tr("how K enters the scores: through K^T"))
    if _close(dk, want_k):
        return hints.wrong("dq", tr("dK is right; dQ is not."),
                           where=tr("which scores one row of Q takes part in: a row of S, one entry per key"))
    return hints.wrong("both", tr("Both differ from autograd's."),
                       where=tr("write S_ij = scale * sum_e Q_ie K_je and differentiate with respect to "
                                "Q_ie, then K_je"))


@checker
def check_saved_bytes(answer: Any) -> Feedback:
    """Exercise 3: bytes of the weights the naive backward keeps, one head, float32."""
    answer = as_whole_number(tr("a number of bytes"), answer)
    L, E = SAVED_L, SAVED_E
    if answer == L * L * 4:
        return Feedback(True, tr("{weights:.0f} MiB for one head, against {qkv:.1f} MiB for Q, K and V "
                                 "together.", weights=L * L * 4 / 2**20, qkv=3 * L * E * 4 / 2**20))
    if answer == L * L:
        return Feedback(False, tr("That counts entries; each float32 takes 4 bytes."))
    if answer in (L * E * 4, 3 * L * E * 4, L * 4):
        return Feedback(False, tr("That is the size of vectors per position; the weights are one number per "
                                  "(query, key) pair."))
    return Feedback(False, tr("The weights W are an L x L matrix of float32."))
