"""What the heads of a character model attend to, measured on a line of text (notebook 13).

Each head's causal map on a text is scored against the patterns a reader of that text can name
(``text_patterns``), with the course's pattern score (``attn.lessons.pattern_scores``: the share
of a row's weight inside the pattern's cells, averaged over the rows that can score). A score
means little alone: under the causal mask, a head that spreads its weight evenly over the keys
it may see already puts 1/2 of row 1 on the previous character. So each score is read against
the score of that even head on the same text (``uniform_score``), and a head is named after a
pattern only when it beats that baseline clearly (``name_heads``).

Shape legend: N blocks, H heads, L characters.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..._checks import check_int, check_number
from ...language import mark
from ..pattern_scores import pattern_mask, pattern_score
from ..trained.blocks import attention_maps
from .corpus import Corpus, Vocabulary, openings
from .model import CharLM

__all__ = ["TEXT_PATTERNS", "PUNCTUATION", "passage", "causal_maps", "text_patterns", "uniform_score", "HeadName",
           "name_heads"]

#: The patterns of a text, name -> what its cells are (marked for the catalogue).
TEXT_PATTERNS = {
    "previous": mark("the character before"),
    "itself": mark("the character itself"),
    "line start": mark("the first character of the line"),
    "same line": mark("the characters of the same line"),
    "previous line": mark("the same place in the line before"),
    "punctuation": mark("the punctuation so far"),
}
#: What counts as punctuation: ASCII's and the full-width marks of the poems.
PUNCTUATION = set(".,;:!?'\"-()") | set("，。？！；：、")


def passage(corpus: Corpus, length: int = 96) -> str:
    """``length`` characters of the held-out text, from the start of its first speech (the
    plays) or poem: the first character after its first blank line."""
    length = check_int("length", length, low=1)
    return openings(corpus)[0][:length]


@torch.no_grad()
def causal_maps(model: CharLM, vocab: Vocabulary, text: str) -> Tensor:
    """Every head's attention weights on ``text`` under the causal mask: (N, H, L, L)."""
    if not isinstance(model, CharLM):
        raise TypeError(f"model: expected an attn.lessons.language_model.CharLM, got {type(model).__name__}")
    ids = vocab.encode(text)[None]  # (1, L)
    if ids.shape[1] > model.context:
        raise ValueError(f"text: expected at most context={model.context} characters, got {ids.shape[1]}")
    training = model.training
    model.eval()
    try:
        return attention_maps(model, ids, num_heads=model.config["num_heads"], causal=True)[:, 0]  # (N, H, L, L)
    finally:
        model.train(training)


def text_patterns(text: str) -> dict[str, Tensor]:
    """The cells (L, L) bool of each pattern of ``TEXT_PATTERNS`` on ``text``, queries i in
    rows, keys j <= i in columns (a causal model sees no later key)."""
    if not isinstance(text, str) or not text:
        raise TypeError(f"text: expected a non-empty str, got {type(text).__name__}")
    L = len(text)
    starts, line = [], 0  # the first position of each character's line; its line's number
    lines = []
    for i, c in enumerate(text):
        starts.append(i if i == 0 or text[i - 1] == "\n" else starts[-1])
        lines.append(line)
        line += c == "\n"
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    start = torch.tensor(starts)
    previous_line = torch.full((L,), -1)
    for q in range(L):
        s = starts[q]
        if s > 0:
            before = starts[s - 1]  # the line before starts here and ends at s - 1 (its newline)
            if before + (q - s) < s - 1:
                previous_line[q] = before + (q - s)
    punct = torch.tensor([c in PUNCTUATION for c in text])
    causal = j <= i
    return {
        "previous": pattern_mask("previous", L),
        "itself": i == j,
        "line start": j == start[:, None],
        "same line": pattern_mask("block", L, segments=lines) & causal,
        "previous line": j == previous_line[:, None],
        "punctuation": punct[None, :] & causal,
    }


def uniform_score(mask: Tensor) -> float:
    """The pattern score of a head that spreads each row evenly over keys 0..i: the baseline a
    head's score is read against."""
    L = mask.shape[-1]
    even = torch.tril(torch.ones(L, L)) / torch.arange(1, L + 1)[:, None]  # (L, L): row i is 1/(i + 1)
    return float(pattern_score(even, mask))


@dataclass(frozen=True)
class HeadName:
    """One head's best pattern on a text.

    Attributes:
        layer, head: 0-based.
        pattern: a key of ``TEXT_PATTERNS``, or None when no pattern clears the bar.
        score: the head's score on its best pattern; baseline: an even head's on it.
        best: the best pattern (a key of ``TEXT_PATTERNS``), whether it clears the bar or not.
    """

    layer: int
    head: int
    pattern: str | None
    score: float
    baseline: float
    best: str


def name_heads(maps: Tensor, text: str, *, at_least: float = 0.4, times: float = 2.0) -> list[HeadName]:
    """Each head's best pattern by its lift over the even head (score / baseline), named when
    its score is at least ``at_least`` and ``times`` its baseline.

    Args:
        maps: (N, H, L, L), ``causal_maps`` on ``text``.
    """
    at_least = check_number("at_least", at_least, positive=True)
    times = check_number("times", times, positive=True)
    patterns = text_patterns(text)
    if maps.dim() != 4 or maps.shape[-1] != len(text) or maps.shape[-2] != len(text):
        raise ValueError(f"maps: expected (N, H, L, L) with L = len(text) = {len(text)}, got {tuple(maps.shape)}")
    usable = {name: m for name, m in patterns.items() if m.any()}
    baselines = {name: uniform_score(m) for name, m in usable.items()}
    scores = {name: pattern_score(maps, m) for name, m in usable.items()}  # each (N, H)
    named = []
    for layer in range(maps.shape[0]):
        for head in range(maps.shape[1]):
            lift = {name: float(s[layer, head]) / baselines[name] for name, s in scores.items()}
            best = max(lift, key=lift.get)
            score = float(scores[best][layer, head])
            clear = score >= at_least and lift[best] >= times
            named.append(HeadName(layer, head, best if clear else None, score, baselines[best], best))
    return named
