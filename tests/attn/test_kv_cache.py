"""attn.KVCache: decoding with a cache equals the full causal pass; with a window, the full
pass under a sliding-window mask; for a grouped-query layer, it holds num_kv_heads heads."""
import pytest
import torch

from attn import KVCache, MultiHeadAttention, causal_mask, padding_mask, sliding_window_mask

TOL = 1e-12


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def layer(E=12, H=3, bias=True, seed=0, num_kv_heads=None):
    torch.manual_seed(seed)
    return MultiHeadAttention(E, H, num_kv_heads=num_kv_heads, bias=bias).double().eval()


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("prefill", [1, 4, 7])
@pytest.mark.parametrize("bias", [False, True])
def test_prefill_then_single_steps_equals_the_full_causal_pass(need_weights, prefill, bias):
    m = layer(bias=bias)
    x = rand(2, 9, 12)  # (B, T, E)
    full, full_w = m(x, causal=True)
    cache = KVCache()
    outs = [m(x[:, :prefill], cache=cache, need_weights=need_weights)]
    for t in range(prefill, 9):
        outs.append(m(x[:, t : t + 1], cache=cache, need_weights=need_weights))
        assert len(cache) == t + 1
    out = torch.cat([o for o, _ in outs], dim=1)
    assert (out - full).abs().max().item() <= TOL
    assert cache.key.shape == cache.value.shape == (2, 3, 9, 4)
    if need_weights:
        # the weights of step t are row t of the full pass's weights, over keys 0..t
        for t in range(prefill, 9):
            _, w = outs[t - prefill + 1]
            assert w.shape == (2, 3, 1, t + 1)
            assert (w[:, :, 0] - full_w[:, :, t, : t + 1]).abs().max().item() <= TOL
        _, w0 = outs[0]
        assert (w0 - full_w[:, :, :prefill, :prefill]).abs().max().item() <= TOL
    else:
        assert all(w is None for _, w in outs)


def test_chunks_of_several_tokens_attend_causally_among_themselves():
    m = layer()
    x = rand(1, 10, 12, seed=1)
    full, _ = m(x, causal=True)
    cache = KVCache()
    chunks = [m(x[:, a:b], cache=cache)[0] for a, b in ((0, 3), (3, 7), (7, 8), (8, 10))]
    assert (torch.cat(chunks, dim=1) - full).abs().max().item() <= TOL


def test_cache_with_a_padding_mask():
    m = layer(seed=2)
    x = rand(2, 6, 12, seed=2)
    pad = padding_mask([6, 4], 6)  # (B, 1, 1, S)
    full, _ = m(x, mask=pad, causal=True)
    cache = KVCache()
    out0, _ = m(x[:, :4], mask=pad[..., :4], cache=cache)
    out1, _ = m(x[:, 4:5], mask=pad[..., :5], cache=cache)
    out2, _ = m(x[:, 5:6], mask=pad[..., :6], cache=cache)
    got = torch.cat([out0, out1, out2], dim=1)
    assert (got[0] - full[0]).abs().max().item() <= TOL
    assert (got[1, :4] - full[1, :4]).abs().max().item() <= TOL


def test_cache_is_causal_even_among_new_tokens():
    # without the causal rule the prefill's first query would see the later ones
    m = layer()
    x = rand(1, 5, 12)
    out, w = m(x, cache=KVCache())
    assert not w[0, :, :, :].triu(1).any()
    torch.testing.assert_close(out, m(x, mask=causal_mask(5))[0], atol=TOL, rtol=0)


def test_append_and_clear():
    cache = KVCache()
    assert len(cache) == 0 and cache.key is None
    k, v = cache.append(rand(2, 3, 4, 5), rand(2, 3, 4, 5, seed=1))
    assert len(cache) == 4
    k2, v2 = cache.append(rand(2, 3, 1, 5, seed=2), rand(2, 3, 1, 5, seed=3))
    assert k2.shape == v2.shape == (2, 3, 5, 5) and len(cache) == 5
    assert torch.equal(k2[:, :, :4], k) and torch.equal(v2[:, :, 4:], rand(2, 3, 1, 5, seed=3))
    assert "positions=5" in repr(cache)
    cache.clear()
    assert len(cache) == 0 and cache.value is None


