"""Checkers for notebook 08 (what trained heads learn). Each says right or wrong and gives a
hint, never the expected answer."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import torch

from ..lessons.pattern_scores import pattern_mask, pattern_score
from ..lessons.trained.tasks import TASKS, held_out_batch
from ..lessons.trained.tiny import load_run, load_trained
from ..language import tr
from ._base import Feedback, Refused, as_array, checker, close

__all__ = [
    "EXERCISE_SEGMENTS",
    "MYSTERY_TASKS",
    "exercise_map",
    "mystery_heads",
    "check_previous_token_mask",
    "check_block_mask",
    "check_vertical_score",
    "check_pattern_names",
]

#: Phrase index per position for exercise 2 (ten tokens in four phrases).
EXERCISE_SEGMENTS: tuple[int, ...] = (0, 0, 1, 1, 1, 2, 2, 3, 3, 3)

#: The shipped models behind the mystery heads A, B, C, D (kept out of the notebook).
MYSTERY_TASKS: tuple[str, ...] = ("phrases", "reverse", "neighbours", "cls")


def _bool_matrix(name: str, answer: Any, shape: tuple[int, int]) -> np.ndarray:
    """The answer as a bool matrix of ``shape``.

    Raises:
        Refused: still None, not numbers of that shape, or numbers other than 0 and 1.
    """
    if answer is None:
        raise Refused(tr("{name} is still None: build a {rows} x {cols} bool matrix.",
                         name=name, rows=shape[0], cols=shape[1]))
    arr = as_array(name, answer, shape)
    if not np.isin(arr, (0.0, 1.0)).all():
        raise Refused(tr("{name} should hold only True/False (or 1/0), one per (query, key) cell.", name=name))
    return arr.astype(bool)


@checker
def check_previous_token_mask(answer: Any) -> Feedback:
    """Exercise 1: the previous-token pattern for L = 6, True where key j = query i - 1."""
    arr = _bool_matrix("answer", answer, (6, 6))
    i = np.arange(6)
    expected = i[None, :] == i[:, None] - 1
    if (arr == expected).all():
        return Feedback(True, tr("one cell per row, just left of the diagonal; row 0 has no previous token."))
    if (arr == expected.T).all():
        return Feedback(False, tr("that marks j = i + 1, the next token: rows are queries i, "
                                  "columns keys j."))
    if arr.diagonal().any():
        return Feedback(False, tr("some diagonal cells (j = i) are True: the previous token is one "
                                  "column to the left."))
    if arr[0].any():
        return Feedback(False, tr("row 0 is the first token: it has no previous token, so its row stays False."))
    if arr.sum() != 5:
        return Feedback(False, tr("{cells} cells are True; a previous-token head has one per "
                                  "row, except row 0.", cells=int(arr.sum())))
    return Feedback(False, tr("rows are queries i, columns keys j: mark (i, j) where j = i - 1."))


@checker
def check_block_mask(answer: Any) -> Feedback:
    """Exercise 2: the block pattern of ``EXERCISE_SEGMENTS``, True where i and j share a phrase."""
    L = len(EXERCISE_SEGMENTS)
    arr = _bool_matrix("answer", answer, (L, L))
    expected = pattern_mask("block", L, segments=torch.tensor(EXERCISE_SEGMENTS)).numpy()
    if (arr == expected).all():
        return Feedback(True, tr("four square blocks on the diagonal, one per phrase."))
    if not (arr == arr.T).all():
        return Feedback(False, tr("sharing a phrase is symmetric: your matrix is not equal to its transpose."))
    if not arr.diagonal().all():
        return Feedback(False, tr("every token is in its own phrase: the diagonal should be all True."))
    return Feedback(False, tr("a cell (i, j) is True exactly when tokens i and j have the same phrase "
                              "number; broadcasting a column of numbers against a row gives all pairs."))


@lru_cache(maxsize=1, typed=True)
def _exercise_weights() -> torch.Tensor:
    model = load_trained("cls")
    with torch.no_grad():
        _, w = model(held_out_batch("cls", 8).tokens)  # (8, H, L, L)
    return w


def exercise_map() -> torch.Tensor:
    """Exercise 3's data: the trained ``cls`` model's maps on 8 held-out examples, (8, H, L, L).
    A fresh copy on every call."""
    return _exercise_weights().clone()


@checker
def check_vertical_score(answer: Any) -> Feedback:
    """Exercise 3: each head's vertical score on ``exercise_map()``: mean weight on column 0."""
    w = _exercise_weights()
    H = w.shape[1]
    if answer is None:
        return Feedback(False, tr("answer is still None: compute one score per head, shape ({H},).", H=H))
    arr = as_array("answer", answer, (H,))
    expected = pattern_score(w, pattern_mask("vertical", w.shape[-1])).mean(0).numpy()  # (B, H) -> (H,)
    if close(arr, expected, atol=1e-4):
        return Feedback(True, tr("the share of each head's attention that lands on the first token."))
    if close(arr, w[..., 0].sum(-1).mean(0).numpy(), atol=1e-4):
        return Feedback(False, tr("that is a sum over the rows: average over rows (and examples) instead."))
    if (arr > 1 + 1e-6).any() or (arr < -1e-6).any():
        return Feedback(False, tr("a score is a share of attention, between 0 and 1."))
    return Feedback(False, tr("the vertical cells are column 0 of each map; average the weight there "
                              "over examples and query rows, one number per head."))


@lru_cache(maxsize=1, typed=True)
def _mystery() -> tuple[torch.Tensor, tuple[str, ...]]:
    maps = []
    for task in MYSTERY_TASKS:
        run = load_run(task)
        model = run.model
        best = int(run.scores[-1].argmax())  # the head that follows the pattern most
        with torch.no_grad():
            _, w = model(held_out_batch(task, 1).tokens)  # (1, H, L, L)
        maps.append(w[0, best])
    return torch.stack(maps), tuple(TASKS[t].pattern for t in MYSTERY_TASKS)


def mystery_heads() -> torch.Tensor:
    """Exercise 4's data: four trained heads (4, L, L), called A, B, C, D: the clearest head
    of each of the four shipped models, on one held-out example. A fresh copy on every call."""
    return _mystery()[0].clone()


@checker
def check_pattern_names(answer: Any) -> Feedback:
    """Exercise 4: name the pattern of each mystery head, a list of four strings taken from
    'diagonal', 'anti-diagonal', 'vertical', 'block'."""
    allowed = ("diagonal", "anti-diagonal", "vertical", "block")
    if answer is None:
        return Feedback(False, tr("answer is still None: give four names from {names}.", names=list(allowed)))
    if isinstance(answer, str) or not hasattr(answer, "__len__") or len(answer) != 4:
        return Feedback(False, tr("answer should be a list of four names, one per head A, B, C, D."))
    names = [str(a).strip().lower() for a in answer]
    unknown = [n for n in names if n not in allowed]
    if unknown:
        return Feedback(False, tr("{unknown} not among the pattern names {names}.",
                                  unknown=unknown, names=list(allowed)))
    truth = _mystery()[1]
    right = sum(n == t for n, t in zip(names, truth))
    if right == 4:
        return Feedback(True, tr("all four heads named."))
    return Feedback(False, tr("{right} of 4 right. Look for a line of cells from top-left down, one from "
                              "top-right down, one bright column, or squares along the diagonal.", right=right))
