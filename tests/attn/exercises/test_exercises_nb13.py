"""Checkers of notebook 13: every correct way passes, every classic slip is named, and nothing the
notebook prints passes. A test that takes ``language`` runs in English and in Chinese (the text,
and so the right untrained loss, is the language's), and hears each reply in both
(tests/_replies.py)."""
import math

import pytest
import torch

from attn.exercises import nb13
from attn.language import get_language
from attn.lessons.language_model.corpus import load_corpus

from _replies import reply, says


@pytest.fixture(autouse=True)
def first_tier_hints():
    nb13.reset_hints()
    yield
    nb13.reset_hints()


# ---- exercise 1: the untrained loss -------------------------------------------------------------------

def test_untrained_loss_accepts_log_v_in_every_form(language):
    V = len(load_corpus().vocab)
    for answer in (math.log(V), round(math.log(V), 2), torch.tensor(math.log(V)), -math.log(1 / V)):
        assert reply(nb13.check_untrained_loss, answer), answer


def test_untrained_loss_is_the_languages_own(language):
    other = {"en": "zh", "zh": "en"}[get_language()]
    assert not reply(nb13.check_untrained_loss, math.log(len(load_corpus(other).vocab)))


@pytest.mark.parametrize("slip, symptom", [
    (lambda V: math.log2(V), "the loss in bits"),
    (lambda V: math.log10(V), "log base 10"),
    (lambda V: V, "the number of characters itself"),
    (lambda V: 1 / V, "the probability an even guess gives"),
    (lambda V: -math.log(V), "The sign"),
    (lambda V: 0, "A loss of 0"),
])
def test_untrained_loss_names_each_slip(language, slip, symptom):
    got = reply(nb13.check_untrained_loss, slip(len(load_corpus().vocab)))
    assert not got and says(got, symptom), got


def test_untrained_loss_refuses_what_is_not_a_number(language):
    assert says(reply(nb13.check_untrained_loss, None), "Replace the placeholder")
    assert says(reply(nb13.check_untrained_loss, "four"), "should be one number")
    assert says(reply(nb13.check_untrained_loss, [1, 2]), "should be one number")
    assert says(reply(nb13.check_untrained_loss, True), "should be one number")
    assert says(reply(nb13.check_untrained_loss, float("nan")), "finite number")


def test_untrained_loss_refuses_what_the_notebook_prints():
    """The bounds and sizes notebook 13 prints (0.3 nats, 1 nat, the 150 steps, V itself) and the
    shipped model's recorded loss are no answer."""
    V = len(load_corpus("en").vocab)
    for printed in (0.3, 1, 150, V, 1.63, 0.9, 64):
        assert not nb13.check_untrained_loss(printed), printed


# ---- exercise 2: the residual around the feed-forward -------------------------------------------------

def test_the_block_without_the_feed_forward_residual_is_what_it_says():
    torch.manual_seed(0)
    block = nb13.NoFeedForwardResidual(8, 2, 16).eval()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        h = x + block.attention_sublayer(block.norm1(x), None, True)
        assert torch.allclose(block(x, causal=True), block.feed_forward(block.norm2(h)))
        assert not torch.allclose(block(x, causal=True), h + block.feed_forward(block.norm2(h)))


def test_residual_prediction_accepts_the_measured_outcome_and_refuses_the_others(language, monkeypatch):
    monkeypatch.setattr(nb13, "residual_losses", lambda language=None: {"intact": 2.6, "without": 3.3})
    assert says(reply(nb13.check_feed_forward_residual, "higher"), "higher by more than")
    assert reply(nb13.check_feed_forward_residual, " Higher ")
    for wrong in ("lower", "about the same"):
        got = reply(nb13.check_feed_forward_residual, wrong)
        assert not got and says(got, "that is not what happened"), got


def test_residual_prediction_follows_the_measurement(language, monkeypatch):
    """The checker grades by what it measured, not by a stored word."""
    monkeypatch.setattr(nb13, "residual_losses", lambda language=None: {"intact": 2.6, "without": 2.62})
    assert reply(nb13.check_feed_forward_residual, "about the same")
    assert not reply(nb13.check_feed_forward_residual, "higher")


