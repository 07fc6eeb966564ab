"""Grouped-query and multi-query attention: ``attn.MultiHeadAttention(..., num_kv_heads=H_kv)``
against torch's SDPA with ``enable_gqa``, against a head-by-head reference, and, with
H_kv = H, against the layer as it was before ``num_kv_heads`` existed, bit for bit."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attn.functional
from attn import MultiHeadAttention, causal_mask, padding_mask

TOL = 1e-12
E = 24  # with H = 6 heads, D = 4; H = 4 heads, D = 6
# (H, H_kv): grouped-query (several groups), multi-query (one key/value head), and H_kv = H
HEADS = [(4, 2), (6, 3), (6, 2), (4, 1), (6, 1), (4, 4)]


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def layer(H, H_kv, *, bias=True, dropout=0.0, seed=0):
    torch.manual_seed(seed)
    m = MultiHeadAttention(E, H, num_kv_heads=H_kv, bias=bias, dropout=dropout).double()
    if bias:  # torch starts the biases small: make them matter
        with torch.no_grad():
            for lin in (m.W_q, m.W_k, m.W_v, m.W_o):
                lin.bias.normal_()
    return m.eval()


def heads_of(t, n):
    """(B, T, n * D) -> (B, n, T, D), written here, not taken from the layer."""
    B, T, _ = t.shape
    return t.reshape(B, T, n, -1).permute(0, 2, 1, 3)


def torch_reference(m, query, key, value, mask=None, *, dropout_p=0.0):
    """The layer's projections by F.linear, then torch's own grouped-query attention
    (F.scaled_dot_product_attention(..., enable_gqa=True)), then W_o."""
    H, H_kv = m.num_heads, m.num_kv_heads
    q = heads_of(F.linear(query, m.W_q.weight, m.W_q.bias), H)  # (B, H, L, D)
    k = heads_of(F.linear(key, m.W_k.weight, m.W_k.bias), H_kv)  # (B, H_kv, S, D)
    v = heads_of(F.linear(value, m.W_v.weight, m.W_v.bias), H_kv)  # (B, H_kv, S, D)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, enable_gqa=True)
    B, _, L, _ = out.shape
    return F.linear(out.permute(0, 2, 1, 3).reshape(B, L, E), m.W_o.weight, m.W_o.bias)


def head_by_head(m, query, key, value, mask=None):
    """Each query head h with the keys and values of head h // (H / H_kv), one at a time:
    softmax(q_h k_g^T / sqrt(D)) v_g. Returns the weights (B, H, L, S)."""
    H, H_kv, D = m.num_heads, m.num_kv_heads, m.head_dim
    q = heads_of(m.W_q(query), H)
    k, v = heads_of(m.W_k(key), H_kv), heads_of(m.W_v(value), H_kv)
    weights = []
    for h in range(H):
        g = h // (H // H_kv)  # the key/value head of query head h
        scores = q[:, h] @ k[:, g].transpose(-2, -1) / math.sqrt(D)  # (B, L, S)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights.append(torch.softmax(scores, dim=-1))
    return torch.stack(weights, dim=1)  # (B, H, L, S)


def masks(B, L, S):
    g = torch.Generator().manual_seed(5)
    random = torch.rand(B, 6, L, S, generator=g) > 0.4  # (B, H, L, S) for H = 6 (sliced below)
    random[..., 0] = True  # every query sees at least one key
    return {"none": None, "causal": causal_mask(L, S), "padding": padding_mask([S, S - 2], S),
            "random": random}


# ---- the layer's parameters ----

@pytest.mark.parametrize("H, H_kv", HEADS)
def test_keys_and_values_have_num_kv_heads_heads_under_the_same_names(H, H_kv):
    m = layer(H, H_kv)
    D = E // H
    assert (m.num_heads, m.num_kv_heads, m.head_dim) == (H, H_kv, D)
    assert list(m.state_dict()) == ["W_q.weight", "W_q.bias", "W_k.weight", "W_k.bias",
                                    "W_v.weight", "W_v.bias", "W_o.weight", "W_o.bias"]
    assert m.W_q.weight.shape == m.W_o.weight.shape == (E, E)
    assert m.W_k.weight.shape == m.W_v.weight.shape == (H_kv * D, E)  # E -> H_kv * D
    q, k, v = m.project(*(rand(2, 5, E),) * 3)
    assert q.shape == (2, H, 5, D) and k.shape == v.shape == (2, H_kv, 5, D)


# ---- equal to torch, and to each head computed alone ----

@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding", "random"])
@pytest.mark.parametrize("H, H_kv", HEADS)
def test_equals_torch_sdpa_with_enable_gqa(H, H_kv, mask_name, need_weights):
    m = layer(H, H_kv)
    B, L, S = 2, 5, 7
    query, memory = rand(B, L, E), rand(B, S, E, seed=1)
    mask = masks(B, L, S)[mask_name]
    mask = mask[:, :H] if mask_name == "random" else mask
    expected = torch_reference(m, query, memory, memory, mask)
    out, weights = m(query, memory, mask=mask, need_weights=need_weights)  # cross-attention
    torch.testing.assert_close(out, expected, atol=TOL, rtol=0)
    if need_weights:
        assert weights.shape == (B, H, L, S)
    # self-attention, with the causal flag
    x = rand(B, S, E, seed=2)
    out, _ = m(x, causal=True, need_weights=need_weights)
    torch.testing.assert_close(out, torch_reference(m, x, x, x, causal_mask(S)), atol=TOL, rtol=0)


@pytest.mark.parametrize("H, H_kv", HEADS)
def test_query_head_h_reads_key_value_head_h_over_the_group_size(H, H_kv):
    """Each query head's weights and output, computed alone with its own key/value head:
    consecutive query heads share one (h // G), as torch.repeat_interleave pairs them. Pairing
    them as torch.repeat would (h % H_kv) gives other weights wherever 1 < H_kv < H."""
    m = layer(H, H_kv, seed=3)
    x = rand(2, 6, E, seed=3)
    mask = causal_mask(6)
    expected = head_by_head(m, x, x, x, mask)  # (B, H, L, S)
    out, weights = m(x, mask=mask)
    torch.testing.assert_close(weights, expected, atol=TOL, rtol=0)
    v = heads_of(m.W_v(x), H_kv)
    heads = torch.stack([expected[:, h] @ v[:, h // (H // H_kv)] for h in range(H)], dim=1)  # (B, H, L, D)
    torch.testing.assert_close(out, m.W_o(heads.transpose(1, 2).reshape(2, 6, E)), atol=TOL, rtol=0)


def test_repeat_kv_pairs_query_heads_with_their_group():
    x = torch.arange(3.0).view(1, 3, 1, 1).expand(1, 3, 2, 1)  # head g holds the number g
    assert attn.functional.repeat_kv(x, 2)[0, :, 0, 0].tolist() == [0, 0, 1, 1, 2, 2]
    assert attn.functional.repeat_kv(x, 1) is x


# ---- num_kv_heads = num_heads: the layer as it was, bit for bit ----

def layer_before_num_kv_heads(m, query, key=None, value=None, mask=None, *, need_weights=True, causal=False):
    """MultiHeadAttention.forward as it was before num_kv_heads (commit 4c0c170), its steps
    copied here: project, split into H heads, attend (``attn.functional.attend`` or one SDPA
    call), merge, W_o."""
    key = query if key is None else key
    value = key if value is None else value
    B, L, _ = query.shape
    S, H, D = key.shape[1], m.num_heads, m.head_dim
    split = lambda t: t.view(B, t.shape[1], H, D).transpose(1, 2)  # noqa: E731
    q, k, v = split(m.W_q(query)), split(m.W_k(key)), split(m.W_v(value))
    p = m.dropout if m.training else 0.0
    is_causal = causal and not need_weights and mask is None
    if causal and not is_causal:
        seen = causal_mask(L, S)
        mask = seen if mask is None else mask & seen
    if need_weights:
        heads, weights = attn.functional.attend(q, k, v, mask, 1.0 / math.sqrt(D), dropout=p)
    else:
        if mask is not None and mask.dim() < 2:
            mask = mask.expand(L, S)
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal)
        weights = None
    return m.W_o(heads.transpose(1, 2).reshape(B, L, H * D)), weights


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("num_kv_heads", [None, 3])
def test_num_kv_heads_equal_to_num_heads_is_the_layer_as_it_was(num_kv_heads, bias):
    torch.manual_seed(0)
    old = [nn.Linear(15, 15, bias=bias).double() for _ in range(4)]  # the parameters as they were drawn
    torch.manual_seed(0)
    m = MultiHeadAttention(15, 3, num_kv_heads=num_kv_heads, bias=bias, dropout=0.3).double()  # D = 5
    assert m.num_kv_heads == 3
    for ours, theirs in zip((m.W_q, m.W_k, m.W_v, m.W_o), old):
        assert torch.equal(ours.weight, theirs.weight)
        assert (ours.bias is None) if not bias else torch.equal(ours.bias, theirs.bias)
    x, mem = rand(2, 5, 15), rand(2, 7, 15, seed=1)
    pad = padding_mask([7, 4], 7)  # (B, 1, 1, S)
    calls = [((x,), {}), ((x,), {"causal": True}), ((x, mem), {"mask": pad}),
             ((x, mem), {"mask": pad, "causal": True}), ((x,), {"mask": causal_mask(5)[None]})]
    for training in (False, True):  # in training, the same seed drops the same weights
        m.train(training)
        for need_weights in (True, False):
            for args, kwargs in calls:
                torch.manual_seed(7)
                out, w = m(*args, need_weights=need_weights, **kwargs)
                torch.manual_seed(7)
                ref, ref_w = layer_before_num_kv_heads(m, *args, need_weights=need_weights, **kwargs)
                assert torch.equal(out, ref), (training, need_weights, kwargs)
                assert (w is None and ref_w is None) or torch.equal(w, ref_w)


# ---- the other features, with grouped-query attention ----

@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout_acts_on_every_query_heads_weights(need_weights):
    m = layer(6, 2, dropout=0.5).train()
    x = rand(2, 5, E, seed=4)
    torch.manual_seed(1)
    out, w = m(x, causal=True, need_weights=need_weights)
    if need_weights:  # the teaching path: the output is made with the dropped weights it returns
        dropped = w[..., causal_mask(5)] == 0
        assert 0.3 < dropped.double().mean().item() < 0.7
        v = heads_of(m.W_v(x), 2).repeat_interleave(3, dim=1)  # (B, H, S, D)
        torch.testing.assert_close(out, m.combine(w @ v), atol=TOL, rtol=0)
    else:  # the fast path: SDPA's own dropout, drawn as torch draws it
        torch.manual_seed(1)
        torch.testing.assert_close(out, torch_reference(m, x, x, x, causal_mask(5), dropout_p=0.5),
                                   atol=TOL, rtol=0)
    assert (out - m.eval()(x, causal=True)[0]).abs().max() > 1e-3  # the dropout did act


def test_to_torch_refuses_a_grouped_query_layer_and_from_torch_gives_multi_head():
    with pytest.raises(ValueError, match=r"^num_kv_heads: expected num_kv_heads = num_heads = 6 to convert to "
                                         r"nn.MultiheadAttention, which has no grouped-query attention \(each "
                                         r"of its heads has its own keys and values\), got num_kv_heads=2$"):
        layer(6, 2).to_torch()
    ours = MultiHeadAttention.from_torch(nn.MultiheadAttention(E, 6, batch_first=True))
    assert ours.num_kv_heads == 6
    assert isinstance(layer(6, 6).to_torch(), nn.MultiheadAttention)


@pytest.mark.parametrize("H, H_kv", [(6, 2), (6, 1)])
def test_blockwise_attention_of_a_grouped_query_layer_is_the_layer(H, H_kv):
    from attn.blockwise import blockwise_multi_head_attention

    m = layer(H, H_kv, seed=5)
    x = rand(2, 9, E, seed=5)
    pad = padding_mask([9, 6], 9)
    got = blockwise_multi_head_attention(m, x, mask=pad, causal=True, block_size=4)
    torch.testing.assert_close(got, m(x, mask=pad, causal=True)[0], atol=TOL, rtol=0)


@pytest.mark.parametrize("H, H_kv", [(6, 2), (6, 1)])
def test_value_vectors_of_a_grouped_query_layer_rebuild_its_output(H, H_kv):
    from attn.lessons.contributions import value_vectors

    m = layer(H, H_kv, seed=6)
    x = rand(1, 5, E, seed=6)
    out, a = m(x)  # (B, L, E), (B, H, L, S)
    f = value_vectors(m, x)  # (B, H, S, E)
    torch.testing.assert_close((a[..., None] * f[:, :, None]).sum((1, 3)) + m.W_o.bias, out, atol=TOL, rtol=0)


# ---- bad num_kv_heads ----

@pytest.mark.parametrize("bad, error, match", [
    (4, ValueError, r"^num_kv_heads: expected a divisor of num_heads=6 \(each key/value head serves "
                    r"num_heads // num_kv_heads query heads\), got 4$"),
    (12, ValueError, r"^num_kv_heads: expected a divisor of num_heads=6 .*got 12$"),
    (0, ValueError, r"^num_kv_heads: expected a positive int, got 0$"),
    (-2, ValueError, r"^num_kv_heads: expected a positive int, got -2$"),
    (2.0, TypeError, r"^num_kv_heads: expected a positive int, got float 2.0$"),
    (True, TypeError, r"^num_kv_heads: expected a positive int, got bool True$"),
    ("2", TypeError, r"^num_kv_heads: expected a positive int, got str '2'$"),
])
def test_bad_num_kv_heads_is_named_before_anything_is_built(bad, error, match, monkeypatch):
    built = []
    monkeypatch.setattr(nn.Linear, "__init__", lambda *a, **k: built.append(a))
    with pytest.raises(error, match=match):
        MultiHeadAttention(E, 6, num_kv_heads=bad)
    assert built == []
