"""Explorers of the tiny trained models (``attn.lessons.trained.tiny``): maps forming during training,
and maps on chosen held-out examples.

``training_frame`` and ``example_frame`` are the pure functions (a test calls them);
``training_explorer`` and ``example_explorer`` draw what they return, one ``MapView`` per
head. Dots mark the cells of the task's pattern, so a reader can see how much of each head's
weight falls on them.

Shape legend: N snapshots, H heads, L sequence length.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import torch

from ...language import mark, tr
from ...drawing.plotting import new_figure, text_font
from .._bitmaps import AxesTitle
from .._mapview import MapView
from ...lessons.pattern_scores import pattern_mask, pattern_score
from ...threads import torch_threads
from ...lessons.trained.tasks import IGNORE, TASKS, held_out_batch, token_labels
from ...lessons.trained.tiny import TinyTransformer, TrainRun
from .._base import Explorer, options, sentences

__all__ = [
    "TrainingFrame",
    "training_frame",
    "training_explorer",
    "ExampleFrame",
    "example_frame",
    "example_frames",
    "example_explorer",
    "N_EXAMPLES",
]

N_EXAMPLES = 32  # held-out examples the example explorer can show

# The tasks' names and patterns (``attn.lessons.trained.tasks.TASKS``), marked here for the catalogue:
# the explorers show them translated (their descriptions are marked where they are written).
_TASK_WORDS = (mark("neighbours"), mark("reverse"), mark("cls"), mark("phrases"),
               mark("diagonal"), mark("anti-diagonal"), mark("vertical"), mark("block"))


def _check_runs(runs: object) -> dict[str, TrainRun]:
    if not isinstance(runs, Mapping) or not runs:
        raise TypeError(f"runs: expected a non-empty dict name -> TrainRun, got {type(runs).__name__}")
    for name, run in runs.items():
        if not isinstance(run, TrainRun):
            raise TypeError(f"runs[{name!r}]: expected a TrainRun, got {type(run).__name__}")
    return dict(runs)


@dataclass(frozen=True)
class TrainingFrame:
    """One snapshot of a run: the probe's maps (H, L, L), the pattern's cells (L, L),
    the held-out scores (H,) and accuracy then, and the untrained scores (H,)."""

    task: str
    pattern: str
    step: int
    tokens: tuple[str, ...]
    maps: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    accuracy: float
    untrained: np.ndarray


def training_frame(run: TrainRun, step: int) -> TrainingFrame:
    """The last snapshot of ``run`` taken at or before ``step`` (clamped to the run)."""
    if not isinstance(run, TrainRun):
        raise TypeError(f"run: expected a TrainRun, got {type(run).__name__}")
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step: expected an int, got {type(step).__name__}")
    i = int(np.searchsorted(np.asarray(run.steps), step, side="right")) - 1
    i = min(max(i, 0), len(run.steps) - 1)
    spec = TASKS[run.task]
    L = run.probe.tokens.shape[1]
    mask = pattern_mask(spec.pattern, L, segments=run.probe.segments[0])
    return TrainingFrame(
        task=run.task, pattern=spec.pattern, step=run.steps[i],
        tokens=tuple(token_labels(run.task, run.probe.tokens[0])),
        maps=run.maps[i].numpy().astype(float), mask=mask.numpy(),
        scores=run.scores[i].numpy().astype(float), accuracy=float(run.accuracies[i]),
        untrained=run.scores[0].numpy().astype(float),
    )


def _score_rows(pattern: str, scores: np.ndarray, untrained: np.ndarray) -> str:
    return "".join(
        f"<tr><td>{tr('head {h}', h=h + 1)}</td><td>{s:.2f}</td><td>{u:.2f}</td></tr>"
        for h, (s, u) in enumerate(zip(scores, untrained))
    )


def _head_maps(fig, grid, H: int) -> list[MapView]:  # noqa: ANN001 (a figure and its gridspec)
    """One map per head in the gridspec's first H cells; the first one writes the query labels."""
    return [MapView(fig.add_subplot(grid[0, h]), y_labels=h == 0, title_font=text_font(9))
            for h in range(H)]


def _set_heads(maps: list[MapView], f: "TrainingFrame | ExampleFrame") -> int:
    """Draw each head of a frame (dots on the pattern's cells); returns how many heads."""
    for h in range(f.maps.shape[0]):
        maps[h].set(f.maps[h], x_tokens=f.tokens, marks=f.mask,
                    title=tr("head {h}: {pattern} {score:.2f}", h=h + 1, pattern=tr(f.pattern),
                             score=f.scores[h]))
    return f.maps.shape[0]


