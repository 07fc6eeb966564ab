"""Checkers of notebook 07: right answers pass, common mistakes get a hint, none leaks the answer.
A test that takes ``language`` runs in English and in Chinese, and hears each reply in both
(tests/_replies.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attn.blockwise import causal_blocks
from attn.exercises import nb07

from _replies import reply, says


def _online(rule: str = "right"):
    """A learner's online_softmax(blocks) -> (m, l): right, or with one classic slip."""
    def fn(blocks):
        m, total = -math.inf, 0.0
        for block in blocks:
            block_max = block.max().item()
            m_new = block_max if rule == "block_max" else max(m, block_max)
            shift = 0.0 if rule == "no_shift" else m_new
            exps = torch.exp(block - shift).sum().item()
            if rule == "no_rescale" or rule == "no_shift":
                total = total + exps
            elif rule == "flipped":
                total = total * math.exp(m_new - m) + exps  # inf * 0 on the first block
            elif rule == "flipped_guarded":
                total = (total * math.exp(m_new - m) if total else 0.0) + exps
            elif rule == "last_block":
                total = exps
            else:
                total = total * math.exp(m - m_new) + exps
            m = m_new
        return m, total
    return fn


def _two_pass_cat(blocks):
    """The plain two-pass softmax: keep the scores, their maximum, then exp and sum."""
    scores = torch.cat(list(blocks))
    m = scores.max()
    return m, torch.exp(scores - m).sum()


def _two_pass_twice(blocks):
    """The two-pass softmax that walks the blocks twice."""
    m = max(block.max().item() for block in blocks)
    return m, sum(torch.exp(block - m).sum().item() for block in blocks)


def _tensor_state(blocks):
    """Right, with the running state kept as tensors (the form OnlineSoftmax uses)."""
    m, total = torch.tensor(-math.inf, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64)
    for block in blocks:
        m_new = torch.maximum(m, block.max())
        total = total * torch.exp(m - m_new) + torch.exp(block - m_new).sum()
        m = m_new
    return m, total


