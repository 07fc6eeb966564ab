"""Checkers for notebook 13 (a character-level language model). Each returns a ``Feedback``;
none reveals the answer.

1. ``check_untrained_loss``: the loss an untrained model starts at, on the learner's text
   (log V of its vocabulary, in nats); the usual slips (bits, log10, V itself, 1/V) are named.
2. ``check_feed_forward_residual``: a prediction ("higher", "lower" or "about the same"):
   what the held-out loss of a deep model does when the residual around its feed-forward is
   removed. The checker then trains both models and says what it measured when the
   prediction holds, and why to think again when it does not.
3. ``check_top_k``: a learner's ``top_k_filter(probs, k)``; the classic slips (k + 1 kept,
   no renormalising, the k least likely kept, ties with the k-th dropped, the input changed
   in place) are named.

Every text the checkers read is the learner's language's (``attn.language.get_language``).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor

from ..block import TransformerBlock
from ..language import mark, tr
from ..lessons.language_model.corpus import load_corpus
from ..lessons.language_model.model import build_char_lm
from ..lessons.language_model.training import held_out_loss, train_char_lm
from ._base import Feedback, Hints, Refused, as_function, checker

__all__ = ["PREDICTIONS", "RESIDUAL_RUN", "NoFeedForwardResidual", "residual_losses", "check_untrained_loss",
           "check_feed_forward_residual", "top_k_reference", "check_top_k", "TOP_K_HINTS", "TIES", "reset_hints"]

#: The words ``check_feed_forward_residual`` takes (in English, in either language's notebook).
PREDICTIONS = ("higher", "lower", "about the same")
#: The runs the residual exercise compares: a deep, thin model, trained briefly.
RESIDUAL_RUN = {"model": {"d_model": 32, "num_heads": 4, "num_layers": 8, "context": 32},
                "training": {"steps": 100, "batch_size": 16, "lr": 3e-3, "seed": 0}}
#: How far apart (nats per character) the two held-out losses must be to count as a difference.
MARGIN = 0.1

TOP_K_HINTS = Hints()


def reset_hints() -> None:
    """Start the checkers' hints again from the first tier (the symptom alone)."""
    TOP_K_HINTS.reset()


# ---- exercise 1: where training starts -----------------------------------------------------------

@checker
def check_untrained_loss(answer: Any) -> Feedback:
    """Exercise 1: the loss (nats per character) of a model that has learned nothing yet, on the
    text of the notebook's language: log V, V the characters of its vocabulary (within 2%)."""
    if answer is None or answer is ...:
        raise Refused(tr("Replace the placeholder with a number: the loss in nats per character."))
    if isinstance(answer, bool):
        raise Refused(tr("The loss should be one number, got {answer!r}.", answer=answer))
    if isinstance(answer, Tensor) and answer.numel() == 1:
        answer = answer.item()
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise Refused(tr("The loss should be one number, got {kind}.", kind=type(answer).__name__))
    if not math.isfinite(value):
        raise Refused(tr("The loss should be a finite number, got {value}.", value=value))
    V = len(load_corpus().vocab)
    right = math.log(V)
    if abs(value - right) <= 0.02 * right:
        return Feedback(True, tr("An untrained model spreads its guess about evenly over the {V:,} characters, "
                                 "so every character costs about `log V` nats; training is measured against "
                                 "this mark.", V=V))
    slips = [
        (math.log2(V), mark("That is the loss in bits (log base 2); the course's losses are in nats, the "
                            "natural logarithm, as torch.nn.functional.cross_entropy computes them.")),
        (math.log10(V), mark("That is log base 10; cross-entropy uses the natural logarithm.")),
        (float(V), mark("That is the number of characters itself; the loss is the negative logarithm of the "
                        "probability given to the right character.")),
        (1 / V, mark("That is the probability an even guess gives each character; the loss is its negative "
                     "logarithm.")),
        (-right, mark("The sign: the loss is minus the logarithm of a probability below 1, so it is "
                      "positive.")),
        (0.0, mark("A loss of 0 means the model is sure of the right character every time: an untrained "
                   "model knows nothing yet.")),
    ]
    for wrong, message in slips:
        if abs(value - wrong) <= 0.02 * max(abs(wrong), 1e-3):
            return Feedback(False, tr(message))
    return Feedback(False, tr("Not that. An untrained model gives every character of the vocabulary about the "
                              "same probability: which, and what does -log of it come to? Count the "
                              "characters with len(corpus.vocab)."))


