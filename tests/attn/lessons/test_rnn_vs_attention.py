"""Self-attention vs an RNN, measured (attn.lessons.rnn_vs_attention)."""
import math

import pytest
import torch
from torch import nn

from attn.drawing.plotting import power_of_ten_label
from attn.lessons.rnn_vs_attention import (
            GradientProfile, PathCounts, TinyRNN, attention_graph, gradient_profile, input_gradient_norms,
            longest_path, path_counts, permutation_gap, rnn_graph,
            seeded_layers, sequential_steps,
)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 40])
def test_counts_on_the_graphs(n):
    c = path_counts(n)
    assert isinstance(c, PathCounts) and c.n == n
    assert (c.rnn_steps, c.rnn_path) == (n, n)  # grows with n: O(n)
    assert (c.attention_steps, c.attention_path) == (1, 1)  # constant: O(1)


def test_graph_structure():
    r, a = rnn_graph(3), attention_graph(3)
    assert r[("h", 2)] == (("x", 2), ("h", 1))
    assert set(a[("y", 0)]) == {("x", 0), ("x", 1), ("x", 2)}


def test_longest_path_on_a_hand_graph():
    # a chain x0 -> a -> b plus a shortcut x0 -> b: the shortest path to b is 1 edge
    g = {("x", 0): (), ("a", 0): (("x", 0),), ("b", 0): (("a", 0), ("x", 0))}
    assert longest_path(g) == 1
    assert sequential_steps(g) == 2


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (2.5, TypeError)])
def test_bad_n(bad, exc):
    with pytest.raises(exc, match="n: expected a positive int"):
        rnn_graph(bad)
    with pytest.raises(exc, match="n: expected a positive int"):
        attention_graph(bad)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("B, n, d, h", [(1, 5, 3, 4), (2, 7, 4, 4)])
def test_tiny_rnn_matches_torch_rnn(seed, B, n, d, h):
    torch.manual_seed(seed)
    mine = TinyRNN(d, h).double()
    ref = nn.RNN(d, h, batch_first=True).double()
    with torch.no_grad():
        ref.weight_ih_l0.copy_(mine.W_x.T)
        ref.weight_hh_l0.copy_(mine.W_h.T)
        ref.bias_ih_l0.copy_(mine.b)
        ref.bias_hh_l0.zero_()
    x = torch.randn(B, n, d, dtype=torch.float64)
    torch.testing.assert_close(mine(x), ref(x)[0])


@pytest.mark.parametrize("bad, exc, match", [
    (torch.zeros(2, 3), ValueError, "x: expected 3 dims"),
    (torch.zeros(1, 2, 5), ValueError, "x: expected last dim d=3"),
    (torch.zeros(1, 2, 3, dtype=torch.long), TypeError, "x: expected a floating-point"),
])
def test_tiny_rnn_bad_input(bad, exc, match):
    with pytest.raises(exc, match=match):
        TinyRNN(3, 4)(bad)


def test_seeded_layers_are_reproducible_and_leave_global_rng_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    rnn_a, att_a = seeded_layers(4, seed=5)
    assert torch.equal(torch.random.get_rng_state(), before)
    rnn_b, att_b = seeded_layers(4, seed=5)
    x = torch.randn(1, 6, 4, dtype=torch.float64)
    torch.testing.assert_close(rnn_a(x), rnn_b(x))
    torch.testing.assert_close(att_a(x), att_b(x))


def test_input_gradient_norms_match_autograd_by_hand():
    rnn, _ = seeded_layers(3, seed=0)
    x = torch.randn(1, 4, 3, dtype=torch.float64, requires_grad=True)
    norms = input_gradient_norms(rnn, x.detach())
    y = rnn(x)[0, -1]  # (h,)
    rows = [torch.autograd.grad(y[k], x, retain_graph=True)[0][0] for k in range(y.numel())]
    jac = torch.stack(rows)  # (h, n, d)
    torch.testing.assert_close(norms, jac.pow(2).sum(dim=(0, 2)).sqrt())


def test_input_gradient_norms_bad_input():
    rnn, _ = seeded_layers(3)
    with pytest.raises(ValueError, match="x: expected one sequence"):
        input_gradient_norms(rnn, torch.zeros(2, 4, 3, dtype=torch.float64))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rnn_gradient_vanishes_attention_does_not(seed):
    p = gradient_profile(n=32, d=16, seed=seed)
    assert isinstance(p, GradientProfile) and len(p.rnn) == len(p.attention) == 32
    assert p.rnn[-1] < 1e-6 * p.rnn[0]  # RNN: exponential decay with distance
    far, near = p.attention[16:], p.attention[:16]
    assert min(p.attention) > 0.05 * max(p.attention)  # attention: same order everywhere
    # no decay with distance: the far half is not systematically smaller than the near half
    assert sum(far) / len(far) > 0.5 * sum(near) / len(near)
    # a geometric fit of the RNN's decay: each step multiplies the gradient by well under 1
    rate = math.exp((math.log(p.rnn[-1]) - math.log(p.rnn[0])) / 31)
    assert rate < 0.7


def test_permutation_equivariance():
    rnn, att = seeded_layers(8, seed=0)
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    perm = [3, 0, 5, 1, 4, 2]
    assert permutation_gap(att, x, perm) < 1e-12
    assert permutation_gap(rnn, x, perm) > 1e-2
    assert permutation_gap(rnn, x, list(range(6))) == 0.0


def test_permutation_gap_bad_perm():
    _, att = seeded_layers(2)
    with pytest.raises(ValueError, match="perm: expected a permutation of range"):
        permutation_gap(att, torch.zeros(1, 3, 2, dtype=torch.float64), [0, 0, 1])


def test_power_of_ten_labels_are_plain_text():
    assert [power_of_ten_label(v) for v in (1.0, 0.01, 1e-10, 1000.0)] == ["10⁰", "10⁻²", "10⁻¹⁰", "10³"]
    assert power_of_ten_label(0.02) == "" and power_of_ten_label(0.0) == ""
