"""attn.decoding and attn.lessons.trained.seq2seq: generation equals the training pass; costs counted."""
import pytest
import torch

from attn import KVCache
from attn.lessons.cost.counts import count_ops
from attn.decoding import Decoder, cache_numbers, step_cost
from attn.lessons.trained.seq2seq import greedy_decode, make_pairs, train_seq2seq


def _decoder(E=16, H=2, N=3, seed=0):
    torch.manual_seed(seed)
    return Decoder(E, H, N).double().eval()


@pytest.mark.parametrize("cached", [False, True])
def test_a_decoder_layer_is_its_formula(cached):
    """DecoderLayer, as its docstring defines it: a = causal self-attention of x (with the
    cache: of the new positions after the cached ones), y = x + a, then y + ffn(y); computed
    here from the layer's own sub-modules, and its weights are the attention's."""
    layer = _decoder(N=1).layers[0]
    g = torch.Generator().manual_seed(2)
    prompt, x = (torch.randn(2, n, 16, dtype=torch.float64, generator=g) for n in (3, 4))
    if cached:
        mine, theirs = KVCache(), KVCache()
        layer(prompt, mine)
        layer.attn(prompt, cache=theirs)  # the same prefill through the attention alone
        a, w = layer.attn(x, cache=theirs)  # (B, L, E), (B, H, L, T + L)
        out, weights = layer(x, mine)
    else:
        a, w = layer.attn(x, causal=True)  # (B, L, E), (B, H, L, L)
        out, weights = layer(x)
    y = x + a  # the attention's residual
    expected = y + layer.ffn(y)  # the feed-forward's residual
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, w, atol=0, rtol=0)
    assert (out - (a + layer.ffn(a))).abs().max() > 0.1  # the attention's residual matters here
    assert (out - layer.ffn(y)).abs().max() > 0.1  # and so does the feed-forward's


