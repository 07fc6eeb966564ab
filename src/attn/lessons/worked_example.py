"""The chapter's worked example, step by step: every intermediate matrix, checks any result
must pass, and the same steps under other choices of scale or inputs.

The example: 3 tokens, d_model = 4, d_k = d_v = 2 (``attn.examples.worked_example_inputs``).

    Q = X W^Q,  K = X W^K,  V = X W^V          (3, 2) each
    QK^T = Q K^T                               (3, 3)
    scaled = QK^T * scale  (scale = 1/sqrt(d_k) in the chapter)
    weights = softmax(scaled), row by row      (3, 3)
    output = weights V                         (3, 2)

The chapter prints each of these matrices rounded to 2 decimals (``printed``, within
``ROUNDING_ATOL`` of the true value when right); ``attn.lessons.chapter_check`` checks every
one of those printed numbers against these steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import torch
from torch import Tensor

from .._checks import check_choice, check_float, check_int, check_rank, shape_str, to_numpy
from .._text import ljust, width
from ..examples import CHAPTER_PRINTED, worked_example_inputs
from ..language import mark, tr

__all__ = [
    "STEPS",
    "step_label",
    "SCALES",
    "printed",
    "worked_steps",
    "row_softmax",
    "SanityReport",
    "sanity_checks",
    "explain_row_product",
    "scenarios",
    "SCENARIO_NAMES",
    "format_matrix",
    "format_scenarios",
    "ROUNDING_ATOL",
]

#: The steps in the order the chapter prints them.
STEPS: tuple[str, ...] = ("Q", "K", "V", "sqrt(d_k)", "K^T", "QK^T", "scaled", "weights", "output")

#: The steps named by a word rather than a formula: a table shows them translated.
_WORDS: frozenset[str] = frozenset({mark("scaled"), mark("weights"), mark("output")})


def step_label(step: str) -> str:
    """How a table names ``step``: a formula as it is (``Q``, ``K^T``), a word in the current
    language (``weights``, 权重 in Chinese)."""
    check_choice("step", step, STEPS)
    return tr(step) if step in _WORDS else step

#: Scale choices for the scores: name -> function of d_k.
SCALES: dict[str, object] = {
    "1/sqrt(d_k)": lambda d_k: 1.0 / math.sqrt(d_k),
    "1/d_k": lambda d_k: 1.0 / d_k,
    "none": lambda d_k: 1.0,
}

#: Half a unit of the chapter's last printed decimal: a printed number is right when it lies
#: within this of the true value.
ROUNDING_ATOL: float = 0.005


def printed(step: str) -> Tensor:
    """The chapter's printed matrix for ``step`` (one of ``STEPS``) as a float64 tensor."""
    check_choice("step", step, STEPS)
    return torch.tensor(CHAPTER_PRINTED[step], dtype=torch.float64)


def _matrix(name: str, t: object, shape: tuple[int, ...] | None) -> Tensor:
    """A float matrix (2 dims), of ``shape`` if one is given."""
    t = check_float(name, t)
    check_rank(name, t, 2, "(rows, cols)")
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError(f"{name}: expected shape {shape}, got shape {shape_str(t)}")
    return t


