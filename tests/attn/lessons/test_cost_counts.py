"""attn.lessons.cost.counts: the counts from the sizes against real modules, and the op counter against
torch's own FlopCounterMode."""

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from attn import MultiHeadAttention, SelfAttention
from attn.lessons.cost.counts import (
            attention_cost,
            compare_heads,
            count_ops,
            count_parameters,
            format_rows,
            multi_head_cost,
            single_head_cost,
            trace_multi_head,
            valid_num_heads,
)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("E, H", [(8, 1), (8, 2), (12, 3), (64, 8), (512, 8)])
def test_parameters_match_module(E, H, bias):
    assert count_parameters(MultiHeadAttention(E, H, bias=bias)) == multi_head_cost(5, E, H, bias=bias).params
    ref = nn.MultiheadAttention(E, H, bias=bias, batch_first=True)
    assert count_parameters(ref) == multi_head_cost(5, E, H, bias=bias).params


@pytest.mark.parametrize("E, d_k, d_v", [(8, 8, 8), (8, 2, 3), (512, 512, 512)])
def test_single_head_parameters_match_module(E, d_k, d_v):
    c = attention_cost(4, E, 1, d_k=d_k, d_v=d_v, output_projection=False)
    assert count_parameters(SelfAttention(E, d_k, d_v)) == c.params
    assert c.params_out == 0 and c.macs_out == 0


