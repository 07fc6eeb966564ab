"""Checkers for notebook 02 (queries, keys, values). Each returns a ``Feedback``; none reveals
the answer.

1. ``check_shapes``: the shape of every tensor of the five steps.
2. ``check_attention_output``: the five steps by hand on ``exercise_inputs()``.
3. ``check_score_variance``: the variance of q·k, unscaled and scaled, measured (or worked out) for
   entries uniform on [-1, 1] and a d_k off the notebook's grid (``VARIANCE_SETUP``).
4. ``check_half_gradient_d_k``: where the unscaled softmax gradient drops below half, with more
   keys per query than the notebook's table (``HALVING_KEYS``).

Exercises 3 and 4 ask for numbers the notebook does not print: section 5's formula and table
answer them for N(0, 1) entries and 16 keys, and the checkers name those answers as such.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import torch
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..lessons.scaling import D_K_GRID, scaling_stats
from ..language import mark, tr
from ._base import Feedback, as_array, as_whole_number, checker, clauses, close

__all__ = [
    "SHAPE_SIZES",
    "exercise_inputs",
    "check_shapes",
    "check_attention_output",
    "VARIANCE_SETUP",
    "HALVING_KEYS",
    "check_score_variance",
    "check_half_gradient_d_k",
]

#: The sizes of exercise 1.
SHAPE_SIZES: dict[str, int] = {"n": 10, "d_model": 512, "d_k": 64, "d_v": 32}
_SHAPE_KEYS = ("Q", "K", "V", "scores", "weights", "output")


def _not_yet(what: str) -> Feedback:
    """"Replace None with ..."; ``what`` in the learner's language."""
    return Feedback(False, tr("Replace None with {what}.", what=what))


@checker
def check_shapes(answer: Any) -> Feedback:
    """Exercise 1: ``answer`` = dict name -> shape tuple for Q, K, V, scores, weights, output
    when X is (n, d_model) with the sizes of ``SHAPE_SIZES``."""
    if answer is None:
        return _not_yet(tr("a dict with keys {keys} and shape tuples as values", keys=list(_SHAPE_KEYS)))
    if not isinstance(answer, dict):
        return Feedback(False, tr("answer should be a dict, got {kind}.", kind=type(answer).__name__))
    missing = [k for k in _SHAPE_KEYS if k not in answer]
    if missing:
        return Feedback(False, tr("Missing keys: {missing}.", missing=missing))
    s = SHAPE_SIZES
    n, d_k, d_v = s["n"], s["d_k"], s["d_v"]
    expected = {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_v), "scores": (n, n),
                "weights": (n, n), "output": (n, d_v)}
    wrong = []
    for key in _SHAPE_KEYS:
        try:
            got = tuple(int(v) for v in answer[key])
        except (TypeError, ValueError):
            got = None
        if got != expected[key]:
            wrong.append(key)
    if not wrong:
        return Feedback(True, tr("d_model disappears after the projections; scores and weights are "
                                 "n x n; the output has the values' size."))
    hints = {
        "Q": mark("X (n, d_model) times W^Q (d_model, d_k)"),
        "K": mark("X (n, d_model) times W^K (d_model, d_k)"),
        "V": mark("X (n, d_model) times W^V (d_model, d_v)"),
        "scores": mark("one score per (query, key) pair"),
        "weights": mark("the softmax keeps the shape of the scores"),
        "output": mark("weights (n, n) times V"),
    }
    checks = [tr("{key}: {hint}", key=k, hint=tr(hints[k])) for k in wrong]
    return Feedback(False, tr("Check {checks}.", checks=clauses(checks)))


def exercise_inputs() -> dict[str, Tensor]:
    """The inputs of exercise 2 (float64, seeded): X (4, 6), W_Q (6, 3), W_K (6, 3), W_V (6, 2)."""
    g = torch.Generator().manual_seed(2)
    shapes = {"X": (4, 6), "W_Q": (6, 3), "W_K": (6, 3), "W_V": (6, 2)}
    return {name: torch.randn(*shape, generator=g, dtype=torch.float64)
            for name, shape in shapes.items()}


@checker
def check_attention_output(answer: Any) -> Feedback:
    """Exercise 2: ``answer`` = the output (4, 2) of the five steps on ``exercise_inputs()``."""
    if answer is None:
        return _not_yet(tr("the (4, 2) output of the five steps on exercise_inputs()"))
    arr = as_array("answer", answer, (4, 2))
    t = exercise_inputs()
    q, k, v = t["X"] @ t["W_Q"], t["X"] @ t["W_K"], t["X"] @ t["W_V"]
    expected, _ = scaled_dot_product_attention(q, k, v)
    if close(arr, expected.numpy(), 1e-6):
        return Feedback(True, tr("Five steps, one (4, 2) output."))
    unscaled, _ = scaled_dot_product_attention(q, k, v, scale=1.0)
    if close(arr, unscaled.numpy(), 1e-6):
        return Feedback(False, tr("Close: step 3 is missing (divide the scores by sqrt(d_k))."))
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if close(arr, (torch.softmax(scores, dim=0) @ v).numpy(), 1e-6):
        return Feedback(False, tr("The softmax went down the columns: normalise each row (dim=-1)."))
    return Feedback(False, tr("Project X with each W, take Q K^T, divide by sqrt(d_k), "
                              "softmax each row, multiply by V."))