def test_weights_bytes(language):
    B, H, L = nb07.WEIGHTS_B, nb07.WEIGHTS_H, nb07.WEIGHTS_L
    right = B * H * L * L * 4
    check = nb07.check_weights_bytes
    assert reply(check, right).correct
    assert reply(check, float(right)).correct
    assert reply(check, torch.tensor(right)).correct
    for wrong, hint in ((right // 4, "each float32 entry takes 4 bytes"),
                        (L * L * 4, "one L x L matrix per head"),
                        (right * 2, "at 4 bytes each"), (123, "Multiply")):
        fb = reply(check, wrong)
        assert not fb.correct and says(fb, hint)
        assert str(right) not in fb.message
    assert says(reply(check, None), "Replace None")
    assert says(reply(check, [1, 2]), "should be one whole number")
    assert says(reply(check, 2.5), "should be a whole number")
    assert not reply(check, True).correct


def test_online_softmax_accepts_right_ones(language):
    nb07.ONLINE_SOFTMAX_HINTS.reset()
    assert reply(nb07.check_online_softmax, _online()).correct
    assert reply(nb07.check_online_softmax, _tensor_state).correct
    assert reply(nb07.check_online_softmax, lambda blocks: tuple(_tensor_state(blocks))).correct


@pytest.mark.parametrize("fn, symptom, where", [
    (_online("no_rescale"), "adds up sums taken against different maxima", "when m grows"),
    (_online("no_shift"), "exp(1000) overflows", "subtracted from the scores"),
    (_online("flipped"), "NaN, even on blocks that are never overwritten", "m is still -inf"),
    (_online("flipped_guarded"), "rescaled the wrong way", "sign of the exponent"),
    (_online("block_max"), "last block's maximum", "the old m and the block"),
    (_online("last_block"), "only the last block's sum", "the old l must stay"),
    (_two_pass_cat, "goes over the scores twice", "one pass is enough"),
    (_two_pass_twice, "goes over the scores twice", "one pass is enough"),
])
def test_online_softmax_names_each_mistake_then_where_to_look(fn, symptom, where, language):
    nb07.ONLINE_SOFTMAX_HINTS.reset()
    first = reply(nb07.check_online_softmax, fn)
    assert not first.correct and says(first, symptom), first.message
    assert not says(first, "Where to look")
    second = reply(nb07.check_online_softmax, fn)
    assert not second.correct and second.message.startswith(first.message), second.message
    assert says(second, "Where to look") and says(second, where), second.message
    for fb in (first, second):  # no message gives the rule away
        assert "exp(m - m_new)" not in fb.message and "exp(old max - new max)" not in fb.message


def test_two_pass_softmax_is_right_on_kept_blocks_but_rejected():
    # the two-pass formula is right: on blocks it may keep, it gives OnlineSoftmax's (m, l)...
    scores = torch.linspace(-2.0, 6.0, 11, dtype=torch.float64)
    blocks = [scores[j:j + 3] for j in range(0, 11, 3)]
    m, total = _two_pass_cat(blocks)
    assert math.isclose(m.item(), 6.0) and math.isclose(total.item(), torch.exp(scores - 6.0).sum().item())
    # ...and the stream, which overwrites a block once the next is asked for, catches it
    stream = nb07.BlockStream(scores, 3)
    m, total = _two_pass_cat(stream)
    assert math.isnan(m.item())
    assert list(stream) == [] and stream.passes == 2
    nb07.ONLINE_SOFTMAX_HINTS.reset()
    assert not nb07.check_online_softmax(_two_pass_cat).correct


def test_online_softmax_input_errors(language):
    nb07.ONLINE_SOFTMAX_HINTS.reset()
    check = nb07.check_online_softmax
    fb = reply(check, lambda blocks: 1 / 0)
    assert not fb.correct and says(fb, "raised {error}", error="ZeroDivisionError")

    def todo(blocks):
        raise NotImplementedError

    assert says(reply(check, todo), "Not implemented yet")
    assert says(reply(check, lambda blocks: 3.0), "Return two numbers")
    fb = reply(check, lambda blocks: (next(iter(blocks)).max(), 1.0))
    assert not fb.correct and says(fb, "stopped reading after {read} of", read=1)
    fb = reply(check, lambda blocks: (torch.cat(list(blocks)).softmax(0), 1.0))
    assert not fb.correct and says(fb, "no library softmax")
    assert says(reply(check, None), "Replace None")
    assert says(reply(check, 3), "should be a function")
    def top(blocks):
        return max(b.max().item() for b in blocks)

    for answer, hint in [(lambda blocks: (top(blocks), 1.0), "your m is right but l is not"),
                         (lambda blocks: (top(blocks), math.inf), "exp(1000) overflows"),
                         (lambda blocks: ([b for b in blocks] and 0.0, 1.0),
                          "your m is not the largest score")]:
        nb07.ONLINE_SOFTMAX_HINTS.reset()
        fb = reply(check, answer)
        assert not fb.correct and says(fb, hint), fb.message
    # softmax works again after the checker switched it off
    assert torch.allclose(torch.softmax(torch.zeros(2), 0), torch.full((2,), 0.5))


def test_causal_pairs(language):
    L, bq, bk = nb07.CAUSAL_L, nb07.CAUSAL_QUERY_BLOCK, nb07.CAUSAL_KEY_BLOCK
    right = causal_blocks(L, block_size=bk, query_block_size=bq)
    full = math.ceil(L / bq) * math.ceil(L / bk)
    check = nb07.check_causal_pairs
    assert right < full
    assert reply(check, right).correct
    assert reply(check, np.int64(right)).correct
    fb = reply(check, full)
    assert not fb.correct and says(fb, "That is every pair")
    fb = reply(check, full // 2)
    assert not fb.correct and says(fb, "the blocks on the diagonal are computed too")
    fb = reply(check, right + 1)
    assert not fb.correct and str(right) not in fb.message
    assert says(reply(check, None), "Replace None")


@pytest.mark.parametrize("checker", [nb07.check_weights_bytes, nb07.check_online_softmax,
                                     nb07.check_causal_pairs])
def test_feedback_renders(checker):
    fb = checker(None)
    assert repr(fb).startswith("❌ Not yet.") and "<span" in fb._repr_html_()


def test_the_success_message_claims_no_pass_it_cannot_see():
    """A two-pass softmax over copies of every block is right and gets through (copying is ruled
    out by the exercise's text, not by the checker): the reply says what it checked, not "one pass"."""
    def copied_then_two_passes(blocks):
        kept = torch.cat([block.clone() for block in blocks])
        m = kept.max()
        return m, torch.exp(kept - m).sum()

    fb = nb07.check_online_softmax(copied_then_two_passes)
    assert fb.correct, fb.message
    assert "one pass, two numbers kept" not in fb.message and "cannot see whether you copied" in fb.message
