"""The worked-example explorer: nudge one entry of X, or change the scale, and watch every step.

Starts from the chapter's 3-token example (``attn.examples.worked_example_inputs``). One entry of X
gets ``delta`` added to it; Q, K, V, the scaled scores, the weights and the output are
recomputed (``attn.worked_example.worked_steps``) and written into the same annotated heatmaps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..examples import worked_example_inputs
from ..plotting import heatmap, new_figure
from ._bitmaps import AxesTitle, CellMap
from ..worked_example import SCALES, SanityReport, sanity_checks, worked_steps
from ._base import Explorer

__all__ = ["WorkedState", "worked_state", "worked_explorer", "DELTAS", "SCALE_LABELS"]

#: Values the delta slider can take.
DELTAS: tuple[float, ...] = tuple(float(d) for d in np.arange(-2.0, 2.01, 0.5))

#: Drop-down labels for the keys of ``attn.worked_example.SCALES``.
SCALE_LABELS: dict[str, str] = {
    "1/sqrt(d_k)": "÷ √d_k (the chapter)",
    "1/d_k": "÷ d_k",
    "none": "none (÷ 1)",
}

# (step, title, colour map, colour range): what each panel shows.
_PANELS = (
    ("Q", "Q = X W^Q", "Oranges", (-3.0, 6.0)),
    ("K", "K = X W^K", "Oranges", (-3.0, 6.0)),
    ("V", "V = X W^V", "Oranges", (-3.0, 6.0)),
    ("scaled", "scores × scale", "Purples", (-4.0, 12.0)),
    ("weights", "weights", "Blues", (0.0, 1.0)),
    ("output", "output", "Greens", (-3.0, 6.0)),
)


@dataclass(frozen=True)
class WorkedState:
    """One setting of the explorer and everything computed from it.

    Attributes:
        entry: (row, col) of X that was nudged; delta: what was added to it.
        scale: key of ``attn.worked_example.SCALES``; factor: the number the scores were multiplied by.
        X: (3, 4) the nudged input.
        steps: step name -> (rows, cols) array, as ``attn.worked_example.worked_steps`` returns.
        sanity: the checks every attention result passes (row sums, output within V's range).
        is_chapter: True when nothing was changed (the chapter's own setting).
    """

    entry: tuple[int, int]
    delta: float
    scale: str
    factor: float
    X: np.ndarray
    steps: dict[str, np.ndarray]
    sanity: SanityReport
    is_chapter: bool


def worked_state(entry: tuple[int, int] = (1, 1), delta: float = 0.0,
                 scale: str = "1/sqrt(d_k)") -> WorkedState:
    """The chapter's example with ``delta`` added to ``X[entry]``, scaled by ``scale``.

    Args:
        entry: (row, col), 0-based, row in 0..2 and col in 0..3.
        delta: a finite number added to that entry.
        scale: "1/sqrt(d_k)" (the chapter), "1/d_k" or "none".
    """
    if (not isinstance(entry, tuple) or len(entry) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in entry)
            or not (0 <= entry[0] < 3 and 0 <= entry[1] < 4)):
        raise ValueError(f"entry: expected (row, col) with row in 0..2 and col in 0..3, got {entry!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta):
        raise TypeError(f"delta: expected a finite number, got {delta!r}")
    if scale not in SCALES:
        raise ValueError(f"scale: expected one of {tuple(SCALES)}, got {scale!r}")
    ex = worked_example_inputs()
    X = ex["X"].clone()
    X[entry] += float(delta)
    steps = worked_steps(X, ex["W_Q"], ex["W_K"], ex["W_V"], scale=scale)
    arrays = {k: v.numpy() for k, v in steps.items()}
    sanity = sanity_checks(steps["weights"], steps["V"], steps["output"])
    return WorkedState(entry=entry, delta=float(delta), scale=scale,
                       factor=float(steps["scale"].item()), X=X.numpy(), steps=arrays,
                       sanity=sanity, is_chapter=(delta == 0 and scale == "1/sqrt(d_k)"))


def _readout(s: WorkedState) -> str:
    i0, j0 = s.entry
    cells = []
    for i, row in enumerate(s.X):
        tds = "".join(
            f"<td style='padding:0 6px;{'background:#ffd8a8;font-weight:bold' if (i, j) == s.entry else ''}'>"
            f"{v:g}</td>" for j, v in enumerate(row))
        cells.append(f"<tr><td>X[{i}]</td>{tds}</tr>")
    sums = ", ".join(f"{v:.3f}" for v in s.sanity.row_sums)
    within = "yes" if s.sanity.inside.all() else "NO"
    col0 = s.steps["V"][:, 0]
    note = ("This is the chapter's own setting: compare with its printed numbers above."
            if s.is_chapter else
            f"X[{i0},{j0}] changed by {s.delta:+g}; scores multiplied by {s.factor:.4f}.")
    extra = ""
    if np.allclose(col0, col0[0]):
        extra = (f" Every row of V starts with {col0[0]:g}, so the output's first column is "
                 f"{col0[0]:g} for any weights that sum to 1.")
    return (
        f"<p>{note}</p><table>{''.join(cells)}</table>"
        f"<p>Row sums of the weights: {sums}. Each output entry inside its V column's "
        f"[min, max]: {within}.{extra}</p>"
    )


def worked_explorer(entry: tuple[int, int] = (1, 1), delta: float = 0.0,
                    scale: str = "1/sqrt(d_k)") -> Explorer:
    """Drop-downs for which X entry to nudge and for the scale, a slider for the nudge."""
    first = worked_state(entry, delta, scale)
    fig = new_figure(10, 2.5, dpi=72)
    widths = [first.steps[name].shape[1] for name, *_ in _PANELS]
    axes = fig.subplots(1, len(_PANELS), gridspec_kw={"width_ratios": widths})
    maps, cells = {}, {}
    for ax, (name, title, cmap, (lo, hi)) in zip(axes, _PANELS):
        a = first.steps[name]
        maps[name] = heatmap(a, [str(j) for j in range(a.shape[1])], [str(i) for i in range(a.shape[0])],
                             ax=ax, cmap=cmap, vmin=lo, vmax=hi, title=title, font_size=8)
        ax.title.set_fontsize(10)
        maps[name].image.set_visible(False)  # kept for the axes' layout; CellMap draws instead
        cells[name] = CellMap(ax, cmap, (lo, hi), numbers=True)
    fig.set_layout_engine("constrained")
    maps["scaled"].ax.title.set_alpha(0)  # keeps its room in the layout; the live title below
    scaled_title = AxesTitle(maps["scaled"].ax, size=10)  # a cached bitmap, not a Text per move

    def update(entry: tuple[int, int], delta: float, scale: str) -> tuple[WorkedState, str]:
        s = worked_state(entry, delta, scale)
        for name, c in cells.items():
            c.set_values(s.steps[name])
        scaled_title.set_text(f"scores × {s.factor:.2f}")
        return s, _readout(s)

    def live() -> list:
        return [*cells.values(), scaled_title]

    entry_box = widgets.Dropdown(
        options=[(f"X[{i},{j}]", (i, j)) for i in range(3) for j in range(4)], value=entry,
        description="nudge", layout=widgets.Layout(width="170px"))
    delta_slider = widgets.SelectionSlider(options=[(f"{d:+g}", d) for d in DELTAS], value=float(delta),
                                           description="by", continuous_update=True)
    scale_box = widgets.Dropdown(options=[(label, key) for key, label in SCALE_LABELS.items()],
                                 value=scale, description="scale", layout=widgets.Layout(width="240px"))
    return Explorer({"entry": entry_box, "delta": delta_slider, "scale": scale_box}, fig, update,
                    live, title="The worked example, live")