def training_explorer(runs: Mapping[str, TrainRun], *, task: str | None = None,
                      step: int = 0) -> Explorer:
    """A task drop-down and a training-step slider: the probe example's per-head maps at
    that step (dots = the pattern's cells), and every head's pattern score and the
    accuracy over training, with the chosen step marked.

    Args:
        runs: name -> ``TrainRun`` (from ``train_tiny`` or ``load_run``).
        task: the name shown first (default: the first of ``runs``).
        step: the step shown first.
    """
    runs = _check_runs(runs)
    names = list(runs)
    task = names[0] if task is None else task
    if task not in runs:
        raise ValueError(f"task: expected one of {names}, got {task!r}")
    H = max(r.maps.shape[1] for r in runs.values())
    last = max(r.steps[-1] for r in runs.values())
    spacing = min(int(np.diff(r.steps).min()) if len(r.steps) > 1 else 1 for r in runs.values())

    fig = new_figure(2.8 * H + 3.6, 3.2, dpi=72)
    grid = fig.add_gridspec(1, H + 1, width_ratios=[1] * H + [1.3], left=0.05, right=0.98,
                            bottom=0.2, top=0.9, wspace=0.3)
    maps = _head_maps(fig, grid, H)
    shown = {"heads": H}
    ax_c = fig.add_subplot(grid[0, H])
    colors = ["tab:blue", "tab:green", "tab:purple", "tab:brown"]
    curves = [ax_c.plot([], [], "-", color=colors[h % 4], label=tr("head {h} score", h=h + 1))[0]
              for h in range(H)]
    (acc_line,) = ax_c.plot([], [], "--", color="black", label=tr("accuracy"))
    marker = ax_c.axvline(0, color="tab:red", lw=1.5)
    ax_c.set_ylim(0, 1.02)
    ax_c.set_xlim(0, last)
    ax_c.set_xlabel(tr("training step"), fontproperties=text_font(10))
    ax_c.legend(prop=text_font(7), loc="lower right")
    c_title = AxesTitle(ax_c, size=9, font=text_font(9))

    def update(task: str, step: int):
        run = runs[task]
        f = training_frame(run, step)
        shown["heads"] = _set_heads(maps, f)
        for h, curve in enumerate(curves):
            curve.set_data(*((run.steps, run.scores[:, h].numpy()) if h < shown["heads"] else ([], [])))
        acc_line.set_data(run.steps, run.accuracies.numpy())
        marker.set_xdata([f.step, f.step])
        pattern = tr(f.pattern)
        c_title.set_text(tr("{task}: {pattern} score, accuracy", task=tr(task), pattern=pattern))
        html = (sentences([tr("<b>{task}</b>: {description}. Step {step}: held-out accuracy {accuracy:.3f}.",
                              task=tr(task), description=TASKS[f.task].description, step=f.step,
                              accuracy=f.accuracy),
                           tr("Dots mark the <i>{pattern}</i> cells of this example.", pattern=pattern)])
                + f"<table><tr><th></th><th>{tr('{pattern} score now', pattern=pattern)}</th>"
                f"<th>{tr('untrained')}</th></tr>{_score_rows(f.pattern, f.scores, f.untrained)}</table>")
        return f, html

    def live():  # the maps, the curves and the titles: all cheap to draw
        return ([a for m in maps[:shown["heads"]] for a in m.artists()] + curves
                + [acc_line, marker, c_title])

    controls = {
        "task": widgets.Dropdown(options=options(names), value=task, description=tr("task")),
        "step": widgets.IntSlider(value=step, min=0, max=last, step=spacing,
                                  description=tr("training step"), continuous_update=True),
    }
    explorer = Explorer(controls, fig, update, live, title=tr("Heads forming during training"), maps=maps)
    return explorer


@dataclass(frozen=True)
class ExampleFrame:
    """A trained model on one held-out example: tokens, targets and predictions (L,),
    maps (H, L, L), the pattern's cells (L, L), and each head's score on this example (H,)."""

    task: str
    pattern: str
    index: int
    tokens: tuple[str, ...]
    targets: tuple[int, ...]
    predictions: tuple[int, ...]
    maps: np.ndarray
    mask: np.ndarray
    scores: np.ndarray


@torch.no_grad()
def _frames(model: TinyTransformer, task: str, batch, indices: Sequence[int]) -> list[ExampleFrame]:
    """Frames of ``batch``'s examples ``indices``, from one forward pass."""
    tokens = batch.tokens[list(indices)]  # (n, L)
    with torch_threads(1):
        logits, w = model(tokens)  # (n, L, C), (n, H, L, L)
    pattern = TASKS[task].pattern
    out = []
    for k, index in enumerate(indices):
        mask = pattern_mask(pattern, tokens.shape[1], segments=batch.segments[index])
        out.append(ExampleFrame(
            task=task, pattern=pattern, index=index,
            tokens=tuple(token_labels(task, tokens[k])),
            targets=tuple(batch.targets[index].tolist()),
            predictions=tuple(logits[k].argmax(-1).tolist()),
            maps=w[k].numpy().astype(float), mask=mask.numpy(),
            scores=pattern_score(w[k], mask).numpy().astype(float),
        ))
    return out


