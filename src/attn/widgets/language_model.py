"""Writing with the shipped character model, and what its heads look at (notebook 13).

The shipped model of the explorer's language (``attn.lessons.language_model.shipped``: 4 blocks
of 4 heads) continues one of three prompts taken from the text it never trained on (the start
of a speech of the plays, the first half of a poem's first line). The controls choose how it writes, with a
seeded generator, so that a setting always writes the same text:

* **temperature** divides the logits before the softmax: below 1 the likely characters grow
  likelier, above 1 the distribution flattens;
* **top-k** keeps the k likeliest characters and renormalises (k = 1 is greedy writing).

Three panels. Left: the distribution of the character after the prompt, its 12 likeliest
characters, those top-k keeps in blue, those it cuts in grey (their probability before the cut
drawn as an outline). Middle: the chosen head's attention on the whole text, prompt and
continuation, under the causal mask (``attn.lessons.language_model.heads.causal_maps``), a
character on each row and column. Right: every head of every block, small, the chosen one
framed.

What the heads learned is measured on the text shown, not asserted: each head's best pattern by
its pattern score against an even head's (``name_heads``): the character before, the line's
first character, the punctuation so far, the same place in the line before, ... The readout
names the heads that clear the bar and gives every score.

Shape legend: N blocks, H heads, L characters of the text, V the vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from html import escape

import ipywidgets as widgets
import numpy as np
import torch

from .._checks import check_choice, check_int
from ..language import get_language, tr
from ..lessons.language_model.corpus import Corpus, load_corpus, openings
from ..lessons.language_model.generation import distribution_after, generate
from ..lessons.language_model.heads import TEXT_PATTERNS, HeadName, causal_maps, name_heads
from ..lessons.language_model.model import CharLM
from ..lessons.language_model.shipped import load_shipped
from ..drawing.plotting import new_figure, text_font, token_font
from ._base import Explorer
from ._bitmaps import TickLabels
from ._mapview import MapView

__all__ = ["TEMPERATURES", "TOP_KS", "PROMPTS", "SHOWN", "SEED", "char_label", "prompts", "LMView", "lm_view",
           "language_model_explorer"]

TEMPERATURES = (0.5, 0.8, 1.0, 1.5, 2.0)
TOP_KS = (1, 3, 10, 30, 100)
#: How many prompts the explorer offers.
PROMPTS = 3
#: How many of the likeliest next characters the left panel draws.
SHOWN = 12
#: The seed of the generator that samples: the same setting always writes the same text.
SEED = 0
#: English: a prompt's length and the continuation's. (Chinese: the first half of a poem's first
#: line, its comma included, and a continuation that would end the poem's second line.)
_PROMPT_CHARS = 16
_LABELS = {" ": "␣", "\n": "⏎"}  # characters a label would not show


def char_label(c: str) -> str:
    """How a character is labelled in a picture: a space as ␣, a newline as ⏎, others as they are."""
    return _LABELS.get(c, c)


@lru_cache(maxsize=2, typed=True)
def prompts(language: str) -> tuple[str, ...]:
    """The explorer's prompts in ``language``: the start of the first ``PROMPTS`` speeches
    (English: their first 16 characters, the speaker's name among them) or poems (Chinese: the
    first half of the first line, up to its comma) of the held-out text."""
    starts = openings(load_corpus(language), PROMPTS)
    return tuple(text[:text.index("，") + 1] if language == "zh" else text[:_PROMPT_CHARS] for text in starts)


@lru_cache(maxsize=2, typed=True)
def _model(language: str) -> CharLM:
    return load_shipped(language)


@dataclass(frozen=True)
class LMView:
    """The numbers behind the picture.

    Attributes:
        language, prompt (its text), temperature, top_k, layer, head (1-based, as the controls).
        text: the prompt and what the model wrote after it; written: how many characters it wrote.
        top_chars: the ``SHOWN`` likeliest next characters after the prompt, at this temperature;
        before_cut: (SHOWN,) their probabilities at this temperature before top-k;
        after_cut: (SHOWN,) after top-k (0 where cut); kept: how many characters top-k keeps;
        vocabulary: V.
        maps: (N, H, L, L) every head's causal attention on ``text``.
        names: one ``HeadName`` per head (block-major), measured on ``text``.
    """

    language: str
    prompt: str
    temperature: float
    top_k: int
    layer: int
    head: int
    text: str
    written: int
    top_chars: tuple[str, ...]
    before_cut: np.ndarray
    after_cut: np.ndarray
    kept: int
    vocabulary: int
    maps: np.ndarray
    names: tuple[HeadName, ...]

    @property
    def chosen(self) -> HeadName:
        """The chosen head's ``HeadName``."""
        return self.names[(self.layer - 1) * self.maps.shape[1] + self.head - 1]


