"""Checkers for notebook 11 (the backward pass). Each returns a ``Feedback``; none reveals the answer.

1. ``check_softmax_backward``: a learner's ``softmax_backward(w, dw)`` for rows of weights.
2. ``check_score_backward``: a learner's ``score_backward(dS, Q, K, scale)`` -> (dQ, dK).
3. ``check_saved_bytes``: what the naive backward keeps for one head (SAVED_L, SAVED_E).

The checkers run the learner's function on seeded random inputs, compare with autograd, and
recognise the usual mistakes by computing what each one would give.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ._base import Feedback, as_whole_number

__all__ = ["SAVED_L", "SAVED_E", "check_softmax_backward", "check_score_backward", "check_saved_bytes"]

#: Exercise 3: one head, L = S = SAVED_L positions, d_k = d_v = SAVED_E, float32.
SAVED_L, SAVED_E = 2048, 64


def _run(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except NotImplementedError:
        return Feedback(False, "Not implemented yet: replace the `raise NotImplementedError` line.")
    except Exception as err:  # the learner's code raised: say what, not where
        return Feedback(False, f"Your function raised {type(err).__name__}: {err}")


def _close(a: object, b: Tensor) -> bool:
    return isinstance(a, Tensor) and a.shape == b.shape and bool(torch.allclose(a.double(), b, atol=1e-9))


def check_softmax_backward(fn: Callable[[Tensor, Tensor], Tensor]) -> Feedback:
    """Exercise 1: ``fn(w, dw)`` with w = softmax(s) over the last dim must return d loss / d s."""
    if not callable(fn):
        return Feedback(False, f"Pass your function itself, got {type(fn).__name__}.")
    g = torch.Generator().manual_seed(11)
    s = torch.randn(4, 6, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.softmax(s, dim=-1)
    dw = torch.randn(4, 6, dtype=torch.float64, generator=g)
    (want,) = torch.autograd.grad(w, s, dw)
    w, dw_in = w.detach(), dw.clone()
    got = _run(fn, w.clone(), dw_in)
    if isinstance(got, Feedback):
        return got
    if not isinstance(got, Tensor):
        return Feedback(False, f"Return a torch.Tensor, got {type(got).__name__}.")
    if got.shape != w.shape:
        return Feedback(False, f"The gradient has the shape of the scores {tuple(w.shape)}, got {tuple(got.shape)}.")
    if _close(got, want):
        return Feedback(True, "Your softmax backward equals autograd's on every row.")
    row_sum = (dw * w).sum(-1, keepdim=True)
    mistakes = {
        "the product rule's second term is missing: subtract each row's sum of dw * w": w * dw,
        "the row sum runs over the wrong dim: sum over the keys (the last dim), one number per row":
            w * (dw - (dw * w).sum(0, keepdim=True)),
        "the factor w in front is missing: dS = w * (dw - rowsum(dw * w))": dw - row_sum,
        "the row sum needs the weights: sum dw * w, not dw alone": w * (dw - dw.sum(-1, keepdim=True)),
        "the sign is flipped: dS = w * (dw - rowsum(dw * w))": -want,
    }
    for hint, wrong in mistakes.items():
        if _close(got, wrong):
            return Feedback(False, f"Close: {hint}.")
    return Feedback(False, "Some entries differ from autograd's. Start from dS_k = sum_j dw_j * dw_j/ds_k "
                           "with dw_j/ds_k = w_j (1[j = k] - w_k).")


def check_score_backward(fn: Callable[[Tensor, Tensor, Tensor, float], tuple[Tensor, Tensor]]) -> Feedback:
    """Exercise 2: S = scale * Q K^T; ``fn(dS, Q, K, scale)`` must return (dQ, dK)."""
    if not callable(fn):
        return Feedback(False, f"Pass your function itself, got {type(fn).__name__}.")
    g = torch.Generator().manual_seed(12)
    L, S, E, scale = 3, 5, 4, 0.5
    Q = torch.randn(L, E, dtype=torch.float64, generator=g, requires_grad=True)
    K = torch.randn(S, E, dtype=torch.float64, generator=g, requires_grad=True)
    dS = torch.randn(L, S, dtype=torch.float64, generator=g)
    want_q, want_k = torch.autograd.grad(scale * Q @ K.T, (Q, K), dS)
    Qd, Kd = Q.detach(), K.detach()
    got = _run(fn, dS.clone(), Qd.clone(), Kd.clone(), scale)
    if isinstance(got, Feedback):
        return got
    if not (isinstance(got, tuple) and len(got) == 2):
        return Feedback(False, "Return a pair (dQ, dK).")
    dq, dk = got
    if _close(dq, want_q) and _close(dk, want_k):
        return Feedback(True, "dQ and dK equal autograd's.")
    if _close(dq, want_q / scale) or _close(dk, want_k / scale):
        return Feedback(False, "Close: the scale multiplies the scores, so it multiplies both gradients too.")
    if _close(dq, want_k) and _close(dk, want_q):
        return Feedback(False, "Close: dQ and dK are swapped; dQ has Q's shape (L, E), dK has K's (S, E).")
    if isinstance(dq, Tensor) and _close(dq, want_q) and not _close(dk, want_k):
        return Feedback(False, "dQ is right. For dK, the scores see K through K^T: transpose dS, "
                               "dK = scale * dS^T Q.")
    if isinstance(dk, Tensor) and _close(dk, want_k) and not _close(dq, want_q):
        return Feedback(False, "dK is right. For dQ, each query row meets every key: dQ = scale * dS K.")
    return Feedback(False, "Both differ from autograd's. Write S_ij = scale * sum_e Q_ie K_je and take "
                           "the derivative with respect to Q_ie, then K_je.")


def check_saved_bytes(answer: Any) -> Feedback:
    """Exercise 3: bytes of the weights the naive backward keeps, one head, float32."""
    answer = as_whole_number("a number of bytes", answer)
    if isinstance(answer, Feedback):
        return answer
    L, E = SAVED_L, SAVED_E
    if answer == L * L * 4:
        return Feedback(True, f"{L * L * 4 / 2**20:.0f} MiB for one head, against "
                              f"{3 * L * E * 4 / 2**20:.1f} MiB for Q, K and V together.")
    if answer == L * L:
        return Feedback(False, "That counts entries; each float32 takes 4 bytes.")
    if answer in (L * E * 4, 3 * L * E * 4, L * 4):
        return Feedback(False, "That is the size of vectors per position; the weights are one number per "
                               "(query, key) pair.")
    return Feedback(False, "The weights W are an L x L matrix of float32.")
