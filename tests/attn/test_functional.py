"""attn.functional against torch's own scaled_dot_product_attention, plus properties."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn import (
    attention_from_scores,
    causal_mask,
    masked_softmax,
    scaled_dot_product_attention,
    softmax_with_fill,
)

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def rand(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [((4, 3), (6, 3), (6, 5)), ((2, 4, 3), (2, 6, 3), (2, 6, 2)),
                                   ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4))])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_torch_sdpa_without_mask(dtype, shape, seed):
    q, k, v = (rand(*s, dtype=dtype, seed=seed + i) for i, s in enumerate(shape))
    out, w = scaled_dot_product_attention(q, k, v)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert out.dtype == dtype and out.shape == ref.shape
    assert w.shape == (*q.shape[:-1], k.shape[-2])
    torch.testing.assert_close(out, ref, atol=TOL[dtype], rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_torch_sdpa_with_causal_and_random_masks(dtype):
    q, k, v = rand(2, 3, 5, 4, dtype=dtype), rand(2, 3, 7, 4, dtype=dtype, seed=1), rand(2, 3, 7, 6, dtype=dtype, seed=2)
    causal = causal_mask(5, 7)
    out, _ = scaled_dot_product_attention(q, k, v, causal)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=causal),
                               atol=TOL[dtype], rtol=0)
    g = torch.Generator().manual_seed(3)
    rnd = torch.rand(2, 1, 5, 7, generator=g) > 0.4
    rnd[..., 0] = True  # every row keeps a key, so torch's result is defined
    out, _ = scaled_dot_product_attention(q, k, v, rnd)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=rnd),
                               atol=TOL[dtype], rtol=0)


def test_custom_scale_matches_torch():
    q, k, v = rand(3, 4), rand(5, 4, seed=1), rand(5, 2, seed=2)
    out, _ = scaled_dot_product_attention(q, k, v, scale=0.3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.3), atol=1e-12, rtol=0)


def test_fully_masked_row_gives_zeros_not_nan_and_no_nan_gradient():
    q = rand(3, 4).requires_grad_()
    k, v = rand(5, 4, seed=1), rand(5, 2, seed=2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(w[1], torch.zeros(5, dtype=w.dtype))
    assert torch.equal(out[1], torch.zeros(2, dtype=out.dtype))
    torch.testing.assert_close(w[0].sum(), torch.tensor(1.0, dtype=w.dtype))
    out.sum().backward()
    assert torch.isfinite(q.grad).all()
    assert torch.equal(q.grad[1], torch.zeros(4, dtype=q.dtype))


def test_textbook_fills_on_a_fully_masked_row():
    scores = rand(2, 3)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    neg_inf = softmax_with_fill(scores, mask, float("-inf"))
    assert torch.isnan(neg_inf[1]).all() and torch.isfinite(neg_inf[0]).all()
    big = softmax_with_fill(scores, mask, -1e9)
    torch.testing.assert_close(big[1], torch.full((3,), 1 / 3, dtype=big.dtype))
    safe = masked_softmax(scores, mask)
    assert torch.equal(safe[1], torch.zeros(3, dtype=safe.dtype))
    torch.testing.assert_close(safe[0], neg_inf[0])


def test_does_not_mutate_arguments_and_keeps_device():
    q, k, v = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 3, seed=2)
    mask = causal_mask(3, 5)
    copies = [t.clone() for t in (q, k, v, mask)]
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    for t, c in zip((q, k, v, mask), copies):
        assert torch.equal(t, c)
    assert out.device == q.device



def test_masked_softmax_leaves_its_scores_alone():
    scores = rand(2, 3, 4)
    mask = causal_mask(3, 4)
    before = scores.clone()
    masked_softmax(scores, mask)
    assert torch.equal(scores, before)


def test_fully_masked_row_gradient_of_the_weights_is_finite_and_zero():
    # the weights themselves are differentiated (not only the output): softmax's backward
    # reads its output, which the package must not overwrite in place
    q = rand(3, 4).requires_grad_()
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[2] = False
    _, w = scaled_dot_product_attention(q, rand(5, 4, seed=1), rand(5, 2, seed=2), mask)
    (w * rand(3, 5, seed=3)).sum().backward()
    assert torch.isfinite(q.grad).all()
    assert torch.equal(q.grad[2], torch.zeros(4, dtype=q.dtype))


def test_error_mask_with_more_batch_than_query_and_key():
    q = rand(1, 3, 4)
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(\.\.\., L, S\) = \(1, 3, 3\), got shape \(2, 3, 3\)"):
        scaled_dot_product_attention(q, q, q, torch.ones(2, 3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"got shape \(2, 1, 3, 3\)"):
        scaled_dot_product_attention(q, q, q, torch.ones(2, 1, 3, 3, dtype=torch.bool))

@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 6), S=st.integers(1, 6), E=st.integers(1, 5), seed=st.integers(0, 10_000),
       p=st.floats(0.0, 1.0))
def test_rows_sum_to_one_or_zero(L, S, E, seed, p):
    q, k, v = rand(L, E, seed=seed), rand(S, E, seed=seed + 1), rand(S, 3, seed=seed + 2)
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(L, S, generator=g) < p
    _, w = scaled_dot_product_attention(q, k, v, mask)
    sums = w.sum(-1)
    expected = mask.any(-1).to(w.dtype)
    torch.testing.assert_close(sums, expected, atol=1e-12, rtol=0)
    assert (w >= 0).all() and not torch.isnan(w).any()
    assert torch.equal(w[~mask], torch.zeros_like(w[~mask]))


@settings(max_examples=30, deadline=None)
@given(L=st.integers(2, 7), E=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_self_attention_is_permutation_equivariant(L, E, seed):
    x = rand(L, E, seed=seed)
    perm = torch.randperm(L, generator=torch.Generator().manual_seed(seed))
    out, w = scaled_dot_product_attention(x, x, x)
    out_p, w_p = scaled_dot_product_attention(x[perm], x[perm], x[perm])
    torch.testing.assert_close(out_p, out[perm], atol=1e-12, rtol=0)
    torch.testing.assert_close(w_p, w[perm][:, perm], atol=1e-12, rtol=0)


# ---- errors: each names the argument and says expected vs got ----

def test_error_wrong_rank():
    with pytest.raises(ValueError, match=r"query: expected at least 2 dims .*got shape \(4,\)"):
        scaled_dot_product_attention(rand(4), rand(5, 4), rand(5, 4))


def test_error_feature_sizes_differ():
    with pytest.raises(ValueError, match=r"key: expected feature size E=4 .*got shape \(5, 3\)"):
        scaled_dot_product_attention(rand(2, 4), rand(5, 3), rand(5, 4))


def test_error_key_value_lengths_differ():
    with pytest.raises(ValueError, match=r"value: expected S=5 rows .*got shape \(6, 4\)"):
        scaled_dot_product_attention(rand(2, 4), rand(5, 4), rand(6, 4))


def test_error_batch_dims_do_not_broadcast():
    with pytest.raises(ValueError, match=r"query/key/value: expected batch dims that broadcast"):
        scaled_dot_product_attention(rand(2, 3, 4), rand(3, 5, 4), rand(3, 5, 4))


def test_error_integer_tensor():
    with pytest.raises(TypeError, match=r"query: expected a floating-point tensor .*got dtype torch.int64"):
        scaled_dot_product_attention(torch.ones(2, 4, dtype=torch.long), rand(5, 4), rand(5, 4))


def test_error_not_a_tensor():
    with pytest.raises(TypeError, match=r"key: expected a torch.Tensor, got list"):
        scaled_dot_product_attention(rand(2, 4), [[1.0] * 4], rand(5, 4))


def test_error_mixed_dtypes():
    with pytest.raises(TypeError, match=r"query/key/value: expected one dtype, got query=torch.float32, "
                                        r"key=torch.float64, value=torch.float64"):
        scaled_dot_product_attention(rand(2, 4, dtype=torch.float32), rand(5, 4), rand(5, 4))
    with pytest.raises(TypeError, match=r"query/key/value: expected one dtype"):
        scaled_dot_product_attention(rand(2, 4), rand(5, 4), rand(5, 4, dtype=torch.float32))


def test_error_devices_differ():
    # the meta device holds shapes only: enough to see the check fire before any computation
    q = rand(2, 4)
    with pytest.raises(ValueError, match=r"query/key/value: expected one device, got query=cpu, key=meta"):
        scaled_dot_product_attention(q, torch.zeros(5, 4, dtype=q.dtype, device="meta"), rand(5, 4))
    with pytest.raises(ValueError, match=r"mask: expected device cpu \(the inputs' device\), got meta"):
        scaled_dot_product_attention(q, rand(5, 4), rand(5, 4), torch.ones(2, 5, dtype=torch.bool, device="meta"))


def test_error_feature_size_zero():
    with pytest.raises(ValueError, match=r"query: expected feature size E >= 1, got shape \(2, 0\)"):
        scaled_dot_product_attention(rand(2, 0), rand(5, 0), rand(5, 3))


def test_error_mask_not_bool():
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor \(True = may attend\), got dtype torch.float32"):
        scaled_dot_product_attention(rand(2, 4), rand(5, 4), rand(5, 4), torch.ones(2, 5))


def test_error_mask_wrong_shape():
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(\.\.\., L, S\) = \(2, 5\), got shape \(3, 5\)"):
        scaled_dot_product_attention(rand(2, 4), rand(5, 4), rand(5, 4), torch.ones(3, 5, dtype=torch.bool))


@pytest.mark.parametrize("batch", [(3,), (3, 2)], ids=["(B, L, E)", "(B, H, L, E)"])
def test_error_a_2d_mask_when_the_batch_is_as_long_as_the_queries(batch):
    """B = L = 3 queries over S = 5 keys: a (B, S) mask has the shape of an (L, S) one. Refused by
    the forward and the backward alike; written with its dims, each meaning is taken."""
    from attn.functional import attention_backward

    q, k, v = rand(*batch, 3, 4), rand(*batch, 5, 4, seed=1), rand(*batch, 5, 2, seed=2)
    grad = rand(*batch, 3, 2, seed=3)
    ambiguous = (r"^mask: expected a mask of 3 or 4 dims when the batch has as many sequences as queries "
                 r"\(B = L = 3\), got shape \(3, 5\), .* write mask\[None\], \(1, L, S\), for one mask for the "
                 r"whole batch, or attn.padding_mask\(lengths, S\), \(B, 1, 1, S\), for one row per sequence$")
    mask = causal_mask(3, 5)
    with pytest.raises(ValueError, match=ambiguous):
        scaled_dot_product_attention(q, k, v, mask)
    with pytest.raises(ValueError, match=ambiguous):
        attention_backward(q, k, v, grad, mask)
    one_for_all = mask[None] if len(batch) == 1 else mask[None, None]
    out, w = scaled_dot_product_attention(q, k, v, one_for_all)
    assert torch.equal(w[0].triu(1) if len(batch) == 1 else w[0, 0].triu(1), torch.zeros(3, 5, dtype=w.dtype))
    assert scaled_dot_product_attention(q[:1], k[:1], v[:1], mask)[0].shape == (1, *batch[1:], 3, 2)  # B = 1
    assert scaled_dot_product_attention(q[0], k[0], v[0], mask)[0].shape == (*batch[1:], 3, 2)  # one dim fewer


@pytest.mark.parametrize("scale", [0.0, -1.0, math.inf])
def test_error_bad_scale(scale):
    with pytest.raises(ValueError, match=r"scale: expected a positive finite float"):
        scaled_dot_product_attention(rand(2, 4), rand(5, 4), rand(5, 4), scale=scale)


def test_error_attention_from_scores_checks_its_scores_first():
    with pytest.raises(TypeError, match=r"scores: expected a torch.Tensor, got list"):
        attention_from_scores([[0.0, 1.0]], rand(2, 3))
    with pytest.raises(ValueError, match=r"scores: expected at least 2 dims \(\.\.\., L, S\), got shape \(\)"):
        attention_from_scores(torch.tensor(1.0, dtype=torch.float64), rand(2, 3))
    with pytest.raises(ValueError, match=r"value: expected 4 rows \(S, the number of keys\), got shape \(3, 2\)"):
        attention_from_scores(rand(2, 4), rand(3, 2))
    with pytest.raises(TypeError, match=r"scores/value: expected one dtype"):
        attention_from_scores(rand(2, 4), rand(4, 2, dtype=torch.float32))
    with pytest.raises(TypeError, match=r"value: expected a floating-point tensor"):
        attention_from_scores(rand(2, 4), torch.ones(4, 2, dtype=torch.long))


def test_attention_from_scores_is_the_masked_softmax_then_the_weighted_sum():
    scores, value = rand(2, 3, 4), rand(2, 4, 5, seed=1)
    mask = causal_mask(3, 4)
    out, w = attention_from_scores(scores, value, mask)
    torch.testing.assert_close(w, masked_softmax(scores, mask), atol=0, rtol=0)
    torch.testing.assert_close(out, w @ value, atol=0, rtol=0)
    assert torch.equal(w[..., 0, 1:], torch.zeros(2, 3, dtype=w.dtype))


def test_error_masked_softmax_scores_rank_and_dtype():
    with pytest.raises(ValueError, match=r"scores: expected at least 2 dims"):
        masked_softmax(rand(3))
    with pytest.raises(TypeError, match=r"scores: expected a floating-point tensor"):
        masked_softmax(torch.ones(2, 3, dtype=torch.int32))
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor .*got None"):
        softmax_with_fill(rand(2, 3), None, -1e9)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_masked_softmax_fully_masked_rows_have_no_nan_even_inside_the_backward():
    # anomaly mode raises if any backward step produces NaN: zeros must come from finite
    # arithmetic, not from a NaN replaced afterwards
    scores = rand(2, 3, 4).requires_grad_()
    mask = torch.tensor([[True, False, True, True], [False] * 4, [False, False, False, True]])
    with torch.autograd.detect_anomaly():
        w = masked_softmax(scores, mask)
        (w * rand(2, 3, 4, seed=1)).sum().backward()
    assert torch.equal(w[:, 1], torch.zeros(2, 4, dtype=w.dtype))
    torch.testing.assert_close(w[:, 2], torch.tensor([[0.0, 0.0, 0.0, 1.0]] * 2, dtype=w.dtype))
    assert torch.equal(scores.grad[:, 1], torch.zeros(2, 4, dtype=w.dtype))
    assert torch.equal(scores.grad[~mask.expand(2, 3, 4)], torch.zeros(int((~mask).sum()) * 2, dtype=w.dtype))


@pytest.mark.parametrize("mask_shape", [(4,), (3, 1), (2, 1, 4), ()])
def test_masked_softmax_broadcast_masks_equal_the_expanded_mask(mask_shape):
    scores = rand(2, 3, 4)
    mask = torch.rand(mask_shape, generator=torch.Generator().manual_seed(1)) > 0.5
    expanded = mask.expand(2, 3, 4)
    torch.testing.assert_close(masked_softmax(scores, mask), masked_softmax(scores, expanded), atol=0, rtol=0)
    ref = torch.softmax(scores.masked_fill(~expanded, float("-inf")), -1).nan_to_num(0.0)
    torch.testing.assert_close(masked_softmax(scores, mask), ref, atol=1e-15, rtol=0)


# ---- a row of -inf scores is not a mask: NaN without a mask, zeros when the mask blocks it ----

def test_all_minus_inf_row_is_nan_without_a_mask_and_zeros_when_the_mask_blocks_it():
    # the behaviour masked_softmax's docstring documents, row by row
    ninf = float("-inf")
    scores = torch.tensor([[ninf, ninf, ninf],  # all -inf
                           [0.5, ninf, 1.0],  # some -inf: those keys get weight 0
                           [ninf, ninf, ninf],  # all -inf again
                           [0.5, 2.0, 1.0]], dtype=torch.float64)
    unmasked = masked_softmax(scores)
    assert torch.isnan(unmasked[0]).all() and torch.isnan(unmasked[2]).all()  # softmax(-inf, ...) = 0 / 0
    a, c = torch.softmax(torch.tensor([0.5, 1.0], dtype=torch.float64), dim=0)  # the two finite scores
    torch.testing.assert_close(unmasked[1], torch.stack([a, torch.zeros_like(a), c]), atol=1e-15, rtol=0)
    mask = torch.tensor([[False, False, False],  # blocks row 0 entirely: zeros, though its scores are -inf
                         [True, True, True],
                         [True, False, False],  # allows only a key scoring -inf: still 0 / 0
                         [False, False, False]])  # blocks a row of finite scores: zeros
    masked = masked_softmax(scores, mask)
    assert torch.equal(masked[0], torch.zeros(3, dtype=masked.dtype))
    assert torch.equal(masked[3], torch.zeros(3, dtype=masked.dtype))
    assert torch.isnan(masked[2]).all()
    torch.testing.assert_close(masked[1], unmasked[1], atol=0, rtol=0)
    # the same through attention_from_scores: the output row follows its weights
    out, w = attention_from_scores(scores, rand(3, 2), mask)
    torch.testing.assert_close(w, masked, atol=0, rtol=0, equal_nan=True)
    assert torch.equal(out[0], torch.zeros(2, dtype=out.dtype)) and torch.isnan(out[2]).all()


def test_infinite_query_gives_a_nan_row_without_a_mask_as_documented():
    # scaled_dot_product_attention's docstring: infinities in query or key can make a row of
    # scores all -inf; unmasked, that row is NaN, masked away, it is zeros
    q, k, v = rand(2, 3), rand(4, 3, seed=1).abs() + 0.1, rand(4, 2, seed=2)
    q[0] = -math.inf  # every score of query 0 is -inf (the keys are positive)
    out, w = scaled_dot_product_attention(q, k, v)
    assert torch.isnan(w[0]).all() and torch.isnan(out[0]).all() and torch.isfinite(w[1]).all()
    blocked = torch.tensor([[False] * 4, [True] * 4])
    out, w = scaled_dot_product_attention(q, k, v, blocked)
    assert torch.equal(w[0], torch.zeros(4, dtype=w.dtype)) and torch.equal(out[0], torch.zeros(2, dtype=out.dtype))


# ---- each public function checks its arguments once, then computes with the unchecked steps ----

def _count_calls(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_each_public_function_checks_its_mask_once(monkeypatch):
    import attn.functional as functional

    mask_checks = _count_calls(monkeypatch, functional, "check_bool_mask")
    q, k, v = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 3, seed=2)
    mask = causal_mask(3, 5)
    calls = {
        "scaled_dot_product_attention": lambda: scaled_dot_product_attention(q, k, v, mask),
        "masked_softmax": lambda: masked_softmax(rand(2, 3, 5), mask),
        "attention_from_scores": lambda: attention_from_scores(rand(2, 3, 5), v, mask),
        "attention_backward": lambda: functional.attention_backward(q, k, v, rand(2, 3, 3), mask),
    }
    for name, call in calls.items():
        mask_checks.clear()
        call()
        assert mask_checks == ["mask"], f"{name} checked its mask {len(mask_checks)} times"


def test_the_public_functions_are_their_checks_then_the_unchecked_steps():
    from attn.functional import attend, softmax_over_allowed_keys

    q, k, v = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 3, seed=2)
    mask = causal_mask(3, 5)
    for m in (None, mask):
        out, w = scaled_dot_product_attention(q, k, v, m, scale=0.7)
        ref_out, ref_w = attend(q, k, v, m, 0.7)
        assert torch.equal(out, ref_out) and torch.equal(w, ref_w)
        scores = rand(2, 3, 5, seed=3)
        assert torch.equal(masked_softmax(scores, m), softmax_over_allowed_keys(scores, m))
    # the order of the textbook: scores Q K^T * scale, softmax over the keys, weighted sum
    scores = q @ k.transpose(-2, -1) * 0.5
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(attend(q, k, v, mask, 0.5)[0], weights @ v, atol=1e-12, rtol=0)