def example_frame(model: TinyTransformer, task: str, index: int) -> ExampleFrame:
    """Run ``model`` on held-out example ``index`` (0 .. N_EXAMPLES - 1) of ``task``."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model: expected a TinyTransformer, got {type(model).__name__}")
    if task not in TASKS:
        raise ValueError(f"task: expected one of {list(TASKS)}, got {task!r}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < N_EXAMPLES:
        raise ValueError(f"index: expected an int in 0..{N_EXAMPLES - 1}, got {index!r}")
    batch = held_out_batch(task, N_EXAMPLES, seq_len=model.seq_len)
    return _frames(model, task, batch, [index])[0]


def _sequence_row(name: str, values: Sequence[object]) -> str:
    return f"<tr><th>{name}</th>" + "".join(f"<td>{v}</td>" for v in values) + "</tr>"


def example_frames(model: TinyTransformer, task: str) -> list[ExampleFrame]:
    """``example_frame`` for every index 0 .. N_EXAMPLES - 1, from one forward pass."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model: expected a TinyTransformer, got {type(model).__name__}")
    if task not in TASKS:
        raise ValueError(f"task: expected one of {list(TASKS)}, got {task!r}")
    batch = held_out_batch(task, N_EXAMPLES, seq_len=model.seq_len)
    return _frames(model, task, batch, range(N_EXAMPLES))


def example_explorer(models: Mapping[str, TinyTransformer], *, task: str | None = None,
                     index: int = 0) -> Explorer:
    """A task drop-down and an example slider: a trained model's per-head maps on one
    held-out example (dots = the pattern's cells), its predictions and each head's score.

    Args:
        models: task name -> trained ``TinyTransformer`` (keys must be tasks of ``TASKS``).
        task: the task shown first (default: the first of ``models``).
        index: the example shown first.
    """
    if not isinstance(models, Mapping) or not models:
        raise TypeError(f"models: expected a non-empty dict task -> TinyTransformer, got "
                        f"{type(models).__name__}")
    for name, m in models.items():
        if name not in TASKS:
            raise ValueError(f"models: expected task names {list(TASKS)}, got {name!r}")
        if not isinstance(m, TinyTransformer):
            raise TypeError(f"models[{name!r}]: expected a TinyTransformer, got {type(m).__name__}")
    names = list(models)
    task = names[0] if task is None else task
    if task not in models:
        raise ValueError(f"task: expected one of {names}, got {task!r}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < N_EXAMPLES:
        raise ValueError(f"index: expected an int in 0..{N_EXAMPLES - 1}, got {index!r}")
    frames: dict[str, list[ExampleFrame]] = {}  # one forward pass per task, on first use
    H = max(m.attn.num_heads for m in models.values())
    fig = new_figure(2.8 * H + 0.4, 3.2, dpi=72)
    grid = fig.add_gridspec(1, H, left=0.09, right=0.98, bottom=0.2, top=0.9, wspace=0.15)
    maps = _head_maps(fig, grid, H)
    shown = {"heads": H}

    def update(task: str, index: int):
        if task not in frames:
            frames[task] = example_frames(models[task], task)
        f = frames[task][index]
        shown["heads"] = _set_heads(maps, f)
        right = sum(p == t for p, t in zip(f.predictions, f.targets) if t != IGNORE)
        n = sum(t != IGNORE for t in f.targets)
        html = ("<table style='font-family:monospace'>"
                + _sequence_row(tr("input"), f.tokens)
                + _sequence_row(tr("target"), ["·" if t == IGNORE else t for t in f.targets])
                + _sequence_row(tr("model"), ["·" if t == IGNORE else p
                                              for p, t in zip(f.predictions, f.targets)])
                + "</table>"
                + sentences([tr("{right} of {n} right.", right=right, n=n),
                             tr("Dots mark the <i>{pattern}</i> cells of this example.",
                                pattern=tr(f.pattern))]))
        return f, html

    def live():
        return [a for m in maps[:shown["heads"]] for a in m.artists()]

    controls = {
        "task": widgets.Dropdown(options=options(names), value=task, description=tr("task")),
        "index": widgets.IntSlider(value=index, min=0, max=N_EXAMPLES - 1, description=tr("example"),
                                   continuous_update=True),
    }
    explorer = Explorer(controls, fig, update, live, title=tr("Trained heads on held-out examples"),
                        maps=maps)
    return explorer