def test_residual_prediction_refuses_what_is_not_one_of_the_words(language):
    assert says(reply(nb13.check_feed_forward_residual, None), "Replace the placeholder with your prediction")
    for bad in ("up", 1, True, ["higher"]):
        assert says(reply(nb13.check_feed_forward_residual, bad), "The prediction should be one of"), bad


def test_removing_the_feed_forward_residual_raises_the_loss_measured():
    """The run the checker makes (English; the Chinese text measured higher by 0.27 when written):
    higher by more than the margin, so that the accepted word is what training shows."""
    losses = nb13.residual_losses("en")
    assert losses["without"] - losses["intact"] > nb13.MARGIN, losses


# ---- exercise 3: top-k -------------------------------------------------------------------------------

def top_k_threshold(probs, k):
    kth = probs.topk(k).values[-1]
    kept = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    return kept / kept.sum()


def top_k_sorted(probs, k):
    values, _ = torch.sort(probs, descending=True)
    out = probs.clone()
    out[probs < values[k - 1]] = 0
    return out / out.sum()


def test_top_k_accepts_correct_ones(language):
    assert reply(nb13.check_top_k, top_k_threshold)
    assert reply(nb13.check_top_k, top_k_sorted)


def test_top_k_names_each_slip(language):
    def k_plus_one(probs, k):
        return top_k_threshold(probs, k + 1)

    def k_minus_one(probs, k):
        return top_k_threshold(probs, max(k - 1, 1))

    def not_renormalised(probs, k):
        return torch.where(probs >= probs.topk(k).values[-1], probs, torch.zeros_like(probs))

    def ascending(probs, k):
        values, _ = torch.sort(probs)  # the smallest first: the wrong way
        out = torch.where(probs <= values[k - 1], probs, torch.zeros_like(probs))
        return out / out.sum()

    def exactly_k(probs, k):
        idx = probs.topk(k).indices
        out = torch.zeros_like(probs)
        out[idx] = probs[idx]
        return out / out.sum()

    def in_place(probs, k):
        probs[probs < probs.topk(k).values[-1]] = 0
        return probs / probs.sum()

    for fn, symptom in ((k_plus_one, "keeps k + 1 characters"), (k_minus_one, "keeps k - 1 characters"),
                        (not_renormalised, "does not renormalise"), (ascending, "keeps the k least likely"),
                        (exactly_k, "keeps exactly k where some characters tie"),
                        (in_place, "in place; build a new tensor")):
        got = reply(nb13.check_top_k, fn)
        assert not got and says(got, symptom), (fn.__name__, got)


def test_top_k_says_where_to_look_on_a_second_try(language):
    def k_plus_one(probs, k):
        return top_k_threshold(probs, k + 1)

    first, second = reply(nb13.check_top_k, k_plus_one), reply(nb13.check_top_k, k_plus_one)
    assert not says(first, "Where to look") and says(second, "Where to look"), (first, second)


def test_top_k_refuses_what_cannot_be_run(language):
    def unwritten(probs, k):
        raise NotImplementedError

    def raises(probs, k):
        return probs[100]

    assert says(reply(nb13.check_top_k, None), "Replace None")
    assert says(reply(nb13.check_top_k, unwritten), "Not implemented yet")
    assert says(reply(nb13.check_top_k, raises), "Your function raised")
    assert says(reply(nb13.check_top_k, lambda probs, k: probs.tolist()), "Return a torch.Tensor")
    assert says(reply(nb13.check_top_k, lambda probs, k: probs[:k]), "Return the whole vector")
    assert not reply(nb13.check_top_k, lambda probs, k: probs)  # nothing dropped


def test_top_k_reference_is_the_samplers():
    """The checker's rule is the one the notebook's sampler applies (``next_char_probabilities``)."""
    from attn.lessons.language_model.generation import next_char_probabilities
    for probs, k in nb13._CASES:
        assert torch.allclose(nb13.top_k_reference(probs, k), next_char_probabilities(probs.log(), top_k=k),
                              atol=1e-12), (probs, k)
