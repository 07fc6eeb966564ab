"""An attention layer computed from known weights: the right one, and one with each classic bug.

``variant`` is the chapter's layer (single-head or multi-head, as a ``Spec`` says) with at most
one bug of ``BUGS``; ``reference`` is the package's own layer holding the same weights. When a
learner's layer disagrees with the reference, ``diagnose`` runs the same weights through each
bug and names the one that gives the learner's numbers; ``BUGS`` holds what the learner hears
of it: the symptom, and where to look. The learner's layer itself is built, read and called
by ``attn.exercises._layer_checker``.

Shape legend: B batch, L tokens, E = d_model, H heads, D = E // H (d_k of a head),
d_k / d_v the sizes of one head's queries/keys and values.
Masks are bool with the chapter's meaning, ``mask == 0`` (False) is blocked, which is also this
package's True = may attend.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ..functional import scaled_dot_product_attention
from ..masks import causal_mask, padding_mask
from ..modules import MultiHeadAttention
from ..language import mark

BATCH, LENGTH = 2, 5
TOLERANCE = 1e-10  # float64: different but correct orders of operations differ by ~1e-15
#: A layer that runs a step in float32 (a softmax in float32, cast back) differs by ~1e-7;
#: every classic bug differs by more than 1e-3 (a test checks it).
ROUND_OFF = 1e-5

#: Each classic bug: (its symptom, where to look). The symptom says what the layer does; the
#: place to look comes on a second try with the same mistake. Neither gives the code of the fix.
BUGS: dict[str, tuple[str, str]] = {
    "no scaling": (
        mark("Your scores are not scaled at all: the softmax gets the raw dot products, and its "
             "weights come out too peaked."),
        mark("the step between the scores and the softmax, against the formula")),
    "scaled by d_k": (
        mark("Your scores are divided by d_k itself: the weights come out flatter than the formula's."),
        mark("what the formula divides the scores by")),
    "scaled by d_model": (
        mark("Your scores are divided by d_model: the scale belongs to the length of the vectors in "
             "each dot product, and it is not d_model itself."),
        mark("the sizes of one query and one key")),
    "scaled by sqrt(d_model)": (
        mark("Your scores are divided by √d_model: each dot product runs over the d_k numbers of one "
             "head's query and key, not over d_model."),
        mark("which size each dot product runs over")),
    "scaled up": (
        mark("Your scores are multiplied by the scale instead of divided by it: the weights come out "
             "far too peaked."),
        mark("the operator that applies the scale")),
    "scaled by sqrt(d_v)": (
        mark("Your scores are divided by √d_v: the scale comes from the size of the queries and "
             "keys, whose dot products the scores are; the values play no part in the scores."),
        mark("which of the layer's sizes the scale is computed from")),
    "scaled after the softmax": (
        mark("Each row of your weights sums to the same number below 1, not to 1: the scale reaches "
             "the weights instead of the scores."),
        mark("the order of the steps: scores, scale, mask, softmax")),
    "softmax over the queries": (
        mark("Your softmax runs over the queries: each column of your weights sums to 1, where each "
             "query's row should."),
        mark("the dimension the softmax normalises")),
    "softmax over the heads": (
        mark("Your softmax runs over the heads: for each query, the weights should sum to 1 over the "
             "keys of its own head."),
        mark("the dimension the softmax normalises")),
    "softmax over the batch": (
        mark("Your softmax runs over the batch dimension: the sequences of a batch must not share "
             "their weights."),
        mark("the dimension the softmax normalises")),
    "key projection used for the queries": (
        mark("Your scores are symmetric, as if queries and keys were the same vectors: your queries "
             "are made with the key projection, and the query projection is never used."),
        mark("the line that makes the queries")),
    "query projection used for the keys": (
        mark("Your scores are symmetric, as if queries and keys were the same vectors: your keys are "
             "made with the query projection, and the key projection is never used."),
        mark("the line that makes the keys")),
    "keys times queries": (
        mark("Your scores are the transpose of the right ones: row i holds key i's dot products with "
             "every query, where it should hold query i's dot products with every key."),
        mark("the order of the two factors in the scores' product")),
    "heads split without a transpose": (
        mark("Your heads are split with a single view to (B, H, L, d): the shape is right, but each "
             "head gets numbers from several tokens instead of d features of every token."),
        mark("the split into heads, and the order of its dimensions")),
    "values split without a transpose": (
        mark("Your queries and keys are split into heads correctly, but your values are split with "
             "a single view to (B, H, L, d): each head's values mix numbers from several tokens."),
        mark("the split of the values, next to that of the queries")),
    "heads merged without a transpose": (
        mark("Your heads are merged with a view straight from (B, H, L, d): the shape is right, but "
             "each output row mixes several tokens of one head instead of all heads of one token."),
        mark("the merge of the heads, and the order of its dimensions")),
    "mask flipped": (
        mark("Your mask works the wrong way round: your layer blocks the positions the mask allows, "
             "as if True meant blocked (nn.MultiheadAttention's convention for its attn_mask). In the "
             "chapter's convention mask == 0 (False) is blocked."),
        mark("the condition that selects the blocked scores")),
    "mask along the wrong axis": (
        mark("Your mask is lined up with the scores' rows (queries) instead of their columns (keys): "
             "with a causal mask each query sees itself and the future; with a padding mask the "
             "padded queries see nothing, and every query still reads the padding keys."),
        mark("how the mask's dimensions line up with the scores' (queries, keys)")),
    "mask ignored": (
        mark("Your output with a mask is the output without one: forward does not use `mask`."),
        mark("where forward applies the mask, between the scaling and the softmax")),
    "mask over the heads": (
        mark("Your padding mask meets the scores' heads dimension instead of their batch dimension: "
             "sequence b's padding is applied to head b of every sequence. A (B, 1, L) mask against "
             "scores of shape (B, H, L, L) broadcasts that way; the mask needs a dimension of its own "
             "for the heads."),
        mark("the shape of the mask where it meets the scores, dimension by dimension")),
    "keys not transposed": (
        mark("Your scores multiply the queries by K itself, not by its transpose: Q @ K fails unless "
             "the length L equals d_k, and with L = d_k (the checker tried it) your layer runs and "
             "gives Q K instead of the dot products of queries and keys."),
        mark("the shapes of the two factors of the scores' product, (L, d_k) and (d_k, L)")),
    "weights transposed before the values": (
        mark("Your weights are right, but your output multiplies their transpose by the values: output "
             "row i should average the values with query i's weights (row i of the weights), not with "
             "the weights every query gives key i (column i)."),
        mark("the product that makes the output from the weights and the values")),
    "no output projection": (
        mark("Your output skips the output projection: the concatenated heads come out as they are."),
        mark("the last step of forward")),
}


@dataclass(frozen=True)
class Spec:
    """What is being checked: a single head (heads=None) or a multi-head layer."""

    name: str  # "SelfAttention" or "MultiHeadAttention", for messages
    args: tuple[int, ...]  # the constructor's arguments
    arg_names: str  # "d_model, d_k, d_v"
    d_model: int
    d_k: int  # per head
    d_v: int  # per head
    heads: int | None

    @property
    def roles(self) -> tuple[str, ...]:
        return ("q", "k", "v") if self.heads is None else ("q", "k", "v", "o")

    def shapes(self) -> dict[str, tuple[int, int]]:
        """(out_features, in_features) of each projection."""
        if self.heads is None:
            return {"q": (self.d_k, self.d_model), "k": (self.d_k, self.d_model),
                    "v": (self.d_v, self.d_model)}
        E = self.d_model
        return {role: (E, E) for role in self.roles}

    def output_shape(self) -> tuple[int, ...]:
        return (BATCH, LENGTH, self.d_v if self.heads is None else self.d_model)

    def weights_shape(self) -> tuple[int, ...]:
        if self.heads is None:
            return (BATCH, LENGTH, LENGTH)
        return (BATCH, self.heads, LENGTH, LENGTH)

    def masks(self) -> list[tuple[str, Tensor | None]]:
        """The three cases: no mask, a causal mask (L, L), a padding mask that broadcasts to the
        scores, (B, 1, L) or (B, 1, 1, L). No query is left without a key. Each case's name is
        English (``tr`` it where it is shown)."""
        pad = padding_mask([LENGTH, LENGTH - 2], max_len=LENGTH)  # (B, 1, 1, L), True = may attend
        if self.heads is None:
            pad = pad[:, 0]  # (B, 1, 1, L) -> (B, 1, L)
        return [(mark("no mask"), None), (mark("a causal mask"), causal_mask(LENGTH)),
                (mark("a padding mask"), pad)]

    def bugs(self) -> tuple[str, ...]:
        """The classic bugs that can show in this layer at any length (√d_v only where d_v differs
        from d_k; a padding mask over the heads only where there are heads)."""
        single = ("no scaling", "scaled by d_k", "scaled by d_model", "scaled by sqrt(d_model)",
                  "scaled up", "scaled after the softmax", "softmax over the queries",
                  "softmax over the batch", "key projection used for the queries",
                  "query projection used for the keys", "keys times queries", "mask flipped",
                  "mask along the wrong axis", "mask ignored", "weights transposed before the values")
        if self.d_v != self.d_k:
            single += ("scaled by sqrt(d_v)",)
        if self.heads is None:
            return single
        return single + ("softmax over the heads", "heads split without a transpose",
                         "values split without a transpose", "heads merged without a transpose",
                         "no output projection", "mask over the heads")

    def square_bugs(self) -> tuple[str, ...]:
        """The classic bugs that run only on a length L = d_k (on any other, the layer raises):
        ``variant`` computes them on such an input (``square_input``)."""
        return ("keys not transposed",)

    def square_input(self) -> Tensor:
        """A seeded input (B, d_k, d_model), of as many tokens as a head's query has numbers."""
        gen = torch.Generator().manual_seed(LENGTH + self.d_k)
        return torch.randn(BATCH, self.d_k, self.d_model, generator=gen, dtype=torch.float64)


