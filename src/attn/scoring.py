"""The three scoring functions of the article: how well does query i match key j?

    additive (Bahdanau):  e_ij = v^T tanh(W1 q_i + W2 k_j)
    dot product:          e_ij = q_i^T k_j
    scaled dot product:   e_ij = q_i^T k_j / sqrt(d_k)

Shape legend: ... batch dims, L queries, S keys, Dq query size, Dk key size, E = Dq = Dk
for the dot-product forms, Ev value size, Hd the additive hidden size.
Masks are bool, broadcastable to (..., L, S), True = may attend.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ._checks import (
    check_float,
    check_like_parameters,
    check_min_rank,
    check_positive_int,
    check_query_key,
    check_same_dtype_and_device,
    shape_str,
)
from .functional import attention_from_scores

__all__ = ["dot_product_scores", "scaled_dot_product_scores", "AdditiveAttention"]


def dot_product_scores(query: Tensor, key: Tensor) -> Tensor:
    """e_ij = q_i . k_j: every query against every key, as one matrix product.

    Args:
        query: (..., L, E)
        key: (..., S, E), the same E (AdditiveAttention allows different sizes).

    Returns:
        scores: (..., L, S)
    """
    check_query_key(query, key, hint=" (dot-product scores need equal sizes; AdditiveAttention does not)")
    return query @ key.transpose(-2, -1)  # (..., L, E) @ (..., E, S) -> (..., L, S)


def scaled_dot_product_scores(query: Tensor, key: Tensor) -> Tensor:
    """e_ij = q_i . k_j / sqrt(E): dot products kept at unit variance as E grows.

    Args:
        query: (..., L, E)
        key: (..., S, E)

    Returns:
        scores: (..., L, S)
    """
    return dot_product_scores(query, key) / math.sqrt(query.shape[-1])


class AdditiveAttention(nn.Module):
    """Bahdanau's additive attention: e_ij = v^T tanh(W1 q_i + W2 k_j).

    A one-hidden-layer network scores each (query, key) pair, so the query size Dq and the
    key size Dk may differ. It costs O(L * S * Hd) tanh evaluations, against O(L * S * E)
    multiply-adds for a dot product that runs as one matrix product.

    Args:
        query_dim: Dq.
        key_dim: Dk.
        hidden_dim: Hd, the size of the hidden layer.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        for name, v in (("query_dim", query_dim), ("key_dim", key_dim), ("hidden_dim", hidden_dim)):
            check_positive_int(name, v)
        self.W1 = nn.Linear(query_dim, hidden_dim, bias=False)
        self.W2 = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def scores(self, query: Tensor, key: Tensor) -> Tensor:
        """e_ij = v^T tanh(W1 q_i + W2 k_j) for every pair.

        Args:
            query: (..., L, Dq), of the dtype and device of the module's parameters.
            key: (..., S, Dk)

        Returns:
            scores: (..., L, S)
        """
        check_float("query", query)
        check_float("key", key)
        check_min_rank("query", query, 2, "(..., L, Dq)")
        check_min_rank("key", key, 2, "(..., S, Dk)")
        check_same_dtype_and_device(("query", "key"), (query, key))
        check_like_parameters("query", query, self.W1.weight)
        if query.shape[-1] != self.W1.in_features:
            raise ValueError(
                f"query: expected last dim Dq={self.W1.in_features}, got shape {shape_str(query)}"
            )
        if key.shape[-1] != self.W2.in_features:
            raise ValueError(
                f"key: expected last dim Dk={self.W2.in_features}, got shape {shape_str(key)}"
            )
        q = self.W1(query).unsqueeze(-2)  # (..., L, Hd) -> (..., L, 1, Hd)
        k = self.W2(key).unsqueeze(-3)  # (..., S, Hd) -> (..., 1, S, Hd)
        return self.v(torch.tanh(q + k)).squeeze(-1)  # (..., L, S, Hd) -> (..., L, S)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Additive scores, masked softmax, weighted sum of the values.

        Args:
            query: (..., L, Dq)
            key: (..., S, Dk)
            value: (..., S, Ev)
            mask: optional bool, broadcastable to (..., L, S); True = may attend.

        Returns:
            output: (..., L, Ev); zeros for a query whose mask allows no key.
            weights: (..., L, S)
        """
        return attention_from_scores(self.scores(query, key), value, mask)
