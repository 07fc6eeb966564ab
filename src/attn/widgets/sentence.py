"""Pick a word of 小明 在 北京 大学 学习 人工智能 and see its row of attention computed.

The numbers come from the hand-built toy of ``attn.lessons.handbuilt.sentence`` (not a trained model).
For the picked word i the picture follows the computation of its row: the scores s·q_i·k_j
(s = the score-scale slider), their exponentials, the weights (each exponential divided by
their sum), and the new vector y_i = sum_j a_ij v_j as the sum of its six parts. For 学习 the
chapter's illustrative row is drawn under the toy's row, so the two can be compared.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_number
from ..examples import CHAPTER_XUEXI_ROW, SENTENCE, SENTENCE_GLOSS, glossed
from ..lessons.handbuilt.sentence import (TOY_FEATURES, toy_attention, toy_embeddings,
                                          toy_projections, toy_scores)
from ..language import mark, tr
from ..drawing.plotting import new_figure, text_font, token_font
from ._base import Explorer
from ._mapview import MapView

__all__ = ["SentenceRow", "sentence_row", "sentence_explorer", "STEP_NAMES"]

_CHAPTER_WORD = "学习"
_SCALE_MIN, _SCALE_MAX, _SCALE_STEP = 0.0, 3.0, 0.25  # the score-scale slider
#: The rows of the computation panel, top to bottom (English; drawn in the current language).
STEP_NAMES: tuple[str, ...] = (mark("score"), mark("exp(score)"), mark("weight"), mark("chapter"))
#: The picture's narrow columns shorten two of the toy's features (``TOY_FEATURES``).
_SHORT_NAMES = {"field of study": mark("field"), "function word": mark("function")}


@dataclass(frozen=True)
class SentenceRow:
    """One word's row of the toy's attention, step by step, and what it makes of it.

    Attributes:
        word, index, gloss, score_scale: the inputs.
        scores: s · q_i · k_j / sqrt(d_k) for every key j (``toy_scores``).
        exps: exp(score) per key; exp_sum: their sum.
        weights: exps / exp_sum, the row of the attention map (it sums to 1).
        matrix: every row (6 x 6), at this score_scale.
        chapter: the chapter's illustrative row (学习 only, else None).
        parts: (6, F) a_ij v_j, what word j adds to the new vector; output: their sum y_i.
        top_word, top_weight, row_sum: the largest weight, where it goes, and the row's sum.
    """

    word: str
    index: int
    gloss: str
    score_scale: float
    scores: tuple[float, ...]
    exps: tuple[float, ...]
    exp_sum: float
    weights: tuple[float, ...]
    matrix: tuple[tuple[float, ...], ...]
    chapter: tuple[float, ...] | None
    parts: tuple[tuple[float, ...], ...]
    output: tuple[float, ...]
    top_word: str
    top_weight: float
    row_sum: float


def sentence_row(word: str = _CHAPTER_WORD, *, score_scale: float = 1.0) -> SentenceRow:
    """The toy self-attention's row for ``word``, step by step.

    Args:
        word: one of ``attn.examples.SENTENCE`` (the Chinese token) or its English gloss.
        score_scale: multiplies every score before the softmax (>= 0; 1 = the toy as built,
            0 = every weight 1/6).

    Returns:
        ``SentenceRow``: scores, exponentials and weights of the row, the whole 6 x 6 matrix,
        the chapter's row when ``word`` is 学习, and the parts and sum of the new vector.
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