def worked_steps(
    X: Tensor | None = None,
    W_Q: Tensor | None = None,
    W_K: Tensor | None = None,
    W_V: Tensor | None = None,
    *,
    scale: str = "1/sqrt(d_k)",
    overrides: Mapping[str, Tensor] | None = None,
) -> dict[str, Tensor]:
    """Every intermediate matrix of single-head attention, in order.

    Args:
        X: (n, d_model) inputs; W_Q, W_K: (d_model, d_k); W_V: (d_model, d_v). Each defaults
            to the chapter's matrix (n = 3, d_model = 4, d_k = d_v = 2).
        scale: how the scores are scaled, a key of ``SCALES``: "1/sqrt(d_k)" (the chapter),
            "1/d_k" or "none".
        overrides: step name -> matrix that replaces the computed one; the later steps then
            follow from it (e.g. ``{"Q": printed("Q")}`` keeps the chapter's Q).

    Returns:
        step -> tensor: "Q" (n, d_k), "K" (n, d_k), "V" (n, d_v), "sqrt(d_k)" (1, 1),
        "K^T" (d_k, n), "QK^T" (n, n), "scaled" (n, n), "weights" (n, n), "output" (n, d_v),
        and "scale" (1, 1), the factor the scores were multiplied by.
    """
    ex = worked_example_inputs()
    X = _matrix("X", ex["X"] if X is None else X, None)
    W_Q = _matrix("W_Q", ex["W_Q"] if W_Q is None else W_Q, None)
    W_K = _matrix("W_K", ex["W_K"] if W_K is None else W_K, None)
    W_V = _matrix("W_V", ex["W_V"] if W_V is None else W_V, None)
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        if W.shape[0] != X.shape[1]:
            raise ValueError(f"{name}: expected {X.shape[1]} rows (d_model of X {shape_str(X)}), "
                             f"got shape {shape_str(W)}")
    if W_Q.shape[1] != W_K.shape[1]:
        raise ValueError(f"W_K: expected {W_Q.shape[1]} columns (d_k of W_Q), got shape {shape_str(W_K)}")
    check_choice("scale", scale, tuple(SCALES))
    overrides = dict(overrides or {})
    unknown = set(overrides) - set(STEPS)
    if unknown:
        raise ValueError(f"overrides: expected keys among {STEPS}, got {sorted(unknown)}")

    out: dict[str, Tensor] = {}

    def put(step: str, value: Tensor) -> Tensor:
        if step in overrides:
            value = _matrix(f"overrides[{step!r}]", overrides[step], tuple(value.shape)).to(X.dtype)
        out[step] = value
        return value

    d_k = W_Q.shape[1]
    Q = put("Q", X @ W_Q)  # (n, d_model) @ (d_model, d_k) -> (n, d_k)
    K = put("K", X @ W_K)  # (n, d_k)
    V = put("V", X @ W_V)  # (n, d_v)
    put("sqrt(d_k)", torch.full((1, 1), math.sqrt(d_k), dtype=X.dtype))
    KT = put("K^T", K.T)  # (n, d_k) -> (d_k, n)
    scores = put("QK^T", Q @ KT)  # (n, d_k) @ (d_k, n) -> (n, n)
    factor = SCALES[scale](d_k)
    out["scale"] = torch.full((1, 1), factor, dtype=X.dtype)
    scaled = put("scaled", scores * factor)
    weights = put("weights", row_softmax(scaled))  # each row sums to 1
    put("output", weights @ V)  # (n, n) @ (n, d_v) -> (n, d_v)
    return out


def row_softmax(scores: Tensor) -> Tensor:
    """softmax of each row, written out: exp(s_ij - max_j s_ij) / sum_j exp(s_ij - max_j s_ij).

    Subtracting the row's largest score changes nothing mathematically (it cancels in the
    ratio) and keeps exp from overflowing. Same numbers as ``torch.softmax(scores, dim=-1)``.

    Args:
        scores: (..., n, S) -> weights (..., n, S), each row summing to 1.
    """
    scores = check_float("scores", scores)
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()  # (..., n, S), largest entry 1
    return e / e.sum(dim=-1, keepdim=True)  # (..., n, S) / (..., n, 1)


@dataclass(frozen=True)
class SanityReport:
    """Checks any attention result must pass, whatever X and the W's are.

    Attributes:
        row_sums: (n,) sum of each row of the weights (must be 1).
        nonnegative: every weight >= 0.
        v_min, v_max: (d_v,) smallest and largest entry of each column of V.
        inside: (n, d_v) whether each output entry lies within its V column's [min, max]
            (an output row is a weighted average of the rows of V).
    """

    row_sums: np.ndarray
    nonnegative: bool
    v_min: np.ndarray
    v_max: np.ndarray
    inside: np.ndarray
    atol: float

    @property
    def rows_sum_to_one(self) -> np.ndarray:
        return np.abs(self.row_sums - 1) <= self.atol + 1e-12

    @property
    def ok(self) -> bool:
        return bool(self.rows_sum_to_one.all() and self.nonnegative and self.inside.all())

    def __str__(self) -> str:
        """The four checks, one line each, in the current language (``attn.language``)."""
        sums = ", ".join(f"{s:.2f}" for s in self.row_sums)
        bounds = ", ".join(f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(self.v_min, self.v_max))
        outside = [(int(i), int(j)) for i, j in zip(*np.nonzero(~self.inside))]
        if self.rows_sum_to_one.all():
            row_sums = tr("row sums of the weights: {sums} -> all 1", sums=sums)
        else:
            rows = [int(i) for i in np.nonzero(~self.rows_sum_to_one)[0]]
            row_sums = tr("row sums of the weights: {sums} -> rows {rows} do not sum to 1", sums=sums, rows=rows)
        if not outside:
            inside = tr("output inside those ranges: yes")
        else:
            inside = tr("output inside those ranges: no, at (row, col) {cells}", cells=outside)
        return "\n".join([
            row_sums,
            tr("weights >= 0: {ok}", ok=self.nonnegative),
            tr("range of each V column: {bounds}", bounds=bounds),
            inside,
        ])


