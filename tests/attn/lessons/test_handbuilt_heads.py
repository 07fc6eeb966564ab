import math

import pytest
import torch

from attn.examples import TWO_SENTENCE_PHRASES, TWO_SENTENCE_SEGMENTS, TWO_SENTENCE_TOKENS
from attn.lessons.handbuilt import heads as P
from attn.functional import scaled_dot_product_attention
from attn.masks import causal_mask


def _cos(q, k):
    return (q @ k.T) / (q.norm(dim=-1)[:, None] * k.norm(dim=-1)[None, :])


@pytest.mark.parametrize("d_k", [1, 2, 3, 8, 16, 17, 64])
@pytest.mark.parametrize("strength", [0.25, 1.0, 2.0])
@pytest.mark.parametrize("kind", ["diagonal", "vertical", "block", "random"])
def test_size_convention_and_score_formula(kind, d_k, strength):
    n = 12
    if kind == "diagonal":
        q, k = P.diagonal_qk(n, d_k, strength=strength, offset=-1, width=1.0)
    elif kind == "vertical":
        q, k = P.vertical_qk(n, d_k, strength=strength, key=3)
    elif kind == "block":
        q, k = P.block_qk(TWO_SENTENCE_PHRASES, d_k, strength=strength)
    else:
        q, k = P.random_qk(n, d_k, strength=strength, seed=1)
    assert q.shape == k.shape == (n, d_k) and q.dtype == torch.float64
    if kind != "random":  # RMS coordinate size sqrt(strength), exactly
        size = torch.full((n,), strength * d_k, dtype=torch.float64)
        torch.testing.assert_close((q * q).sum(-1), size)
        torch.testing.assert_close((k * k).sum(-1), size)
        # q.k = strength * d_k * cosine
        torch.testing.assert_close(q @ k.T, strength * d_k * _cos(q, k))


@pytest.mark.parametrize("d_k", [16, 32, 128])
@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 2])
def test_sharp_diagonal_is_orthogonal_off_its_line(d_k, offset):
    n = 12
    q, k = P.diagonal_qk(n, d_k, offset=offset)
    c = _cos(q, k)
    for i in range(n):
        for j in range(n):
            expected = 1.0 if j == i + offset else 0.0
            assert c[i, j].item() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("d_k", [2, 4, 8])
def test_positional_codes_repeat_every_2_d_k(d_k):
    q, k = P.diagonal_qk(2 * d_k + 1, d_k)
    c = _cos(q, k)
    assert c[0, 2 * d_k].item() == pytest.approx(1.0)  # looks like key 0 itself
    assert c[0, d_k].item() == pytest.approx(-1.0)


def test_width_gives_neighbours_a_positive_cosine_that_falls_off():
    q, k = P.diagonal_qk(12, 32, width=1.0)
    row = _cos(q, k)[5]
    assert row.argmax().item() == 5
    assert 0.3 < row[4].item() < 1 and row[4].item() == pytest.approx(row[6].item())
    assert row[3].item() < row[4].item()


def test_d_k_1_makes_diagonal_and_block_flat():
    for q, k in (P.diagonal_qk(6, 1), P.block_qk([0, 0, 1, 1, 2, 2], 1)):
        w = P.head_weights(q, k)
        torch.testing.assert_close(w, torch.full((6, 6), 1 / 6, dtype=torch.float64))


@pytest.mark.parametrize("d_k", [1, 2, 16])
@pytest.mark.parametrize("key", [0, 3, -1])
def test_vertical_every_query_peaks_on_the_key(d_k, key):
    q, k = P.vertical_qk(8, d_k, strength=1.0, key=key)
    w = P.head_weights(q, k)
    assert (w.argmax(-1) == key % 8).all()
    assert torch.allclose(w, w[0].expand_as(w))  # every row the same


def test_block_rows_are_uniform_inside_the_segment():
    segments = [0, 1, 1, 1, 2, 2]
    q, k = P.block_qk(segments, 8, strength=1.0)
    w = P.head_weights(q, k)
    for i, s in enumerate(segments):
        inside = [j for j, t in enumerate(segments) if t == s]
        assert torch.allclose(w[i, inside], w[i, inside[0]].expand(len(inside)))
        assert w[i, inside].sum() > 0.5


def test_block_with_more_segments_than_d_k_reuses_directions():
    q, _ = P.block_qk([0, 1, 2], 2)
    assert torch.allclose(q[0], q[2]) and not torch.allclose(q[0], q[1])


def test_random_qk_grows_by_adding_coordinates_and_keeps_scaled_spread():
    q8, k8 = P.random_qk(12, 8, seed=3)
    q64, k64 = P.random_qk(12, 64, seed=3)
    assert torch.equal(q64[:, :8], q8) and torch.equal(k64[:, :8], k8)
    big_q, big_k = P.random_qk(12, 128, strength=1.0, seed=4)
    scaled = big_q @ big_k.T / math.sqrt(128)
    assert 0.5 < scaled.var().item() < 2.0
    assert not torch.equal(P.random_qk(12, 8, seed=0)[0], P.random_qk(12, 8, seed=1)[0])


