"""Checkers for notebook 10 (cross-attention and decoding). Each returns a ``Feedback``; none
reveals the answer.

1. ``check_cache_bytes``: the bytes of a KV cache (LAYERS, D_MODEL, BATCH, TOKENS, float16).
2. ``check_cached_step``: a learner's ``cached_step(x_new, keys, values, W_q, W_k, W_v)``, run
   step by step and compared with a full causal pass of one head.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..masks import causal_mask
from ..language import mark, tr
from ._base import Feedback, Hints, Refused, as_function, as_whole_number, checker

__all__ = [
    "LAYERS", "D_MODEL", "BATCH", "TOKENS", "CACHED_STEP_HINTS", "check_cache_bytes", "check_cached_step",
]

#: Exercise 1: the model and the load it serves.
LAYERS, D_MODEL, BATCH, TOKENS = 32, 4096, 8, 4096


@checker
def check_cache_bytes(answer: Any) -> Feedback:
    """Exercise 1: 2 (key and value) x layers x sequences x tokens x d_model x 2 bytes."""
    answer = as_whole_number(tr("a number of bytes"), answer)
    numbers = 2 * LAYERS * BATCH * TOKENS * D_MODEL  # a key and a value per layer, sequence, token
    if answer == 2 * numbers:
        return Feedback(True, tr("That is {gib:.0f} GiB: more than the weights of many models.",
                                 gib=2 * numbers / 2**30))
    if answer == numbers:
        return Feedback(False, tr("That is half: either it counts numbers (each float16 takes 2 bytes) or only "
                                  "the keys (the cache holds a value for every position too)."))
    if answer in (2 * 2 * LAYERS * TOKENS * D_MODEL, 2 * 2 * BATCH * TOKENS * D_MODEL,
                  2 * 2 * LAYERS * BATCH * D_MODEL):
        return Feedback(False, tr("Multiply over every layer, every sequence and every token."))
    if answer == 4 * numbers:
        return Feedback(False, tr("float16 takes 2 bytes a number, not 4."))
    return Feedback(False, tr("Count: (key and value) x layers x sequences x tokens x d_model, then bytes."))


def _reference(x: Tensor, W_q: Tensor, W_k: Tensor, W_v: Tensor) -> Tensor:
    """One head's causal self-attention over x (T, E): the full pass the steps must equal."""
    out, _ = scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v, causal_mask(x.shape[0]))
    return out


def _steps(fn: Callable[..., Any], x: Tensor, W: tuple[Tensor, Tensor, Tensor]) -> Tensor:
    """The outputs of the learner's step, run once per row of x from an empty cache: (T, E).

    Raises:
        Refused: a step is not written yet, raised, or returned the wrong things or shapes.
    """
    E = x.shape[1]
    keys = x.new_zeros(0, E)
    values = x.new_zeros(0, E)
    rows = []
    for t in range(x.shape[0]):
        try:
            got = fn(x[t : t + 1].clone(), keys, values, *W)
        except NotImplementedError:
            raise Refused(tr("Not implemented yet: replace the `raise NotImplementedError` line."))
        except Exception as err:  # the learner's code raised: say what, not where
            raise Refused(tr("At step {t}, your function raised {error}: {message}",
                             t=t, error=type(err).__name__, message=err))
        if not (isinstance(got, tuple) and len(got) == 3):
            raise Refused(tr("Return three things: (output, keys, values)."))
        out, keys, values = got
        if not all(isinstance(t_, Tensor) for t_ in got):
            raise Refused(tr("output, keys and values should all be tensors."))
        if out.shape != (1, E):
            raise Refused(tr("The output of one step is (1, E) = (1, {E}), got {got}.",
                             E=E, got=tuple(out.shape)))
        if keys.shape != (t + 1, E) or values.shape != (t + 1, E):
            raise Refused(tr("After step {t} the caches should hold {held} positions: (T + 1, E) = "
                             "({held}, {E}); got keys {keys}, values {values}.", t=t, held=t + 1,
                             E=E, keys=tuple(keys.shape), values=tuple(values.shape)))
        rows.append(out)
    return torch.cat(rows)


#: The tiers of ``check_cached_step`` (``CACHED_STEP_HINTS.reset()`` starts again).
CACHED_STEP_HINTS = Hints()


@checker
def check_cached_step(fn: Callable[..., Any]) -> Feedback:
    """Exercise 2: the cached steps must reproduce one head's full causal pass.

    The learner's step runs 8 times from an empty cache, on seeded random inputs, and its
    outputs are compared with ``scaled_dot_product_attention`` under ``causal_mask``. Each
    classic slip (attending before the new key and value are in the cache, no scale, d_k
    instead of its root, the keys summed in place of the values) is recognised by computing
    what it gives, and gets a symptom, then on the next try with it where to look too
    (``CACHED_STEP_HINTS``); never the code.
    """
    hints = CACHED_STEP_HINTS
    fn = as_function(fn)
    g = torch.Generator().manual_seed(10)
    T, E = 8, 4
    x = torch.randn(T, E, dtype=torch.float64, generator=g)
    W = tuple(torch.randn(E, E, dtype=torch.float64, generator=g) / math.sqrt(E) for _ in range(3))
    got = _steps(fn, x, W)
    want = _reference(x, *W)
    if torch.allclose(got, want, atol=1e-9):
        return Feedback(True, tr("Your 8 cached steps equal the full causal pass."))
    q, k, v = x @ W[0], x @ W[1], x @ W[2]  # (T, E) each
    causal = causal_mask(T)  # (T, T): query t sees keys 0..t
    before = causal & ~torch.eye(T, dtype=torch.bool)  # keys 0..t-1: the cache before step t adds its own

    def attend(mask: Tensor, scale: float, over: Tensor) -> Tensor:
        """Every query at once under ``mask``, scores times ``scale``, summing ``over``: (T, E)."""
        return scaled_dot_product_attention(q, k, over, mask, scale=scale)[0]

    slips = [  # (mistake, the outputs it gives, symptom, where to look)
        ("before", attend(before, 1 / math.sqrt(E), v),
         mark("Your first step returns zeros, and at every step the new position's output leaves out the "
              "new position itself: it is the output of the positions before it only."),
         mark("what the cache holds at the moment the new query is compared with it")),
        ("unscaled", attend(causal, 1.0, v),
         mark("Your weights are sharper than the full pass's: your steps equal a pass whose scores are "
              "sqrt(d_k) times too large."), mark("what the scores are divided by")),
        ("by_dk", attend(causal, 1 / E, v),
         mark("Your weights are flatter than the full pass's: your steps equal a pass whose scores are "
              "sqrt(d_k) times too small."), mark("what the scores are divided by")),
        ("keys_as_values", attend(causal, 1 / math.sqrt(E), k),
         mark("Your outputs are weighted sums of the keys."), mark("which cache the weights multiply")),
    ]
    for mistake, wrong, symptom, where in slips:
        if torch.allclose(got, wrong, atol=1e-9):
            return hints.wrong(mistake, tr(symptom), where=tr(where))
    return hints.wrong("other", tr("The steps differ from the full causal pass, and not by one of the "
                                   "usual slips."),
                       where=tr("step t against row t of the full pass: the query of the new position, "
                                "its scores against every cached key, the softmax, the values"))
