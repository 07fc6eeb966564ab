import math

import pytest
import torch

from attn import AdditiveAttention, dot_product_scores, scaled_dot_product_scores


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_dot_and_scaled_scores():
    q, k = rand(2, 3, 8), rand(2, 5, 8, seed=1)
    s = dot_product_scores(q, k)
    assert s.shape == (2, 3, 5)
    torch.testing.assert_close(s[1, 2, 4], q[1, 2] @ k[1, 4])
    torch.testing.assert_close(scaled_dot_product_scores(q, k), s / math.sqrt(8))


def test_additive_matches_formula_with_different_sizes():
    torch.manual_seed(0)
    add = AdditiveAttention(query_dim=3, key_dim=5, hidden_dim=4).double()
    q, k, v = rand(2, 3), rand(4, 5, seed=1), rand(4, 6, seed=2)
    scores = add.scores(q, k)
    assert scores.shape == (2, 4)
    W1, W2, vv = add.W1.weight, add.W2.weight, add.v.weight[0]
    for i in range(2):
        for j in range(4):
            expected = vv @ torch.tanh(W1 @ q[i] + W2 @ k[j])
            torch.testing.assert_close(scores[i, j], expected)
    out, w = add(q, k, v)
    assert out.shape == (2, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, dtype=torch.float64))
    torch.testing.assert_close(out, torch.softmax(scores, -1) @ v)


def test_additive_batched_and_masked():
    torch.manual_seed(1)
    add = AdditiveAttention(3, 5, 4).double()
    q, k, v = rand(2, 3, 3), rand(2, 4, 5, seed=1), rand(2, 4, 2, seed=2)
    mask = torch.tensor([True, True, False, False])
    out, w = add(q, k, v, mask)
    assert out.shape == (2, 3, 2)
    assert torch.equal(w[..., 2:], torch.zeros_like(w[..., 2:]))


def test_scoring_errors():
    with pytest.raises(ValueError, match=r"key: expected feature size E=3 .*got shape \(4, 5\).*AdditiveAttention"):
        dot_product_scores(rand(2, 3), rand(4, 5))
    add = AdditiveAttention(3, 5, 4).double()
    with pytest.raises(ValueError, match=r"query: expected last dim Dq=3, got shape \(2, 4\)"):
        add.scores(rand(2, 4), rand(4, 5))
    with pytest.raises(ValueError, match=r"key: expected last dim Dk=5, got shape \(4, 3\)"):
        add.scores(rand(2, 3), rand(4, 3))
    with pytest.raises(ValueError, match=r"hidden_dim: expected a positive int, got 0"):
        AdditiveAttention(3, 5, 0)
    with pytest.raises(TypeError, match=r"query: expected a floating-point tensor"):
        add.scores(torch.ones(2, 3, dtype=torch.long), rand(4, 5))


def test_scoring_checks_sizes_dtypes_and_devices():
    with pytest.raises(ValueError, match=r"query: expected feature size E >= 1, got shape \(2, 0\)"):
        scaled_dot_product_scores(rand(2, 0), rand(4, 0))
    with pytest.raises(TypeError, match=r"query/key: expected one dtype, got query=torch.float64, key=torch.float32"):
        dot_product_scores(rand(2, 3), rand(4, 3).float())
    with pytest.raises(ValueError, match=r"query/key: expected one device, got query=cpu, key=meta"):
        dot_product_scores(rand(2, 3), torch.zeros(4, 3, dtype=torch.float64, device="meta"))
    add = AdditiveAttention(3, 5, 4)  # float32 parameters
    with pytest.raises(TypeError, match=r"query: expected dtype torch.float32 \(the dtype of the module's parameters\), got torch.float64"):
        add(rand(2, 3), rand(4, 5), rand(4, 2))
    with pytest.raises(TypeError, match=r"query/key: expected one dtype"):
        add.scores(rand(2, 3).float(), rand(4, 5))
    with pytest.raises(TypeError, match=r"scores/value: expected one dtype"):
        add(rand(2, 3).float(), rand(4, 5).float(), rand(4, 2))
