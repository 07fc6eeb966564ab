"""Checkers for notebook 06 (visualising attention: heatmaps and the three common patterns).

Each checker returns a ``Feedback`` and never states the expected answer. Expected values
come from the hand-built heads of ``attn.lessons.handbuilt.heads``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..examples import SENTENCE, SENTENCE_PHRASES
from ..lessons.handbuilt.heads import (
            block_qk,
            diagonal_qk,
            head_weights,
            vertical_qk,
)
from ..language import tr
from ._base import Feedback, as_array, checker

__all__ = [
    "PATTERN_NAMES",
    "mystery_maps",
    "check_pattern_names",
    "VERTICAL_MIN_WEIGHT",
    "check_vertical_qk",
    "DIAGONAL_SETUP",
    "check_diagonal_weight",
]

PATTERN_NAMES: tuple[str, ...] = ("diagonal", "vertical", "block")
_MYSTERY_KINDS = ("block", "diagonal", "vertical")  # the order of mystery_maps()


def mystery_maps() -> torch.Tensor:
    """Three (6, 6) maps over ``attn.examples.SENTENCE``, one of each pattern, in a fixed
    order the learner has to find out.

    Returns:
        (3, 6, 6) float64 weights (rows = queries, columns = keys).
    """
    n, d_k, strength = len(SENTENCE), 16, 0.75
    builders = {
        "diagonal": lambda: diagonal_qk(n, d_k, strength=strength, offset=-1),
        "vertical": lambda: vertical_qk(n, d_k, strength=strength, key=4),
        "block": lambda: block_qk(SENTENCE_PHRASES, d_k, strength=strength),
    }
    return torch.stack([head_weights(*builders[kind]()) for kind in _MYSTERY_KINDS])  # (3, 6, 6)


@checker
def check_pattern_names(answer: Any) -> Feedback:
    """answer = three names from ``PATTERN_NAMES``, one per map of ``mystery_maps()``."""
    if not isinstance(answer, (list, tuple)) or len(answer) != 3:
        return Feedback(False, tr("Set `answer` to a list of three names, each one of {names}.",
                                  names=PATTERN_NAMES))
    names = [a.strip().lower() if isinstance(a, str) else a for a in answer]
    for a in names:
        if a not in PATTERN_NAMES:
            return Feedback(False, tr("Each name should be one of {names}, got {name!r}.",
                                      names=PATTERN_NAMES, name=a))
    right = sum(a == e for a, e in zip(names, _MYSTERY_KINDS))
    if right == 3:
        return Feedback(True, tr("A bright line parallel to the diagonal, a bright column, and squares "
                                 "along the diagonal."))
    return Feedback(False, tr("{right} of 3 right. Look for: a line running parallel to the main "
                              "diagonal (possibly shifted), one bright column shared by every row, or "
                              "squares of equal weights where tokens of a phrase look at each other.",
                              right=right))


#: Exercise 2: every query must give key 0 at least this weight.
VERTICAL_MIN_WEIGHT = 0.5


@checker
def check_vertical_qk(answer: Any) -> Feedback:
    """answer = (Q, K), each (6, d_k), such that softmax(Q K^T / sqrt(d_k)) gives key 0 at least
    ``VERTICAL_MIN_WEIGHT`` in every row (a vertical stripe on the first token)."""
    n = len(SENTENCE)
    if not isinstance(answer, (list, tuple)) or len(answer) != 2 or any(a is None for a in answer):
        return Feedback(False, tr("Set `answer` to a pair (Q, K) of ({n}, d_k) tensors.", n=n))
    arrays = []
    for name, a in zip(("Q", "K"), answer):
        arr = as_array(name, a)
        if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] < 1:
            return Feedback(False, tr("{name} should have shape ({n}, d_k), got {got}.",
                                      name=name, n=n, got=tuple(arr.shape)))
        if not np.isfinite(arr).all():
            return Feedback(False, tr("{name} should hold finite numbers.", name=name))
        arrays.append(arr)
    q, k = (torch.from_numpy(a) for a in arrays)
    if q.shape[1] != k.shape[1]:
        return Feedback(False, tr("Q and K need the same d_k, got {q} and {k}.", q=q.shape[1], k=k.shape[1]))
    w = head_weights(q, k)  # (6, 6)
    on_first = w[:, 0]  # (6,)
    short = int((on_first < VERTICAL_MIN_WEIGHT).sum())
    lowest = on_first.min().item()
    if short == 0:
        return Feedback(True, tr("Every query gives key 0 at least {least} (lowest {lowest:.2f}): a "
                                 "vertical stripe on {token}.", least=VERTICAL_MIN_WEIGHT, lowest=lowest,
                                 token=SENTENCE[0]))
    return Feedback(False, tr("{short} of {n} queries give key 0 less than {least} (lowest {lowest:.2f}). "
                              "Every q_i needs a larger dot product with k_0 than with any other key, by "
                              "a margin of a few units after dividing by sqrt(d_k): let all queries share "
                              "one direction with k_0, and keep the other keys away from it.",
                              short=short, n=n, least=VERTICAL_MIN_WEIGHT, lowest=lowest))


#: Exercise 3's head: a sharp diagonal (width 0, offset 0) over the chapter's sentence.
DIAGONAL_SETUP: dict[str, float] = {"n": len(SENTENCE), "d_k": 16, "strength": 0.5}


@checker
def check_diagonal_weight(answer: Any) -> Feedback:
    """answer = the weight a query gives to itself in the head of ``DIAGONAL_SETUP``
    (scores divided by sqrt(d_k), no mask), to 3 decimals."""
    if answer is None or isinstance(answer, (str, bool)):
        return Feedback(False, tr("Set `answer` to a number between 0 and 1."))
    arr = as_array("answer", answer)
    if arr.size != 1:
        return Feedback(False, tr("`answer` should be one number, got shape {got}.", got=tuple(arr.shape)))
    value = float(arr.reshape(()))
    s = DIAGONAL_SETUP
    q, k = diagonal_qk(int(s["n"]), int(s["d_k"]), strength=s["strength"])
    expected = head_weights(q, k).diagonal().mean().item()
    if abs(value - expected) <= 5e-4:
        return Feedback(True, tr("The diagonal score is strength·√d_k, every other score 0; the "
                                 "softmax does the rest."))
    unscaled = head_weights(q, k, scaled=False).diagonal().mean().item()
    if abs(value - unscaled) <= 5e-4:
        return Feedback(False, tr("That is the weight without the division by √d_k: the head "
                                  "divides its scores by √d_k."))
    if math.isclose(value, 1 / s["n"], abs_tol=5e-4):
        return Feedback(False, tr("That is a flat row: the diagonal score is not 0."))
    return Feedback(False, tr("The aligned pair scores strength·√d_k (cosine 1), every other pair 0 "
                              "(cosine 0). Write the softmax of that row by hand."))