#: Exercise 3: q and k of d_k independent entries, each uniform on [low, high].
VARIANCE_SETUP: dict[str, float] = {"d_k": 96, "low": -1.0, "high": 1.0}
#: Exercise 4: the keys per query (the softmax's width); the notebook's table uses 16.
HALVING_KEYS = 32
_TABLE_KEYS = 16  # section 5's table


def _uniform_score_variance(d_k: int, low: float, high: float) -> float:
    """Var(q·k) for q, k of d_k independent entries uniform on [low, high]:
    d_k (E[x²]² - E[x]⁴), E[x] = (low + high) / 2, E[x²] = (low² + low high + high²) / 3."""
    mean, square = (low + high) / 2, (low * low + low * high + high * high) / 3
    return d_k * (square * square - mean ** 4)


@checker
def check_score_variance(answer: Any) -> Feedback:
    """Exercise 3: ``answer`` = (variance of q·k, variance of q·k / sqrt(d_k)) for q, k of
    ``VARIANCE_SETUP``: d_k = 96 entries uniform on [-1, 1]; measured from a few thousand pairs
    (within 10 %) or worked out. Section 5's N(0, 1) result, (d_k, 1), is named as such."""
    s = VARIANCE_SETUP
    d_k = int(s["d_k"])
    if answer is None:
        return _not_yet(tr("a pair (variance unscaled, variance scaled) for d_k = {d_k}", d_k=d_k))
    raw, scaled = as_array("answer", answer, (2,))
    var = _uniform_score_variance(d_k, s["low"], s["high"])
    raw_ok = abs(raw - var) <= 0.1 * var
    scaled_ok = abs(scaled - var / d_k) <= 0.1 * var / d_k
    if raw_ok and scaled_ok:
        return Feedback(True, tr("Each product q_i k_i has the variance of q_i times that of k_i, and d_k of "
                                 "them add up; dividing by sqrt(d_k) divides the variance by d_k, so the "
                                 "scaled scores keep the variance of one product, whatever d_k."))
    if abs(raw - d_k) <= 0.1 * d_k and abs(scaled - 1) <= 0.1:
        return Feedback(False, tr("That is section 5's result for entries of variance 1. These entries are "
                                  "uniform on [-1, 1]: what is the variance of one of them, and of a product "
                                  "of two?"))
    unit = _uniform_score_variance(d_k, 0.0, 1.0)  # torch.rand alone: uniform on [0, 1]
    if abs(raw - unit) <= 0.1 * unit:
        return Feedback(False, tr("Your entries look uniform on [0, 1] (torch.rand alone): stretch and shift "
                                  "them to [-1, 1]."))
    one_factor = d_k / 3  # the variance of one entry taken for that of a product
    if abs(raw - one_factor) <= 0.1 * one_factor:
        return Feedback(False, tr("The unscaled variance is d_k times the variance of one product q_i k_i, and "
                                  "a product of two independent entries of mean 0 has the variance of one "
                                  "times that of the other."))
    if not raw_ok and abs(raw - math.sqrt(var)) <= 0.1 * math.sqrt(var):
        return Feedback(False, tr("The first number looks like a standard deviation: use .var()."))
    if not raw_ok:
        return Feedback(False, tr("The unscaled variance is off: draw at least a few thousand pairs, each of "
                                  "{d_k} entries uniform on [-1, 1], and sum q*k over the {d_k} dims.", d_k=d_k))
    return Feedback(False, tr("The scaled variance is off: divide each score by sqrt(d_k) (not by d_k) before "
                              "taking the variance."))


@lru_cache(maxsize=4, typed=True)
def _half_gradient_d_k(n_keys: int) -> int | None:
    for d in D_K_GRID:
        s = scaling_stats(d, n_keys=n_keys)
        if s.grad_norm_raw < 0.5 * s.grad_norm_scaled:
            return d
    return None


@checker
def check_half_gradient_d_k(answer: Any) -> Feedback:
    """Exercise 4: ``answer`` = the first d_k of ``D_K_GRID`` where
    ``scaling_stats(d_k, n_keys=HALVING_KEYS)`` gives ``grad_norm_raw < 0.5 * grad_norm_scaled``
    (an int). The table's answer, for 16 keys, is named as such."""
    if answer is None:
        return _not_yet(tr("an int from D_K_GRID"))
    answer = as_whole_number("answer", answer)
    if answer not in D_K_GRID:
        return Feedback(False, tr("answer should be one of D_K_GRID = {grid}.", grid=list(D_K_GRID)))
    expected = _half_gradient_d_k(HALVING_KEYS)
    if answer == expected:
        return Feedback(True, tr("With {keys} keys per query instead of {table}, the largest score of a row "
                                 "stands less far above the next one, so the unscaled softmax needs a larger "
                                 "d_k to turn one-hot, and its gradient halves later.",
                                 keys=HALVING_KEYS, table=_TABLE_KEYS))
    if answer == _half_gradient_d_k(_TABLE_KEYS):
        return Feedback(False, tr("That is where it halves with {table} keys per query, the table's rows: "
                                  "measure with n_keys={keys}.", table=_TABLE_KEYS, keys=HALVING_KEYS))
    if expected is not None and answer < expected:
        return Feedback(False, tr("At that d_k the unscaled gradient is still at least half the "
                                  "scaled one: go further up the grid."))
    return Feedback(False, tr("The gradient had already halved at a smaller d_k: find the first one."))