@lru_cache(maxsize=64, typed=True)
def _written(language: str, prompt: int, temperature: float, top_k: int) -> tuple:
    """(text, top chars, before cut, after cut, kept, maps, names): the part of a view that does
    not depend on the head shown."""
    model, corpus = _model(language), load_corpus(language)
    start = prompts(language)[prompt]
    # Chinese: the rest of the line (the prompt's length and a newline) and one more line
    steps = _PROMPT_CHARS if language == "en" else 3 * len(start) + 2
    ids = corpus.vocab.encode(start)[None]  # (1, T0)
    if top_k == 1:  # one character kept: the likeliest, whatever the temperature
        out = generate(model, ids, steps)
    else:
        out = generate(model, ids, steps, strategy="sample", temperature=temperature, top_k=top_k,
                       generator=torch.Generator().manual_seed(SEED))
    text = corpus.vocab.decode(out[0])
    before = distribution_after(model, corpus.vocab, start, temperature=temperature)  # (V,)
    after = distribution_after(model, corpus.vocab, start, temperature=temperature, top_k=top_k)  # (V,)
    top = before.topk(SHOWN).indices  # (SHOWN,)
    maps = causal_maps(model, corpus.vocab, text)  # (N, H, L, L)
    return (text, tuple(corpus.vocab.decode(top)), before[top].numpy(), after[top].numpy(),
            int((after > 0).sum()), maps.numpy(), tuple(name_heads(maps, text)))


def lm_view(prompt: int = 0, temperature: float = 1.0, top_k: int = 10, layer: int = 1, head: int = 1, *,
            language: str | None = None) -> LMView:
    """What the explorer shows.

    Args:
        prompt: which prompt, 0..PROMPTS - 1 (``prompts``).
        temperature: one of ``TEMPERATURES``; top_k: one of ``TOP_KS``.
        layer, head: the head drawn large, 1-based (1..4 each for the shipped models).
        language: "en" or "zh" (None: the course's current language): the model and its text.
    """
    corpus: Corpus = load_corpus(language)  # checks the language
    prompt = check_int("prompt", prompt, low=0, high=PROMPTS - 1)
    check_choice("temperature", temperature, TEMPERATURES)
    check_int("top_k", top_k)
    check_choice("top_k", top_k, TOP_KS)
    config = _model(corpus.language).config
    layer = check_int("layer", layer, low=1, high=config["num_layers"])
    head = check_int("head", head, low=1, high=config["num_heads"])
    text, top, before, after, kept, maps, names = _written(corpus.language, prompt, float(temperature), top_k)
    start = prompts(corpus.language)[prompt]
    return LMView(corpus.language, start, float(temperature), top_k, layer, head, text, len(text) - len(start),
                  top, before, after, kept, len(corpus.vocab), maps, names)


def _shown_text(v: LMView) -> str:
    """The text in HTML: the prompt in bold, what the model wrote after it, newlines as ⏎."""
    def show(s: str) -> str:
        return escape(s).replace("\n", "⏎<br>")
    return f"<b>{show(v.prompt)}</b>{show(v.text[len(v.prompt):])}"


def _head_line(n: HeadName, *, where: bool = True) -> str:
    """What one head's name says: its best pattern, its score and an even head's."""
    if n.pattern:
        said = tr("{pattern} (score {score:.2f}; an even head: {baseline:.2f})",
                  pattern=tr(TEXT_PATTERNS[n.pattern]), score=n.score, baseline=n.baseline)
    else:
        said = tr("no pattern clears the bar (its best: {pattern}, score {score:.2f}; an even head: {baseline:.2f})",
                  pattern=tr(TEXT_PATTERNS[n.best]), score=n.score, baseline=n.baseline)
    if not where:
        return said
    return tr("{where}: {said}", where=tr("block {layer}, head {head}", layer=n.layer + 1, head=n.head + 1), said=said)


def _readout(v: LMView) -> str:
    likeliest = v.top_chars[0]
    cut = (tr("top-k keeps the likeliest character only: the model writes greedily") if v.top_k == 1 else
           tr("top-k keeps {kept} of the {V:,} characters", kept=v.kept, V=v.vocabulary))
    named = [n for n in v.names if n.pattern]
    heads = (tr("; ").join(_head_line(n) for n in named) if named else
             tr("none clears the bar on this text"))
    return ("<p>" + tr("<b>The text</b> (the prompt in bold, then the {written} characters the model wrote):",
                       written=v.written) + "<br>" + _shown_text(v) + "</p>"
            "<p>" + tr("After the prompt, at temperature {t}, the likeliest next character is "
                       "“{c}” with probability {p:.2f}; {cut}.", t=v.temperature, c=char_label(likeliest),
                       p=float(v.before_cut[0]), cut=cut) + "</p>"
            "<p>" + tr("<b>Block {layer}, head {head}</b>: {line}.", layer=v.layer, head=v.head,
                       line=_head_line(v.chosen, where=False)) + " "
            + tr("Heads named on this text (score at least 0.4 and twice an even head's): {heads}.",
                 heads=heads) + "</p>")