Params = dict[str, tuple[Tensor, Tensor | None]]  # role -> (weight (out, in), bias or None)


def variant(x: Tensor, params: Params, mask: Tensor | None, spec: Spec, bug: str | None,
            fill: float = float("-inf")) -> Tensor:
    """The chapter's layer, with at most one classic bug, on ``x`` (B, L, E). Returns the output.

    ``bug=None`` is the correct layer (a test checks it against the package's). ``fill`` is
    what blocked scores get: the chapter's -inf or the article's -1e9.
    """
    if bug is not None and bug not in BUGS:
        raise ValueError(f"bug: expected None or one of {sorted(BUGS)}, got {bug!r}")
    B, L, E = x.shape
    q = F.linear(x, *params["k" if bug == "key projection used for the queries" else "q"])
    k = F.linear(x, *params["q" if bug == "query projection used for the keys" else "k"])
    v = F.linear(x, *params["v"])  # (B, L, d_k), (B, L, d_k), (B, L, d_v) or all (B, L, E)
    H = spec.heads
    if H is not None:
        D = E // H
        split_wrongly = {"heads split without a transpose": "qkv",
                         "values split without a transpose": "v"}.get(bug, "")
        q, k, v = (t.reshape(B, H, L, D) if role in split_wrongly  # (B, L, E) -> (B, H, L, D) wrongly
                   else t.reshape(B, L, H, D).transpose(1, 2)  # (B, L, E) -> (B, H, L, D)
                   for role, t in zip("qkv", (q, k, v)))
    scale = {"no scaling": 1.0, "scaled by d_k": spec.d_k, "scaled by d_model": spec.d_model,
             "scaled by sqrt(d_model)": math.sqrt(spec.d_model), "scaled up": 1 / math.sqrt(spec.d_k),
             "scaled by sqrt(d_v)": math.sqrt(spec.d_v), "scaled after the softmax": 1.0,
             }.get(bug, math.sqrt(spec.d_k))
    if bug == "keys times queries":
        scores = k @ q.transpose(-2, -1) / scale  # (..., L, d) @ (..., d, L) -> (..., L, L), transposed
    elif bug == "keys not transposed":
        scores = q @ k / scale  # (..., L, d) @ (..., L, d) -> (..., L, d): runs only where L = d
    else:
        scores = q @ k.transpose(-2, -1) / scale  # (..., L, d) @ (..., d, L) -> (..., L, L)
    if mask is not None and bug != "mask ignored":
        if bug == "mask along the wrong axis":
            mask = mask.transpose(-2, -1)  # (L, L) -> (L, L)ᵀ; (B, [1,] 1, L) -> (B, [1,] L, 1)
        if bug == "mask over the heads" and mask.dim() == 4:
            mask = mask[:, 0]  # (B, 1, 1, L) -> (B, 1, L), which meets (B, H, L, L) as (1, B, 1, L)
        blocked = mask if bug == "mask flipped" else ~mask
        scores = scores.masked_fill(blocked, fill)
    dim = {"softmax over the queries": -2, "softmax over the heads": 1,
           "softmax over the batch": 0}.get(bug, -1)
    weights = torch.softmax(scores, dim=dim)  # (..., L, L)
    if bug == "scaled after the softmax":
        weights = weights / math.sqrt(spec.d_k)
    if bug == "weights transposed before the values":
        weights = weights.transpose(-2, -1)  # (..., L, L): column i where row i belongs
    out = weights @ v  # (..., L, L) @ (..., L, d) -> (..., L, d)
    if H is None:
        return out  # (B, L, d_v)
    if bug == "heads merged without a transpose":
        out = out.reshape(B, L, E)  # (B, H, L, D) -> (B, L, E) wrongly
    else:
        out = out.transpose(1, 2).reshape(B, L, E)  # (B, H, L, D) -> (B, L, H, D) -> (B, L, E)
    return out if bug == "no output projection" else F.linear(out, *params["o"])


