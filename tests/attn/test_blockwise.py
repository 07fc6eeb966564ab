"""attn.blockwise against torch.nn.functional.scaled_dot_product_attention."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn.blockwise import (OnlineSoftmax, blockwise_attention, blockwise_multi_head_attention, causal_blocks,
                            online_softmax_trace)
from attn.functional import scaled_dot_product_attention
from attn.masks import causal_mask
from attn.modules import MultiHeadAttention

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def _qkv(batch, L, S, E, Ev, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, L, E, generator=g, dtype=dtype)
    k = torch.randn(*batch, S, E, generator=g, dtype=dtype)
    v = torch.randn(*batch, S, Ev, generator=g, dtype=dtype)
    return q, k, v


def _max_diff(a, b):
    return (a - b).abs().max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,L,S,E,Ev", [
    ((), 1, 1, 4, 4),
    ((2,), 7, 13, 8, 5),
    ((2, 3), 16, 16, 16, 16),
    ((1, 2), 33, 70, 8, 3),
])
@pytest.mark.parametrize("block_size", [1, 5, 64])
@pytest.mark.parametrize("query_block_size", [None, 3])
def test_equals_sdpa(dtype, batch, L, S, E, Ev, block_size, query_block_size):
    q, k, v = _qkv(batch, L, S, E, Ev, dtype)
    ref = F.scaled_dot_product_attention(q, k, v)
    out = blockwise_attention(q, k, v, block_size=block_size, query_block_size=query_block_size)
    assert out.shape == ref.shape and out.dtype == dtype
    assert _max_diff(out, ref) <= TOL[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("L,S", [(1, 1), (9, 9), (20, 37), (37, 20), (64, 64)])
@pytest.mark.parametrize("block_size,query_block_size", [(1, None), (4, None), (7, 5), (16, 16), (100, 8)])
def test_causal_equals_sdpa(dtype, L, S, block_size, query_block_size):
    q, k, v = _qkv((2, 2), L, S, 8, 6, dtype, seed=1)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = blockwise_attention(q, k, v, causal=True, block_size=block_size,
                              query_block_size=query_block_size)
    assert _max_diff(out, ref) <= TOL[dtype]
    # the same as the package's explicit causal mask
    explicit = blockwise_attention(q, k, v, causal_mask(L, S), block_size=block_size)
    assert _max_diff(out, explicit) <= TOL[dtype]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mask_shape", [(11, 19), (2, 1, 11, 19), (2, 3, 11, 19), (1, 1, 19), (11, 1)])
@pytest.mark.parametrize("block_size,query_block_size", [(3, None), (8, 4), (19, 11)])
def test_mask_equals_sdpa(dtype, mask_shape, block_size, query_block_size):
    q, k, v = _qkv((2, 3), 11, 19, 8, 4, dtype, seed=2)
    g = torch.Generator().manual_seed(3)
    mask = torch.rand(mask_shape, generator=g) > 0.4
    mask = mask | (torch.arange(mask_shape[-1]) == 0)  # every row may attend to key 0 at least
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out = blockwise_attention(q, k, v, mask, block_size=block_size, query_block_size=query_block_size)
    assert _max_diff(out, ref) <= TOL[dtype]


@pytest.mark.parametrize("block_size,query_block_size", [(5, None), (3, 4), (12, 12)])
def test_mask_and_causal_combine(block_size, query_block_size):
    q, k, v = _qkv((2,), 12, 12, 8, 8, torch.float64, seed=4)
    # a mask that allows keys above the diagonal: only causal=True can block them
    mask = torch.rand(2, 12, 12, generator=torch.Generator().manual_seed(5)) > 0.5
    mask = mask | torch.eye(12, dtype=torch.bool)  # no empty row
    assert (mask & ~causal_mask(12)).any()
    out = blockwise_attention(q, k, v, mask, causal=True, block_size=block_size,
                              query_block_size=query_block_size)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask & causal_mask(12))
    assert _max_diff(out, ref) <= 1e-10
    ignoring_causal = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert _max_diff(ref, ignoring_causal) > 1e-3  # the test can tell the two apart


def test_one_dim_mask_broadcasts():
    q, k, v = _qkv((2,), 6, 9, 4, 4, torch.float64)
    keys = torch.tensor([True, False, True, True, False, True, True, True, False])
    out = blockwise_attention(q, k, v, keys, block_size=4)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keys.expand(6, 9))
    assert _max_diff(out, ref) <= 1e-10


@pytest.mark.parametrize("block_size", [1, 2, 5])
def test_fully_masked_rows_give_zeros(block_size):
    q, k, v = _qkv((2,), 5, 7, 4, 3, torch.float64)
    mask = torch.rand(2, 5, 7, generator=torch.Generator().manual_seed(6)) > 0.3
    mask[0, 1] = False  # a row that may attend to nothing
    mask[1, 4] = False
    out = blockwise_attention(q, k, v, mask, block_size=block_size, query_block_size=2)
    assert torch.isfinite(out).all()
    assert torch.equal(out[0, 1], torch.zeros(3, dtype=torch.float64))
    assert torch.equal(out[1, 4], torch.zeros(3, dtype=torch.float64))
    ref, _ = scaled_dot_product_attention(q, k, v, mask)  # the package's convention
    assert _max_diff(out, ref) <= 1e-10


def test_causal_with_more_queries_than_keys_has_no_empty_rows():
    q, k, v = _qkv((), 8, 3, 4, 4, torch.float64)
    out = blockwise_attention(q, k, v, causal=True, block_size=2)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert _max_diff(out, ref) <= 1e-10


def test_scale_and_batch_broadcast():
    g = torch.Generator().manual_seed(8)
    q = torch.randn(3, 1, 6, 8, generator=g, dtype=torch.float64)
    k = torch.randn(1, 4, 10, 8, generator=g, dtype=torch.float64)
    v = torch.randn(1, 4, 10, 5, generator=g, dtype=torch.float64)
    out = blockwise_attention(q, k, v, block_size=3, scale=0.3)
    ref = F.scaled_dot_product_attention(q, k, v, scale=0.3)
    assert out.shape == (3, 4, 6, 5)
    assert _max_diff(out, ref) <= 1e-10


def test_mask_with_more_batch_than_inputs():
    q, k, _ = _qkv((1,), 5, 7, 8, 3, torch.float64)
    v = torch.randn(4, 7, 3, dtype=torch.float64)
    mask = torch.rand(4, 5, 7, generator=torch.Generator().manual_seed(9)) > 0.4
    mask[..., 0] = True
    out = blockwise_attention(q, k, v, mask, block_size=3)
    ref = F.scaled_dot_product_attention(q.expand(4, 5, 8), k.expand(4, 7, 8), v, attn_mask=mask)
    assert out.shape == (4, 5, 3)
    assert _max_diff(out, ref) <= 1e-10


def test_does_not_modify_inputs():
    q, k, v = _qkv((2,), 6, 9, 4, 4, torch.float32)
    mask = torch.rand(6, 9) > 0.3
    copies = [t.clone() for t in (q, k, v, mask)]
    blockwise_attention(q, k, v, mask, causal=True, block_size=2, query_block_size=4)
    for t, c in zip((q, k, v, mask), copies):
        assert torch.equal(t, c)


def test_gradients_match_sdpa():
    q, k, v = (t.requires_grad_() for t in _qkv((2,), 6, 8, 4, 3, torch.float64))
    assert torch.autograd.gradcheck(
        lambda q, k, v: blockwise_attention(q, k, v, causal=True, block_size=3, query_block_size=2),
        (q, k, v))
    out = blockwise_attention(q, k, v, block_size=3)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    ref = F.scaled_dot_product_attention(q, k, v)
    ref_grads = torch.autograd.grad(ref.square().sum(), (q, k, v))
    for a, b in zip(grads, ref_grads):
        assert _max_diff(a, b) <= 1e-10


@settings(max_examples=60, deadline=None)
@given(
    L=st.integers(1, 24), S=st.integers(1, 24), E=st.integers(1, 8), Ev=st.integers(1, 6),
    block_size=st.integers(1, 30), query_block_size=st.one_of(st.none(), st.integers(1, 30)),
    causal=st.booleans(), seed=st.integers(0, 2**16), spread=st.floats(0.1, 30.0),
)
def test_property_equals_sdpa(L, S, E, Ev, block_size, query_block_size, causal, seed, spread):
    q, k, v = _qkv((2,), L, S, E, Ev, torch.float64, seed)
    q = q * spread  # large spreads make the running max move a lot between blocks
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out = blockwise_attention(q, k, v, causal=causal, block_size=block_size,
                              query_block_size=query_block_size)
    assert _max_diff(out, ref) <= 1e-10 * max(1.0, ref.abs().max().item())


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_equals_module(bias, causal):
    torch.manual_seed(0)
    mha = MultiHeadAttention(24, 4, bias=bias).double()
    x = torch.randn(3, 10, 24, dtype=torch.float64)
    mask = causal_mask(10) if causal else None
    ref, _ = mha(x, mask=mask)
    out = blockwise_multi_head_attention(mha, x, causal=causal, block_size=3, query_block_size=4)
    assert out.shape == (3, 10, 24)
    assert _max_diff(out, ref) <= 1e-10


def test_multi_head_cross_attention_and_mask():
    torch.manual_seed(1)
    mha = MultiHeadAttention(16, 2).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mem = torch.randn(2, 9, 16, dtype=torch.float64)
    mask = torch.rand(2, 1, 5, 9) > 0.3
    mask[..., 0] = True
    ref, _ = mha(x, mem, mem, mask)
    out = blockwise_multi_head_attention(mha, x, mem, mem, mask, block_size=4)
    assert _max_diff(out, ref) <= 1e-10


@pytest.mark.parametrize("block_size", [1, 2, 3, 7])
def test_online_softmax_equals_softmax_then_weighted_sum(block_size):
    g = torch.Generator().manual_seed(10)
    scores = torch.randn(3, 2, 7, generator=g, dtype=torch.float64) * 5  # (..., Lq, S)
    scores[0, 1, :4] = float("-inf")  # blocked keys, a whole first block included
    scores[2, 0] = float("-inf")  # a row with no allowed key
    values = torch.randn(3, 7, 4, generator=g, dtype=torch.float64)
    state = OnlineSoftmax((3, 2), 4, dtype=torch.float64)
    for j0 in range(0, 7, block_size):
        rescale, exps = state.update(scores[..., j0:j0 + block_size], values[..., j0:j0 + block_size, :])
        assert rescale.shape == (3, 2, 1) and exps.shape == (3, 2, min(block_size, 7 - j0))
        assert (rescale <= 1).all() and torch.isfinite(exps).all()
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    torch.testing.assert_close(state.result(), weights @ values, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.running_max, scores.amax(-1, keepdim=True), atol=0, rtol=0)
    assert torch.equal(state.result()[2, 0], torch.zeros(4, dtype=torch.float64))


def test_blockwise_multi_head_equals_module_with_causal_and_mask():
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 4, bias=True).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    mask = torch.rand(2, 1, 9, 9) > 0.4
    mask[..., 0] = True
    ref, _ = mha(x, mask=mask, causal=True)
    out = blockwise_multi_head_attention(mha, x, mask=mask, causal=True, block_size=2, query_block_size=3)
    assert _max_diff(out, ref) <= 1e-10


@pytest.mark.parametrize("L,S,bk,bq", [(1024, None, 128, 256), (10, 10, 3, 4), (7, 20, 5, 2), (20, 7, 2, 6)])
def test_causal_blocks_counts_nonempty_pairs(L, S, bk, bq):
    S_ = L if S is None else S
    allowed = causal_mask(L, S_)
    brute = 0
    for i0 in range(0, L, bq):
        for j0 in range(0, S_, bk):
            brute += bool(allowed[i0:i0 + bq, j0:j0 + bk].any())
    assert causal_blocks(L, S, block_size=bk, query_block_size=bq) == brute
    assert brute <= math.ceil(L / bq) * math.ceil(S_ / bk)


# --- errors ------------------------------------------------------------------------------------

def test_errors():
    q, k, v = _qkv((2,), 4, 6, 8, 3, torch.float32)
    with pytest.raises(TypeError, match="query: expected a torch.Tensor"):
        blockwise_attention([[1.0]], k, v)
    with pytest.raises(TypeError, match="key: expected a floating-point"):
        blockwise_attention(q, k.long(), v)
    with pytest.raises(ValueError, match=r"value: expected at least 2 dims"):
        blockwise_attention(q, k, torch.randn(3))
    with pytest.raises(TypeError, match="query/key/value: expected one dtype"):
        blockwise_attention(q, k.double(), v)
    with pytest.raises(ValueError, match="key: expected feature size E=8"):
        blockwise_attention(q, torch.randn(2, 6, 5), v)
    with pytest.raises(ValueError, match="value: expected S=6 rows"):
        blockwise_attention(q, k, torch.randn(2, 5, 3))
    with pytest.raises(ValueError, match="expected batch dims that broadcast"):
        blockwise_attention(q, torch.randn(3, 6, 8), torch.randn(3, 6, 3))
    with pytest.raises(TypeError, match="mask: expected a bool tensor"):
        blockwise_attention(q, k, v, torch.ones(4, 6))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(..., L, S\)"):
        blockwise_attention(q, k, v, torch.ones(5, 6, dtype=torch.bool))
    with pytest.raises(TypeError, match="causal: expected a bool"):
        blockwise_attention(q, k, v, causal=1)
    with pytest.raises(ValueError, match="query: expected feature size E >= 1"):
        blockwise_attention(torch.randn(4, 0), torch.randn(6, 0), v[0])
    with pytest.raises(ValueError, match="query/key/value: expected one device"):
        blockwise_attention(q, k, v.to("meta"))
    with pytest.raises(ValueError, match=r"mask: expected device cpu"):
        blockwise_attention(q, k, v, torch.ones(4, 6, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match="block_size: expected a positive int, got 0"):
        blockwise_attention(q, k, v, block_size=0)
    with pytest.raises(TypeError, match="block_size: expected a positive int"):
        blockwise_attention(q, k, v, block_size=2.0)
    with pytest.raises(ValueError, match="query_block_size: expected a positive int"):
        blockwise_attention(q, k, v, query_block_size=-1)
    with pytest.raises(ValueError, match="scale: expected a positive finite float"):
        blockwise_attention(q, k, v, scale=0.0)
    with pytest.raises(TypeError, match="scale: expected a positive float or None"):
        blockwise_attention(q, k, v, scale="1")


def test_multi_head_errors():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match="module: expected attn.MultiHeadAttention"):
        blockwise_multi_head_attention(torch.nn.Linear(8, 8), torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match=r"query: expected 3 dims \(B, L, E\)"):
        blockwise_multi_head_attention(mha, torch.randn(3, 8))
    with pytest.raises(ValueError, match="key: expected last dim E=8"):
        blockwise_multi_head_attention(mha, torch.randn(1, 3, 8), torch.randn(1, 4, 6))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(B, H, L, S\) = \(1, 2, 3, 3\)"):
        blockwise_multi_head_attention(mha, torch.randn(1, 3, 8), mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="block_size: expected a positive int, got 0"):
        blockwise_multi_head_attention(mha, torch.randn(1, 3, 8), block_size=0)
    with pytest.raises(TypeError, match=r"query: expected dtype torch.float32 \(the dtype of the module's parameters\)"):
        blockwise_multi_head_attention(mha, torch.randn(1, 3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="L: expected a positive int"):
        causal_blocks(0, block_size=1, query_block_size=1)
    with pytest.raises(TypeError, match="query_block_size: expected a positive int"):
        causal_blocks(4, block_size=1, query_block_size=None)


# --- online_softmax_trace: notebook 07's step-by-step online softmax ---------------------------

@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 6, 10])
def test_online_softmax_trace_equals_full_softmax(block_size):
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(6, generator=g, dtype=torch.float64) * 3
    values = torch.randn(6, 2, generator=g, dtype=torch.float64)
    t = online_softmax_trace(scores, values, block_size=block_size)
    assert len(t.steps) == math.ceil(6 / block_size)
    assert torch.allclose(t.weights, torch.softmax(scores, 0), atol=1e-12, rtol=0)
    assert torch.allclose(t.output, torch.softmax(scores, 0) @ values, atol=1e-12, rtol=0)
    assert torch.equal(t.softmax, torch.softmax(scores, 0))
    first = t.steps[0]
    assert first.max_before == -math.inf and first.rescale == 0.0 and first.sum_before == 0.0
    for prev, step in zip(t.steps, t.steps[1:]):
        assert step.max_before == prev.max_after and step.sum_before == prev.sum_after
    for step in t.steps:
        j0, j1 = step.keys
        assert step.scores == tuple(scores[j0:j1].tolist())
        assert step.max_after == max(step.max_before, step.block_max)
        assert step.rescale == pytest.approx(math.exp(step.max_before - step.max_after))
        assert step.sum_after == pytest.approx(step.sum_before * step.rescale + step.block_sum)
    last = t.steps[-1]
    assert last.max_after == scores.max().item()
    assert last.sum_after == pytest.approx(torch.exp(scores - scores.max()).sum().item())


def test_online_softmax_trace_handles_huge_scores():
    scores = torch.tensor([1000.0, 1002.0, 999.0, 1005.0], dtype=torch.float64)
    t = online_softmax_trace(scores, torch.eye(4, dtype=torch.float64), block_size=1)
    assert torch.isfinite(t.weights).all()
    assert torch.allclose(t.weights, torch.softmax(scores, 0), atol=1e-12, rtol=0)


def test_online_softmax_trace_errors():
    with pytest.raises(ValueError, match=r"scores: expected 1 dims \(S,\)"):
        online_softmax_trace(torch.zeros(2, 3), torch.zeros(2, 1), block_size=1)
    with pytest.raises(ValueError, match="values: expected S=3 rows"):
        online_softmax_trace(torch.zeros(3), torch.zeros(2, 1), block_size=1)
    with pytest.raises(TypeError, match="values: expected a floating-point tensor"):
        online_softmax_trace(torch.zeros(3), torch.zeros(3, 1, dtype=torch.long), block_size=1)
    with pytest.raises(ValueError, match="block_size: expected a positive int"):
        online_softmax_trace(torch.zeros(3), torch.zeros(3, 1), block_size=0)
    with pytest.raises(TypeError, match=r"scores/values: expected one dtype, got scores=torch.float32, values=torch.float64"):
        online_softmax_trace(torch.zeros(3), torch.zeros(3, 1, dtype=torch.float64), block_size=1)


def test_online_softmax_trace_with_blocked_keys_and_a_blocked_first_block():
    scores = torch.tensor([float("-inf"), float("-inf"), 0.5, float("-inf"), 2.0], dtype=torch.float64)
    values = torch.arange(10, dtype=torch.float64).reshape(5, 2)
    t = online_softmax_trace(scores, values, block_size=2)
    first = t.steps[0]  # nothing allowed yet: the state stays empty, no NaN
    assert first.max_after == -math.inf and first.sum_after == 0.0 and first.output_after == (0.0, 0.0)
    assert torch.allclose(t.weights, torch.softmax(scores, 0), atol=1e-12, rtol=0)
    assert torch.allclose(t.output, torch.softmax(scores, 0) @ values, atol=1e-12, rtol=0)
    assert torch.isfinite(t.output).all()
