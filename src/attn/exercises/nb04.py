"""Checkers for notebook 04, multi-head attention: one head's queries, parameters, cost.

1. ``check_head_queries``: a learner's ``head_queries(weight, x, i, num_heads)``, run against
   real ``attn.MultiHeadAttention`` layers of several sizes, every head.
2. ``check_param_count``: the article's layer (biases), counted by hand.
3. ``check_layer_macs``: a learner's ``layer_macs(n, d_model, num_heads)``, compared with the
   multiply-adds ``attn.cost.counts.count_ops`` counts on real layers.
4. ``check_softmax_entries``: what grows with h.

Each returns a ``Feedback`` (right/wrong and a hint). Expected values come from real layers or
``attn.cost.counts`` and are never shown.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from ..cost.counts import count_ops, multi_head_cost
from ..modules import MultiHeadAttention
from ._base import Feedback, as_whole_number

__all__ = [
    "HEAD_QUERY_SIZES",
    "PARAMS_QUESTION",
    "MACS_SIZES",
    "SOFTMAX_QUESTION",
    "check_head_queries",
    "check_param_count",
    "check_layer_macs",
    "check_softmax_entries",
]

#: (d_model, num_heads) of the layers ``check_head_queries`` runs the learner's function on.
HEAD_QUERY_SIZES: tuple[tuple[int, int], ...] = ((8, 2), (12, 3), (16, 4), (6, 1))
#: The article's layer (biases in all four projections).
PARAMS_QUESTION = {"d_model": 96, "num_heads": 6, "bias": True}
#: (n, d_model, num_heads) at which ``check_layer_macs`` compares with real layers.
MACS_SIZES: tuple[tuple[int, int, int], ...] = ((10, 512, 8), (1, 8, 2), (7, 12, 3), (64, 16, 4),
                                                (100, 64, 1), (3, 24, 6))
#: Softmax entries per sequence: h heads vs one full-size head.
SOFTMAX_QUESTION = {"n": 10, "d_model": 512, "num_heads": 8}


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Run the learner's function; an exception becomes a ``Feedback``, not a traceback."""
    try:
        return fn(*args)
    except Exception as e:  # the learner's code: report, do not raise
        return Feedback(False, f"Your function raised {type(e).__name__}: {e}")


def check_head_queries(answer: Any) -> Feedback:
    """Exercise 1: ``answer(weight, x, i, num_heads) -> (B, n, d_k)``, head i's queries X W_i^Q.

    ``weight`` is ``mha.W_q.weight``, (d_model, d_model) stored as nn.Linear stores it (W^Q
    transposed); heads are numbered from 0. Compared, for every head of a seeded
    ``MultiHeadAttention`` of each size in ``HEAD_QUERY_SIZES``, with the layer's own split
    ``mha.split_heads(mha.W_q(x))[:, i]``; the classic slips are recognised by running them.
    """
    if answer is None:
        return Feedback(False, "Replace None with your function head_queries(weight, x, i, num_heads).")
    if not callable(answer):
        return Feedback(False, f"answer should be a function head_queries(weight, x, i, num_heads), "
                               f"got {type(answer).__name__}.")
    g = torch.Generator().manual_seed(4)
    for d_model, h in HEAD_QUERY_SIZES:
        with torch.random.fork_rng():
            torch.manual_seed(d_model * 10 + h)
            mha = MultiHeadAttention(d_model, h).double()
        x = torch.randn(2, 5, d_model, generator=g, dtype=torch.float64)  # (B, n, d_model)
        weight = mha.W_q.weight.detach()  # (d_model out, d_model in): W^Q transposed
        D = d_model // h
        with torch.no_grad():
            right = mha.split_heads(mha.W_q(x))  # (B, n, E) -> (B, h, n, D)
        for i in range(h):
            got = _call(answer, weight.clone(), x.clone(), i, h)
            if isinstance(got, Feedback):
                return got
            if not isinstance(got, torch.Tensor):
                return Feedback(False, f"Return a tensor, got {type(got).__name__}.")
            if tuple(got.shape) != tuple(right[:, i].shape):
                return Feedback(False, f"For d_model = {d_model}, {h} heads and x of shape {tuple(x.shape)}, "
                                       f"return head i's queries only, shape (B, n, d_model // num_heads) = "
                                       f"{tuple(right[:, i].shape)}; got {tuple(got.shape)}.")
            got = got.detach().to(torch.float64)
            if torch.allclose(got, right[:, i], atol=1e-10, rtol=0):
                continue
            block = slice(i * D, (i + 1) * D)
            if torch.allclose(got, x @ weight[:, block], atol=1e-10, rtol=0):
                return Feedback(False, "You took columns of weight. nn.Linear stores W^Q transposed "
                                       "(out, in): head i's block of columns of W^Q is a block of rows of weight.")
            if i + 1 < h and torch.allclose(got, right[:, i + 1], atol=1e-10, rtol=0):
                return Feedback(False, "That is the next head's block: heads are numbered from 0, "
                                       "head i takes columns i * d_k to (i + 1) * d_k - 1.")
            no_transpose = (x @ weight.T).reshape(x.shape[0], h, x.shape[1], D)  # (B, n, E) -> (B, h, n, D)
            if torch.allclose(got, no_transpose[:, i], atol=1e-10, rtol=0):
                return Feedback(False, "You reshaped Q straight to (B, h, n, d_k): that mixes positions "
                                       "into heads. Split the last dim into (h, d_k) first, then move h forward "
                                       "(or take head i's block of columns).")
            return Feedback(False, f"Head {i} of a layer with d_model = {d_model} and {h} heads differs from "
                                   "the layer's own split: Q_i = X W_i^Q, with W_i^Q the columns "
                                   "i * d_k .. (i + 1) * d_k - 1 of W^Q = weight.T.")
    return Feedback(True, "Every head of every layer: head i's queries are X times its own block of "
                          "columns of W^Q, and the split is nothing more.")


