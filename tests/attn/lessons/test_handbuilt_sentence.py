"""The hand-built toy self-attention over the chapter's sentence (attn.lessons.handbuilt.sentence)."""
import math

import pytest
import torch

from attn.examples import SENTENCE
from attn.functional import scaled_dot_product_attention
from attn.lessons.handbuilt.sentence import (TOY_FEATURES, TOY_ROLES, toy_attention, toy_embeddings,
                                             toy_projections, toy_scores)


def test_shapes_match_the_sentence():
    x = toy_embeddings()
    w = toy_projections()
    assert x.shape == (len(SENTENCE), len(TOY_FEATURES))
    assert w["W_Q"].shape == w["W_K"].shape == (len(TOY_FEATURES), len(TOY_ROLES))
    assert torch.equal(w["W_V"], torch.eye(len(TOY_FEATURES), dtype=torch.float64))


def test_fresh_copies():
    x = toy_embeddings()
    x.zero_()
    assert toy_embeddings().abs().sum() > 0


def test_toy_attention_is_scaled_dot_product_attention():
    x, w = toy_embeddings(), toy_projections()
    ref_out, ref_w = scaled_dot_product_attention(x @ w["W_Q"], x @ w["W_K"], x @ w["W_V"])
    out, weights = toy_attention()
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_w)
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(SENTENCE), dtype=torch.float64))


@pytest.mark.parametrize("scale", [0.0, 0.5, 2.0])
def test_score_scale_multiplies_scores(scale):
    torch.testing.assert_close(toy_scores(score_scale=scale), scale * toy_scores())
    if scale == 0.0:
        _, w = toy_attention(score_scale=0.0)
        torch.testing.assert_close(w, torch.full_like(w, 1 / len(SENTENCE)))


def test_xuexi_row_reads_like_the_chapter():
    # the toy was built so that 学习 attends most to itself, then its subject 小明
    _, w = toy_attention()
    row = w[SENTENCE.index("学习")]
    order = row.argsort(descending=True).tolist()
    assert SENTENCE[order[0]] == "学习" and SENTENCE[order[1]] == "小明"
    assert row[SENTENCE.index("在")] < row[SENTENCE.index("人工智能")]


@pytest.mark.parametrize("bad, exc, match", [
    (torch.zeros(6, 5, dtype=torch.float64), ValueError, "x: expected 6 features"),
    (torch.zeros(6, dtype=torch.float64), ValueError, "x: expected 2 dims"),
    (torch.zeros(6, 6, dtype=torch.long), TypeError, "x: expected a floating-point"),
    ([[0.0] * 6], TypeError, "x: expected a torch.Tensor"),
])
def test_bad_x(bad, exc, match):
    with pytest.raises(exc, match=match):
        toy_attention(bad)


@pytest.mark.parametrize("bad, exc", [(-1.0, ValueError), (math.inf, ValueError), ("1", TypeError),
                                      (True, TypeError)])
def test_bad_scale(bad, exc):
    with pytest.raises(exc, match="score_scale"):
        toy_scores(score_scale=bad)
