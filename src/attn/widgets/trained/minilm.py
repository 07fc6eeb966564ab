"""The explorer of a real pretrained model's heads (``attn.lessons.trained.minilm``: needs its model
package installed; nothing else in ``attn.widgets`` does), and a static picture of its
layer x head pattern scores.

``head_view`` is the pure function behind ``pretrained_explorer`` (a test calls it).

Shape legend: N layers, H heads per layer, L tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import ipywidgets as widgets
import numpy as np

from ...examples import PHRASED_SENTENCES
from ...language import mark, tr
from ...lessons.pattern_scores import head_scores
from ...drawing.plotting import new_figure, settled_for_colour, text_font, token_font
from .._base import Explorer, options, sentences
from .._mapview import MapView

__all__ = ["MAX_TOKENS", "split_sentence", "HeadView", "head_view", "pretrained_explorer",
           "score_grids", "GRID_CMAP", "OPENING_SENTENCE"]

#: The sentence the explorer opens on (a key of ``attn.examples.PHRASED_SENTENCES``): an
#: English one, because the model's vocabulary is English (the chapter's sentence is mostly [UNK]).
OPENING_SENTENCE = "fox"

#: The colour map of score grids: light to dark purple, with an orange frame on the chosen or
#: best head (purple against orange stays distinct without colour vision, unlike green and red).
GRID_CMAP = "Purples"

MAX_TOKENS = 24  # longer sentences are cut (the map would be unreadable at this size)

#: The patterns' names (``attn.lessons.trained.minilm.SENTENCE_PATTERNS``), marked here for the catalogue.
_PATTERN_NAMES = (mark("previous"), mark("next"), mark("[CLS]"), mark("[SEP]"), mark("block"))


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
    """The numbers behind the pretrained explorer (see ``attn.lessons.trained.minilm``)."""
    from ...lessons.trained import minilm as pretrained

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
    (an orange frame marks the chosen head). Phrases may be marked with "|" for the block
    pattern. Opens on the sentence ``OPENING_SENTENCE`` unless ``text`` is given.

    Returns:
        An ``Explorer``; ``.maps`` is "head" -> the head's ``MapView``, "grid" -> the score grid's.
    """
    from ...lessons.trained import minilm as pretrained

    presets = {name: " | ".join(words) if any(" " in w for w in words) else " ".join(words)
               for name, words in PHRASED_SENTENCES.items()}
    text = presets[OPENING_SENTENCE] if text is None else text
    first = head_view(text, layer, head, pattern)
    N, H = first.grid.shape
    fig = new_figure(10, 4.0, dpi=72)
    view = MapView(fig.add_axes((0.09, 0.2, 0.34, 0.7)), font=token_font(8), rotate=True,
                   title_font=text_font(9))
    grid = MapView(fig.add_axes((0.53, 0.2, 0.38, 0.7)), cmap=GRID_CMAP, box_color="tab:orange",
                   title_size=10, title_font=text_font(10))
    grid.colorbar(fig.add_axes((0.93, 0.2, 0.015, 0.7)))
    layers, heads = [str(n + 1) for n in range(N)], [str(h + 1) for h in range(H)]

    def update(text: str, layer: int, head: int, pattern: str, example: str | None = None):
        v = head_view(text, layer, head, pattern)  # example: already copied into text
        view.set(v.map, x_tokens=v.tokens, marks=v.mask,
                 title=tr("L{layer} H{head}: {score:.2f}", layer=layer, head=head, score=v.scores[pattern]))
        grid.set(v.grid, x_tokens=heads, y_tokens=layers, boxes=[(layer - 1, layer, head - 1, head)],
                 title=tr("{pattern}: score of every head (layer ↓, head →)", pattern=tr(pattern)))
        best = np.unravel_index(int(v.grid.argmax()), v.grid.shape)
        rows = "".join(f"<td>{tr('{pattern}: {score:.2f}', pattern=tr(k), score=s)}</td>"
                       for k, s in v.scores.items())
        unk = sum(t == "[UNK]" for t in v.tokens)
        lines = [tr("<b>Layer {layer}, head {head}</b> on {n} tokens.", layer=layer, head=head,
                    n=len(v.tokens) + v.cut)]
        if v.cut:
            lines.append(tr("The last {cut} tokens are not drawn.", cut=v.cut))
        if unk:
            lines.append(tr("{unk} token(s) are [UNK]: not in the model's vocabulary.", unk=unk))
        lines.append(tr("Its score for each pattern:"))
        html = (sentences(lines) + f"<table><tr>{rows}</tr></table>"
                + tr("Highest {pattern} score on this sentence: layer {layer}, head {head} ({score:.2f}).",
                     pattern=tr(pattern), layer=best[0] + 1, head=best[1] + 1, score=v.grid.max()))
        return v, html

    def live():
        return [*view.artists(), *grid.artists()]

    # The sources' sentences in a drop-down that writes into the text box, where a learner can
    # also type one (a Combobox's suggestion list cost ~40 ms a move in the browser).
    examples = widgets.Dropdown(options=list(presets.values()),
                                value=text if text in presets.values() else None,
                                description=tr("example"), layout=widgets.Layout(width="520px"))
    sentence = widgets.Text(value=text, description=tr("sentence"), continuous_update=False,
                            layout=widgets.Layout(width="520px"))
    examples.observe(lambda change: change["new"] and setattr(sentence, "value", change["new"]),
                     names="value")  # observed before the explorer observes it: runs first
    controls = {
        "example": examples,
        "text": sentence,
        "layer": widgets.IntSlider(value=layer, min=1, max=N, description=tr("layer")),
        "head": widgets.IntSlider(value=head, min=1, max=H, description=tr("head")),
        "pattern": widgets.Dropdown(options=options(pretrained.SENTENCE_PATTERNS), value=pattern,
                                    description=tr("pattern")),
    }
    explorer = Explorer(controls, fig, update, live,
                        title=tr("A pretrained model's heads (all-MiniLM-L6-v2)"),
                        maps={"head": view, "grid": grid})
    return explorer


def score_grids(scores: Mapping[str, object], *, width: float = 10, height: float = 2.6):
    """One picture of layer x head score grids, a panel per pattern (name -> (N, H)).

    Returns the figure (Agg, outside pyplot); darker = a larger share of the head's attention
    on the pattern's cells, the orange square = the best head of each pattern. A static
    picture (no explorer redraws it), so it uses ``imshow``."""
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
        image = ax.imshow(settled_for_colour(g, 0, 1), cmap=GRID_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        best = np.unravel_index(int(g.argmax()), g.shape)
        ax.plot([best[1]], [best[0]], "s", ms=9, mfc="none", mec="tab:orange", mew=1.5)
        ax.set_title(tr(name), fontproperties=text_font(10))
        ax.set_xticks(range(0, g.shape[1], 2), [str(h + 1) for h in range(0, g.shape[1], 2)], fontsize=7)
        ax.set_yticks(range(g.shape[0]), [str(n + 1) for n in range(g.shape[0])], fontsize=7)
        ax.set_xlabel(tr("head"), fontproperties=text_font(8))
    axes[0].set_ylabel(tr("layer"), fontproperties=text_font(8))
    fig.colorbar(image, cax=cax)
    return fig