def test_cache_errors():
    m = layer()
    with pytest.raises(TypeError, match=r"cache: expected an attn.KVCache or None, got dict"):
        m(rand(1, 2, 12), cache={})
    with pytest.raises(ValueError, match=r"cache: expected self-attention \(key and value None\)"):
        m(rand(1, 2, 12), rand(1, 3, 12), cache=KVCache())
    cache = KVCache()
    m(rand(2, 3, 12), cache=cache)
    with pytest.raises(ValueError, match=r"cache: expected B=2, H=3, D=4 like the cached keys \(2, 3, 3, 4\) \(B, H, T, D\), got B=1, H=3, D=4"):
        m(rand(1, 1, 12), cache=cache)
    with pytest.raises(ValueError, match=r"cache: expected B=2, H=3, D=4 like the cached keys .*got B=2, H=2, D=6"):
        layer(H=2)(rand(2, 1, 12), cache=cache)
    with pytest.raises(TypeError, match=r"cache: expected dtype torch.float64 like the cached keys, got torch.float32"):
        MultiHeadAttention(12, 3)(rand(2, 1, 12, dtype=torch.float32), cache=cache)
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(B, H, L, S\) = \(2, 3, 1, 4\)"):
        m(rand(2, 1, 12), mask=torch.ones(1, 3, dtype=torch.bool), cache=cache)
    assert len(cache) == 3  # a rejected call leaves the cache as it was
    with pytest.raises(ValueError, match=r"key: expected 4 dims \(B, H, T_new, D\)"):
        KVCache().append(rand(2, 3), rand(2, 3))
    with pytest.raises(ValueError, match=r"value: expected the shape of key \(1, 1, 2, 3\), got \(1, 1, 3, 3\)"):
        KVCache().append(rand(1, 1, 2, 3), rand(1, 1, 3, 3))
    with pytest.raises(ValueError, match=r"key: expected B=2, H=3, D=4 like the cached keys"):
        cache.append(rand(2, 3, 1, 5), rand(2, 3, 1, 5))
    with pytest.raises(TypeError, match=r"key: expected dtype torch.float64 like the cached keys, got torch.float32"):
        cache.append(rand(2, 3, 1, 4, dtype=torch.float32), rand(2, 3, 1, 4, dtype=torch.float32))


# ---- a cache belongs to one layer ----

def test_a_cache_filled_by_one_layer_refuses_another_of_the_same_shape():
    a, b = layer(seed=0), layer(seed=1)  # same E, H, dtype: their keys would mix silently
    x = rand(2, 4, 12)
    cache = KVCache()
    a(x[:, :3], cache=cache)
    assert cache.module is a
    with pytest.raises(ValueError, match=r"cache: expected the cache of the module that filled it \(a "
                                         r"MultiHeadAttention\), got another MultiHeadAttention: give each "
                                         r"layer its own KVCache, or clear\(\) this one"):
        b(x[:, 3:], cache=cache)
    for need_weights in (True, False):  # refused before any computation, on both paths
        with pytest.raises(ValueError, match=r"cache: expected the cache of the module that filled it"):
            b(x[:, 3:], cache=cache, need_weights=need_weights)
    assert len(cache) == 3 and cache.module is a  # the refused call changed nothing
    a(x[:, 3:], cache=cache)  # its own layer goes on
    assert len(cache) == 4
    cache.clear()  # a new sequence: any layer may fill it now
    assert cache.module is None
    b(x[:, :2], cache=cache)
    assert cache.module is b
    with pytest.raises(ValueError, match=r"cache: expected the cache of the module that filled it"):
        a(x[:, 2:3], cache=cache)
    with pytest.raises(ValueError, match=r"key: expected the cache of the module that filled it"):
        cache.append(rand(2, 3, 1, 4), rand(2, 3, 1, 4), module=a)
    cache.append(rand(2, 3, 1, 4), rand(2, 3, 1, 4))  # by hand, naming no layer: allowed
    assert len(cache) == 3


def test_a_cache_made_for_a_layer_refuses_any_other_even_empty_and_after_clear():
    a, b = layer(seed=0), layer(seed=1)
    cache = KVCache(a)
    assert cache.module is a and len(cache) == 0
    with pytest.raises(ValueError, match=r"cache: expected the cache of the module it was made for \(a "
                                         r"MultiHeadAttention\), got another MultiHeadAttention: give each "
                                         r"layer its own KVCache$"):
        b(rand(1, 2, 12), cache=cache)
    assert len(cache) == 0
    a(rand(1, 2, 12), cache=cache)
    cache.clear()
    assert cache.module is a and len(cache) == 0
    with pytest.raises(ValueError, match=r"cache: expected the cache of the module it was made for"):
        b(rand(1, 2, 12), cache=cache)
    with pytest.raises(TypeError, match=r"module: expected the attention layer \(a torch.nn.Module\) this cache "
                                        r"is for, or None, got str"):
        KVCache("layer 1")


