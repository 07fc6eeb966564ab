"""A toy self-attention over the chapter's sentence, with every number chosen by hand.

Nothing here is trained. Each of the six words 小明 在 北京 大学 学习 人工智能 gets a
feature vector that says what kind of word it is, and two small hand-written matrices say
what each kind of word *offers* (its key) and what it *looks for* (its query), in terms of
four grammatical roles. The values are the feature vectors themselves, so the output of a
word is a readable mix of features ("0.27 person + 0.35 action + ...").

The point is the mechanism, not the numbers: a trained model's weights come from data and
rarely read this cleanly.

Shape legend: L words (6 for the sentence), F = 6 features (= d_model), R = 4 roles (= d_k).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..._checks import check_float, check_number, check_rank, shape_str
from ...functional import attention_from_scores
from ...language import mark

__all__ = [
    "TOY_FEATURES",
    "TOY_ROLES",
    "toy_embeddings",
    "toy_projections",
    "toy_scores",
    "toy_attention",
]

#: What each coordinate of a word's vector means (d_model = 6), in English and marked for the
#: catalogue: show one as ``attn.language.tr(feature)``.
TOY_FEATURES: tuple[str, ...] = (mark("person"), mark("place"), mark("institution"), mark("action"),
                                 mark("field of study"), mark("function word"))

#: What each coordinate of a query or key means (d_k = 4), marked likewise.
TOY_ROLES: tuple[str, ...] = (mark("agent"), mark("action"), mark("object"), mark("location"))

# One row per word of SENTENCE, one column per feature.
_EMBEDDINGS = (
    (1.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # 小明 Xiaoming: a person
    (0.0, 0.0, 0.0, 0.0, 0.0, 1.0),  # 在 at: a function word
    (0.0, 1.0, 0.0, 0.0, 0.0, 0.0),  # 北京 Beijing: a place
    (0.0, 0.5, 1.0, 0.0, 0.0, 0.0),  # 大学 University: an institution, also a place
    (0.0, 0.0, 0.0, 1.0, 0.0, 0.0),  # 学习 studies: an action
    (0.0, 0.0, 0.0, 0.0, 1.0, 0.0),  # 人工智能 AI: a field of study
)

# W^K: feature -> the roles a word of that kind can fill (what it offers).
_W_K = (
    (1.0, 0.0, 0.0, 0.0),  # a person can be the agent
    (0.0, 0.0, 0.0, 1.0),  # a place is a location
    (0.0, 0.0, 0.3, 1.0),  # an institution is a location (and a little bit an object)
    (0.0, 1.0, 0.0, 0.0),  # an action is the action
    (0.0, 0.0, 1.0, 0.0),  # a field of study is an object
    (0.0, 0.0, 0.0, 0.3),  # a function word hints at a location
)

# W^Q: feature -> the roles a word of that kind looks for (what it asks).
_W_Q = (
    (1.5, 3.0, 0.0, 1.0),  # a person looks for what it does, a little for itself and where
    (0.0, 2.0, 0.0, 2.5),  # a place looks for locations (its phrase) and the action
    (0.0, 1.5, 0.0, 2.5),  # an institution: the same, a little less for the action
    (3.5, 4.0, 2.5, 0.5),  # an action looks for its agent, itself and its object
    (0.0, 3.0, 1.0, 0.0),  # a field of study looks for the action it is the object of
    (0.0, 1.0, 0.0, 3.0),  # a function word looks for the location it introduces
)


def toy_embeddings(dtype: torch.dtype = torch.float64) -> Tensor:
    """The hand-built feature vectors of SENTENCE: X of shape (6, 6) = (L, F).

    Row i is the word ``SENTENCE[i]``; column f is the feature ``TOY_FEATURES[f]``.
    A fresh tensor on every call.
    """
    return torch.tensor(_EMBEDDINGS, dtype=dtype)


def toy_projections(dtype: torch.dtype = torch.float64) -> dict[str, Tensor]:
    """The hand-written projections: W_Q (F, R), W_K (F, R) and W_V (F, F) = identity.

    The value projection is the identity so that an output row is a mix of feature vectors
    that can be read off directly. Fresh tensors on every call.
    """
    return {
        "W_Q": torch.tensor(_W_Q, dtype=dtype),
        "W_K": torch.tensor(_W_K, dtype=dtype),
        "W_V": torch.eye(len(TOY_FEATURES), dtype=dtype),
    }


def toy_scores(x: Tensor | None = None, *, score_scale: float = 1.0) -> Tensor:
    """Scaled dot-product scores of the toy: (X W_Q)(X W_K)^T / sqrt(d_k), times score_scale.

    Args:
        x: (L, F) word vectors; the sentence's ``toy_embeddings()`` if None.
        score_scale: multiplies every score (1 = the toy as designed, 0 = all scores equal).

    Returns:
        scores: (L, L); row i = how well word i's query matches each word's key.
    """
    x = toy_embeddings() if x is None else x
    check_float("x", x)
    check_rank("x", x, 2, "(L, F)")
    if x.shape[-1] != len(TOY_FEATURES):
        raise ValueError(
            f"x: expected {len(TOY_FEATURES)} features per word (L, F), got shape {shape_str(x)}"
        )
    score_scale = check_number("score_scale", score_scale, non_negative=True)
    w = toy_projections(x.dtype)
    q, k = x @ w["W_Q"], x @ w["W_K"]  # (L, F) @ (F, R) -> (L, R), twice
    d_k = q.shape[-1]
    return (q @ k.T) / math.sqrt(d_k) * score_scale  # (L, R) @ (R, L) -> (L, L)


def toy_attention(x: Tensor | None = None, *, score_scale: float = 1.0) -> tuple[Tensor, Tensor]:
    """Run the toy self-attention: softmax of ``toy_scores`` row by row, then mix the values.

    Args:
        x: (L, F) word vectors; the sentence's ``toy_embeddings()`` if None.
        score_scale: multiplies every score before the softmax (>= 0).

    Returns:
        output: (L, F), row i = sum_j weights[i, j] * (x W_V)[j], a mix of feature vectors.
        weights: (L, L), each row sums to 1.
    """
    x = toy_embeddings() if x is None else x
    scores = toy_scores(x, score_scale=score_scale)  # (L, L); checks x and score_scale
    values = x @ toy_projections(x.dtype)["W_V"]  # (L, F)
    return attention_from_scores(scores, values)