# ---- exercise 2: the residual around the feed-forward --------------------------------------------

class NoFeedForwardResidual(TransformerBlock):
    """``attn.TransformerBlock`` (pre-LN) without the residual around its feed-forward:
    x <- x + SA(LN1(x)), then x <- FF(LN2(x)) instead of x + FF(LN2(x))."""

    def forward(self, x: Tensor, mask: Tensor | None = None, *, causal: bool = False, cache: Any = None) -> Tensor:
        self.check_inputs(x, mask, causal, cache)
        x = x + self.attention_sublayer(self.norm1(x), mask, causal, cache=cache)  # (B, L, E)
        return self.feed_forward(self.norm2(x))  # (B, L, E): no "x +"


def residual_losses(language: str | None = None) -> dict[str, float]:
    """The held-out losses of ``RESIDUAL_RUN``'s model, with pre-LN blocks intact ("intact")
    and without the residual around each feed-forward ("without"), trained alike."""
    corpus = load_corpus(language)
    settings = RESIDUAL_RUN
    losses = {}
    for name, block in (("intact", TransformerBlock), ("without", NoFeedForwardResidual)):
        model = build_char_lm(len(corpus.vocab), seed=settings["training"]["seed"], block=block,
                              **settings["model"])
        train_char_lm(model, corpus.train, **settings["training"])
        losses[name] = held_out_loss(model, corpus.held_out)
    return losses


@checker
def check_feed_forward_residual(prediction: Any) -> Feedback:
    """Exercise 2: predict, then run. In a model of 8 pre-LN blocks trained for 100 steps, what
    does the held-out loss do when the residual around each feed-forward is removed (the
    attention's kept)? One of ``PREDICTIONS``; the checker trains both (a few seconds)."""
    if prediction is None or prediction is ...:
        raise Refused(tr("Replace the placeholder with your prediction: one of {words}.",
                         words=", ".join(repr(p) for p in PREDICTIONS)))
    if not isinstance(prediction, str) or prediction.strip().lower() not in PREDICTIONS:
        raise Refused(tr("The prediction should be one of {words}, got {got!r}.",
                         words=", ".join(repr(p) for p in PREDICTIONS), got=prediction))
    prediction = prediction.strip().lower()
    losses = residual_losses()
    gap = losses["without"] - losses["intact"]
    measured = "higher" if gap > MARGIN else "lower" if gap < -MARGIN else "about the same"
    if prediction == measured:
        return Feedback(True, tr("Measured: without the residual around the feed-forward, the held-out loss "
                                 "is higher by more than {margin} nats per character. Each feed-forward now "
                                 "replaces the stream instead of adding to it: what the blocks below wrote, "
                                 "and the characters themselves, reach the top only through {n} feed-forwards, "
                                 "and the gradient reaches the bottom only through them.",
                                 margin=MARGIN, n=RESIDUAL_RUN["model"]["num_layers"])
                        if measured == "higher" else
                        tr("Measured: {measured}, as you predicted.", measured=tr(measured)))
    return Feedback(False, tr("Ran both: that is not what happened. Think of what a block without that residual "
                              "hands on to the next one (notebook 12, section 2: the residual stream), "
                              "through 8 blocks."))


mark("higher")
mark("lower")
mark("about the same")


# ---- exercise 3: top-k filtering ------------------------------------------------------------------

def top_k_reference(probs: Tensor, k: int) -> Tensor:
    """The k likeliest entries of ``probs`` (V,), every entry tied with the k-th kept too, the
    others set to 0, renormalised to sum to 1."""
    kth = probs.topk(min(k, probs.shape[-1])).values[-1]
    kept = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    return kept / kept.sum()