def language_model_explorer(prompt: int = 0, temperature: float = 1.0, top_k: int = 10, layer: int = 1,
                            head: int = 1) -> Explorer:
    """Prompt, temperature, top-k, block and head: the next character's distribution, the chosen
    head's attention over the written text, and every head small.

    Returns:
        An ``Explorer``; ``.maps`` is "head" -> the large ``MapView``, and "N.H" (1-based) ->
        each small one; ``.bars`` is the left panel's kept and cut bars (two ``LineCollection``s).
    """
    language = get_language()
    first = lm_view(prompt, temperature, top_k, layer, head, language=language)
    N, H = first.maps.shape[:2]
    fig = new_figure(13, 5.4, dpi=72)
    # Left: the next character's distribution, the likeliest on top.
    ax_bars = fig.add_axes((0.045, 0.1, 0.17, 0.76))
    rows = np.arange(SHOWN)
    outline = ax_bars.barh(rows, np.zeros(SHOWN), height=0.7, fill=False, edgecolor="0.45", lw=1)
    cut_bars = ax_bars.hlines(rows, 0, np.zeros(SHOWN), colors="0.7", lw=9)
    kept_bars = ax_bars.hlines(rows, 0, np.zeros(SHOWN), colors="tab:blue", lw=9)
    ax_bars.set_ylim(SHOWN - 0.5, -0.5)
    ax_bars.set_xlim(0, 1)
    ax_bars.set_yticks([])
    ax_bars.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
    ax_bars.set_xlabel(tr("probability"), fontproperties=text_font(9))
    ax_bars.set_title(tr("the next character"), fontproperties=text_font(10))
    font = token_font() if language == "zh" else None
    bar_labels = TickLabels(ax_bars, size=10, font=font, x_labels=False)
    # Middle: the chosen head, large.
    big = MapView(fig.add_axes((0.27, 0.1, 0.34, 0.76)), font=font, label_size=7, title_font=text_font(10))
    # Right: every head, small, a block on each row.
    small = {}
    for n in range(N):
        for h in range(H):
            ax = fig.add_axes((0.70 + 0.072 * h, 0.68 - 0.19 * n, 0.062, 0.16))
            small[f"{n + 1}.{h + 1}"] = MapView(ax, x_labels=False, y_labels=False, box_color="tab:orange")
            if n == 0:
                fig.text(0.70 + 0.072 * h + 0.031, 0.88, tr("head {h}", h=h + 1), ha="center",
                         fontproperties=text_font(8))
        fig.text(0.695, 0.68 - 0.19 * n + 0.08, tr("block {n}", n=n + 1), ha="right", va="center",
                 fontproperties=text_font(8))
    fig.text(0.84, 0.94, tr("every head of every block"), ha="center", fontproperties=text_font(10))

    def update(prompt: int, temperature: float, top_k: int, layer: int, head: int) -> tuple[LMView, str]:
        v = lm_view(prompt, temperature, top_k, layer, head, language=language)
        for bar, width in zip(outline, v.before_cut):
            bar.set_width(float(width))
        cut_bars.set_segments([[(0.0, y), (float(p), y)] for y, p in zip(rows, v.before_cut)])
        kept_bars.set_segments([[(0.0, y), (float(p), y)] for y, p in zip(rows, v.after_cut)])
        bar_labels.set_tokens([], [char_label(c) for c in v.top_chars])
        labels = [char_label(c) for c in v.text]
        name = v.chosen
        title = tr("block {layer}, head {head}", layer=v.layer, head=v.head)
        if name.pattern:
            title += ": " + tr(TEXT_PATTERNS[name.pattern])
        big.set(v.maps[v.layer - 1, v.head - 1], x_tokens=labels, y_tokens=labels, title=title,
                blocked=np.triu(np.ones((len(v.text),) * 2, dtype=bool), 1))
        for key, view in small.items():
            n, h = (int(i) - 1 for i in key.split("."))
            L = len(v.text)
            view.set(v.maps[n, h], boxes=[(0, L, 0, L)] if (n + 1, h + 1) == (v.layer, v.head) else ())
        return v, _readout(v)

    def live() -> list:
        return [*outline, cut_bars, kept_bars, bar_labels, *big.artists(),
                *(a for view in small.values() for a in view.artists())]

    prompt_options = [(p.replace("\n", " ⏎ ").strip(), i) for i, p in enumerate(prompts(language))]
    controls = {
        "prompt": widgets.Dropdown(options=prompt_options, value=prompt,
                                   description=tr("prompt")),
        "temperature": widgets.SelectionSlider(options=TEMPERATURES, value=first.temperature,
                                               description=tr("temperature"), continuous_update=True),
        "top_k": widgets.SelectionSlider(options=TOP_KS, value=first.top_k, description=tr("top-k"),
                                         continuous_update=True),
        "layer": widgets.IntSlider(value=first.layer, min=1, max=N, description=tr("block"),
                                   continuous_update=True),
        "head": widgets.IntSlider(value=first.head, min=1, max=H, description=tr("head"),
                                  continuous_update=True),
    }
    maps = {"head": big, **small}
    explorer = Explorer(controls, fig, update, live, title=tr("Writing with the trained model, and its heads"),
                        maps=maps)
    explorer.bars = {"kept": kept_bars, "cut": cut_bars}
    return explorer
