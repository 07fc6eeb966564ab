"""Explorers of trained heads: maps forming during training, maps on chosen examples, and a
real pretrained model's heads (``pretrained_explorer``, which needs ``attn.trained.minilm``'s
model package installed; nothing else here does).

``training_frame`` and ``example_frame`` are the pure functions (a test calls them);
``training_explorer`` and ``example_explorer`` draw what they return. Dots mark the cells
of the task's pattern, so a reader can see how much of each head's weight falls on them.

Shape legend: N snapshots, H heads, L sequence length.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.font_manager import FontProperties

from ..examples import PHRASED_SENTENCES
from ..pattern_scores import head_scores
from ..plotting import new_figure, token_font
from ._bitmaps import AxesTitle, CellMap, TickLabels
from ..pattern_scores import pattern_mask, pattern_score
from ..threads import torch_threads
from ..trained.tasks import IGNORE, TASKS, held_out_batch, token_labels
from ..trained.tiny import TinyTransformer, TrainRun
from ._base import Explorer

__all__ = [
    "TrainingFrame",
    "training_frame",
    "training_explorer",
    "ExampleFrame",
    "example_frame",
    "example_frames",
    "LiveMap",
    "example_explorer",
    "N_EXAMPLES",
    "MAX_TOKENS",
    "split_sentence",
    "HeadView",
    "head_view",
    "pretrained_explorer",
    "score_grids",
]

N_EXAMPLES = 32  # held-out examples the example explorer can show


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
        f"<tr><td>head {h + 1}</td><td>{s:.2f}</td><td>{u:.2f}</td></tr>"
        for h, (s, u) in enumerate(zip(scores, untrained))
    )


class LiveMap:
    """One attention map whose every changing part is a live artist drawn from cached bitmaps
    (``attn.widgets._bitmaps``): the cells (``cells``), the title (``title``), the token labels
    (``labels``) and dots on a pattern's cells (``dots``). A map of fewer tokens fills the
    same axes, so no move (not even a new sentence or a shorter example) redraws the figure.

    Args:
        ax: where to draw; L: the most tokens it will show; rotate: turn the key labels upright.
        y_labels: write the query labels too (False: leave them to a neighbouring map).
        fontproperties: the labels' font (default: matplotlib's, at ``font_size``).
    """

    def __init__(self, ax: Axes, L: int, *, font_size: float = 8, rotate: bool = False,
                 y_labels: bool = True, fontproperties: FontProperties | None = None) -> None:
        self.L, self.n, self.ax = L, L, ax
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlim(-0.5, L - 0.5)
        ax.set_ylim(L - 0.5, -0.5)
        self.cells = CellMap(ax, "Blues", (0.0, 1.0))
        self.cells.set_values(np.zeros((L, L)))
        self.labels = TickLabels(ax, size=font_size, font=fontproperties, rotate=rotate,
                                 y_labels=y_labels)
        self.dots = ax.scatter([], [], s=9, c="tab:orange", marker="o", linewidths=0, zorder=3)
        self.title = AxesTitle(ax, size=9)

    def set(self, weights: np.ndarray, tokens: Sequence[str], mask: np.ndarray | None,
            title: str) -> bool:
        """New weights (n, n), n <= L, with labels (n,) and pattern cells (n, n) or None.

        Returns True when n changed (the map's cells and the dots' data limits were resized;
        everything drawn is live, so the caller still need not redraw the whole figure)."""
        n = weights.shape[0]
        if n > self.L:
            raise ValueError(f"weights: expected at most {self.L} x {self.L}, got {weights.shape}")
        resized = n != self.n
        if resized:
            self.n = n
            size = max(n, 1)
            self.ax.set_xlim(-0.5, size - 0.5)  # the dots sit on cell centres in data units
            self.ax.set_ylim(size - 0.5, -0.5)
        self.cells.set_values(weights if n else np.full((1, 1), np.nan))
        self.labels.set_tokens(list(tokens[:n]))
        rows, cols = np.nonzero(mask) if mask is not None else ((), ())
        self.dots.set_offsets(np.column_stack([cols, rows]) if len(rows) else np.empty((0, 2)))
        self.title.set_text(title)
        return resized

    def artists(self) -> list:
        """The artists a move changes, in drawing order."""
        return [self.cells, self.labels, self.dots, self.title]


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
    L = max(r.maps.shape[-1] for r in runs.values())
    last = max(r.steps[-1] for r in runs.values())
    spacing = min(int(np.diff(r.steps).min()) if len(r.steps) > 1 else 1 for r in runs.values())

    fig = new_figure(2.8 * H + 3.6, 3.2, dpi=72)
    grid = fig.add_gridspec(1, H + 1, width_ratios=[1] * H + [1.3], left=0.05, right=0.98,
                            bottom=0.2, top=0.9, wspace=0.3)
    maps = [LiveMap(fig.add_subplot(grid[0, h]), L, y_labels=h == 0) for h in range(H)]
    ax_c = fig.add_subplot(grid[0, H])
    colors = ["tab:blue", "tab:green", "tab:purple", "tab:brown"]
    curves = [ax_c.plot([], [], "-", color=colors[h % 4], label=f"head {h + 1} score")[0]
              for h in range(H)]
    (acc_line,) = ax_c.plot([], [], "--", color="black", label="accuracy")
    marker = ax_c.axvline(0, color="tab:red", lw=1.5)
    ax_c.set_ylim(0, 1.02)
    ax_c.set_xlim(0, last)
    ax_c.set_xlabel("training step")
    ax_c.legend(fontsize=7, loc="lower right")
    c_title = AxesTitle(ax_c, size=9)

    def update(task: str, step: int):
        run = runs[task]
        f = training_frame(run, step)
        for h, m in enumerate(maps):
            if h < f.maps.shape[0]:
                m.set(f.maps[h], f.tokens, f.mask, f"head {h + 1}: {f.pattern} {f.scores[h]:.2f}")
                curves[h].set_data(run.steps, run.scores[:, h].numpy())
            else:
                m.set(np.full((0, 0), np.nan), (), None, "")
                curves[h].set_data([], [])
        acc_line.set_data(run.steps, run.accuracies.numpy())
        marker.set_xdata([f.step, f.step])
        c_title.set_text(f"{task}: {f.pattern} score, accuracy")
        html = (f"<b>{task}</b>: {TASKS[f.task].description}. Step {f.step}: held-out accuracy "
                f"{f.accuracy:.3f}. Dots mark the <i>{f.pattern}</i> cells of this example."
                f"<table><tr><th></th><th>{f.pattern} score now</th><th>untrained</th></tr>"
                f"{_score_rows(f.pattern, f.scores, f.untrained)}</table>")
        return f, html

    def live():  # the maps, their labels, the curves and the titles: all cheap to draw
        return ([a for m in maps for a in m.artists()] + curves + [acc_line, marker, c_title])

    controls = {
        "task": widgets.Dropdown(options=names, value=task, description="task"),
        "step": widgets.IntSlider(value=step, min=0, max=last, step=spacing,
                                  description="step", continuous_update=True),
    }
    return Explorer(controls, fig, update, live, title="Heads forming during training")


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
    L = max(m.seq_len for m in models.values())
    fig = new_figure(2.8 * H + 0.4, 3.2, dpi=72)
    grid = fig.add_gridspec(1, H, left=0.09, right=0.98, bottom=0.2, top=0.9, wspace=0.15)
    maps = [LiveMap(fig.add_subplot(grid[0, h]), L, y_labels=h == 0) for h in range(H)]

    def update(task: str, index: int):
        if task not in frames:
            frames[task] = example_frames(models[task], task)
        f = frames[task][index]
        for h, m in enumerate(maps):
            if h < f.maps.shape[0]:
                m.set(f.maps[h], f.tokens, f.mask, f"head {h + 1}: {f.pattern} {f.scores[h]:.2f}")
            else:
                m.set(np.full((0, 0), np.nan), (), None, "")
        right = sum(p == t for p, t in zip(f.predictions, f.targets) if t != IGNORE)
        n = sum(t != IGNORE for t in f.targets)
        html = ("<table style='font-family:monospace'>"
                + _sequence_row("input", f.tokens)
                + _sequence_row("target", ["·" if t == IGNORE else t for t in f.targets])
                + _sequence_row("model", ["·" if t == IGNORE else p
                                          for p, t in zip(f.predictions, f.targets)])
                + f"</table>{right} of {n} right. Dots mark the <i>{f.pattern}</i> cells of "
                  f"this example.")
        return f, html

    def live():
        return [a for m in maps for a in m.artists()]

    controls = {
        "task": widgets.Dropdown(options=names, value=task, description="task"),
        "index": widgets.IntSlider(value=index, min=0, max=N_EXAMPLES - 1, description="example",
                                   continuous_update=True),
    }
    return Explorer(controls, fig, update, live, title="Trained heads on held-out examples")


# --- a real pretrained model (attn.trained.minilm) -------------------------------------------------

MAX_TOKENS = 24  # longer sentences are cut (the map would be unreadable at this size)


def split_sentence(text: str) -> tuple[str, ...]:
    """A typed sentence -> its words or phrases: split at "|" if there is one, else at spaces."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    parts = text.split("|") if "|" in text else text.split()
    return tuple(p.strip() for p in parts if p.strip())