def _slips(probs: Tensor, k: int) -> dict[str, Tensor]:
    """Each classic slip, by what it gives on ``probs`` (V,) without ties at the k-th (the
    ties are ``_drops_ties``')."""
    order = probs.argsort(descending=True)
    smallest = torch.zeros_like(probs)
    smallest[order[-k:]] = probs[order[-k:]]
    return {
        mark("keeps k + 1 characters: the k-th likeliest is the last one kept, not the first one dropped"):
            top_k_reference(probs, k + 1),
        mark("keeps k - 1 characters: the k-th likeliest must be kept too"): top_k_reference(probs, max(k - 1, 1)),
        mark("does not renormalise: what is kept must sum to 1 again, divide by its sum"):
            torch.where(probs >= probs.topk(k).values[-1], probs, torch.zeros_like(probs)),
        mark("keeps the k least likely characters: sort in descending order (or take `topk`), the likeliest first"):
            smallest / smallest.sum(),
    }


#: The slip of ties, found by ``_drops_ties``.
TIES = mark("keeps exactly k where some characters tie with the k-th: keep every character as likely as "
            "the k-th (compare with its probability, >=)")


def _drops_ties(got: Tensor, probs: Tensor, k: int) -> bool:
    """Whether ``got`` keeps exactly k characters, all among the reference's, renormalised,
    where the reference keeps more (ties with the k-th): whichever of the tied it kept."""
    kept, right = got > 0, top_k_reference(probs, k) > 0
    if int(kept.sum()) != k or int(right.sum()) <= k or bool((kept & ~right).any()):
        return False
    return bool(torch.allclose(got, torch.where(kept, probs, 0.0) / probs[kept].sum(), atol=1e-9, rtol=0))


_PLAIN = torch.tensor([0.05, 0.30, 0.12, 0.25, 0.20, 0.08], dtype=torch.float64)
#: (probabilities, k): no ties; ties away from the k-th; two tied at the k-th; every character.
_CASES = (
    (_PLAIN, 2),
    (torch.tensor([0.4, 0.1, 0.2, 0.05, 0.15, 0.1], dtype=torch.float64), 3),
    (torch.tensor([0.05, 0.30, 0.10, 0.25, 0.20, 0.10], dtype=torch.float64), 4),
    (_PLAIN, 6),
)


@checker
def check_top_k(fn: Callable[[Tensor, int], Tensor]) -> Feedback:
    """Exercise 3: ``fn(probs, k)`` for probs (V,) summing to 1 keeps the k likeliest (and any
    tied with the k-th), zero elsewhere, renormalised; the input left as it was."""
    fn = as_function(fn, "top_k_filter(probs, k)")
    for probs, k in _CASES:
        given = probs.clone()
        try:
            got = fn(given, k)
        except NotImplementedError:
            raise Refused(tr("Not implemented yet: replace the `raise NotImplementedError` line."))
        except Exception as err:  # the learner's code raised: say what, not where
            raise Refused(tr("Your function raised {error}: {message}", error=type(err).__name__, message=err))
        if not torch.equal(given, probs):
            return TOP_K_HINTS.wrong("in place", tr("Your function changed `probs` in place; build a new tensor "
                                                    "(the sampler still needs the full distribution)."),
                                     where=tr("an assignment into `probs`, such as `probs[...] = 0`"))
        if not isinstance(got, Tensor):
            raise Refused(tr("Return a torch.Tensor, got {kind}.", kind=type(got).__name__))
        if got.shape != probs.shape:
            raise Refused(tr("Return the whole vector, shape {shape}, zeros where a character is dropped; got "
                             "shape {got}.", shape=tuple(probs.shape), got=tuple(got.shape)))
        got = got.to(torch.float64)
        if torch.allclose(got, top_k_reference(probs, k), atol=1e-9, rtol=0):
            continue
        if _drops_ties(got, probs, k):
            return TOP_K_HINTS.wrong(TIES, tr("With k = {k}, your filter {slip}.", k=k, slip=tr(TIES)),
                                     where=tr("the line that chooses what to keep"))
        for slip, wrong in _slips(probs, k).items():
            if torch.allclose(got, wrong, atol=1e-9, rtol=0):
                return TOP_K_HINTS.wrong(slip, tr("With k = {k}, your filter {slip}.", k=k, slip=tr(slip)),
                                         where=tr("the line that chooses what to keep, and the last line"))
        return Feedback(False, tr("With k = {k}, some kept probabilities differ: zero all but the k likeliest, "
                                  "then divide by what is left.", k=k))
    return Feedback(True, tr("Your filter keeps the k likeliest characters (and those tied with the k-th), "
                             "renormalised, at every k tried."))
