"""The sources' examples, as data. Printed numbers are kept as *claims* to check, never used
as results: the course computes every number it shows.

Sources: the textbook chapter "第十六章：自注意力与多头注意力" (Chapter 16: Self-attention and
multi-head attention) and the article "注意力机制深度解析" (Attention mechanisms in depth).
"""
from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "SENTENCE",
    "SENTENCE_GLOSS",
    "CHAPTER_XUEXI_ROW",
    "worked_example_inputs",
    "CHAPTER_PRINTED",
]

#: The chapter's example sentence, already split into words (Chinese has no spaces).
SENTENCE: tuple[str, ...] = ("小明", "在", "北京", "大学", "学习", "人工智能")

#: An English gloss per token: "Xiaoming studies AI at Peking University".
SENTENCE_GLOSS: tuple[str, ...] = ("Xiaoming", "at", "Beijing", "University", "studies", "AI")

#: The chapter's attention row of 学习 ("studies") over the sentence, as printed.
CHAPTER_XUEXI_ROW: tuple[float, ...] = (0.3, 0.05, 0.05, 0.1, 0.4, 0.1)


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


#: Every intermediate matrix the chapter prints for the worked example, exactly as printed
#: (2-decimal values are the chapter's roundings). Claims to check, not results.
CHAPTER_PRINTED: dict[str, tuple[tuple[float, ...], ...]] = {
    "Q": ((2, 1), (0, 2), (1, 1)),
    "K": ((0, 2), (2, 0), (1, 1)),
    "V": ((1, 0), (1, 2), (1, 1)),
    "QK^T": ((2, 4, 3), (4, 0, 2), (2, 2, 2)),
    "scaled": ((1.41, 2.83, 2.12), (2.83, 0, 1.41), (1.41, 1.41, 1.41)),
    "weights": ((0.12, 0.52, 0.26), (0.65, 0.04, 0.16), (0.33, 0.33, 0.33)),
    "output": ((0.90, 1.30), (0.85, 0.24), (1.00, 1.00)),
}