@lru_cache(maxsize=64, typed=True)
def _toy(score_scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out, w = toy_attention(score_scale=score_scale)  # (6, F) new vectors, (6, 6) weights
    return toy_scores(score_scale=score_scale), w, out


@lru_cache(maxsize=256, typed=True)
def _row(i: int, score_scale: float) -> SentenceRow:
    """The row of word i (immutable, so cached: moving back to a setting costs nothing)."""
    scores, w, out = _toy(score_scale)
    exps = scores[i].exp()  # (6,)
    values = toy_embeddings() @ toy_projections()["W_V"]  # (6, F): V = X W^V
    parts = w[i][:, None] * values  # (6, 1) * (6, F) -> (6, F): a_ij v_j
    row = w[i]
    j = int(row.argmax())
    return SentenceRow(
        word=SENTENCE[i], index=i, gloss=SENTENCE_GLOSS[i], score_scale=score_scale,
        scores=tuple(scores[i].tolist()), exps=tuple(exps.tolist()), exp_sum=exps.sum().item(),
        weights=tuple(row.tolist()), matrix=tuple(tuple(r) for r in w.tolist()),
        chapter=CHAPTER_XUEXI_ROW if SENTENCE[i] == _CHAPTER_WORD else None,
        parts=tuple(tuple(p) for p in parts.tolist()), output=tuple(out[i].tolist()),
        top_word=SENTENCE[j], top_weight=row[j].item(), row_sum=row.sum().item(),
    )


def _readout(r: SentenceRow) -> str:
    head = (f"<tr><th>{tr('word')}</th><th>{tr('score')}</th><th>{tr('exp(score)')}</th>"
            f"<th>{tr('toy weight')}</th>"
            + (f"<th>{tr('chapter (illustrative)')}</th>" if r.chapter else "") + "</tr>")
    rows = []
    for j, tok in enumerate(SENTENCE):
        cell = f"<b>{r.weights[j]:.3f}</b>" if tok == r.top_word else f"{r.weights[j]:.3f}"
        extra = f"<td>{r.chapter[j]:.2f}</td>" if r.chapter else ""
        rows.append(f"<tr><td>{glossed(tok)}</td><td>{r.scores[j]:.3f}</td>"
                    f"<td>{r.exps[j]:.3f}</td><td>{cell}</td>{extra}</tr>")
    who = tr("itself") if r.top_word == r.word else glossed(r.top_word)
    if r.score_scale == 0:
        note = tr("Score scale 0: every score is 0, and the softmax of equal scores is uniform, "
                  "so every weight is 1/6 = {weight:.3f}.", weight=r.weights[0])
    else:
        note = tr("Most weight: {who}, {weight:.3f}.", who=who, weight=r.top_weight)
    mix = " + ".join(f"{v:.2f}·{tr(f)}" for v, f in sorted(zip(r.output, TOY_FEATURES), reverse=True)
                     if v >= 0.005)
    return (
        "<p>" + tr("<b>Row of {word}</b>, score scale {scale:g}: weight = exp(score) / {total:.3f}, "
                   "the sum of the exponentials.", word=glossed(r.word), scale=r.score_scale,
                   total=r.exp_sum) + "</p>"
        f"<table>{head}{''.join(rows)}</table>"
        "<p>" + tr("The row sums to {total:.3f}. {note}", total=r.row_sum, note=note) + "<br>"
        + tr("New vector of {word}: {mix}", word=r.word, mix=mix) + "</p>"
    )


def _short(v: float) -> str:
    """A number in at most 4 characters or so, for a small cell."""
    if math.isnan(v):
        return "—"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"


def sentence_explorer(word: str = _CHAPTER_WORD, *, score_scale: float = 1.0) -> Explorer:
    """A drop-down of the six words and a score-scale slider.

    Left: the whole 6 x 6 toy attention map, the picked word's row framed. Middle: that row
    computed, key by key: score, exp(score), weight (and the chapter's row, for 学习).
    Right: the new vector of the word, as its six parts a_ij v_j and their sum.

    Returns:
        An ``Explorer``; ``.maps`` is name -> ``MapView`` ("all rows", "row", "output").
    """
    first = sentence_row(word, score_scale=score_scale)  # validates the arguments
    n, F = len(SENTENCE), len(TOY_FEATURES)
    fig = new_figure(10, 3.8, dpi=72)
    font = token_font(8)
    # Fixed boxes: room for the stood-up labels and the titles (no layout engine to run).
    all_rows = MapView(fig.add_axes((0.075, 0.24, 0.2, 0.62)), font=font, rotate=True,
                       box_color="tab:orange", title_size=9, title_font=text_font(9))
    row = MapView(fig.add_axes((0.39, 0.42, 0.34, 0.44)), cmap="Purples", numbers=True,
                  number_size=8, number_font=font, font=font, label_size=9, title_size=9, title_font=token_font(9))
    output = MapView(fig.add_axes((0.81, 0.24, 0.18, 0.62)), cmap="Greens", numbers=True,
                     number_size=7, font=font, rotate=True, title_size=9, title_font=token_font(9))
    features = [tr(_SHORT_NAMES.get(f, f)) for f in TOY_FEATURES]
    step_names = [tr(name) for name in STEP_NAMES]

    def update(word: str, score_scale: float) -> tuple[SentenceRow, str]:
        r = sentence_row(word, score_scale=score_scale)
        i = r.index
        all_rows.set(np.array(r.matrix), x_tokens=SENTENCE, boxes=[(i, i + 1, 0, n)],
                     title=tr("all rows (query ↓, key →)"))
        chapter = r.chapter if r.chapter is not None else (math.nan,) * n
        steps = np.array([r.scores, r.exps, r.weights, chapter])  # (4, n)
        top = np.where(np.isnan(steps), 0.0, steps).max(1, keepdims=True)  # (4, 1): each row's largest
        shade = steps / np.where(top > 0, top, 1.0)  # (4, n)
        strings = [[_short(v) for v in step] for step in steps]
        if r.chapter is None:
            strings[3] = [tr("{word} only", word=_CHAPTER_WORD)] + [""] * (n - 1)
        row.set(shade, blocked=np.isnan(steps), strings=strings, x_tokens=SENTENCE,
                y_tokens=step_names,
                title=tr("row of {word}: weight = exp(score) / {total}", word=r.word,
                         total=_short(r.exp_sum)))
        parts = np.array(r.parts + (r.output,))  # (n + 1, F)
        written = [["" if abs(v) < 0.005 else f"{v:.2f}" for v in p] for p in parts]  # no rows of 0.00
        output.set(parts, strings=written, x_tokens=features, y_tokens=[f"{w:.2f}·{t}" for w, t in zip(r.weights, SENTENCE)]
                   + [tr("sum")], boxes=[(n, n + 1, 0, F)], title=tr("new vector of {word}", word=r.word))
        return r, _readout(r)

    def live() -> list:
        return [*all_rows.artists(), *row.artists(), *output.artists()]

    dropdown = widgets.Dropdown(options=[(glossed(t), t) for t in SENTENCE],
                                value=first.word, description=tr("word"))
    # Every setting of the controls, computed once now: a move only redraws.
    for scale in np.arange(_SCALE_MIN, _SCALE_MAX + _SCALE_STEP / 2, _SCALE_STEP):
        for w in SENTENCE:
            sentence_row(w, score_scale=float(scale))
    slider = widgets.FloatSlider(value=first.score_scale, min=_SCALE_MIN, max=_SCALE_MAX,
                                 step=_SCALE_STEP,
                                 description=tr("score scale"), continuous_update=True,
                                 style={"description_width": "initial"})
    explorer = Explorer({"word": dropdown, "score_scale": slider}, fig, update, live,
                        title=tr("Whom does each word attend to? (a hand-built toy, not a trained model)"),
                        maps={"all rows": all_rows, "row": row, "output": output})
    return explorer
