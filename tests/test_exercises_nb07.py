"""Checkers of notebook 07: right answers pass, common mistakes get a hint, none leaks the answer."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attn.blockwise import causal_blocks
from attn.exercises import nb07


def _online(rescale: bool = True, subtract_max: bool = True):
    def fn(scores, block_size):
        m, total = -math.inf, 0.0
        for j in range(0, len(scores), block_size):
            block = scores[j:j + block_size]
            m_new = max(m, block.max().item()) if subtract_max else 0.0
            factor = math.exp(m - m_new) if (rescale and subtract_max) else 1.0
            total = total * factor + torch.exp(block - m_new).sum().item()
            m = m_new
        return torch.exp(scores - m) / total
    return fn


def test_weights_bytes():
    B, H, L = nb07.WEIGHTS_B, nb07.WEIGHTS_H, nb07.WEIGHTS_L
    right = B * H * L * L * 4
    assert nb07.check_weights_bytes(right).correct
    assert nb07.check_weights_bytes(float(right)).correct
    assert nb07.check_weights_bytes(torch.tensor(right)).correct
    for wrong, hint in ((right // 4, "4 bytes"), (L * L * 4, "one L x L matrix per head"),
                        (right * 2, "4 bytes each"), (123, "Multiply")):
        fb = nb07.check_weights_bytes(wrong)
        assert not fb.correct and hint in fb.message
        assert str(right) not in fb.message
    assert "Replace None" in nb07.check_weights_bytes(None).message
    assert "one whole number" in nb07.check_weights_bytes([1, 2]).message
    assert "whole number" in nb07.check_weights_bytes(2.5).message
    assert not nb07.check_weights_bytes(True).correct


def test_online_softmax():
    assert nb07.check_online_softmax(_online()).correct
    fb = nb07.check_online_softmax(_online(rescale=False))
    assert not fb.correct and "exp(old max - new max)" in fb.message
    fb = nb07.check_online_softmax(_online(subtract_max=False))
    assert not fb.correct and "Subtract the running maximum" in fb.message
    fb = nb07.check_online_softmax(lambda s, b: torch.softmax(s, dim=0))
    assert not fb.correct and "must not call softmax" in fb.message
    fb = nb07.check_online_softmax(lambda s, b: s.softmax(0))
    assert not fb.correct and "must not call softmax" in fb.message
    fb = nb07.check_online_softmax(lambda s, b: torch.ones(len(s)) / len(s))
    assert not fb.correct and "running max" in fb.message
    fb = nb07.check_online_softmax(lambda s, b: s[:1])
    assert not fb.correct and "return" in fb.message
    fb = nb07.check_online_softmax(lambda s, b: 1 / 0)
    assert not fb.correct and "ZeroDivisionError" in fb.message
    assert "Replace None" in nb07.check_online_softmax(None).message
    assert "should be a function" in nb07.check_online_softmax(3).message
    # softmax works again after the checker switched it off
    assert torch.allclose(torch.softmax(torch.zeros(2), 0), torch.full((2,), 0.5))


def test_causal_pairs():
    L, bq, bk = nb07.CAUSAL_L, nb07.CAUSAL_QUERY_BLOCK, nb07.CAUSAL_KEY_BLOCK
    right = causal_blocks(L, block_size=bk, query_block_size=bq)
    full = math.ceil(L / bq) * math.ceil(L / bk)
    assert right < full
    assert nb07.check_causal_pairs(right).correct
    assert nb07.check_causal_pairs(np.int64(right)).correct
    fb = nb07.check_causal_pairs(full)
    assert not fb.correct and "every pair" in fb.message
    fb = nb07.check_causal_pairs(full // 2)
    assert not fb.correct and "diagonal" in fb.message
    fb = nb07.check_causal_pairs(right + 1)
    assert not fb.correct and str(right) not in fb.message
    assert "Replace None" in nb07.check_causal_pairs(None).message


@pytest.mark.parametrize("checker", [nb07.check_weights_bytes, nb07.check_online_softmax,
                                     nb07.check_causal_pairs])
def test_feedback_renders(checker):
    fb = checker(None)
    assert repr(fb).startswith("❌ Not yet.") and "<span" in fb._repr_html_()
