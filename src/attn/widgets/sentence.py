"""Pick a word of 小明 在 北京 大学 学习 人工智能 and see whom it attends to.

The numbers come from the hand-built toy of ``attn.handbuilt.sentence`` (not a trained model). For 学习
the chapter's illustrative row is drawn beside the toy's row, so the two can be compared.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.patches import Rectangle

from ..examples import CHAPTER_XUEXI_ROW, SENTENCE, SENTENCE_GLOSS
from ..plotting import heatmap, new_figure, token_font
from .._checks import check_number
from ..handbuilt.sentence import TOY_FEATURES, toy_attention
from ._base import Explorer

__all__ = ["SentenceRow", "sentence_row", "sentence_explorer"]

_CHAPTER_WORD = "学习"
_SCALE_MIN, _SCALE_MAX, _SCALE_STEP = 0.0, 3.0, 0.25  # the score-scale slider


@dataclass(frozen=True)
class SentenceRow:
    """One word's row of the toy's attention weights, and what it makes of them."""

    word: str
    index: int
    gloss: str
    score_scale: float
    weights: tuple[float, ...]  # the toy's row: how much ``word`` attends to each word
    matrix: tuple[tuple[float, ...], ...]  # every row (6 x 6), at this score_scale
    chapter: tuple[float, ...] | None  # the chapter's illustrative row (学习 only)
    top_word: str  # the word with the largest weight
    top_weight: float
    row_sum: float
    output: tuple[float, ...]  # the word's new vector: a mix of TOY_FEATURES


def sentence_row(word: str = _CHAPTER_WORD, *, score_scale: float = 1.0) -> SentenceRow:
    """The toy self-attention's row for ``word``.

    Args:
        word: one of ``attn.examples.SENTENCE`` (the Chinese token) or its English gloss.
        score_scale: multiplies every score before the softmax (>= 0; 1 = the toy as built,
            0 = every weight 1/6).

    Returns:
        ``SentenceRow`` with the row, the whole 6 x 6 matrix, the chapter's row when
        ``word`` is 学习, the largest weight and the output vector of ``word``.
    """
    if not isinstance(word, str):
        raise TypeError(f"word: expected a str (one of {list(SENTENCE)}), got {type(word).__name__}")
    if word in SENTENCE:
        i = SENTENCE.index(word)
    elif word in SENTENCE_GLOSS:
        i = SENTENCE_GLOSS.index(word)
    else:
        raise ValueError(f"word: expected one of {list(SENTENCE)} or {list(SENTENCE_GLOSS)}, got {word!r}")
    return _row(i, check_number("score_scale", score_scale, non_negative=True))


@lru_cache(maxsize=64)
def _toy(score_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return toy_attention(score_scale=score_scale)  # (6, 6) features, (6, 6) weights


@lru_cache(maxsize=256)
def _row(i: int, score_scale: float) -> SentenceRow:
    """The row of word i (immutable, so cached: moving back to a setting costs nothing)."""
    out, w = _toy(score_scale)
    row = w[i]
    j = int(row.argmax())
    return SentenceRow(
        word=SENTENCE[i], index=i, gloss=SENTENCE_GLOSS[i], score_scale=score_scale,
        weights=tuple(row.tolist()), matrix=tuple(tuple(r) for r in w.tolist()),
        chapter=CHAPTER_XUEXI_ROW if SENTENCE[i] == _CHAPTER_WORD else None,
        top_word=SENTENCE[j], top_weight=row[j].item(), row_sum=row.sum().item(),
        output=tuple(out[i].tolist()),
    )


def _readout(r: SentenceRow) -> str:
    head = "<tr><th>word</th><th>toy weight</th>" + (
        "<th>chapter (illustrative)</th>" if r.chapter else "") + "</tr>"
    rows = []
    for j, (tok, gloss) in enumerate(zip(SENTENCE, SENTENCE_GLOSS)):
        cell = f"<b>{r.weights[j]:.3f}</b>" if tok == r.top_word else f"{r.weights[j]:.3f}"
        extra = f"<td>{r.chapter[j]:.2f}</td>" if r.chapter else ""
        rows.append(f"<tr><td>{tok} ({gloss})</td><td>{cell}</td>{extra}</tr>")
    who = "itself" if r.top_word == r.word else f"{r.top_word} ({SENTENCE_GLOSS[SENTENCE.index(r.top_word)]})"
    if r.score_scale == 0:
        note = ("Score scale 0: every score is 0, and the softmax of equal scores is uniform, "
                f"so every weight is 1/6 = {r.weights[0]:.3f}.")
    else:
        note = f"Most weight: {who}, {r.top_weight:.3f}."
    mix = " + ".join(f"{v:.2f}·{f}" for v, f in sorted(zip(r.output, TOY_FEATURES), reverse=True)
                     if v >= 0.005)
    return (
        f"<p><b>Row of {r.word} ({r.gloss})</b>, score scale {r.score_scale:g}</p>"
        f"<table>{head}{''.join(rows)}</table>"
        f"<p>The row sums to {r.row_sum:.3f}. {note}<br>"
        f"New vector of {r.word}: {mix}</p>"
    )


def sentence_explorer(word: str = _CHAPTER_WORD, *, score_scale: float = 1.0) -> Explorer:
    """A drop-down of the six words and a score-scale slider.

    Left: the picked word's row of weights as bars (and, for 学习, the chapter's row as black
    ticks). Right: the whole 6 x 6 toy attention map with the picked row outlined.
    """
    first = sentence_row(word, score_scale=score_scale)
    n = len(SENTENCE)
    fig = new_figure(10, 3.3, dpi=72)
    ax_bar = fig.add_axes((0.06, 0.2, 0.52, 0.7))
    ax_map = fig.add_axes((0.66, 0.08, 0.31, 0.82))
    font = token_font(10)

    pos = np.arange(n)
    bars = ax_bar.bar(pos, np.zeros(n), width=0.6, color="tab:blue", label="toy self-attention")
    (chapter,) = ax_bar.plot(pos, CHAPTER_XUEXI_ROW, "_", color="black", ms=34, mew=2.5,
                             label="the chapter's row of 学习 (illustrative; shown for 学习)")
    ax_bar.set_xticks(pos, [f"{t}\n{g}" for t, g in zip(SENTENCE, SENTENCE_GLOSS)])
    for label in ax_bar.get_xticklabels():
        label.set_fontproperties(font)
    ax_bar.set_ylim(0, 1.3)  # room for the legend above the bars
    ax_bar.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax_bar.set_ylabel("attention weight")
    ax_bar.legend(loc="upper center", ncol=2, prop=token_font(9), frameon=False)
    # A fixed title: redrawing Chinese text on every move would cost more than the rest.
    ax_bar.set_title("the picked word's row: its weight on each word (orange bar = itself)",
                     fontsize=11)

    hm = heatmap(np.array(first.matrix), SENTENCE, ax=ax_map, font_size=9, colorbar=True)
    ax_map.set_title("all rows (query ↓, key →)", fontsize=10)
    outline = Rectangle((-0.5, -0.5), n, 1, fill=False, edgecolor="tab:orange", lw=3)
    ax_map.add_patch(outline)

    def update(word: str, score_scale: float) -> tuple[SentenceRow, str]:
        r = sentence_row(word, score_scale=score_scale)
        for bar, v in zip(bars, r.weights):
            bar.set_height(v)
        for j, bar in enumerate(bars):
            bar.set_color("tab:orange" if j == r.index else "tab:blue")
        chapter.set_visible(r.chapter is not None)
        hm.update(np.array(r.matrix))
        outline.set_y(r.index - 0.5)
        return r, _readout(r)

    def live() -> list:
        return [*bars, chapter, hm.image, outline]

    dropdown = widgets.Dropdown(options=[(f"{t} ({g})", t) for t, g in zip(SENTENCE, SENTENCE_GLOSS)],
                                value=first.word, description="word")
    # Every setting of the controls, computed once now: a move only redraws.
    for scale in np.arange(_SCALE_MIN, _SCALE_MAX + _SCALE_STEP / 2, _SCALE_STEP):
        for w in SENTENCE:
            sentence_row(w, score_scale=float(scale))
    slider = widgets.FloatSlider(value=first.score_scale, min=_SCALE_MIN, max=_SCALE_MAX,
                                 step=_SCALE_STEP,
                                 description="score scale", continuous_update=True,
                                 style={"description_width": "initial"})
    return Explorer({"word": dropdown, "score_scale": slider}, fig, update, live,
                    title="Whom does each word attend to? (a hand-built toy, not a trained model)")
