"""Checkers for notebook 01 (intuition). Each returns a ``Feedback``; none reveals the answer.

1. ``check_softmax_row``: a learner's softmax of one row, run with torch.softmax switched off.
2. ``check_path_counts``: sequential steps and longest path of an RNN and of self-attention.
3. ``check_reversed_output``: a learner's ``reversed_output(x)``, the toy's output when the
   sentence is reversed, run on the chapter's sentence and on two it has not seen.
4. ``check_rnn_decay_distance``: where the RNN's gradient falls below 1 % of its start.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import torch

from ..lessons.rnn_vs_attention import gradient_profile, path_counts
from ..lessons.handbuilt.sentence import toy_attention, toy_embeddings, toy_scores
from ..language import mark, tr
from ._base import (Feedback, Hints, SoftmaxCalled, as_array, as_function, as_whole_number, checker,
                    clauses, close, softmax_switched_off)

__all__ = [
    "PATH_N",
    "REVERSED_OUTPUT_HINTS",
    "check_softmax_row",
    "check_path_counts",
    "check_reversed_output",
    "check_rnn_decay_distance",
]

#: The sequence length of exercise 2.
PATH_N = 50
_PATH_KEYS = ("rnn_steps", "attention_steps", "rnn_path", "attention_path")


def _not_yet(what: str) -> Feedback:
    """"Replace None with ..."; ``what`` in the learner's language."""
    return Feedback(False, tr("Replace None with {what}.", what=what))


def _softmax_cases() -> list[torch.Tensor]:
    """小明's row first, then rows the function has not seen: 学习's, and one with negative scores."""
    return [toy_scores()[0], toy_scores()[4], torch.tensor([-1.0, 0.5, 2.0, -3.0], dtype=torch.float64)]


@checker
def check_softmax_row(answer: Any) -> Feedback:
    """Exercise 1: ``answer`` = a function ``softmax_row(s)`` that turns one row of scores (S,)
    into weights (S,) with ``torch.exp``, a sum and a division.

    It runs on 小明's row ``toy_scores()[0]`` and on two rows it has not seen, with every
    library softmax switched off (``softmax_switched_off``), so a call to ``torch.softmax`` is
    caught rather than trusted.
    """
    softmax_row = as_function(answer, "softmax_row(s)",
                              why=tr("runs it on more rows, with torch.softmax switched off"))
    for k, scores in enumerate(_softmax_cases()):
        try:
            with softmax_switched_off(tr("the exercise builds the softmax itself: no library softmax")):
                got = softmax_row(scores.clone())
        except SoftmaxCalled:
            return Feedback(False, tr("Your function calls a library softmax (torch.softmax, .softmax or "
                                      "F.softmax): build it from torch.exp, .sum() and a division."))
        except Exception as e:  # the learner's code: report, do not raise
            return Feedback(False, tr("Your function raised {error}: {message}",
                                      error=type(e).__name__, message=e))
        if got is None:
            return Feedback(False, tr("Your function returns None: return the weights computed from s."))
        arr = as_array("softmax_row(s)", got, tuple(scores.shape))
        if close(arr, torch.softmax(scores, dim=-1).numpy(), 1e-6):
            continue
        row = tr("小明's row") if k == 0 else tr("a row it had not seen")
        if close(arr, torch.exp(scores).numpy(), 1e-6):
            return Feedback(False, tr("You return exp(s): now divide by their sum so the row sums to 1."))
        if close(arr, scores.numpy(), 1e-6):
            return Feedback(False, tr("You return the scores themselves: apply exp, then divide by the sum."))
        if not np.isclose(arr.sum(), 1.0, atol=1e-6):
            return Feedback(False, tr("On {row} your weights sum to {total:.4f}; weights must sum to 1.",
                                      row=row, total=arr.sum()))
        return Feedback(False, tr("On {row} the weights sum to 1 but are not the softmax of the scores: "
                                  "exp each score of s (not of a fixed row), then divide by the sum of "
                                  "the exps.", row=row))
    return Feedback(True, tr("On 小明's row and two rows it had not seen, without torch.softmax: every "
                             "weight positive, each row summing to 1, larger scores getting larger weights."))


@checker
def check_path_counts(answer: Any) -> Feedback:
    """Exercise 2: ``answer`` = dict with keys rnn_steps, attention_steps, rnn_path,
    attention_path (ints) for a sequence of PATH_N positions."""
    if answer is None:
        return _not_yet(tr("a dict with keys {keys}", keys=list(_PATH_KEYS)))
    if not isinstance(answer, dict):
        return Feedback(False, tr("answer should be a dict with keys {keys}, got {kind}.",
                                  keys=list(_PATH_KEYS), kind=type(answer).__name__))
    missing = [k for k in _PATH_KEYS if k not in answer]
    if missing:
        return Feedback(False, tr("Missing keys: {missing}.", missing=missing))
    expected = path_counts(PATH_N)
    wrong = [k for k in _PATH_KEYS if answer[k] != getattr(expected, k)]
    if not wrong:
        return Feedback(True, tr("An RNN's steps and paths grow with n; attention's stay constant."))
    hints = {
        "rnn_steps": mark("an RNN computes h_t from h_{t-1}: how many states must wait for each other?"),
        "attention_steps": mark("every output of self-attention needs only the inputs, not other outputs."),
        "rnn_path": mark("follow x_1 -> h_1 -> h_2 -> ... to the last state and count the arrows."),
        "attention_path": mark("x_j reaches y_i along one edge, whatever i and j are."),
    }
    checks = [tr("{key}: {hint}", key=k, hint=tr(hints[k])) for k in wrong]
    return Feedback(False, tr("Check {checks}", checks=clauses(checks)))