def check_param_count(answer: Any) -> Feedback:
    """Parameters of the article's layer (biases) for ``PARAMS_QUESTION``."""
    got = as_whole_number("the parameter count", answer)
    if isinstance(got, Feedback):
        return got
    q = PARAMS_QUESTION
    E, H = q["d_model"], q["num_heads"]
    if got == multi_head_cost(1, E, H, bias=True).params:
        return Feedback(True, "Four (d_model x d_model) matrices plus four bias vectors; "
                              "the number of heads does not enter.")
    if got == multi_head_cost(1, E, H, bias=False).params:
        return Feedback(False, "Right for the chapter's layer (no biases); the article's "
                               "nn.Linear layers have biases too.")
    if got in (3 * E * E, 3 * E * E + 3 * E):
        return Feedback(False, "Don't forget the output projection W^O.")
    if got in (H * 4 * E * E, H * (4 * E * E + 4 * E)):
        return Feedback(False, "The heads share W^Q, W^K, W^V: each head uses d_model / h of "
                               "their columns, so h does not multiply the count.")
    return Feedback(False, "Count W^Q, W^K, W^V and W^O (each d_model x d_model) and one bias "
                           "vector of length d_model per projection.")


def _counted_macs(n: int, d_model: int, h: int) -> int:
    """Multiply-adds of a real ``MultiHeadAttention(d_model, h)`` on one sequence of n tokens."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = MultiHeadAttention(d_model, h)
    x = torch.zeros(1, n, d_model)  # (B, n, d_model): the count depends on shapes only
    return count_ops(lambda: layer(x)).macs


def check_layer_macs(answer: Any) -> Feedback:
    """Exercise 3: ``answer(n, d_model, num_heads)`` = multiply-adds of
    ``attn.MultiHeadAttention(d_model, num_heads)`` on one sequence of n tokens.

    Compared at every size of ``MACS_SIZES`` with what ``attn.cost.counts.count_ops`` counts
    when the real layer runs; the classic slips are recognised by their formulas.
    """
    if answer is None:
        return Feedback(False, "Replace None with your function layer_macs(n, d_model, num_heads).")
    if not callable(answer):
        return Feedback(False, f"answer should be a function layer_macs(n, d_model, num_heads), "
                               f"got {type(answer).__name__}.")
    for n, E, h in MACS_SIZES:
        got = _call(answer, n, E, h)
        if isinstance(got, Feedback):
            return got
        got = as_whole_number(f"layer_macs({n}, {E}, {h})", got)
        if isinstance(got, Feedback):
            return got
        right = _counted_macs(n, E, h)
        if got == right:
            continue
        slips = [
            (3 * n * E * E + 2 * n * n * E, "The output projection W^O is a matrix product too: Concat(heads) W^O."),
            (4 * n * E * E + n * n * E, "Q K^T is one product; the weights times V is another, as large."),
            (h * 4 * n * E * E + 2 * n * n * E, "The projections run once for all heads (one d_model x d_model "
                                                "matrix each), not once per head."),
            (4 * n * E * E + h * 2 * n * n * E, "Each head's Q K^T and weights V use d_k = d_model / h, not "
                                                "d_model: h heads cost what one full-size head costs."),
            (4 * n * E * E, "Q K^T and weights V count too: they are the part that grows with n^2."),
        ]
        for wrong, hint in slips:
            if got == wrong:
                return Feedback(False, f"At n = {n}, d_model = {E}, h = {h}: {hint}")
        return Feedback(False, f"At n = {n}, d_model = {E}, h = {h} your count differs from the layer's. "
                               "Add the four parts of the table of section 6: X W^Q, X W^K, X W^V; "
                               "Q K^T; weights V; Concat(heads) W^O. An (m, k) @ (k, p) product is m k p.")
    return Feedback(True, "At every size, the count of the real layer: 4 n d_model^2 for the four "
                          "projections and 2 n^2 d_model for the two products, whatever h.")


def check_softmax_entries(answer: Any) -> Feedback:
    """(h heads, one full-size head): scores the softmax normalises, for ``SOFTMAX_QUESTION``."""
    if answer is None or answer is ...:
        return Feedback(False, "Replace the placeholder with two numbers: (h heads, one head).")
    try:
        many, one = answer
    except (TypeError, ValueError):
        return Feedback(False, "Give two numbers: (entries with h heads, entries with one head).")
    a, b = as_whole_number("the first number", many), as_whole_number("the second number", one)
    for fb in (a, b):
        if isinstance(fb, Feedback):
            return fb
    q = SOFTMAX_QUESTION
    want_many = multi_head_cost(q["n"], q["d_model"], q["num_heads"]).softmax_entries
    want_one = multi_head_cost(q["n"], q["d_model"], 1).softmax_entries
    if (a, b) == (want_many, want_one):
        return Feedback(True, "Each head has its own n x n map, whatever its size d_k.")
    if (a, b) == (want_one, want_many):
        return Feedback(False, "The other way round: which layer has more maps?")
    if a == b:
        return Feedback(False, "The multiply-adds are equal; the number of score maps is not.")
    return Feedback(False, "Every head scores every query against every key: one n x n map per head.")
