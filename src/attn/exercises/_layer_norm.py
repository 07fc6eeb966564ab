"""Exercise 1 of notebook 12: LayerNorm written out, and its classic slips.

``check_layer_norm(fn)`` runs the learner's ``fn(x, gain, bias, eps)`` on seeded float64
tokens, with every library norm switched off (``norms_switched_off``: the exercise writes
LayerNorm out), and compares it with ``F.layer_norm``; each slip of ``LAYER_NORM_BUGS`` is recognised by
computing what it gives (``layer_norm_variant``), and gets its symptom, then on the next try
with it where to look too (``LAYER_NORM_HINTS``).

Shape legend: B batch, L tokens, E features (d_model).
"""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..language import mark, tr
from . import _layer_bugs, _layer_checker
from ._base import Feedback, Hints, NormCalled, as_function, checker, norms_switched_off, sentence_start, sentences
from ._block_bugs import BUGS, SEED

#: Each classic slip of a hand-written LayerNorm: (symptom, where to look). The three that the
#: block's checker knows too speak as they do there.
LAYER_NORM_BUGS: dict[str, tuple[str, str]] = {
    "norm over the batch": BUGS["norm over the batch"],
    "norm over the sequence": BUGS["norm over the sequence"],
    "norm over the sequence and the features": (
        mark("your LayerNorm takes one mean and one variance over each whole sequence (its tokens and "
             "their features together), as nn.LayerNorm((L, d_model)) would: a token's output then "
             "depends on the other tokens. A LayerNorm normalises the d_model features of each token "
             "on its own."),
        mark("the dimension your norm takes the mean and the variance over")),
    "unbiased variance": BUGS["unbiased variance"],
    "unbiased std plus eps": BUGS["unbiased variance"],  # the Annotated Transformer's LayerNorm
    "eps outside the square root": (
        mark("your LayerNorm adds eps to the standard deviation, after the square root: nn.LayerNorm "
             "divides by sqrt(var + eps). The two differ most where the variance is small."),
        mark("where eps goes in the denominator")),
    "no eps": (
        mark("your LayerNorm leaves eps out: with a large eps (the checker tries eps = 0.5) its output "
             "is far from nn.LayerNorm's, and a token whose features are all equal would give NaN."),
        mark("the denominator, and the argument eps")),
    "not centred": (
        mark("your LayerNorm does not subtract the mean: it divides each token by its root mean square. "
             "That is RMSNorm (used by LLaMA), not the LayerNorm of the 2017 paper."),
        mark("the first step, before the variance")),
    "gain and bias left out": (
        mark("your LayerNorm returns the normalised x without the gain and the bias: each token comes "
             "out with mean 0 and variance 1, and the model could not learn another scale."),
        mark("the last step, after the division")),
    "gain and bias swapped": (
        mark("your LayerNorm multiplies by the bias and adds the gain: the two are swapped."),
        mark("which of gain and bias multiplies and which is added")),
}

#: The tiers of ``check_layer_norm`` (``attn.exercises.nb12.reset_hints`` starts them again).
LAYER_NORM_HINTS = Hints()
#: (B, L, E) of the checker's inputs, and its two eps: a large one first, which shows where eps
#: goes (every slip is far from the right output there), then the usual one.
_LN_SHAPE, _LN_EPS = (2, 5, 8), (0.5, 1e-5)


def layer_norm_variant(x: Tensor, gain: Tensor, bias: Tensor, eps: float, bug: str | None = None) -> Tensor:
    """LayerNorm of x (B, L, E) over its last dim with at most one slip of ``LAYER_NORM_BUGS``;
    ``bug=None`` is ``F.layer_norm`` (a test checks it)."""
    if bug is not None and bug not in LAYER_NORM_BUGS:
        raise ValueError(f"bug: expected None or one of {sorted(LAYER_NORM_BUGS)}, got {bug!r}")
    dims = {"norm over the batch": (0,), "norm over the sequence": (1,),
            "norm over the sequence and the features": (1, 2)}.get(bug, (-1,))
    mean = torch.zeros_like(x) if bug == "not centred" else x.mean(dims, keepdim=True)
    centred = x - mean
    unbiased = bug in ("unbiased variance", "unbiased std plus eps")
    var = (centred ** 2).sum(dims, keepdim=True) / (math.prod(x.shape[d] for d in dims) - unbiased)
    if bug in ("eps outside the square root", "unbiased std plus eps"):
        normed = centred / (var.sqrt() + eps)
    else:
        normed = centred / torch.sqrt(var + (0.0 if bug == "no eps" else eps))
    if bug == "gain and bias left out":
        return normed
    if bug == "gain and bias swapped":
        return normed * bias + gain
    return normed * gain + bias