def _reversal_cases() -> list[torch.Tensor]:
    """The chapter's sentence, then two sentences the function has not seen (4 and 7 words)."""
    g = torch.Generator().manual_seed(1)
    F = toy_embeddings().shape[1]
    return [toy_embeddings()] + [torch.rand(n, F, generator=g, dtype=torch.float64) for n in (4, 7)]


#: The tiers of ``check_reversed_output`` (``REVERSED_OUTPUT_HINTS.reset()`` starts again).
REVERSED_OUTPUT_HINTS = Hints()


@checker
def check_reversed_output(answer: Any) -> Feedback:
    """Exercise 3: ``answer`` = a function ``reversed_output(x)`` that returns the toy's output
    (``toy_attention``'s first return value), (L, F), for the words of x (L, F) in reverse order.

    It runs on the chapter's sentence and on two sentences it has not seen (4 and 7 words of
    random features), and each classic slip is recognised by its output: the original order's
    output, the features of each word reversed instead of the words, the weights instead of the
    output, the chapter's sentence whatever x is. The first wrong try with a slip hears its
    symptom, the next one where to look too (``REVERSED_OUTPUT_HINTS``); never the code.
    """
    hints = REVERSED_OUTPUT_HINTS
    reversed_output = as_function(answer, "reversed_output(x)",
                                  why=tr("runs it on sentences of other lengths too"))
    for k, x in enumerate(_reversal_cases()):
        try:
            got = reversed_output(x.clone())
        except NotImplementedError:
            return Feedback(False, tr("Not implemented yet: write the body of reversed_output(x) in place "
                                      "of the `raise NotImplementedError` line."))
        except Exception as e:  # the learner's code: report, do not raise
            return Feedback(False, tr("Your function raised {error}: {message}",
                                      error=type(e).__name__, message=e))
        if isinstance(got, tuple) and len(got) == 2:
            return Feedback(False, tr("Your function returns a pair (toy_attention's output and weights): "
                                      "return the output only, (L, F)."))
        want, weights = toy_attention(x.flip(0))  # (L, F), (L, L)
        if isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(weights.shape) != tuple(want.shape):
            return hints.wrong("weights", tr("For {words} words your function returns an (L, L) matrix, "
                                             "the weights: the question asks for the output, (L, F).",
                                             words=len(x)),
                               where=tr("which of toy_attention's two return values you keep"))
        chapters = toy_attention(toy_embeddings().flip(0))[0]  # (6, F), the chapter's answer
        if k > 0 and isinstance(got, torch.Tensor) and got.shape == chapters.shape \
                and torch.allclose(got.detach().double(), chapters, atol=1e-9):
            return hints.wrong("fixed", tr("Right for the chapter's sentence only: on a sentence of {words} "
                                           "words it had not seen, your function returns the chapter's "
                                           "answer.", words=len(x)),
                               where=tr("what your function runs toy_attention on: its argument"))
        arr = as_array("reversed_output(x)", got, tuple(want.shape))
        if close(arr, want.numpy(), 1e-9):
            continue
        where_x = (tr("the chapter's sentence") if k == 0
                   else tr("a sentence of {words} words it had not seen", words=len(x)))
        if close(arr, weights.numpy(), 1e-9):
            return hints.wrong("weights", tr("You return the weights of the reversed sentence, not its output."),
                               where=tr("which of toy_attention's two return values you keep"))
        if close(arr, toy_attention(x)[0].numpy(), 1e-9):
            return hints.wrong("original", tr("On {sentence}, your output is the output for the original "
                                              "order, row for row: nothing was reversed (or it was reversed "
                                              "twice).", sentence=where_x),
                               where=tr("the order of the words that go into toy_attention"))
        if close(arr, toy_attention(x.flip(1))[0].numpy(), 1e-9):
            return hints.wrong("features", tr("On {sentence}, the words are still in their order, but each "
                                              "word's features were reversed, so every score changed.",
                                              sentence=where_x),
                               where=tr("which dimension of x (L, F) holds the words"))
        return hints.wrong("other", tr("On {sentence}, your output is not toy_attention's output for the "
                                       "words in reverse order.", sentence=where_x),
                           where=tr("the input your function builds from x, and what it returns"))
    return Feedback(True, tr("On the chapter's sentence and two it had not seen. Row i is the original output "
                             "of the word now at position i: reversing the input only reversed the output."))


@lru_cache(maxsize=1, typed=True)
def _decay_distance() -> int | None:
    p = gradient_profile()
    for dist, g in zip(p.distance, p.rnn):
        if g < 0.01 * p.rnn[0]:
            return dist
    return None


@checker
def check_rnn_decay_distance(answer: Any) -> Feedback:
    """Exercise 4: ``answer`` = the smallest distance at which the RNN's gradient norm in
    ``gradient_profile()`` is below 1 % of its value at distance 0 (an int)."""
    if answer is None:
        return _not_yet(tr("an int: the first distance whose RNN gradient is < 0.01 * profile.rnn[0]"))
    answer = as_whole_number("answer", answer)
    expected = _decay_distance()
    if answer == expected:
        return Feedback(True, tr("A hundredfold loss within a few steps: far inputs barely reach the "
                                 "last state, the 梯度消失 (vanishing gradient) of the chapter's table."))
    if expected is not None and answer < expected:
        return Feedback(False, tr("At that distance the gradient is still at least 1 % of its start: "
                                  "look further."))
    return Feedback(False, tr("It already fell below 1 % earlier: find the *first* such distance."))
