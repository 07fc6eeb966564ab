"""The course's modules against torch.nn.MultiheadAttention with copied weights."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from attn import MultiHeadAttention, SelfAttention, causal_mask, padding_mask, to_torch_mha_mask

TOL = 1e-12


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def torch_mha(E, H, bias, seed=0):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(E, H, bias=bias, batch_first=True, dtype=torch.float64)
    if bias:  # torch initialises biases to zero: make them matter
        with torch.no_grad():
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
    return mha.eval()


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("E, H", [(8, 1), (8, 2), (12, 4), (16, 8)])
def test_self_attention_equals_torch(E, H, bias):
    ref = torch_mha(E, H, bias)
    ours = MultiHeadAttention.from_torch(ref)
    x = rand(2, 5, E)
    out, w = ours(x)
    ref_out, ref_w = ref(x, x, x, need_weights=True, average_attn_weights=False)
    assert out.shape == (2, 5, E) and w.shape == (2, H, 5, 5)
    torch.testing.assert_close(out, ref_out, atol=TOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=TOL, rtol=0)


@pytest.mark.parametrize("bias", [False, True])
def test_causal_mask_equals_torch(bias):
    ref = torch_mha(12, 3, bias, seed=1)
    ours = MultiHeadAttention.from_torch(ref)
    x = rand(2, 6, 12, seed=1)
    mask = causal_mask(6)
    out, w = ours(x, mask=mask)
    ref_out, ref_w = ref(x, x, x, attn_mask=to_torch_mha_mask(mask), average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=TOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=TOL, rtol=0)


def test_padding_mask_equals_torch_key_padding_mask():
    ref = torch_mha(8, 2, True, seed=2)
    ours = MultiHeadAttention.from_torch(ref)
    x = rand(3, 5, 8, seed=2)
    lengths = torch.tensor([5, 3, 1])
    mask = padding_mask(lengths, 5)  # (B, 1, 1, S)
    out, w = ours(x, mask=mask)
    kpm = to_torch_mha_mask(mask[:, 0, 0])  # (B, S), True = blocked
    ref_out, ref_w = ref(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=TOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=TOL, rtol=0)
    assert torch.equal(w[2, :, :, 1:], torch.zeros_like(w[2, :, :, 1:]))


def test_cross_attention_equals_torch():
    ref = torch_mha(8, 4, True, seed=3)
    ours = MultiHeadAttention.from_torch(ref)
    q, kv = rand(2, 3, 8, seed=3), rand(2, 7, 8, seed=4)
    out, w = ours(q, kv, kv)
    ref_out, ref_w = ref(q, kv, kv, average_attn_weights=False)
    assert w.shape == (2, 4, 3, 7)
    torch.testing.assert_close(out, ref_out, atol=TOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=TOL, rtol=0)


def test_averaged_weights_are_the_mean_of_ours():
    ref = torch_mha(8, 4, False, seed=5)
    x = rand(1, 4, 8)
    _, w = MultiHeadAttention.from_torch(ref)(x)
    _, avg = ref(x, x, x)  # default: averaged over heads
    torch.testing.assert_close(avg, w.mean(1), atol=TOL, rtol=0)


@pytest.mark.parametrize("bias", [False, True])
def test_to_torch_round_trip(bias):
    torch.manual_seed(0)
    ours = MultiHeadAttention(8, 2, bias=bias).double()
    mha = ours.to_torch()
    x = rand(2, 4, 8)
    out, w = ours(x)
    ref_out, ref_w = mha(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=TOL, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=TOL, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("backend", [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION])
@pytest.mark.parametrize("L", [4, 130])
def test_fast_path_fully_masked_rows_are_zero_like_the_teaching_path(dtype, backend, L):
    # The fast path relies on SDPA's own rule for a query that may attend to no key (zeros,
    # like the teaching path): checked here on each CPU backend, output and gradient.
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, bias=False).to(dtype)  # no bias: a zero head stays zero after W_o
    x = rand(2, L, 8, dtype=dtype).requires_grad_()
    mask = causal_mask(L).clone()
    mask[2] = False  # query 2 may attend to nothing, in every batch entry and head
    pad = padding_mask([L, 3], L)  # (B, 1, 1, S)
    full = mask & pad
    with sdpa_kernel(backend):
        fast, none = m(x, mask=full, need_weights=False)
    slow, w = m(x, mask=full)
    assert none is None
    assert torch.equal(fast[:, 2], torch.zeros(2, 8, dtype=dtype))
    assert torch.equal(w[:, :, 2], torch.zeros_like(w[:, :, 2]))
    torch.testing.assert_close(fast, slow, atol=TOL if dtype == torch.float64 else 1e-5, rtol=0)
    with sdpa_kernel(backend):
        (grad,) = torch.autograd.grad(m(x, mask=full, need_weights=False)[0].square().sum(), x)
    (ref,) = torch.autograd.grad(slow.square().sum(), x)
    assert torch.isfinite(grad).all()
    torch.testing.assert_close(grad, ref, atol=1e-10 if dtype == torch.float64 else 1e-4, rtol=0)


def test_fast_path_is_one_sdpa_call(monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    m = MultiHeadAttention(8, 2).double()
    x = rand(1, 5, 8)
    m(x, causal=True, need_weights=False)
    assert len(calls) == 1 and calls[0]["is_causal"] is True and calls[0]["attn_mask"] is None
    m(x, mask=causal_mask(5), need_weights=False)
    assert len(calls) == 2 and calls[1]["is_causal"] is False and calls[1]["attn_mask"] is not None


@pytest.mark.parametrize("L, S", [(5, 5), (3, 6), (6, 3)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_causal_flag_equals_the_causal_mask(L, S, need_weights):
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, bias=True).double()
    x, mem = rand(2, L, 8), rand(2, S, 8, seed=1)
    ref, ref_w = m(x, mem, mask=causal_mask(L, S))
    got, got_w = m(x, mem, causal=True, need_weights=need_weights)
    torch.testing.assert_close(got, ref, atol=TOL, rtol=0)
    if need_weights:
        torch.testing.assert_close(got_w, ref_w, atol=TOL, rtol=0)
        assert not got_w[..., :L, :].triu(1).any()  # nothing above the diagonal
    else:
        assert got_w is None


@pytest.mark.parametrize("need_weights", [True, False])
def test_causal_flag_combines_with_a_padding_mask(need_weights):
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2).double()
    x = rand(2, 5, 8)
    pad = padding_mask([5, 3], 5)  # (B, 1, 1, S)
    ref, _ = m(x, mask=pad & causal_mask(5))
    got, _ = m(x, mask=pad, causal=True, need_weights=need_weights)
    torch.testing.assert_close(got, ref, atol=TOL, rtol=0)


def test_causal_flag_matches_torch_is_causal():
    mha = torch_mha(12, 4, bias=True)
    ours = MultiHeadAttention.from_torch(mha)
    x = rand(2, 6, 12)
    ref, _ = mha(x, x, x, attn_mask=to_torch_mha_mask(causal_mask(6)), need_weights=False, is_causal=True)
    got, _ = ours(x, causal=True, need_weights=False)
    torch.testing.assert_close(got, ref, atol=TOL, rtol=0)


def test_error_causal_not_bool():
    m = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match=r"causal: expected a bool \(True or False\), got int 1"):
        m(torch.randn(1, 3, 8), causal=1)
    with pytest.raises(TypeError, match=r"need_weights: expected a bool \(True or False\), got str 'no'"):
        m(torch.randn(1, 3, 8), need_weights="no")
    with pytest.raises(TypeError, match=r"bias: expected a bool \(True or False\), got str 'yes'"):
        MultiHeadAttention(8, 2, bias="yes")

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_is_kept(dtype):
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2).to(dtype)
    out, w = m(rand(1, 3, 8, dtype=dtype))
    assert out.dtype == dtype and w.dtype == dtype
    s = SelfAttention(8, 4, 3).to(dtype)
    out, w = s(rand(1, 3, 8, dtype=dtype))
    assert out.dtype == dtype and out.shape == (1, 3, 3) and w.shape == (1, 3, 3)


def test_self_attention_matches_manual_computation():
    torch.manual_seed(0)
    s = SelfAttention(4, 2, 3).double()
    x = rand(2, 5, 4)
    out, w = s(x)
    q, k, v = x @ s.W_q.weight.T, x @ s.W_k.weight.T, x @ s.W_v.weight.T
    expected_w = torch.softmax(q @ k.transpose(1, 2) / 2 ** 0.5, -1)
    torch.testing.assert_close(w, expected_w)
    torch.testing.assert_close(out, expected_w @ v)
    out_c, w_c = s(x, causal_mask(5))
    assert torch.equal(w_c[0].triu(1), torch.zeros(5, 5, dtype=w_c.dtype))


def test_module_errors():
    with pytest.raises(ValueError, match=r"d_model: expected a positive multiple of num_heads=3, got 8"):
        MultiHeadAttention(8, 3)
    with pytest.raises(ValueError, match=r"num_heads: expected a positive int, got 0"):
        MultiHeadAttention(8, 0)
    with pytest.raises(TypeError, match=r"d_model: expected a positive int, got float"):
        MultiHeadAttention(8.0, 2)
    m = MultiHeadAttention(8, 2).double()
    with pytest.raises(ValueError, match=r"query: expected 3 dims \(B, L, E\), got shape \(4, 8\)"):
        m(rand(4, 8))
    with pytest.raises(ValueError, match=r"query: expected last dim E=8, got shape \(1, 4, 6\)"):
        m(rand(1, 4, 6))
    with pytest.raises(ValueError, match=r"key/value: expected shapes"):
        m(rand(1, 4, 8), rand(1, 5, 8), rand(1, 6, 8))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(B, H, L, S\)"):
        m(rand(1, 4, 8), mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor"):
        m(rand(1, 4, 8), mask=torch.ones(4, 4))
    with pytest.raises(TypeError, match=r"query: expected a floating-point tensor"):
        m(torch.ones(1, 4, 8, dtype=torch.long))
    with pytest.raises(TypeError, match=r"module: expected nn.MultiheadAttention, got Linear"):
        MultiHeadAttention.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"module: expected batch_first=True"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    s = SelfAttention(4, 2, 2).double()
    with pytest.raises(ValueError, match=r"x: expected last dim d_model=4, got shape \(1, 3, 5\)"):
        s(rand(1, 3, 5))
    with pytest.raises(ValueError, match=r"x: expected 3 dims \(B, L, d_model\), got shape \(3, 4\)"):
        s(rand(3, 4))


def test_error_input_dtype_or_device_unlike_the_parameters():
    m = MultiHeadAttention(8, 2)  # float32
    with pytest.raises(TypeError, match=r"query: expected dtype torch.float32 \(the dtype of the module's parameters\), got torch.float64"):
        m(rand(1, 3, 8))
    with pytest.raises(TypeError, match=r"query/key/value: expected one dtype, got query=torch.float32, key=torch.float64"):
        m(rand(1, 3, 8, dtype=torch.float32), rand(1, 4, 8))
    on_meta = MultiHeadAttention(8, 2).to("meta")
    with pytest.raises(ValueError, match=r"query: expected device meta \(the device of the module's parameters\), got cpu"):
        on_meta(rand(1, 3, 8, dtype=torch.float32))
    with pytest.raises(ValueError, match=r"query/key/value: expected one device"):
        m(rand(1, 3, 8, dtype=torch.float32), torch.zeros(1, 4, 8, device="meta"))
    s = SelfAttention(4, 2, 2)
    with pytest.raises(TypeError, match=r"x: expected dtype torch.float32 \(the dtype of the module's parameters\), got torch.float64"):
        s(rand(1, 3, 4))


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(ValueError, match=r"module: expected kdim = vdim = embed_dim = 8, got kdim=6, vdim=8"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=6, batch_first=True))
    with pytest.raises(ValueError, match=r"module: expected add_bias_kv=False and add_zero_attn=False"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_zero_attn=True, batch_first=True))


@pytest.mark.parametrize("training", [False, True])
def test_from_torch_and_to_torch_copy_the_train_eval_mode(training):
    ref = nn.MultiheadAttention(8, 2, batch_first=True).train(training)
    ours = MultiHeadAttention.from_torch(ref)
    assert ours.training is training
    assert ours.to_torch().training is training
    assert MultiHeadAttention(8, 2).train(training).to_torch().training is training


# ---- the two paths take the same masks ----

B_, H_, L_, S_ = 2, 2, 4, 6
MASK_SHAPES = [(), (1,), (S_,), (L_, S_), (B_, 1, 1, S_), (B_, H_, L_, S_), (H_, 1, S_), (L_, 1)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", MASK_SHAPES, ids=str)
def test_fast_path_takes_every_mask_shape_the_teaching_path_takes(shape, causal):
    torch.manual_seed(0)
    m = MultiHeadAttention(8, H_, bias=True).double()
    x, mem = rand(B_, L_, 8), rand(B_, S_, 8, seed=1)
    mask = torch.rand(shape, generator=torch.Generator().manual_seed(2)) > 0.3
    mask.view(-1)[0] = True  # a mask of one entry must allow something, to be compared below
    slow, w = m(x, mem, mask=mask, causal=causal)  # the teaching path
    fast, none = m(x, mem, mask=mask, causal=causal, need_weights=False)
    assert none is None and w.shape == (B_, H_, L_, S_)
    torch.testing.assert_close(fast, slow, atol=TOL, rtol=0)
    # and both equal the mask written out in full, (B, H, L, S)
    full = mask.expand(B_, H_, L_, S_) & (causal_mask(L_, S_) if causal else True)
    torch.testing.assert_close(m(x, mem, mask=full)[0], slow, atol=0, rtol=0)


# ---- one check of each input per call ----

@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_cache", [False, True])
def test_forward_checks_each_input_once(monkeypatch, need_weights, with_cache):
    import attn.functional
    import attn.modules
    from attn import KVCache

    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2).double()
    cache = KVCache() if with_cache else None
    if with_cache:
        m(rand(1, 3, 8), cache=cache)  # something cached already
    log = []  # (namespace, check, what it checked)
    for namespace in (attn.modules, attn.functional):
        for name in [n for n in vars(namespace) if n.startswith("check_")]:
            def spy(*args, _real=getattr(namespace, name), _at=(namespace.__name__, name), **kwargs):
                log.append((*_at, str(args[0])))
                return _real(*args, **kwargs)
            monkeypatch.setattr(namespace, name, spy)
    fits = []
    real_fits = KVCache.check_fits

    def spy_fits(self, name, *args, **kwargs):
        fits.append(name)
        return real_fits(self, name, *args, **kwargs)

    monkeypatch.setattr(KVCache, "check_fits", spy_fits)
    out, _ = m(rand(1, 2, 8), mask=torch.ones(1, 2, 1, dtype=torch.bool), need_weights=need_weights, cache=cache)
    assert out.shape == (1, 2, 8)
    assert len(log) == len(set(log)), f"an input checked twice: {log}"
    assert [entry for entry in log if entry[1] == "check_bool_mask"] == [("attn.modules", "check_bool_mask", "mask")]
    assert ("attn.modules", "check_float", "query") in log
    assert ("attn.modules", "check_like_parameters", "query") in log
    assert not [entry for entry in log if entry[0] == "attn.functional"], log  # no second check inside
    assert fits[:1] == (["cache"] if with_cache else [])  # the layer checks its cache before computing


# ---- dropout on the attention weights ----


def torch_mha_with_dropout(p, seed=0):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(8, 2, dropout=p, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    return mha


@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout_in_training_draws_as_torch_does(need_weights):
    """Same seed, same dropped weights: the dropout sits where nn.MultiheadAttention puts it
    (after the softmax, before the weights multiply V), on both paths."""
    ref = torch_mha_with_dropout(0.5).train()
    ours = MultiHeadAttention.from_torch(ref)
    assert ours.dropout == 0.5 and ours.training
    x = rand(2, 5, 8, seed=7)
    torch.manual_seed(1)
    out, w = ours(x, mask=causal_mask(5), need_weights=need_weights)
    torch.manual_seed(1)
    ref_out, ref_w = ref(x, x, x, attn_mask=to_torch_mha_mask(causal_mask(5)),
                         need_weights=need_weights, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=TOL, rtol=0)
    if need_weights:
        torch.testing.assert_close(w, ref_w, atol=TOL, rtol=0)


def test_dropout_zeroes_weights_in_training_and_the_output_uses_them():
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, bias=True, dropout=0.5).double().train()
    x = rand(2, 6, 8, seed=3)
    _, clean = m.eval()(x)  # (B, H, L, S), no dropout
    torch.manual_seed(2)
    out, w = m.train()(x)
    dropped = w == 0
    assert 0.3 < dropped.double().mean().item() < 0.7  # about p = 0.5 of the weights
    torch.testing.assert_close(w[~dropped], clean[~dropped] / 0.5, atol=TOL, rtol=0)  # kept: scaled by 1/(1-p)
    q, k, v = m.project(x, x, x)
    torch.testing.assert_close(out, m.combine(w @ v), atol=TOL, rtol=0)  # the dropped weights make the output


@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout_has_no_effect_in_eval_mode_or_at_zero(need_weights):
    torch.manual_seed(0)
    plain = MultiHeadAttention(8, 2, bias=True).double()
    with_dropout = MultiHeadAttention(8, 2, bias=True, dropout=0.5).double()
    with_dropout.load_state_dict(plain.state_dict())
    x = rand(2, 5, 8, seed=4)
    expected, _ = plain.eval()(x, causal=True, need_weights=need_weights)
    for _ in range(2):  # eval mode: every call the same
        out, _ = with_dropout.eval()(x, causal=True, need_weights=need_weights)
        torch.testing.assert_close(out, expected, atol=TOL, rtol=0)
    out, _ = plain.train()(x, causal=True, need_weights=need_weights)  # dropout=0.0: nothing in training either
    torch.testing.assert_close(out, expected, atol=TOL, rtol=0)
    torch.manual_seed(5)
    out, _ = with_dropout.train()(x, causal=True, need_weights=need_weights)
    assert (out - expected).abs().max() > 1e-3  # and the dropout does act in training


def test_from_torch_and_to_torch_copy_the_dropout():
    ours = MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=True))
    assert ours.dropout == 0.25
    assert ours.to_torch().dropout == 0.25
    assert MultiHeadAttention(8, 2).dropout == 0.0


def test_error_dropout_not_a_probability():
    for bad in (1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=rf"dropout: expected a probability in \[0, 1\), got {bad}"):
            MultiHeadAttention(8, 2, dropout=bad)
    with pytest.raises(ValueError, match=r"dropout: expected a finite number, got nan"):
        MultiHeadAttention(8, 2, dropout=float("nan"))
    with pytest.raises(TypeError, match=r"dropout: expected a number, got str '0.1'"):
        MultiHeadAttention(8, 2, dropout="0.1")
    with pytest.raises(TypeError, match=r"dropout: expected a number, got bool True"):
        MultiHeadAttention(8, 2, dropout=True)


# ---- sizes that cannot be allocated, and a 2-D mask that could be read two ways ----

def test_sizes_whose_weights_cannot_be_allocated_are_refused_before_any():
    with pytest.raises(ValueError, match=r"^d_model: expected a \(d_model, d_model\) weight of at most 2\*\*28 = "
                                         r"268,435,456 entries, got \(d_model, d_model\) = \(4194304, 4194304\), "
                                         r"17,592,186,044,416 entries$"):
        MultiHeadAttention(2**22, 2)  # 64 TiB a weight (a size torch's allocator refuses at once)
    with pytest.raises(ValueError, match=r"^d_k: expected a \(d_k, d_model\) weight of at most 2\*\*28"):
        SelfAttention(8, 2**40, 4)
    with pytest.raises(ValueError, match=r"^d_v: expected a \(d_v, d_model\) weight"):
        SelfAttention(8, 4, 2**40)
    with torch.device("meta"):  # shapes only: the largest that is built, 2**28 entries a weight
        assert MultiHeadAttention(2**14, 2).W_q.weight.numel() == 2**28


def test_numpy_ints_are_sizes():
    np = pytest.importorskip("numpy")
    m = MultiHeadAttention(np.int64(8), np.int64(2))
    assert (m.d_model, m.num_heads, m.head_dim) == (8, 2, 4) and type(m.d_model) is int
    assert SelfAttention(np.int32(4), np.int64(2), np.int64(3)).d_v == 3
    with pytest.raises(TypeError, match=r"d_model: expected a positive int, got float64"):
        MultiHeadAttention(np.float64(8), 2)


def test_weights_too_many_to_hold_name_need_weights_and_the_fast_path_needs_none(monkeypatch):
    """At L = S = 2**15 the weights (B, H, L, S) cannot be held: need_weights is named, before
    anything is computed (on the meta device, nothing could be); need_weights=False needs no
    weights tensor and still runs (here under a limit lowered to 2**6 entries, on real numbers)."""
    on_meta = MultiHeadAttention(8, 2).to("meta")
    with pytest.raises(ValueError, match=r"^need_weights: expected a \(B, H, L, S\) tensor of attention weights "
                                         r"of at most 2\*\*28 = 268,435,456 entries, got \(B, H, L, S\) = "
                                         r"\(1, 2, 32768, 32768\), 2,147,483,648 entries: pass need_weights=False, "
                                         r"the fast path, which needs no weights tensor$"):
        on_meta(torch.empty(1, 2**15, 8, device="meta"))
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2).double()
    x, mem = rand(1, 4, 8), rand(1, 9, 8, seed=1)  # weights (1, 2, 4, 9): 72 entries
    expected, _ = m(x, mem)
    import attn._checks

    monkeypatch.setattr(attn._checks, "MAX_ENTRIES", 2**6)
    with pytest.raises(ValueError, match=r"need_weights: .* at most 2\*\*6 = 64 entries, got \(B, H, L, S\) = "
                                         r"\(1, 2, 4, 9\), 72 entries"):
        m(x, mem)
    fast, none = m(x, mem, need_weights=False)
    assert none is None
    torch.testing.assert_close(fast, expected, atol=TOL, rtol=0)
    assert m(x, rand(1, 8, 8, seed=1))[1].shape == (1, 2, 4, 8)  # 64 entries: at the limit, held
    from attn import KVCache

    cache = KVCache()
    m(rand(1, 7, 8), cache=cache, need_weights=False)  # 7 cached positions
    with pytest.raises(ValueError, match=r"\(B, H, L, S\) = \(1, 2, 4, 11\)"):  # S = T + L
        m(x, cache=cache)


AMBIGUOUS = r"^mask: expected a mask of 3 or 4 dims when the batch has as many sequences as queries \(B = L = 3\), " \
            r"got shape \(3, {S}\), which reads as \(L, S\), one mask for every sequence, and as \(B, S\), " \
            r"one row per sequence: write mask\[None\], \(1, L, S\), for one mask for the whole batch, or " \
            r"attn.padding_mask\(lengths, S\), \(B, 1, 1, S\), for one row per sequence$"


@pytest.mark.parametrize("need_weights", [True, False])
def test_a_2d_mask_is_refused_when_the_batch_is_as_long_as_the_queries(need_weights):
    """B = L = 3 sequences over S = 5 keys: a (B, S) key-padding mask has the shape of an (L, S)
    mask and would be read as one (the audit's silently wrong output). Each meaning, written
    with its own dims, gives the output of its own."""
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, bias=True).double()
    x, mem = rand(3, 3, 8), rand(3, 5, 8, seed=1)
    lengths = [5, 4, 2]
    per_sequence = padding_mask(lengths, max_len=5)  # (B, 1, 1, S)
    for mask in (per_sequence[:, 0, 0], causal_mask(3, 5)):  # (B, S) meant, and (L, S) meant
        with pytest.raises(ValueError, match=AMBIGUOUS.format(S=5)):
            m(x, mem, mask=mask, need_weights=need_weights)
    with pytest.raises(ValueError, match=AMBIGUOUS.format(S=3)):
        m(x, mask=causal_mask(3), need_weights=need_weights)  # self-attention, (L, L)
    # one row per sequence: the padding mask, as each sequence alone with its own keys
    out, _ = m(x, mem, mask=per_sequence, need_weights=need_weights)
    for b, n in enumerate(lengths):
        alone, _ = m(x[b:b + 1], mem[b:b + 1, :n])
        torch.testing.assert_close(out[b:b + 1], alone, atol=TOL, rtol=0)
    # one mask for the whole batch: mask[None], (1, L, S), as each sequence alone under it
    out, _ = m(x, mem, mask=causal_mask(3, 5)[None], need_weights=need_weights)
    for b in range(3):
        alone, _ = m(x[b:b + 1], mem[b:b + 1], mask=causal_mask(3, 5))  # B = 1: (L, S) is unambiguous
        torch.testing.assert_close(out[b:b + 1], alone, atol=TOL, rtol=0)
    # B != L: a 2-D mask can only be (L, S)
    assert m(rand(2, 3, 8), mask=causal_mask(3), need_weights=need_weights)[0].shape == (2, 3, 8)


def test_a_bool_key_or_value_is_named_as_a_mask_given_in_its_place():
    """Notebook 05's layers are called layer(x, mask): called so, this layer gets the mask as its key."""
    m = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with pytest.raises(TypeError, match=r"key: expected a floating-point tensor \(B, S, E\), got a bool tensor "
                                        r"of shape \(3, 3\), a mask\?.*pass the mask by keyword, layer\(x, mask=mask\)"):
        m(x, causal_mask(3))
    with pytest.raises(TypeError, match=r"value: .* a bool tensor"):
        m(x, x, causal_mask(3))