@pytest.mark.parametrize("prefill", [1, 3, 7])
def test_prefill_then_single_steps_equals_the_full_causal_pass(prefill):
    dec = _decoder()
    x = torch.randn(2, 9, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    full, full_w = dec(x)
    caches = dec.new_caches()
    parts = [dec(x[:, :prefill], caches)[0]]
    for t in range(prefill, 9):
        out, w = dec(x[:, t:t + 1], caches)
        parts.append(out)
        # the one new row of weights is the full pass's row t, over keys 0..t
        assert torch.allclose(w[0][:, :, 0], full_w[0][:, :, t, : t + 1], atol=1e-12, rtol=0)
    assert (torch.cat(parts, dim=1) - full).abs().max().item() <= 1e-12
    assert all(len(c) == 9 for c in caches)


@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_a_grouped_query_decoder_decodes_as_its_full_pass_with_smaller_caches(num_kv_heads):
    torch.manual_seed(0)
    dec = Decoder(16, 4, 2, num_kv_heads=num_kv_heads).double().eval()
    assert all(lay.attn.num_kv_heads == num_kv_heads for lay in dec.layers)
    x = torch.randn(2, 7, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    full, _ = dec(x)
    caches = dec.new_caches()
    parts = [dec(x[:, :3], caches)[0]] + [dec(x[:, t:t + 1], caches)[0] for t in range(3, 7)]
    assert (torch.cat(parts, dim=1) - full).abs().max().item() <= 1e-12
    assert cache_numbers(caches) == 2 * 2 * 7 * num_kv_heads * 4 * 2  # keys and values x layers x T x H_kv x D x B


@pytest.mark.parametrize("window", [1, 3])
def test_windowed_caches_make_every_layer_attend_in_a_sliding_window(window):
    from attn import sliding_window_mask

    torch.manual_seed(0)
    dec = Decoder(16, 4, 2, num_kv_heads=2).double().eval()
    x = torch.randn(1, 8, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    expected = x  # each layer's formula, with the sliding-window mask in place of the causal one
    for lay in dec.layers:
        expected = expected + lay.attn(expected, mask=sliding_window_mask(8, window))[0]
        expected = expected + lay.ffn(expected)
    caches = dec.new_caches(window=window)
    assert [c.window for c in caches] == [window, window]
    parts = [dec(x[:, :5], caches)[0]] + [dec(x[:, t:t + 1], caches)[0] for t in range(5, 8)]
    assert (torch.cat(parts, dim=1) - expected).abs().max().item() <= 1e-12
    assert [(len(c), c.kept) for c in caches] == [(8, window)] * 2
    assert (expected - dec(x)[0]).abs().max() > 1e-3  # the window changed the output


def test_token_by_token_without_a_cache_equals_the_full_pass():
    dec = _decoder()
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    full, _ = dec(x)
    rows = [dec(x[:, : t + 1])[0][:, -1:] for t in range(6)]  # recompute the prefix each time
    assert (torch.cat(rows, dim=1) - full).abs().max().item() <= 1e-12


def test_the_future_is_never_seen():
    dec = _decoder()
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    y = x.clone()
    y[:, 4:] += 5.0  # change positions 4 and 5 only
    assert torch.allclose(dec(x)[0][:, :4], dec(y)[0][:, :4], atol=1e-12)
    assert not torch.allclose(dec(x)[0][:, 4:], dec(y)[0][:, 4:])


def test_cache_holds_two_numbers_per_layer_position_and_feature():
    dec = _decoder(E=16, N=3)
    caches = dec.new_caches()
    assert cache_numbers(caches) == 0
    dec(torch.randn(2, 5, 16, dtype=torch.float64), caches)
    assert cache_numbers(caches) == 2 * 3 * 5 * 16 * 2  # keys and values x layers x T x E x B


@pytest.mark.parametrize("T", [0, 5, 12])
def test_step_cost_equals_the_counted_multiply_adds(T):
    E, N = 16, 2
    dec = _decoder(E=E, N=N)
    x = torch.randn(1, T + 1, E, dtype=torch.float64)
    cost = step_cost(T, E, N)
    without = count_ops(lambda: dec(x)).matmul_flops // 2
    caches = dec.new_caches()
    if T:
        dec(x[:, :T], caches)
    with_cache = count_ops(lambda: dec(x[:, T:], caches)).matmul_flops // 2
    assert (cost.with_cache, cost.without_cache) == (with_cache, without)


def test_step_cost_grows_linearly_with_a_cache_and_quadratically_without():
    a, b = step_cost(2047, 64, 2), step_cost(4095, 64, 2)
    assert 1.5 < b.with_cache / a.with_cache <= 2.0  # doubling T: at most twice the work (linear)
    assert 3.0 < b.without_cache / a.without_cache <= 4.0  # at most four times (quadratic)
    assert b.without_cache / b.with_cache > 1000


def test_decoder_errors():
    dec = _decoder()
    with pytest.raises(ValueError, match=r"x: expected last dim E=16, got shape \(1, 3, 8\)"):
        dec(torch.zeros(1, 3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="x: expected 3 dims"):
        dec(torch.zeros(3, 16, dtype=torch.float64))
    with pytest.raises(TypeError, match="caches: expected a list of 3 attn.KVCache"):
        dec(torch.zeros(1, 3, 16, dtype=torch.float64), [KVCache()])
    with pytest.raises(ValueError, match="T: expected an int in 0..inf, got -1"):
        step_cost(-1, 8, 1)
    with pytest.raises(ValueError, match="num_layers: expected an int in 1..inf, got 0"):
        Decoder(8, 2, 0)
    with pytest.raises(ValueError, match=r"num_kv_heads: expected a divisor of num_heads=2 .*got 4"):
        Decoder(8, 2, 1, num_kv_heads=4)
    with pytest.raises(ValueError, match=r"window: expected a positive int, got 0"):
        dec.new_caches(window=0)


@pytest.mark.parametrize("task,pattern", [("reverse", "anti-diagonal"), ("copy", "diagonal")])
def test_seq2seq_learns_the_task_and_its_alignment(task, pattern):
    run = train_seq2seq(task, steps=150)
    assert run.accuracy >= 0.95
    source, _ = make_pairs(task, 64, 8, generator=torch.Generator().manual_seed(3))
    _, weights = greedy_decode(run.model, source)  # (B, 1, 8, 8)
    w = weights[:, 0].mean(0)
    aligned = w.flip(1).diagonal() if pattern == "anti-diagonal" else w.diagonal()
    assert aligned.mean().item() > 0.5  # most of each row's attention on the aligned position


def test_an_untrained_seq2seq_has_no_alignment():
    run = train_seq2seq("reverse", steps=1)
    source, _ = make_pairs("reverse", 64, 8, generator=torch.Generator().manual_seed(3))
    _, weights = greedy_decode(run.model, source)
    assert weights[:, 0].mean(0).flip(1).diagonal().mean().item() < 0.3
    assert run.accuracy < 0.5


def test_make_pairs_errors():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="task: expected one of 'reverse', 'copy', got 'sort'"):
        make_pairs("sort", 2, 3, generator=g)
    with pytest.raises(ValueError, match="length: expected an int in 1..inf, got 0"):
        make_pairs("copy", 2, 0, generator=g)
    s, t = make_pairs("reverse", 2, 4, generator=g)
    assert torch.equal(t, s.flip(1))
