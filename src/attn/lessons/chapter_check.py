"""Every number the chapter prints for its worked example, checked (notebook 03).

``check_chapter`` puts each printed matrix (``attn.examples.CHAPTER_PRINTED``, read by
``attn.lessons.worked_example.printed``) beside two computations: the right one (from X and
the W's, ``worked_steps``) and the one that follows from the chapter's own previous printed
step. The first says whether a printed number is right; the second says where an error
entered (a step whose printed input is wrong can still be computed correctly from it).

Tolerances: the chapter rounds to 2 decimals, so a printed number agrees when it is within
half a unit of the last decimal (``ROUNDING_ATOL``, 0.005) of the computed one. When a step is
recomputed from printed (rounded) inputs, the rounding of those inputs is carried through as
well.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import torch
from torch import Tensor

from .._checks import check_number
from .._text import ljust, rjust, width
from ..examples import worked_example_inputs
from ..language import mark, tr
from .worked_example import ROUNDING_ATOL, STEPS, format_matrix, printed, row_softmax, step_label, worked_steps

__all__ = [
    "StepCheck",
    "check_chapter",
    "format_check",
    "format_summary",
    "renormalised_printed_weights",
]

#: What each step computes (``StepCheck.formula``).
_FORMULAS = {
    "Q": "X W^Q",
    "K": "X W^K",
    "V": "X W^V",
    "sqrt(d_k)": "sqrt(2)",
    "K^T": mark("transpose of K"),
    "QK^T": "Q K^T",
    "scaled": "Q K^T / sqrt(d_k)",
    "weights": "softmax(scaled, dim=-1)",
    "output": "weights @ V",
}
#: The formulas written in words, shown in the current language; the others are code.
_WORDED = frozenset({_FORMULAS["K^T"]})


def _from_printed(step: str) -> tuple[Tensor, np.ndarray]:
    """``step`` computed from the chapter's printed inputs, and how far rounding of those
    inputs (each within 0.005 of its true value) can move each entry."""
    ex = worked_example_inputs()
    r = ROUNDING_ATOL
    if step in ("Q", "K", "V"):
        t = ex["X"] @ ex["W_" + step]
        return t, np.zeros(tuple(t.shape))
    if step == "sqrt(d_k)":
        return torch.full((1, 1), math.sqrt(2.0), dtype=torch.float64), np.zeros((1, 1))
    if step == "K^T":
        t = printed("K").T
        return t, np.zeros(tuple(t.shape))
    if step == "QK^T":  # printed Q and K are integers: nothing rounded
        t = printed("Q") @ printed("K").T
        return t, np.zeros(tuple(t.shape))
    if step == "scaled":  # printed QK^T is integer
        t = printed("QK^T") / math.sqrt(2.0)
        return t, np.zeros(tuple(t.shape))
    if step == "weights":
        # d p_i = p_i (d x_i - sum_j p_j d x_j): with |d x| <= r, |d p_i| <= 2 r p_i.
        p = row_softmax(printed("scaled"))
        return p, 2 * r * p.numpy()
    if step == "output":
        # each weight within r: output (i, j) moves by at most r * sum_k |V_kj|.
        w, V = printed("weights"), printed("V")
        slack = r * np.abs(V.numpy()).sum(axis=0, keepdims=True)  # (1, d_v)
        return w @ V, np.broadcast_to(slack, (w.shape[0], V.shape[1])).copy()
    raise ValueError(f"step: expected one of {STEPS}, got {step!r}")


def _bad_entries(a: np.ndarray, b: np.ndarray, atol: np.ndarray | float) -> tuple[tuple[int, int], ...]:
    bad = np.abs(a - b) > atol + 1e-12
    return tuple((int(i), int(j)) for i, j in zip(*np.nonzero(bad)))


@dataclass(frozen=True)
class StepCheck:
    """One printed step beside the right value and the value its printed inputs give.

    Attributes:
        step, formula: the step's name and what it computes.
        printed: what the chapter prints.
        computed: the right value, computed from X and the W's.
        from_printed: the value computed from the chapter's previous printed step(s).
        wrong: (row, col) entries (0-based) where printed and computed differ by more than
            the rounding tolerance.
        inconsistent: entries where printed and from_printed differ by more than the rounding
            tolerance plus the rounding carried in from the printed inputs.
    """

    step: str
    formula: str
    printed: np.ndarray
    computed: np.ndarray
    from_printed: np.ndarray
    wrong: tuple[tuple[int, int], ...]
    inconsistent: tuple[tuple[int, int], ...]

    @property
    def ok(self) -> bool:
        return not self.wrong

    @property
    def verdict(self) -> str:
        """Right or wrong, and where a wrong number came from, in the current language."""
        if not self.wrong:
            return tr("right (to the printed 2 decimals)")
        if not self.inconsistent:
            return tr("wrong, but follows from the chapter's previous printed step (an earlier error carried on)")
        return tr("wrong, and does not follow from the chapter's previous printed step (a new error here)")


def check_chapter(atol: float = ROUNDING_ATOL) -> dict[str, StepCheck]:
    """Check every matrix the chapter prints for its worked example.

    Args:
        atol: how far a printed number may be from the computed one (default: half a unit
            of the second decimal, the chapter's rounding).

    Returns:
        step -> ``StepCheck``, in the order of ``STEPS``.
    """
    atol = check_number("atol", atol, non_negative=True)
    right = worked_steps()
    checks = {}
    for step in STEPS:
        p = printed(step).numpy()
        c = right[step].numpy()
        f, slack = _from_printed(step)
        checks[step] = StepCheck(
            step=step,
            formula=_FORMULAS[step],
            printed=p,
            computed=c,
            from_printed=f.numpy(),
            wrong=_bad_entries(p, c, atol),
            inconsistent=_bad_entries(p, f.numpy(), atol + slack),
        )
    return checks


def format_check(check: StepCheck, decimals: int = 2) -> str:
    """Printed | right | from the printed previous step, side by side; * marks a disagreement.

    The words are in the current language (``attn.language``); steps, formulas in symbols and
    numbers are the same in every language.
    """
    cols = [
        (tr("printed"), format_matrix(check.printed, check.wrong, decimals)),
        (tr("right"), format_matrix(check.computed, (), decimals)),
        (tr("from printed inputs"), format_matrix(check.from_printed, check.inconsistent, decimals)),
    ]
    column = max(len(r) for _, rows in cols for r in rows) + 3
    formula = tr(check.formula) if check.formula in _WORDED else check.formula
    lines = [tr("{step} = {formula}: {verdict}", step=check.step, formula=formula, verdict=check.verdict)]
    lines.append("".join(ljust(name, column) for name, _ in cols).rstrip())
    for i in range(len(cols[0][1])):
        lines.append("".join(f"{rows[i]:<{column}}" for _, rows in cols).rstrip())
    if check.wrong:
        where = ", ".join(f"({i},{j})" for i, j in check.wrong)
        lines.append("  " + tr("printed differs from the right value at (row, col) = {where}", where=where))
    if check.inconsistent:
        where = ", ".join(f"({i},{j})" for i, j in check.inconsistent)
        lines.append("  " + tr("printed does not follow from its printed inputs at {where}", where=where))
    return "\n".join(lines)


def format_summary(checks: Mapping[str, StepCheck]) -> str:
    """One line per step: how many numbers are printed, how many are wrong, the verdict
    (the words in the current language, ``attn.language``)."""
    step, count, wrong = tr("step"), tr("printed"), tr("wrong")
    w_step, w_count, w_wrong = max(10, width(step)), max(7, width(count)), max(5, width(wrong))
    lines = [f"{ljust(step, w_step)} {rjust(count, w_count)} {rjust(wrong, w_wrong)}  {tr('verdict')}"]
    for name, c in checks.items():
        lines.append(f"{ljust(step_label(name), w_step)} {c.printed.size:>{w_count}} {len(c.wrong):>{w_wrong}}  {c.verdict}")
    total = sum(c.printed.size for c in checks.values())
    bad = sum(len(c.wrong) for c in checks.values())
    lines.append(f"{ljust(tr('all'), w_step)} {total:>{w_count}} {bad:>{w_wrong}}")
    return "\n".join(lines)


def renormalised_printed_weights() -> dict[str, Tensor]:
    """The printed weights divided by their row sums, beside the softmax of the printed scores.

    Returns:
        "row_sums" (3,), "renormalised" (3, 3), "softmax_of_printed_scaled" (3, 3),
        "max_abs_diff" (scalar): how far apart the last two are.
    """
    w = printed("weights")
    sums = w.sum(-1)
    renorm = w / sums[:, None]  # (3, 3) / (3, 1)
    soft = row_softmax(printed("scaled"))
    return {"row_sums": sums, "renormalised": renorm, "softmax_of_printed_scaled": soft,
            "max_abs_diff": (renorm - soft).abs().max()}
