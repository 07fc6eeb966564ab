"""Checkers for notebook 04, multi-head attention: sizes, parameters, valid head counts, cost.

Each takes the learner's answer and returns a ``Feedback`` (right/wrong and a hint). Expected
values come from ``attn.cost.counts`` and are never shown.
"""
from __future__ import annotations

from typing import Any

from ..cost.counts import multi_head_cost, valid_num_heads
from ._base import Feedback, as_whole_number

__all__ = [
    "HEAD_SIZE_QUESTION",
    "PARAMS_QUESTION",
    "VALID_HEADS_QUESTION",
    "SOFTMAX_QUESTION",
    "check_head_size",
    "check_param_count",
    "check_valid_heads",
    "check_softmax_entries",
]

#: d_model and h for the per-head size question.
HEAD_SIZE_QUESTION = {"d_model": 96, "num_heads": 6}
#: The article's layer (biases in all four projections).
PARAMS_QUESTION = {"d_model": 96, "num_heads": 6, "bias": True}
#: Which h in 1..max_heads split this d_model evenly?
VALID_HEADS_QUESTION = {"d_model": 60, "max_heads": 12}
#: Softmax entries per sequence: h heads vs one full-size head.
SOFTMAX_QUESTION = {"n": 10, "d_model": 512, "num_heads": 8}


def check_head_size(answer: Any) -> Feedback:
    """d_k (= d_v) per head for ``HEAD_SIZE_QUESTION``."""
    got = as_whole_number("d_k", answer)
    if isinstance(got, Feedback):
        return got
    q = HEAD_SIZE_QUESTION
    if got == multi_head_cost(1, q["d_model"], q["num_heads"]).d_k:
        return Feedback(True, "Each head works in d_model / h dimensions.")
    if got == q["d_model"]:
        return Feedback(False, "That is d_model, the size of the whole layer: the heads share it.")
    if got == q["d_model"] * q["num_heads"]:
        return Feedback(False, "The heads split d_model between them; they do not multiply it.")
    return Feedback(False, "Concatenating the h heads must give back d_model columns.")


def check_param_count(answer: Any) -> Feedback:
    """Parameters of the article's layer (biases) for ``PARAMS_QUESTION``."""
    got = as_whole_number("the parameter count", answer)
    if isinstance(got, Feedback):
        return got
    q = PARAMS_QUESTION
    E, H = q["d_model"], q["num_heads"]
    if got == multi_head_cost(1, E, H, bias=True).params:
        return Feedback(True, "Four (d_model x d_model) matrices plus four bias vectors; "
                              "the number of heads does not enter.")
    if got == multi_head_cost(1, E, H, bias=False).params:
        return Feedback(False, "Right for the chapter's layer (no biases); the article's "
                               "nn.Linear layers have biases too.")
    if got in (3 * E * E, 3 * E * E + 3 * E):
        return Feedback(False, "Don't forget the output projection W^O.")
    if got in (H * 4 * E * E, H * (4 * E * E + 4 * E)):
        return Feedback(False, "The heads share W^Q, W^K, W^V: each head uses d_model / h of "
                               "their columns, so h does not multiply the count.")
    return Feedback(False, "Count W^Q, W^K, W^V and W^O (each d_model x d_model) and one bias "
                           "vector of length d_model per projection.")


def check_valid_heads(answer: Any) -> Feedback:
    """Every h in 1..max_heads that divides ``VALID_HEADS_QUESTION['d_model']``."""
    if answer is None or answer is ...:
        return Feedback(False, "Replace the placeholder with a list of head counts, e.g. [1, 2].")
    try:
        got = sorted({int(h) for h in answer})
    except (TypeError, ValueError):
        return Feedback(False, f"Give a list of whole numbers, got {type(answer).__name__}.")
    q = VALID_HEADS_QUESTION
    right = set(valid_num_heads(q["d_model"], max_heads=q["max_heads"]))
    extra = [h for h in got if h not in right]
    missing = right - set(got)
    if not extra and not missing:
        return Feedback(True, "h must divide d_model so that every head gets the same whole "
                              "number of dimensions.")
    if extra:
        return Feedback(False, f"{extra[0]} does not split d_model = {q['d_model']} evenly "
                               f"(d_model % h must be 0).")
    return Feedback(False, f"{len(missing)} valid head count(s) missing: try every h from 1 "
                           f"to {q['max_heads']}.")


def check_softmax_entries(answer: Any) -> Feedback:
    """(h heads, one full-size head): scores the softmax normalises, for ``SOFTMAX_QUESTION``."""
    if answer is None or answer is ...:
        return Feedback(False, "Replace the placeholder with two numbers: (h heads, one head).")
    try:
        many, one = answer
    except (TypeError, ValueError):
        return Feedback(False, "Give two numbers: (entries with h heads, entries with one head).")
    a, b = as_whole_number("the first number", many), as_whole_number("the second number", one)
    for fb in (a, b):
        if isinstance(fb, Feedback):
            return fb
    q = SOFTMAX_QUESTION
    want_many = multi_head_cost(q["n"], q["d_model"], q["num_heads"]).softmax_entries
    want_one = multi_head_cost(q["n"], q["d_model"], 1).softmax_entries
    if (a, b) == (want_many, want_one):
        return Feedback(True, "Each head has its own n x n map, whatever its size d_k.")
    if (a, b) == (want_one, want_many):
        return Feedback(False, "The other way round: which layer has more maps?")
    if a == b:
        return Feedback(False, "The multiply-adds are equal; the number of score maps is not.")
    return Feedback(False, "Every head scores every query against every key: one n x n map per head.")