def _ln_inputs() -> list[tuple[Tensor, Tensor, Tensor, float]]:
    """(x, gain, bias, eps) of each try: tokens with their own mean and scale, then a large eps."""
    gen = torch.Generator().manual_seed(SEED + 2)
    B, L, E = _LN_SHAPE
    x = 3 * torch.randn(B, L, 1, generator=gen, dtype=torch.float64) + torch.randn(
        B, L, E, generator=gen, dtype=torch.float64) * (0.5 + torch.rand(B, L, 1, generator=gen, dtype=torch.float64))
    gain = 1 + 0.3 * torch.randn(E, generator=gen, dtype=torch.float64)
    bias = 0.3 * torch.randn(E, generator=gen, dtype=torch.float64)
    return [(x, gain, bias, eps) for eps in _LN_EPS]


@checker
def check_layer_norm(fn: Any) -> Feedback:
    """Exercise 1: ``fn(x, gain, bias, eps)`` must be ``nn.LayerNorm``'s computation on x (B, L,
    E) with the gain (E,) and the bias (E,): over the last dim, the biased variance, eps inside
    the square root.

    Run on seeded float64 tokens (each with its own mean and scale), with a large eps = 0.5 and
    with eps = 1e-5, with every library norm switched off (``F.layer_norm``, ``nn.LayerNorm``,
    and ``F.group_norm``, ``F.instance_norm`` and ``F.batch_norm``, which make one when called on
    the right dims), and compared with ``F.layer_norm``; each slip of ``LAYER_NORM_BUGS`` is
    recognised by computing what it gives, and gets its symptom, then on the next try with it
    where to look too (``LAYER_NORM_HINTS``); never the code. The inputs must come back unchanged.
    """
    fn = as_function(fn)
    for x, gain, bias, eps in _ln_inputs():
        kept = [t.clone() for t in (x, gain, bias)]
        try:
            with norms_switched_off(tr("the exercise writes LayerNorm out: no library norm")):
                got = fn(x, gain, bias, eps)
        except NormCalled:
            return Feedback(False, tr("Your function calls a library norm (F.layer_norm or nn.LayerNorm, or "
                                      "F.group_norm, F.instance_norm or F.batch_norm, which give a LayerNorm "
                                      "when called on the right dims): the checker switches them off. Write "
                                      "the steps out: the mean, the variance, the division, the gain and "
                                      "the bias."))
        except NotImplementedError:
            return Feedback(False, tr("Not implemented yet: replace the `raise NotImplementedError` line."))
        except Exception as err:  # the learner's code: any error becomes a hint
            return Feedback(False, tr("Your function raised {error}", error=_layer_checker.describe_error(err)))
        if not all(torch.equal(a, b) for a, b in zip(kept, (x, gain, bias))):
            return Feedback(False, tr("Your function changed its inputs in place (x, gain or bias): compute "
                                      "new tensors instead, the caller still needs x."))
        if not isinstance(got, Tensor):
            return Feedback(False, tr("Return a torch.Tensor, got {kind}.", kind=type(got).__name__))
        if tuple(got.shape) != tuple(x.shape):
            return Feedback(False, tr("The output has the shape of x {shape}, got {got}.",
                                      shape=tuple(x.shape), got=tuple(got.shape)))
        want = F.layer_norm(x, (x.shape[-1],), gain, bias, eps)
        if _layer_bugs.same(got, want):
            continue
        for bug, (symptom, where) in LAYER_NORM_BUGS.items():
            if _layer_bugs.same(got, layer_norm_variant(x, gain, bias, eps, bug), _layer_bugs.ROUND_OFF):
                return LAYER_NORM_HINTS.wrong(bug, sentence_start(tr(symptom)), where=tr(where))
        nan = [tr("It contains NaN.")] if bool(got.isnan().any()) else []
        return LAYER_NORM_HINTS.wrong(
            "other", sentences([tr("With eps = {eps:g}, your output differs from nn.LayerNorm's, and not by "
                                   "one of the usual slips.", eps=eps), *nan]),
            where=tr("each step against the formula: the mean and the variance over the last dim, the "
                     "division by sqrt(var + eps), then the gain and the bias"))
    return Feedback(True, tr("Your LayerNorm equals nn.LayerNorm's on every token, with a large eps ({large:g}) "
                             "and with the usual one: each token is centred and scaled over its own {E} "
                             "features.", large=_LN_EPS[0], E=_LN_SHAPE[-1]))
