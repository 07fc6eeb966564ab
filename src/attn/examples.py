"""The course's data in one place: the sources' sentence and examples, every number they
print, and the few inputs the course adds around them.

Printed numbers are kept as *claims* to check, never used as results: the course computes
every number it shows.

Sources: the textbook chapter "第十六章：自注意力与多头注意力" (Chapter 16: Self-attention and
multi-head attention) and the article "注意力机制深度解析" (Attention mechanisms in depth).
"""
from __future__ import annotations

import torch
from torch import Tensor

from .language import get_language

__all__ = [
    "SENTENCE",
    "SENTENCE_GLOSS",
    "glossed",
    "SENTENCE_PHRASES",
    "CHAPTER_XUEXI_ROW",
    "worked_example_inputs",
    "CHAPTER_PRINTED",
    "TWO_SENTENCE_TOKENS",
    "TWO_SENTENCE_PHRASES",
    "TWO_SENTENCE_SEGMENTS",
    "PHRASED_SENTENCES",
]

# --- the chapter's sentence -------------------------------------------------------------------

#: The chapter's example sentence, already split into words (Chinese has no spaces).
SENTENCE: tuple[str, ...] = ("小明", "在", "北京", "大学", "学习", "人工智能")

#: An English gloss per token: "Xiaoming studies AI at Peking University".
SENTENCE_GLOSS: tuple[str, ...] = ("Xiaoming", "at", "Beijing", "University", "studies", "AI")


def glossed(word: str) -> str:
    """A word of ``SENTENCE`` as a learner of the current language reads it: "小明 (Xiaoming)"
    for an English reader, the word alone for a Chinese one (a gloss would be English)."""
    if word not in SENTENCE:
        raise ValueError(f"word: expected one of {list(SENTENCE)}, got {word!r}")
    gloss = SENTENCE_GLOSS[SENTENCE.index(word)]
    return f"{word} ({gloss})" if get_language() == "en" else word

#: The phrase of each word of ``SENTENCE``: 小明 | 在 北京 大学 | 学习 人工智能.
SENTENCE_PHRASES: tuple[int, ...] = (0, 1, 1, 1, 2, 2)

#: The chapter's attention row of 学习 ("studies") over the sentence, as printed.
CHAPTER_XUEXI_ROW: tuple[float, ...] = (0.3, 0.05, 0.05, 0.1, 0.4, 0.1)

# --- the chapter's worked example -------------------------------------------------------------


def worked_example_inputs(dtype: torch.dtype = torch.float64) -> dict[str, Tensor]:
    """The chapter's 3-token example: X (3, 4), W_Q (4, 2), W_K (4, 2), W_V (4, 2).

    d_model = 4, d_k = d_v = 2. A fresh copy on every call, so callers may modify it.
    """
    X = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
    W_Q = [[1, 0], [0, 1], [1, 1], [0, 0]]
    W_K = [[0, 1], [1, 0], [0, 1], [1, 0]]
    W_V = [[1, 0], [0, 1], [0, 0], [1, 1]]
    return {name: torch.tensor(m, dtype=dtype) for name, m in
            (("X", X), ("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V))}


#: Every number the chapter prints for the worked example, step by step, exactly as printed
#: (2-decimal values are the chapter's roundings): the matrices, the value it gives for
#: sqrt(d_k) and the K^T it writes inside the QK^T line. (It also repeats Q in that line and
#: the weights and V in the output line; those repeats are the same matrices.) Claims to
#: check, not results.
CHAPTER_PRINTED: dict[str, tuple[tuple[float, ...], ...]] = {
    "Q": ((2, 1), (0, 2), (1, 1)),
    "K": ((0, 2), (2, 0), (1, 1)),
    "V": ((1, 0), (1, 2), (1, 1)),
    "sqrt(d_k)": ((1.41,),),
    "K^T": ((0, 2, 1), (2, 0, 1)),
    "QK^T": ((2, 4, 3), (4, 0, 2), (2, 2, 2)),
    "scaled": ((1.41, 2.83, 2.12), (2.83, 0, 1.41), (1.41, 1.41, 1.41)),
    "weights": ((0.12, 0.52, 0.26), (0.65, 0.04, 0.16), (0.33, 0.33, 0.33)),
    "output": ((0.90, 1.30), (0.85, 0.24), (1.00, 1.00)),
}

# --- the course's inputs around the sources ----------------------------------------------------

#: A two-sentence input with BERT-style special tokens (the hand-built heads of notebook 06):
#: the chapter's sentence, then the chapter's closing line shortened to 自注意力 是 灵魂
#: ("self-attention is the soul").
TWO_SENTENCE_TOKENS: tuple[str, ...] = ("[CLS]", *SENTENCE, "[SEP]", "自注意力", "是", "灵魂", "[SEP]")

#: The phrase of each token of ``TWO_SENTENCE_TOKENS``: [CLS] | 小明 | 在 北京 大学 |
#: 学习 人工智能 | [SEP] | 自注意力 | 是 灵魂 | [SEP].
TWO_SENTENCE_PHRASES: tuple[int, ...] = (0, 1, 2, 2, 2, 3, 3, 4, 5, 6, 6, 7)

#: The sentence of each token of ``TWO_SENTENCE_TOKENS`` (BERT's segments A and B).
TWO_SENTENCE_SEGMENTS: tuple[int, ...] = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1)

#: Sentences for the pretrained model of notebook 08, each split into words or phrases (the
#: unit of its block pattern). The first is the chapter's sentence; the model knows English,
#: and some of the sentence's characters are not in its vocabulary (they become [UNK]).
PHRASED_SENTENCES: dict[str, tuple[str, ...]] = {
    "chapter": SENTENCE,
    "gloss": ("Xiaoming", "studies", "artificial intelligence", "at", "Peking University"),
    "fox": ("The quick brown fox", "jumps over", "the lazy dog", "."),
    "attention": ("Every word", "looks at", "the other words", "in the sentence", "."),
}