@pytest.mark.parametrize("scaled", [True, False])
def test_head_weights_match_torch_sdpa(scaled):
    q, k = P.random_qk(7, 16, seed=2)
    mask = causal_mask(7)
    ours = P.head_weights(q, k, mask, scaled=scaled)
    scale = 1 / math.sqrt(16) if scaled else 1.0
    ref = torch.softmax((q @ k.T * scale).masked_fill(~mask, float("-inf")), -1)
    torch.testing.assert_close(ours, ref)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=mask, scale=scale)
    torch.testing.assert_close(out, ours @ k)


def test_larger_d_k_sharpens_an_aligned_pattern_under_scaling():
    weights = [P.head_weights(*P.diagonal_qk(12, d, strength=0.5)).diagonal().mean().item()
               for d in (16, 32, 64, 128)]
    assert all(a < b for a, b in zip(weights, weights[1:]))
    for d, w in zip((16, 32, 64, 128), weights):  # e^s / (e^s + 11) with s = 0.5 sqrt(d)
        s = 0.5 * math.sqrt(d)
        assert w == pytest.approx(math.exp(s) / (math.exp(s) + 11))


def test_head_specs_and_head_qk_cover_every_variant():
    for pattern, variants in P.HEAD_VARIANTS.items():
        assert len(variants) == 8
        specs = P.head_specs(pattern, 3)
        assert specs == variants[:3]
        for spec in variants:
            q, k = P.head_qk(spec, 5, 8, 1.0)
            assert q.shape == k.shape == (5, 8)
    assert P.segments_for(P.HeadSpec("block", "x", segments=3), 7) == (0, 0, 0, 1, 1, 1, 2)
    assert P.segments_for(P.HeadSpec("block", "x", segments="sentences"), 12) == (0,) + (1,) * 7 + (2,) * 4


@pytest.mark.parametrize("n", [3, 5, 8, 12])
def test_sentence_head_is_not_flat_with_one_sentence_in_view(n):
    """Issue 11: with <= 8 tokens only one sentence is in view; the "sentences" head must still
    show a block ([CLS] apart), not the same uniform row for every query."""
    spec = P.HeadSpec("block", "sentences", segments="sentences")
    w = P.head_weights(*P.head_qk(spec, n, 16, 1.0))
    assert not torch.allclose(w, torch.full_like(w, 1 / n))
    assert int(w[0].argmax()) == 0 and w[0, 0] > 0.5  # [CLS] stays with itself
    sentence = [j for j, s in enumerate(P.segments_for(spec, n)) if s == 1]
    assert w[sentence[0], sentence].sum() > 0.9  # a word keeps its weight inside its sentence


def test_directions_are_orthonormal():
    for d in (1, 2, 5, 16):
        b = P.directions(d)
        torch.testing.assert_close(b @ b.T, torch.eye(d, dtype=torch.float64))


def test_tokens_and_segments_line_up():
    assert len(TWO_SENTENCE_TOKENS) == len(TWO_SENTENCE_PHRASES) == len(TWO_SENTENCE_SEGMENTS) == 12
    assert TWO_SENTENCE_TOKENS[1:7] == ("小明", "在", "北京", "大学", "学习", "人工智能")


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="d_k: expected a positive int"):
        P.diagonal_qk(4, 0)
    with pytest.raises(TypeError, match="strength"):
        P.diagonal_qk(4, 4, strength="big")
    with pytest.raises(ValueError, match="strength"):
        P.block_qk([0, 1], 4, strength=-1.0)
    with pytest.raises(ValueError, match="width"):
        P.diagonal_qk(4, 4, width=-1)
    with pytest.raises(TypeError, match="offset"):
        P.diagonal_qk(4, 4, offset=0.5)
    with pytest.raises(ValueError, match=r"key: expected an int in -4..3, got 4"):
        P.vertical_qk(4, 4, key=4)
    with pytest.raises(ValueError, match="segments"):
        P.block_qk([], 4)
    with pytest.raises(ValueError, match=r"segments: expected one id per token \(n,\)"):
        P.block_qk(torch.zeros(2, 3, dtype=torch.long), 4)
    with pytest.raises(TypeError, match="segments"):
        P.block_qk([0, 1.5], 4)
    with pytest.raises(ValueError, match="pattern: expected one of"):
        P.head_specs("diagonals", 2)
    with pytest.raises(ValueError, match="n_heads"):
        P.head_specs("block", 9)
    with pytest.raises(TypeError, match="scaled"):
        P.head_weights(torch.zeros(2, 2), torch.zeros(2, 2), scaled=1)
    with pytest.raises(ValueError, match=r"n: expected an int in 1..12, got 13"):
        P.segments_for(P.HeadSpec("block", "x"), 13)


def test_weights_come_from_the_package_sdpa():
    q, k = P.block_qk(TWO_SENTENCE_PHRASES, 16)
    _, ref = scaled_dot_product_attention(q, k, k)
    torch.testing.assert_close(P.head_weights(q, k), ref)
