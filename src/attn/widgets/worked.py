"""The worked-example explorer: nudge one entry of X, or change the scale, and watch every step
beside what the chapter printed.

Starts from the chapter's 3-token example (``attn.examples.worked_example_inputs``). One entry of X
gets ``delta`` added to it; Q, K, V, the scaled scores, the weights and the output are
recomputed (``attn.lessons.worked_example.worked_steps``). Each cell shows the recomputed number and,
under it, the chapter's printed one (``attn.lessons.worked_example.printed``); a frame and a * mark the
cells where the two differ by more than the chapter's rounding (the typo test of notebook 03,
live: nudge X[1,1] by +1 and Q's wrong entry is fixed while K's row 2 breaks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..examples import worked_example_inputs
from ..language import mark, tr
from ..drawing.plotting import new_figure, text_font
from ..lessons.worked_example import ROUNDING_ATOL, SCALES, SanityReport, printed, sanity_checks, worked_steps
from ._base import Explorer, listing, sentences
from ._mapview import MapView

__all__ = ["WorkedState", "worked_state", "worked_explorer", "DELTAS", "SCALE_LABELS"]

#: Values the delta slider can take.
DELTAS: tuple[float, ...] = tuple(float(d) for d in np.arange(-2.0, 2.01, 0.5))

#: Drop-down labels for the keys of ``attn.lessons.worked_example.SCALES`` (English; shown translated).
SCALE_LABELS: dict[str, str] = {
    "1/sqrt(d_k)": mark("÷ √d_k (the chapter)"),
    "1/d_k": mark("÷ d_k"),
    "none": mark("none (÷ 1)"),
}

# (step, title, colour map, colour range): what each panel shows. Single-hue maps: the
# lightness alone carries the value.
_PANELS = (
    ("X", mark("X (nudged: orange)"), "Greys", (-3.0, 4.0)),
    ("Q", mark("Q = X W^Q"), "Oranges", (-3.0, 6.0)),
    ("K", mark("K = X W^K"), "Oranges", (-3.0, 6.0)),
    ("V", mark("V = X W^V"), "Oranges", (-3.0, 6.0)),
    ("scaled", mark("scores × scale"), "Purples", (-4.0, 12.0)),
    ("weights", mark("weights"), "Blues", (0.0, 1.0)),
    ("output", mark("output"), "Greens", (-3.0, 6.0)),
)
#: The steps the chapter prints that the panels show (all but X).
PRINTED_STEPS: tuple[str, ...] = ("Q", "K", "V", "scaled", "weights", "output")
#: The steps named by a word (the readout names them in the current language).
_STEP_WORDS = {"scaled": mark("scaled"), "weights": mark("weights"), "output": mark("output")}


def _step_name(step: str) -> str:
    return tr(_STEP_WORDS[step]) if step in _STEP_WORDS else step


@dataclass(frozen=True)
class WorkedState:
    """One setting of the explorer and everything computed from it.

    Attributes:
        entry: (row, col) of X that was nudged; delta: what was added to it.
        scale: key of ``attn.lessons.worked_example.SCALES``; factor: the number the scores were multiplied by.
        X: (3, 4) the nudged input.
        steps: step name -> (rows, cols) array, as ``attn.lessons.worked_example.worked_steps`` returns.
        printed: step -> the chapter's printed matrix, for ``PRINTED_STEPS``.
        differs: step -> (rows, cols) bool, True where the recomputed number and the printed
            one differ by more than the rounding (``attn.lessons.worked_example.ROUNDING_ATOL``).
        sanity: the checks every attention result passes (row sums, output within V's range).
        is_chapter: True when nothing was changed (the chapter's own setting).
    """

    entry: tuple[int, int]
    delta: float
    scale: str
    factor: float
    X: np.ndarray
    steps: dict[str, np.ndarray]
    printed: dict[str, np.ndarray]
    differs: dict[str, np.ndarray]
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
    arrays["X"] = X.numpy()
    chapter = {step: printed(step).numpy() for step in PRINTED_STEPS}
    differs = {step: np.abs(arrays[step] - chapter[step]) > ROUNDING_ATOL + 1e-12
               for step in PRINTED_STEPS}
    sanity = sanity_checks(steps["weights"], steps["V"], steps["output"])
    return WorkedState(entry=entry, delta=float(delta), scale=scale,
                       factor=float(steps["scale"].item()), X=X.numpy(), steps=arrays,
                       printed=chapter, differs=differs, sanity=sanity,
                       is_chapter=(delta == 0 and scale == "1/sqrt(d_k)"))


def _readout(s: WorkedState) -> str:
    i0, j0 = s.entry
    cells = []
    for i, row in enumerate(s.X):
        tds = "".join(
            f"<td style='padding:0 6px;{'background:#ffd8a8;font-weight:bold' if (i, j) == s.entry else ''}'>"
            f"{v:g}</td>" for j, v in enumerate(row))
        cells.append(f"<tr><td>X[{i}]</td>{tds}</tr>")
    sums = ", ".join(f"{v:.3f}" for v in s.sanity.row_sums)
    within = tr("yes") if s.sanity.inside.all() else tr("NO")
    col0 = s.steps["V"][:, 0]
    note = (tr("This is the chapter's own setting: compare with its printed numbers above.")
            if s.is_chapter else
            tr("X[{row},{col}] changed by {delta:+g}; scores multiplied by {factor:.4f}.",
               row=i0, col=j0, delta=s.delta, factor=s.factor))
    extra = ""
    if np.allclose(col0, col0[0]):
        extra = tr("Every row of V starts with {first:g}, so the output's first column is {first:g} "
                   "for any weights that sum to 1.", first=col0[0])
    counts = listing(tr("{step} {count} of {total}", step=_step_name(step), count=int(s.differs[step].sum()),
                        total=s.differs[step].size) for step in PRINTED_STEPS)
    where = listing(f"{_step_name(step)} {_cells(s.differs[step])}" for step in PRINTED_STEPS
                    if s.differs[step].any())
    differ = (tr("Printed numbers that differ: {counts} (row, col): {where}.", counts=counts, where=where)
              if where else tr("Printed numbers that differ: {counts}.", counts=counts))
    return (
        f"<p>{note}</p><table>{''.join(cells)}</table>"
        "<p>" + sentences([tr("In each cell: the number recomputed here, and under it the chapter's "
                              "printed one; * and a frame mark a difference larger than the rounding "
                              "({atol}).", atol=ROUNDING_ATOL), differ]) + "</p>"
        "<p>" + sentences([tr("Row sums of the weights: {sums}. Each output entry inside its V "
                              "column's [min, max]: {within}.", sums=sums, within=within), extra])
        + "</p>"
    )


def _cells(bad: np.ndarray) -> str:
    return " ".join(f"({i},{j})" for i, j in zip(*np.nonzero(bad)))


def worked_explorer(entry: tuple[int, int] = (1, 1), delta: float = 0.0,
                    scale: str = "1/sqrt(d_k)") -> Explorer:
    """Drop-downs for which X entry to nudge and for the scale, a slider for the nudge.

    Returns:
        An ``Explorer``; ``.maps`` is step -> ``MapView`` (X, then the printed steps).
    """
    first = worked_state(entry, delta, scale)  # validates every argument
    fig = new_figure(10.5, 3.0, dpi=72)
    widths = [first.steps[name].shape[1] for name, *_ in _PANELS]
    fig.subplots_adjust(left=0.025, right=0.995, bottom=0.09, top=0.86, wspace=0.3)
    axes = fig.subplots(1, len(_PANELS), gridspec_kw={"width_ratios": widths})
    maps = {name: MapView(ax, cmap=cmap, clim=clim, notes=name != "X", numbers=True, title_size=10,
                          title_font=text_font(10), box_color="tab:orange" if name == "X" else "black")
            for ax, (name, _, cmap, clim) in zip(axes, _PANELS)}
    titles = {name: tr(title) for name, title, *_ in _PANELS}

    def update(entry: tuple[int, int], delta: float, scale: str) -> tuple[WorkedState, str]:
        s = worked_state(entry, delta, scale)
        for name, view in maps.items():
            a = s.steps[name]
            labels = dict(x_tokens=[str(j) for j in range(a.shape[1])],
                          y_tokens=[str(i) for i in range(a.shape[0])])
            if name == "X":
                i, j = s.entry
                view.set(a, boxes=[(i, i + 1, j, j + 1)], title=titles[name], **labels)
                continue
            bad = s.differs[name]
            notes = [[f"{p:.2f}{'*' if b else ''}" for p, b in zip(prow, brow)]
                     for prow, brow in zip(s.printed[name], bad)]
            boxes = [(i, i + 1, j, j + 1) for i, j in zip(*np.nonzero(bad))]
            title = tr("scores × {factor:.2f}", factor=s.factor) if name == "scaled" else titles[name]
            view.set(a, notes=notes, boxes=boxes, title=title, **labels)
        return s, _readout(s)

    def live() -> list:
        return [a for view in maps.values() for a in view.artists()]

    entry_box = widgets.Dropdown(
        options=[(f"X[{i},{j}]", (i, j)) for i in range(3) for j in range(4)], value=entry,
        description=tr("nudge"), layout=widgets.Layout(width="170px"))
    delta_slider = widgets.SelectionSlider(options=[(f"{d:+g}", d) for d in DELTAS], value=float(delta),
                                           description=tr("by"), continuous_update=True)
    scale_box = widgets.Dropdown(options=[(tr(label), key) for key, label in SCALE_LABELS.items()],
                                 value=scale, description=tr("scale"), layout=widgets.Layout(width="240px"))
    explorer = Explorer({"entry": entry_box, "delta": delta_slider, "scale": scale_box}, fig,
                        update, live, title=tr("The worked example, live, beside the printed numbers"),
                        maps=maps)
    return explorer
