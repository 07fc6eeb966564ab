"""Checkers for notebook 04, multi-head attention: one head's queries, parameters, cost.

1. ``check_head_queries``: a learner's ``head_queries(weight, x, i, num_heads)``, run against
   real ``attn.MultiHeadAttention`` layers of several sizes, every head.
2. ``check_param_count``: the parameters of the article's layer (biases) at several numbers of
   heads, counted by the learner from the layers' own tensors.
3. ``check_layer_macs``: a learner's ``layer_macs(n, d_model, num_heads, d_k)`` for a layer whose
   heads have a size of their own (h d_k need not be d_model, so the summary's formula does not
   answer it), compared with the multiply-adds ``attn.lessons.cost.counts.count_ops`` counts
   when such layers run.
4. ``check_softmax_entries``: the scores the softmax normalises per sequence, with h heads and
   with one, read by the learner from the weights two real layers return when their queries
   and keys come from sequences of different lengths (the prose's h n^2 does not answer it).

Each returns a ``Feedback`` (right/wrong and a hint). Expected values come from real layers or
``attn.lessons.cost.counts`` and are never shown.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

from ..functional import scaled_dot_product_attention
from ..lessons.cost.counts import attention_cost, count_ops, count_parameters
from ..modules import MultiHeadAttention
from ..language import mark, tr
from ._base import Feedback, Hints, Refused, as_function, as_whole_number, checker

__all__ = [
    "HEAD_QUERY_SIZES",
    "PARAMS_QUESTION",
    "MACS_SIZES",
    "SOFTMAX_QUESTION",
    "PARAM_COUNT_HINTS",
    "SOFTMAX_ENTRIES_HINTS",
    "check_head_queries",
    "check_param_count",
    "check_layer_macs",
    "check_softmax_entries",
]

#: (d_model, num_heads) of the layers ``check_head_queries`` runs the learner's function on.
HEAD_QUERY_SIZES: tuple[tuple[int, int], ...] = ((8, 2), (12, 3), (16, 4), (6, 1))
#: Exercise 2: the article's layer (biases in all four projections) at d_model with each of ``heads``.
PARAMS_QUESTION = {"d_model": 96, "heads": (1, 2, 6), "bias": True}
#: (n, d_model, num_heads, d_k) at which ``check_layer_macs`` compares with layers that run: heads
#: of d_k = d_v numbers each, h d_k equal to d_model only at the first size, above or below it at
#: the others (Gemma 7B has d_model = 3072 and 16 heads of 256: h d_k = 4096).
MACS_SIZES: tuple[tuple[int, int, int, int], ...] = ((10, 512, 8, 64), (1, 8, 2, 8), (7, 12, 3, 2),
                                                     (64, 16, 4, 8), (100, 64, 1, 16), (3, 24, 6, 6),
                                                     (5, 48, 4, 16))
#: Exercise 4: a batch of ``batch`` pairs of sequences, ``queries`` tokens attending to ``keys``
#: tokens, through a layer of num_heads heads and through one of a single full-size head; the
#: scores the softmax normalises per sequence (L x S per head: not the prose's n x n).
SOFTMAX_QUESTION = {"batch": 2, "queries": 5, "keys": 9, "d_model": 96, "num_heads": 6}


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """What the learner's function returns.

    Raises:
        Refused: the function raised; the reply names its error (not a traceback).
    """
    try:
        return fn(*args)
    except Exception as e:  # the learner's code: report, do not raise
        raise Refused(tr("Your function raised {error}: {message}", error=type(e).__name__, message=e))


@checker
def check_head_queries(answer: Any) -> Feedback:
    """Exercise 1: ``answer(weight, x, i, num_heads) -> (B, n, d_k)``, head i's queries X W_i^Q.

    ``weight`` is ``mha.W_q.weight``, (d_model, d_model) stored as nn.Linear stores it (W^Q
    transposed); heads are numbered from 0. Compared, for every head of a seeded
    ``MultiHeadAttention`` of each size in ``HEAD_QUERY_SIZES``, with the layer's own split
    ``mha.split_heads(mha.W_q(x))[:, i]``; the classic slips are recognised by running them.
    """
    head_queries = as_function(answer, "head_queries(weight, x, i, num_heads)")
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
            got = _call(head_queries, weight.clone(), x.clone(), i, h)
            if not isinstance(got, torch.Tensor):
                return Feedback(False, tr("Return a tensor, got {kind}.", kind=type(got).__name__))
            if tuple(got.shape) != tuple(right[:, i].shape):
                return Feedback(False, tr("For d_model = {d_model}, {h} heads and x of shape {x_shape}, "
                                          "return head i's queries only, shape (B, n, d_model // num_heads) = "
                                          "{shape}; got {got}.", d_model=d_model, h=h, x_shape=tuple(x.shape),
                                          shape=tuple(right[:, i].shape), got=tuple(got.shape)))
            got = got.detach().to(torch.float64)
            if torch.allclose(got, right[:, i], atol=1e-10, rtol=0):
                continue
            block = slice(i * D, (i + 1) * D)
            if torch.allclose(got, x @ weight[:, block], atol=1e-10, rtol=0):
                return Feedback(False, tr("You took columns of weight. nn.Linear stores W^Q transposed "
                                          "(out, in): head i's block of columns of W^Q is a block of rows of weight."))
            if i + 1 < h and torch.allclose(got, right[:, i + 1], atol=1e-10, rtol=0):
                return Feedback(False, tr("That is the next head's block: heads are numbered from 0, "
                                          "head i takes columns i * d_k to (i + 1) * d_k - 1."))
            no_transpose = (x @ weight.T).reshape(x.shape[0], h, x.shape[1], D)  # (B, n, E) -> (B, h, n, D)
            if torch.allclose(got, no_transpose[:, i], atol=1e-10, rtol=0):
                return Feedback(False, tr("You reshaped Q straight to (B, h, n, d_k): that mixes positions "
                                          "into heads. Split the last dim into (h, d_k) first, then move h forward "
                                          "(or take head i's block of columns)."))
            return Feedback(False, tr("Head {i} of a layer with d_model = {d_model} and {h} heads differs from "
                                      "the layer's own split: Q_i = X W_i^Q, with W_i^Q the columns "
                                      "i * d_k .. (i + 1) * d_k - 1 of W^Q = weight.T.",
                                      i=i, d_model=d_model, h=h))
    return Feedback(True, tr("Every head of every layer: head i's queries are X times its own block of "
                             "columns of W^Q, and the split is nothing more."))


#: The tiers of ``check_param_count`` (``PARAM_COUNT_HINTS.reset()`` starts again).
PARAM_COUNT_HINTS = Hints()
#: The tiers of ``check_softmax_entries``.
SOFTMAX_ENTRIES_HINTS = Hints()


@checker
def check_param_count(answer: Any) -> Feedback:
    """Exercise 2: ``answer`` = {num_heads: parameter count} for the article's layer,
    ``MultiHeadAttention(d_model, num_heads, bias=True)``, at every h of ``PARAMS_QUESTION``.

    Compared with ``count_parameters`` of the real layers. A wrong count is matched against
    what each classic way of miscounting the layer's tensors gives (their number, their first
    dims, the weights without the biases, three projections without W^O, h times the layer)
    and gets its symptom, then on the next try with it where to look too
    (``PARAM_COUNT_HINTS``).
    """
    hints = PARAM_COUNT_HINTS
    q = PARAMS_QUESTION
    E, heads = q["d_model"], q["heads"]
    if answer is None or answer is ...:
        return Feedback(False, tr("Replace None with a dict {{num_heads: parameter count}} for the heads "
                                  "{heads}.", heads=heads))
    if not isinstance(answer, dict):
        return Feedback(False, tr("answer should be a dict {{num_heads: parameter count}}, got {kind}.",
                                  kind=type(answer).__name__))
    missing = [h for h in heads if h not in answer]
    if missing:
        return Feedback(False, tr("Give a count for every number of heads {heads}; missing: {missing}.",
                                  heads=heads, missing=missing))
    for h in heads:
        got = as_whole_number(tr("the count for {h} heads", h=h), answer[h])
        with torch.random.fork_rng():  # counting only: leave the learner's random state alone
            layer = MultiHeadAttention(E, h, bias=True)
        tensors = list(layer.parameters())
        right = count_parameters(layer)
        if got == right:
            continue
        weights = sum(p.numel() for name, p in layer.named_parameters() if name.endswith("weight"))
        no_out = sum(p.numel() for name, p in layer.named_parameters() if not name.startswith("W_o"))
        slips = [  # (mistake, the count it gives, symptom, where to look)
            ("tensors", len(tensors), mark("{got} is the number of the layer's tensors, not of the numbers in "
             "them."), mark("what counts the entries of one tensor")),
            ("first_dims", sum(p.shape[0] for p in tensors), mark("Your count adds one dimension of each tensor: "
             "a (d_model, d_model) matrix holds more numbers than that."),
             mark("how many entries a 2-D tensor has")),
            ("no_bias", weights, mark("Your count leaves out the biases: the article's nn.Linear layers have "
             "a bias vector each."), mark("the names of the layer's tensors: each projection has two")),
            ("no_out", no_out, mark("Your count leaves out the output projection W^O."),
             mark("the layer's tensors: four projections, not three")),
            ("times_h", h * right, mark("Your count grows with the number of heads: the heads share the "
             "projections, each using its own d_model / h of their columns."),
             mark("whether the layer's tensors change shape with h")),
        ]
        for mistake, wrong, symptom, where in slips:
            if got == wrong:
                symptom = tr(symptom, got=got)
                text = (tr("For {h} heads: {symptom}", h=h, symptom=symptom) if h > 1
                        else tr("For {h} head: {symptom}", h=h, symptom=symptom))
                return hints.wrong(mistake, text, where=tr(where))
        text = (tr("For {h} heads your count differs from the layer's.", h=h) if h > 1
                else tr("For {h} head your count differs from the layer's.", h=h))
        return hints.wrong("other", text, where=tr("every tensor of layers[h], and how many numbers each holds"))
    return Feedback(True, tr("The same count for every h: four (d_model x d_model) matrices and four bias "
                             "vectors; splitting into heads reshapes the projections, it does not add any."))


def _counted_macs(n: int, d_model: int, h: int, d_k: int) -> int:
    """Multiply-adds of a layer of h heads of d_k = d_v numbers each, run once on one sequence of
    n tokens and counted: W^Q, W^K, W^V (d_model, h d_k), attention per head, W^O (h d_k, d_model)."""
    x = torch.zeros(1, n, d_model)  # (B, n, E): the count depends on the shapes only
    W_q, W_k, W_v = (torch.zeros(h * d_k, d_model) for _ in range(3))  # (out, in), as nn.Linear keeps them
    W_o = torch.zeros(d_model, h * d_k)

    def forward() -> torch.Tensor:
        q, k, v = (F.linear(x, W).view(1, n, h, d_k).transpose(1, 2)  # (1, n, h d_k) -> (1, h, n, d_k)
                   for W in (W_q, W_k, W_v))
        heads, _ = scaled_dot_product_attention(q, k, v)  # (1, h, n, d_k)
        return F.linear(heads.transpose(1, 2).reshape(1, n, h * d_k), W_o)  # (1, h, n, d_k) -> (1, n, E)

    return count_ops(forward).macs


@checker
def check_layer_macs(answer: Any) -> Feedback:
    """Exercise 3: ``answer(n, d_model, num_heads, d_k)`` = multiply-adds, on one sequence of n
    tokens, of a layer whose num_heads heads have d_k = d_v numbers each: W^Q, W^K, W^V of shape
    (d_model, h d_k), W^O of shape (h d_k, d_model).

    Compared at every size of ``MACS_SIZES`` with what ``attn.lessons.cost.counts.count_ops``
    counts when such a layer runs; the summary's formula (d_k = d_model / h) and the classic slips
    are recognised by their formulas.
    """
    layer_macs = as_function(answer, "layer_macs(n, d_model, num_heads, d_k)")
    for n, E, h, d in MACS_SIZES:
        got = as_whole_number(f"layer_macs({n}, {E}, {h}, {d})", _call(layer_macs, n, E, h, d))
        right = _counted_macs(n, E, h, d)
        if got == right:
            continue
        P = h * d  # the columns of W^Q: every head's d_k side by side
        slips = [
            (4 * n * E * E + 2 * n * n * E, mark("That is the summary's count, for heads of d_model / h numbers. Here "
                                                 "the heads have d_k numbers each: W^Q maps d_model numbers to h d_k, "
                                                 "and each head's products run over its own d_k.")),
            (4 * n * E * E + 2 * h * n * n * d, mark("Your projections map d_model numbers to d_model: here W^Q, W^K "
                                                     "and W^V are (d_model, h d_k), and W^O is (h d_k, d_model).")),
            (3 * n * E * P + 2 * h * n * n * d, mark("The output projection W^O is a matrix product too: "
                                                     "Concat(heads) W^O.")),
            (4 * n * E * P + h * n * n * d, mark("Q K^T is one product; the weights times V is another, as large.")),
            (h * 4 * n * E * P + 2 * h * n * n * d, mark("The projections run once for all heads (one matrix each, "
                                                         "every head's columns side by side), not once per head.")),
            (4 * n * E * P + 2 * h * n * n * E, mark("Each head's Q K^T and weights V run over its own d_k "
                                                     "numbers, not over d_model.")),
            (4 * n * E * P + 2 * n * n * d, mark("Q K^T and weights V run once per head: h times.")),
            (4 * n * E * P, mark("Q K^T and weights V count too: they are the part that grows with n^2.")),
        ]
        for wrong, hint in slips:
            if got == wrong:
                return Feedback(False, tr("At n = {n}, d_model = {E}, h = {h}, d_k = {d}: {hint}",
                                          n=n, E=E, h=h, d=d, hint=tr(hint)))
        return Feedback(False, tr("At n = {n}, d_model = {E}, h = {h}, d_k = {d} your count differs from the "
                                  "layer's. Add the parts: X W^Q, X W^K, X W^V; Q K^T and weights V in every "
                                  "head; Concat(heads) W^O. An (m, k) @ (k, p) product is m k p.",
                                  n=n, E=E, h=h, d=d))
    return Feedback(True, tr("At every size, the count of the layer that ran: 4 n d_model h d_k for the four "
                             "projections and 2 h n^2 d_k for the products of the heads. With h d_k = d_model "
                             "it is the summary's count: the width h d_k of all heads together sets the cost, "
                             "not h alone."))


@checker
def check_softmax_entries(answer: Any) -> Feedback:
    """Exercise 4: (h heads, one full-size head), the scores the softmax normalises per
    sequence for ``SOFTMAX_QUESTION``, read from the weights the two layers return.

    The classic slips are recognised by their numbers: the whole batch counted, the rows of the
    weights (one softmax each) instead of their entries, the pair swapped, the same count for
    both. The first wrong try with one hears its symptom, the next where to look too
    (``SOFTMAX_ENTRIES_HINTS``).
    """
    hints = SOFTMAX_ENTRIES_HINTS
    if answer is None or answer is ...:
        return Feedback(False, tr("Replace the placeholder with two numbers: (h heads, one head)."))
    try:
        many, one = answer
    except (TypeError, ValueError):
        return Feedback(False, tr("Give two numbers: (entries with h heads, entries with one head)."))
    a, b = as_whole_number(tr("the first number"), many), as_whole_number(tr("the second number"), one)
    q = SOFTMAX_QUESTION
    B, L, S, h = q["batch"], q["queries"], q["keys"], q["num_heads"]
    want_many = attention_cost(L, q["d_model"], h, S=S).softmax_entries
    want_one = attention_cost(L, q["d_model"], 1, S=S).softmax_entries
    if (a, b) == (want_many, want_one):
        return Feedback(True, tr("Each head has its own L x S map, whatever its size d_k: h times the scores "
                                 "of one full-size head, for the same multiply-adds."))
    slips = [  # (mistake, the pair it gives, symptom, where to look)
        ("square", (h * L * L, L * L), mark("Your counts are for maps of L x L: the keys come from the other "
         "sequence, of S tokens."), mark("the last dim of the weights: one score per key")),
        ("square", (h * S * S, S * S), mark("Your counts are for maps of S x S: the queries come from the "
         "sequence of L tokens."), mark("the last two dims of the weights: one row per query")),
        ("batch", (B * want_many, B * want_one), mark("Your numbers count both sequences of the batch; the "
         "question asks per sequence."), mark("the first dim of the weights")),
        ("rows", (h * L, L), mark("Your numbers count rows of the weights (one softmax each), not the scores "
         "in them."), mark("the last two dims of the weights: one score per (query, key) pair")),
        ("rows", (B * h * L, B * L), mark("Your numbers count rows of the weights (one softmax each), and for "
         "the whole batch."), mark("the last two dims of the weights, and the first")),
        ("swapped", (want_one, want_many), mark("Your pair is the other way round."),
         mark("which layer returns more maps")),
    ]
    for mistake, wrong, symptom, where in slips:
        if (a, b) == wrong:
            return hints.wrong(mistake, tr(symptom), where=tr(where))
    if a == b:
        return hints.wrong("equal", tr("Your two counts are equal: the multiply-adds of the two layers are, "
                                       "but the number of score maps is not."),
                           where=tr("the head dim of each layer's weights"))
    return hints.wrong("other", tr("Not the scores the softmax normalises per sequence."),
                       where=tr("the shape of the weights each layer returns, (B, H, L, S)"))