def sanity_checks(weights: object, V: object, output: object, *, atol: float = 1e-9) -> SanityReport:
    """Checks that catch a wrong attention result without recomputing it.

    Args:
        weights: (n, S) attention weights; V: (S, d_v) values; output: (n, d_v).
        atol: tolerance; use about 3 x 0.005 for numbers rounded to 2 decimals.
    """
    w = to_numpy("weights", weights, ndim=2)
    v = to_numpy("V", V, ndim=2)
    o = to_numpy("output", output, ndim=2)
    if w.shape[1] != v.shape[0] or o.shape != (w.shape[0], v.shape[1]):
        raise ValueError(f"weights/V/output: expected shapes (n, S), (S, d_v), (n, d_v), got "
                         f"{w.shape}, {v.shape}, {o.shape}")
    v_min, v_max = v.min(axis=0), v.max(axis=0)
    inside = (o >= v_min - atol - 1e-12) & (o <= v_max + atol + 1e-12)
    return SanityReport(row_sums=w.sum(axis=1), nonnegative=bool((w >= -atol).all()),
                        v_min=v_min, v_max=v_max, inside=inside, atol=atol)


def explain_row_product(X: object, W: object, row: int, *, names: tuple[str, str] = ("X", "W")) -> str:
    """Write out ``X[row] @ W`` column by column, as one would by hand.

    Args:
        X: (n, d_model); W: (d_model, d_out); row: 0-based row of X.

    Returns:
        One line per output column: "col j: x0*w0j + x1*w1j + ... = value" (its words in the
        current language, ``attn.language``).
    """
    x = to_numpy(names[0], X, ndim=2)
    w = to_numpy(names[1], W, ndim=2)
    row = check_int("row", row, low=0, high=x.shape[0] - 1)
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"{names[1]}: expected {x.shape[1]} rows, got shape {w.shape}")
    lines = [f"{names[0]}[{row}] = {_num_list(x[row])}"]
    for j in range(w.shape[1]):
        terms = " + ".join(f"{_num(a)}*{_num(b)}" for a, b in zip(x[row], w[:, j]))
        lines.append("  " + tr("col {j}: {terms} = {value}", j=j, terms=terms, value=_num(float(x[row] @ w[:, j]))))
    lines.append(f"{names[0]}[{row}] @ {names[1]} = {_num_list(x[row] @ w)}")
    return "\n".join(lines)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _num_list(a: np.ndarray) -> str:
    return "[" + ", ".join(_num(float(v)) for v in a) + "]"


def scenarios() -> dict[str, dict[str, Tensor]]:
    """Three versions of the example, for side-by-side display.

    Returns:
        "printed": the chapter's numbers as printed;
        "softmax fixed": the chapter's (wrong) Q kept, every later step computed correctly;
        "right": everything computed from X and the W's.
    """
    chapter = {step: printed(step) for step in STEPS}
    return {
        "printed": chapter,
        "softmax fixed": worked_steps(overrides={"Q": printed("Q")}),
        "right": worked_steps(),
    }


#: The names of ``scenarios()``: ``format_scenarios`` heads its columns with them, translated.
SCENARIO_NAMES: tuple[str, ...] = (mark("printed"), mark("softmax fixed"), mark("right"))


def format_scenarios(versions: Mapping[str, Mapping[str, Tensor]], step: str, decimals: int = 2) -> str:
    """One step of several versions of the example side by side (e.g. ``scenarios()``).

    Args:
        versions: name -> (step -> matrix); step: which matrix to show. The names of
            ``scenarios()`` are shown in the current language (``attn.language``), others as given.
    """
    cols = []
    for name, steps in versions.items():
        if step not in steps:
            raise ValueError(f"step: expected one of {tuple(steps)}, got {step!r}")
        shown = tr(name) if name in SCENARIO_NAMES else name
        cols.append((shown, format_matrix(to_numpy(step, steps[step], ndim=2), (), decimals)))
    column = max(len(r) for _, rows in cols for r in rows) + 3
    column = max(column, max(width(name) for name, _ in cols) + 3)
    lines = [step_label(step) if step in STEPS else step, "".join(ljust(name, column) for name, _ in cols).rstrip()]
    for i in range(len(cols[0][1])):
        lines.append("".join(f"{rows[i]:<{column}}" for _, rows in cols).rstrip())
    return "\n".join(lines)


def format_matrix(a: np.ndarray, marks: tuple[tuple[int, int], ...] = (), decimals: int = 2) -> list[str]:
    """One line per row of a matrix, each number to ``decimals`` places; ``marks`` lists
    (row, col) entries to flag with a *."""
    rows = []
    for i, row in enumerate(a):
        cells = []
        for j, v in enumerate(row):
            s = f"{v:.{decimals}f}"
            cells.append(f"{s}{'*' if (i, j) in marks else ' '}")
        rows.append("[" + " ".join(f"{c:>7}" for c in cells) + "]")
    return rows