def test_a_decoder_handed_its_caches_in_the_wrong_order_says_so():
    from attn.decoding import Decoder

    torch.manual_seed(0)
    dec = Decoder(12, 3, 2).double().eval()  # two layers of one shape
    x = rand(1, 5, 12)
    full, _ = dec(x)
    caches = dec.new_caches()
    dec(x[:, :3], caches)
    assert [c.module for c in caches] == [lay.attn for lay in dec.layers]
    with pytest.raises(ValueError, match=r"cache: expected the cache of the module that filled it"):
        dec(x[:, 3:4], caches[::-1])
    assert [len(c) for c in caches] == [3, 3]  # the first layer refused before appending anything
    steps = [dec(x[:, t:t + 1], caches)[0] for t in (3, 4)]  # the right order still decodes
    assert (torch.cat(steps, dim=1) - full[:, 3:]).abs().max().item() <= TOL


# ---- grouped-query layers: the cache holds num_kv_heads heads ----

@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("H, H_kv", [(6, 6), (6, 3), (6, 2), (6, 1)])
def test_a_grouped_query_cache_holds_num_kv_heads_heads_and_decodes_as_the_full_pass(H, H_kv, need_weights):
    m = layer(E=12, H=H, num_kv_heads=H_kv)
    x = rand(2, 8, 12, seed=4)
    full, full_w = m(x, causal=True)
    cache = KVCache()
    outs = [m(x[:, :3], cache=cache, need_weights=need_weights)]
    outs += [m(x[:, t:t + 1], cache=cache, need_weights=need_weights) for t in range(3, 8)]
    assert cache.key.shape == cache.value.shape == (2, H_kv, 8, 12 // H)  # (B, H_kv, T, D), never H heads
    assert (torch.cat([o for o, _ in outs], dim=1) - full).abs().max().item() <= TOL
    if need_weights:  # one row of weights per query head
        assert outs[-1][1].shape == (2, H, 1, 8)
        assert (outs[-1][1][:, :, 0] - full_w[:, :, 7]).abs().max().item() <= TOL


def test_a_cache_of_another_number_of_key_value_heads_is_refused():
    cache = KVCache()
    layer(E=12, H=6, num_kv_heads=2)(rand(1, 3, 12), cache=cache)
    with pytest.raises(ValueError, match=r"cache: expected B=1, H=2, D=2 like the cached keys \(1, 2, 3, 2\) "
                                         r"\(B, H, T, D\), got B=1, H=6, D=2"):
        layer(E=12, H=6)(rand(1, 1, 12), cache=cache)


# ---- a window: the rolling buffer and sliding-window attention ----

T_ALL = 9  # positions of the sequence decoded below


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("prefill", [1, 4, 7])
@pytest.mark.parametrize("window", [1, 2, 4, 9, 12])
@pytest.mark.parametrize("H, H_kv", [(6, 6), (6, 2), (6, 1)])
def test_a_windowed_cache_decodes_as_the_full_pass_under_a_sliding_window(H, H_kv, window, prefill, need_weights):
    """Prefill (longer than the window, for the small windows) then one token at a time, with
    a cache that keeps the last `window` positions: the outputs and weights of the full pass
    with mask=sliding_window_mask(T, window)."""
    m = layer(E=12, H=H, num_kv_heads=H_kv)
    x = rand(2, T_ALL, 12, seed=5)
    full, full_w = m(x, mask=sliding_window_mask(T_ALL, window))
    cache = KVCache(window=window)
    outs = [m(x[:, :prefill], cache=cache, need_weights=need_weights)]
    assert (len(cache), cache.kept) == (prefill, min(prefill, window))
    for t in range(prefill, T_ALL):
        kept = cache.kept  # the keys this step sees: the kept ones, then its own
        out, w = m(x[:, t:t + 1], cache=cache, need_weights=need_weights)
        outs.append((out, w))
        assert (len(cache), cache.kept) == (t + 1, min(t + 1, window))  # seen, kept
        assert cache.key.shape == cache.value.shape == (2, H_kv, min(t + 1, window), 12 // H)
        if need_weights:  # row t of the full pass, over the columns of the keys kept
            assert w.shape == (2, H, 1, kept + 1)
            assert (w[:, :, 0] - full_w[:, :, t, t - kept:t + 1]).abs().max().item() <= TOL
    assert (torch.cat([o for o, _ in outs], dim=1) - full).abs().max().item() <= TOL
    if need_weights:
        assert (outs[0][1] - full_w[:, :, :prefill, :prefill]).abs().max().item() <= TOL
    if window < T_ALL:  # the window did change the output: a test of the window, not of the cache
        assert (full - m(x, causal=True)[0]).abs().max() > 1e-3


@pytest.mark.parametrize("window", [1, 3, 5])
def test_a_windowed_cache_takes_chunks_of_any_length(window):
    m = layer(E=12, H=6, num_kv_heads=2, seed=6)
    x = rand(1, 14, 12, seed=6)
    full, _ = m(x, mask=sliding_window_mask(14, window))
    cache = KVCache(window=window)
    chunks = [m(x[:, a:b], cache=cache)[0] for a, b in ((0, 2), (2, 9), (9, 10), (10, 14))]
    assert (torch.cat(chunks, dim=1) - full).abs().max().item() <= TOL
    assert (len(cache), cache.kept) == (14, window)


def test_a_windowed_cache_with_a_padding_mask_reads_its_columns_as_the_kept_keys():
    """With a window the mask's columns are the keys the step sees: the kept positions, then the
    new ones (S = cache.kept + L), as the weights' columns are."""
    m = layer(E=12, H=6, num_kv_heads=3, seed=7)
    x = rand(2, 7, 12, seed=7)
    pad = padding_mask([7, 4], 7)  # (B, 1, 1, S): sequence 1 has 4 real positions
    full, _ = m(x, mask=pad & sliding_window_mask(7, 3))
    cache = KVCache(window=3)
    outs = [m(x[:, :4], mask=pad[..., :4], cache=cache)[0]]
    for t in range(4, 7):
        first = t - cache.kept  # the position of the first kept key
        outs.append(m(x[:, t:t + 1], mask=pad[..., first:t + 1], cache=cache)[0])
    got = torch.cat(outs, dim=1)
    assert (got[0] - full[0]).abs().max().item() <= TOL
    assert (got[1, :4] - full[1, :4]).abs().max().item() <= TOL
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable to \(B, H, L, S\) = \(2, 6, 1, 4\), "
                                         r"got shape \(2, 1, 1, 8\)"):
        m(rand(2, 1, 12), mask=padding_mask([8, 4], 8), cache=cache)  # columns of every position seen


def test_the_rolling_buffer_by_hand_drops_the_oldest_and_frees_them():
    cache = KVCache(window=3)
    k = rand(1, 2, 5, 4)  # (B, H, T_new, D)
    got_k, got_v = cache.append(k, -k)
    assert torch.equal(got_k, k) and torch.equal(got_v, -k)  # every new key, for the new queries
    assert torch.equal(cache.key, k[:, :, 2:]) and torch.equal(cache.value, -k[:, :, 2:])  # the last 3 kept
    assert cache.key.untyped_storage().nbytes() == cache.key.numel() * 8  # not a view of all 5
    step = rand(1, 2, 1, 4, seed=1)
    got_k, _ = cache.append(step, step)
    assert torch.equal(got_k, torch.cat([k[:, :, 2:], step], dim=2))  # the 3 kept, then the new: 4
    assert torch.equal(cache.key, torch.cat([k[:, :, 3:], step], dim=2))
    assert (len(cache), cache.kept) == (6, 3)
    assert "positions=6, window=3" in repr(cache)
    cache.clear()  # a new sequence: the window stays
    assert (len(cache), cache.kept, cache.window, cache.key) == (0, 0, 3, None)
    cache.append(step, step)
    assert (len(cache), cache.kept) == (1, 1)


def test_without_a_window_seen_and_kept_are_equal():
    cache = KVCache()
    assert cache.window is None
    cache.append(rand(1, 2, 5, 4), rand(1, 2, 5, 4))
    cache.append(rand(1, 2, 2, 4), rand(1, 2, 2, 4))
    assert len(cache) == cache.kept == 7


@pytest.mark.parametrize("bad, error, match", [
    (0, ValueError, r"^window: expected a positive int, got 0$"),
    (-3, ValueError, r"^window: expected a positive int, got -3$"),
    (True, TypeError, r"^window: expected a positive int, got bool True$"),
    (2.5, TypeError, r"^window: expected a positive int, got float 2.5$"),
    ("4", TypeError, r"^window: expected a positive int, got str '4'$"),
])
def test_bad_window(bad, error, match):
    with pytest.raises(error, match=match):
        KVCache(window=bad)