def torch_macs(fn):
    """Multiply-adds as PyTorch's own counter (aten level) sees them: FLOPs / 2."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops() // 2


@pytest.mark.parametrize("n, E, H", [(10, 512, 8), (6, 16, 4), (7, 12, 3), (3, 8, 1)])
@pytest.mark.parametrize("bias", [False, True])
def test_macs_match_the_counter_and_torchs_flop_counter(n, E, H, bias):
    x = rand(1, n, E)
    layer = MultiHeadAttention(E, H, bias=bias)
    c = multi_head_cost(n, E, H, bias=bias)
    counted = count_ops(lambda: layer(x))
    assert counted.macs == c.macs == torch_macs(lambda: layer(x))
    assert counted.matmul_flops_by_op["linear"] // 2 == c.macs_qkv + c.macs_out
    assert counted.matmul_flops_by_op["matmul"] // 2 == c.macs_scores + c.macs_mix == c.macs_attention
    fast = count_ops(lambda: layer(x, need_weights=False))  # one fused SDPA call
    assert fast.macs == c.macs and fast.matmul_flops_by_op["scaled_dot_product_attention"] // 2 == c.macs_attention


@pytest.mark.parametrize("n, E", [(10, 512), (5, 8)])
def test_single_head_macs_match_the_counter_and_torchs_flop_counter(n, E):
    layer, x = SelfAttention(E, E, E), rand(1, n, E)
    assert count_ops(lambda: layer(x)).macs == single_head_cost(n, E).macs == torch_macs(lambda: layer(x))


@pytest.mark.parametrize("B, L, S, E, H", [(1, 5, 5, 8, 2), (3, 4, 7, 12, 3), (2, 1, 9, 16, 4)])
def test_cross_attention_and_batches_match_the_counter(B, L, S, E, H):
    layer = MultiHeadAttention(E, H)
    q, kv = rand(B, L, E), rand(B, S, E, seed=1)
    c = attention_cost(L, E, H, S=S, batch=B)
    counted = count_ops(lambda: layer(q, kv))
    assert counted.macs == c.macs == torch_macs(lambda: layer(q, kv))
    _, w = layer(q, kv)
    assert c.softmax_entries == w.numel() and c.score_bytes == w.numel() * w.element_size()


@pytest.mark.parametrize("L,S,d_k,d_v,heads,batch,itemsize", [
    (1, None, 1, None, 1, 1, 4), (1024, None, 64, None, 12, 8, 4), (7, 9, 3, 5, 2, 3, 8),
])
def test_attention_part_by_brute_force(L, S, d_k, d_v, heads, batch, itemsize):
    c = attention_cost(L, heads * d_k, heads, S=S, d_k=d_k, d_v=d_v, batch=batch, itemsize=itemsize)
    S_ = L if S is None else S
    dv = d_k if d_v is None else d_v
    # one multiply-add per (query, key, feature), per matrix product, per head, per sequence
    assert c.macs_attention == batch * heads * (L * S_ * d_k + L * S_ * dv)
    assert c.softmax_entries == batch * heads * L * S_
    assert c.score_bytes == c.softmax_entries * itemsize


def test_attention_part_quadruples_when_length_doubles():
    for L in (64, 1000, 4096):
        assert attention_cost(2 * L, 64).score_bytes == 4 * attention_cost(L, 64).score_bytes
        assert attention_cost(2 * L, 64).macs_attention == 4 * attention_cost(L, 64).macs_attention


def test_count_ops_on_known_calls():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    c = count_ops(lambda: torch.tanh(a @ b) + 1.0)
    assert c.matmul_flops == 2 * 3 * 4 * 5 and c.macs == 3 * 4 * 5
    assert c.elementwise_ops == 2 * 3 * 5  # tanh and add
    assert c.largest_tensor == 15
    assert [name for name, _ in c.calls] == ["__matmul__", "tanh", "add"] or \
        [name for name, _ in c.calls] == ["matmul", "tanh", "add"]
    for op in (lambda: a + 1, lambda: a - 1, lambda: 1 - a, lambda: a * 2, lambda: 2 * a, lambda: a / 2,
               lambda: 2 / a, lambda: -a, lambda: torch.exp(a), lambda: torch.tanh(a), lambda: torch.sub(a, a)):
        counted = count_ops(op)
        assert counted.elementwise_ops == 12 and counted.matmul_flops == 0  # one per entry of (3, 4)
    assert count_ops(lambda: torch.softmax(a, -1)).elementwise_ops == 0  # not an element-wise op here
    q, k, v = rand(2, 3, 4, 5), rand(2, 3, 6, 5), rand(2, 3, 6, 7)
    sdpa = count_ops(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v))
    assert sdpa.macs == 2 * 3 * 4 * 6 * (5 + 7)


@pytest.mark.parametrize("n, E, H", [(10, 512, 8), (9, 24, 6), (4, 16, 16)])
def test_chapter_claim_in_what_sense(n, E, H):
    one = single_head_cost(n, E, output_projection=True)
    many = multi_head_cost(n, E, H)
    assert many.params == one.params and many.macs == one.macs
    assert many.macs_scores == one.macs_scores == n * n * E
    assert many.softmax_entries == H * one.softmax_entries
    chapter = single_head_cost(n, E)
    assert many.params - chapter.params == E * E
    assert many.macs - chapter.macs == n * E * E


def test_compare_heads_table():
    names, rows = compare_heads(10, 512, 8)
    assert names[-1] == "8 heads + W^O"
    by = {r.quantity: r for r in rows}
    assert not by["params total"].equal and by["params W^Q,W^K,W^V"].equal
    assert by["softmax entries"].values == (100, 100, 800)
    assert by["MACs Q K^T"].equal and by["MACs weights V"].equal
    text = format_rows(names, rows)
    assert "1,048,576" in text and len(text.splitlines()) == len(rows) + 1


@pytest.mark.parametrize("E, H", [(512, 8), (16, 4), (6, 1)])
def test_trace_matches_module_and_chapter_shapes(E, H):
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H)
    x = rand(1, 10, E)
    steps = trace_multi_head(mha, x)
    torch.testing.assert_close(steps[-1][1], mha(x)[0])
    shapes = dict((name, tuple(t.shape)) for name, t in steps)
    D = E // H
    assert shapes["Q split into heads"] == (1, H, 10, D)
    assert shapes["head outputs"] == (1, H, 10, D)
    assert shapes["weights per head"] == (1, H, 10, 10)
    assert shapes["concat(heads)"] == shapes["concat W^O"] == (1, 10, E)


def test_trace_steps_are_the_formulas():
    torch.manual_seed(1)
    mha = MultiHeadAttention(12, 3, bias=True).double()
    x = rand(2, 5, 12).double()
    names = ["X", "Q = X W^Q", "K = X W^K", "V = X W^V", "Q split into heads", "K split into heads",
             "V split into heads", "weights per head", "head outputs", "concat(heads)", "concat W^O"]
    steps = trace_multi_head(mha, x)
    assert [name for name, _ in steps] == names
    t = dict(steps)
    W = {n: getattr(mha, n) for n in ("W_q", "W_k", "W_v", "W_o")}
    for step, n in (("Q = X W^Q", "W_q"), ("K = X W^K", "W_k"), ("V = X W^V", "W_v")):
        torch.testing.assert_close(t[step], x @ W[n].weight.T + W[n].bias, atol=1e-12, rtol=0)
    qh = t["Q = X W^Q"].view(2, 5, 3, 4).transpose(1, 2)  # (B, n, E) -> (B, H, n, D)
    kh = t["K = X W^K"].view(2, 5, 3, 4).transpose(1, 2)
    vh = t["V = X W^V"].view(2, 5, 3, 4).transpose(1, 2)
    assert torch.equal(t["Q split into heads"], qh) and torch.equal(t["V split into heads"], vh)
    w = torch.softmax(qh @ kh.transpose(-2, -1) / 2.0, dim=-1)  # sqrt(D) = 2
    torch.testing.assert_close(t["weights per head"], w, atol=1e-12, rtol=0)
    torch.testing.assert_close(t["head outputs"], w @ vh, atol=1e-12, rtol=0)
    concat = (w @ vh).transpose(1, 2).reshape(2, 5, 12)  # (B, H, n, D) -> (B, n, E)
    torch.testing.assert_close(t["concat(heads)"], concat, atol=1e-12, rtol=0)
    torch.testing.assert_close(t["concat W^O"], concat @ W["W_o"].weight.T + W["W_o"].bias, atol=1e-12, rtol=0)
    # the hooks are gone afterwards: a second trace records the second input, not the first
    t2 = dict(trace_multi_head(mha, 2 * x))
    torch.testing.assert_close(t2["Q = X W^Q"], 2 * x @ W["W_q"].weight.T + W["W_q"].bias, atol=1e-12, rtol=0)


def test_valid_num_heads():
    assert valid_num_heads(512, max_heads=8) == (1, 2, 4, 8)
    assert valid_num_heads(60, max_heads=12) == (1, 2, 3, 4, 5, 6, 10, 12)
    assert valid_num_heads(7) == (1, 7)
    assert all(12 % h == 0 for h in valid_num_heads(12))


def test_bad_inputs():
    with pytest.raises(ValueError, match="d_model: expected a multiple of num_heads=3, got 10"):
        attention_cost(4, 10, 3)
    with pytest.raises(ValueError, match="L: expected a positive int, got 0"):
        attention_cost(0, 8, 2)
    with pytest.raises(TypeError, match="batch: expected a positive int"):
        attention_cost(4, 8, batch=1.5)
    with pytest.raises(ValueError, match="S: expected a positive int, got 0"):
        attention_cost(4, 8, S=0)
    with pytest.raises(TypeError, match="bias: expected a bool"):
        attention_cost(4, 8, bias="yes")
    with pytest.raises(TypeError, match="num_heads"):
        multi_head_cost(4, 8, 2.0)
    with pytest.raises(TypeError, match="module"):
        count_parameters("layer")
    with pytest.raises(TypeError, match="fn: expected a callable"):
        count_ops(3)
    with pytest.raises(TypeError, match="mha"):
        trace_multi_head(nn.Linear(2, 2), rand(1, 2, 2))
    with pytest.raises(ValueError, match="x"):
        trace_multi_head(MultiHeadAttention(8, 2), rand(1, 2, 6))
    with pytest.raises(ValueError, match="max_heads"):
        valid_num_heads(8, max_heads=0)