@dataclass(frozen=True)
class HeadView:
    """One head of the pretrained model on one sentence: its map (L, L), the chosen pattern's
    cells (L, L), the grid of that pattern's scores (N, H), and this head's score for every
    pattern. ``layer`` and ``head`` count from 1; ``cut`` = tokens dropped past MAX_TOKENS."""

    tokens: tuple[str, ...]
    layer: int
    head: int
    pattern: str
    map: np.ndarray
    mask: np.ndarray
    grid: np.ndarray
    scores: dict[str, float]
    cut: int


def head_view(text: str, layer: int, head: int, pattern: str) -> HeadView:
    """The numbers behind the pretrained explorer (see ``attn.trained.minilm``)."""
    from ..trained import minilm as pretrained

    if pattern not in pretrained.SENTENCE_PATTERNS:
        raise ValueError(f"pattern: expected one of {list(pretrained.SENTENCE_PATTERNS)}, got {pattern!r}")
    words = split_sentence(text) or ("[empty]",)
    maps = pretrained.attention_maps(words)
    N, H = maps.weights.shape[:2]
    for name, v, top in (("layer", layer, N), ("head", head, H)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise ValueError(f"{name}: expected an int in 1..{top}, got {v!r}")
    masks = pretrained.sentence_pattern_masks(maps.sentence)
    scores = head_scores(maps.weights, masks)
    L = len(maps.sentence.tokens)
    n = min(L, MAX_TOKENS)
    return HeadView(
        tokens=maps.sentence.tokens[:n], layer=layer, head=head, pattern=pattern,
        map=maps.weights[layer - 1, head - 1, :n, :n].numpy().astype(float),
        mask=masks[pattern][:n, :n].numpy(), grid=scores[pattern].numpy().astype(float),
        scores={k: float(v[layer - 1, head - 1]) for k, v in scores.items()}, cut=L - n,
    )


def pretrained_explorer(text: str | None = None, *, layer: int = 1, head: int = 1,
                        pattern: str = "previous") -> Explorer:
    """Type or pick a sentence, choose a layer and a head: the head's map on the sentence
    (dots = the chosen pattern's cells) beside the layer x head grid of that pattern's scores
    (the square marks the chosen head). Phrases may be marked with "|" for the block pattern.

    Returns:
        An ``Explorer``; ``.view`` is the head's map (a ``LiveMap``).
    """
    from ..trained import minilm as pretrained

    presets = [" | ".join(words) if any(" " in w for w in words) else " ".join(words)
               for words in PHRASED_SENTENCES.values()]
    text = presets[0] if text is None else text
    first = head_view(text, layer, head, pattern)
    N, H = first.grid.shape
    fig = new_figure(10, 4.0, dpi=72)
    grid = fig.add_gridspec(1, 2, width_ratios=[1, 1.45], left=0.09, right=0.97, bottom=0.2,
                            top=0.9, wspace=0.25)
    view = LiveMap(fig.add_subplot(grid[0, 0]), MAX_TOKENS, rotate=True,
                   fontproperties=token_font(8))
    ax_g = fig.add_subplot(grid[0, 1])
    cells = CellMap(ax_g, "Greens", (0.0, 1.0))
    fig.colorbar(ScalarMappable(Normalize(0, 1), "Greens"), ax=ax_g, fraction=0.04, pad=0.02)
    ax_g.set_xlim(-0.5, H - 0.5)  # data units = cell centres, for the marker and the ticks
    ax_g.set_ylim(N - 0.5, -0.5)
    ax_g.set_xticks(range(H), [str(h + 1) for h in range(H)], fontsize=8)
    ax_g.set_yticks(range(N), [str(n + 1) for n in range(N)], fontsize=8)
    ax_g.set_xlabel("head")
    ax_g.set_ylabel("layer")
    (marker,) = ax_g.plot([], [], "s", ms=14, mfc="none", mec="tab:red", mew=2)
    g_title = AxesTitle(ax_g, size=10)

    def update(text: str, layer: int, head: int, pattern: str):
        v = head_view(text, layer, head, pattern)
        view.set(v.map, v.tokens, v.mask, f"L{layer} H{head}: {v.scores[pattern]:.2f}")
        cells.set_values(v.grid)
        marker.set_data([head - 1], [layer - 1])
        g_title.set_text(f"{pattern}: score of every head")
        best = np.unravel_index(int(v.grid.argmax()), v.grid.shape)
        rows = "".join(f"<td>{k}: {s:.2f}</td>" for k, s in v.scores.items())
        note = f" The last {v.cut} tokens are not drawn." if v.cut else ""
        unk = sum(t == "[UNK]" for t in v.tokens)
        note += f" {unk} token(s) are [UNK]: not in the model's vocabulary." if unk else ""
        html = (f"<b>Layer {layer}, head {head}</b> on {len(v.tokens) + v.cut} tokens.{note} "
                f"Its score for each pattern:<table><tr>{rows}</tr></table>"
                f"Highest {pattern} score on this sentence: layer {best[0] + 1}, head {best[1] + 1} "
                f"({v.grid.max():.2f}).")
        return v, html

    def live():  # drawn in this order
        return [*view.artists(), cells, marker, g_title]

    controls = {
        "text": widgets.Combobox(value=text, options=presets, description="sentence",
                                 continuous_update=False, ensure_option=False,
                                 layout=widgets.Layout(width="520px")),
        "layer": widgets.IntSlider(value=layer, min=1, max=N, description="layer"),
        "head": widgets.IntSlider(value=head, min=1, max=H, description="head"),
        "pattern": widgets.Dropdown(options=list(pretrained.SENTENCE_PATTERNS), value=pattern,
                                    description="pattern"),
    }
    explorer = Explorer(controls, fig, update, live,
                        title="A pretrained model's heads (all-MiniLM-L6-v2)")
    explorer.view = view  # the head's map (a LiveMap): its cells, labels, dots and title
    return explorer


def score_grids(scores: Mapping[str, object], *, width: float = 10, height: float = 2.6):
    """One picture of layer x head score grids, a panel per pattern (name -> (N, H)).

    Returns the figure (Agg, outside pyplot); darker = a larger share of the head's attention
    on the pattern's cells."""
    if not isinstance(scores, Mapping) or not scores:
        raise TypeError(f"scores: expected a non-empty dict name -> (N, H), got {type(scores).__name__}")
    fig = new_figure(width, height, dpi=72)
    # Fixed margins in inches (no layout engine: constrained layout reruns on every draw).
    n = len(scores)
    left, right, bottom, top, gap = 0.375, 0.35, 0.415, 0.236, 0.236  # right: colorbar labels
    bar_gap, bar_w = 0.09, 0.097
    axes_right = width - right - bar_w - bar_gap
    ax_w = max((axes_right - left - (n - 1) * gap) / n, 1e-3)
    axes = np.atleast_1d(fig.subplots(1, n, gridspec_kw=dict(
        left=left / width, right=axes_right / width, bottom=bottom / height,
        top=1 - top / height, wspace=gap / ax_w)))
    cax = fig.add_axes(((axes_right + bar_gap) / width, bottom / height, bar_w / width,
                        1 - (bottom + top) / height))
    for ax, (name, grid) in zip(axes, scores.items()):
        g = np.asarray(grid.detach() if hasattr(grid, "detach") else grid, dtype=float)
        if g.ndim != 2:
            raise ValueError(f"scores[{name!r}]: expected 2 dims (N, H), got shape {g.shape}")
        image = ax.imshow(g, cmap="Greens", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        best = np.unravel_index(int(g.argmax()), g.shape)
        ax.plot([best[1]], [best[0]], "s", ms=9, mfc="none", mec="tab:red", mew=1.5)
        ax.set_title(f"{name}", fontsize=10)
        ax.set_xticks(range(0, g.shape[1], 2), [str(h + 1) for h in range(0, g.shape[1], 2)], fontsize=7)
        ax.set_yticks(range(g.shape[0]), [str(n + 1) for n in range(g.shape[0])], fontsize=7)
        ax.set_xlabel("head", fontsize=8)
    axes[0].set_ylabel("layer", fontsize=8)
    fig.colorbar(image, cax=cax)
    return fig