def reference(x: Tensor, params: Params, mask: Tensor | None, spec: Spec) -> tuple[Tensor, Tensor]:
    """The package's layer with ``params``: output and weights (per head)."""
    if spec.heads is None:
        q, k, v = (F.linear(x, *params[role]) for role in "qkv")  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        return scaled_dot_product_attention(q, k, v, mask)
    with torch.random.fork_rng(devices=[]):  # its init (overwritten below) must not move the RNG
        layer = MultiHeadAttention(spec.d_model, spec.heads, bias=True).to(x.dtype)
    with torch.no_grad():
        for role, lin in zip("qkvo", (layer.W_q, layer.W_k, layer.W_v, layer.W_o)):
            weight, bias = params[role]
            lin.weight.copy_(weight)
            lin.bias.copy_(torch.zeros_like(lin.bias) if bias is None else bias)
        return layer(x, mask=mask)


def same(got: Tensor, expected: Tensor, atol: float = TOLERANCE) -> bool:
    """Same shape and the same numbers to ``atol`` (NaN equals NaN)."""
    return (tuple(got.shape) == tuple(expected.shape)
            and bool(torch.allclose(got.double(), expected, atol=atol, rtol=0, equal_nan=True)))


def diagnose(params: Params, spec: Spec, x: Tensor, mask: Tensor | None, got: Tensor,
             bugs: tuple[str, ...] | None = None) -> str | None:
    """The classic bug of ``bugs`` (default ``spec.bugs()``) whose output is ``got`` (to float32
    round-off) with the weights ``params``, or None. Fully blocked rows (a flipped mask makes
    some) give NaN under -inf and uniform weights under -1e9: both fills are tried."""
    for bug in spec.bugs() if bugs is None else bugs:
        for fill in (float("-inf"), -1e9):
            if same(got, variant(x, params, mask, spec, bug, fill), ROUND_OFF):
                return bug
    return None
