"""attn.lessons.scaling: the numbers behind "divide by sqrt(d_k)", measured on random vectors."""
import math

import numpy as np
import pytest
import torch

from attn.lessons.scaling import (D_K_GRID, ScalingStats, sample_scores, scaling_curves,
                                  scaling_stats, softmax_jacobian_norm)


@pytest.mark.parametrize("d_k", [1, 4, 64, 512])
@pytest.mark.parametrize("seed", [0, 3])
def test_variance_is_d_k_unscaled_and_1_scaled(d_k, seed):
    s = scaling_stats(d_k, seed=seed)
    assert isinstance(s, ScalingStats) and s.d_k == d_k
    assert s.score_var_raw == pytest.approx(d_k, rel=0.1)
    assert s.score_var_scaled == pytest.approx(1.0, rel=0.1)
    assert s.score_var_raw == pytest.approx(d_k * s.score_var_scaled, rel=1e-9)


def test_d_k_1_changes_nothing():
    s = scaling_stats(1)
    assert s.score_var_raw == pytest.approx(s.score_var_scaled)
    assert s.max_weight_raw == pytest.approx(s.max_weight_scaled)
    assert s.grad_norm_raw == pytest.approx(s.grad_norm_scaled)


def test_unscaled_softmax_saturates_and_its_gradient_shrinks():
    small, large = scaling_stats(8), scaling_stats(512)
    assert large.max_weight_raw > small.max_weight_raw + 0.3
    assert large.grad_norm_raw < 0.5 * small.grad_norm_raw
    # scaled: about the same at every d_k
    assert large.max_weight_scaled == pytest.approx(small.max_weight_scaled, abs=0.03)
    assert large.grad_norm_scaled == pytest.approx(small.grad_norm_scaled, rel=0.05)


@pytest.mark.parametrize("d_k", [1, 32, 512])
def test_weights_are_distributions(d_k):
    n = 16
    s = scaling_stats(d_k, n_keys=n)
    for row in (s.example_raw, s.example_scaled):
        assert len(row) == n and sum(row) == pytest.approx(1.0) and min(row) >= 0
    for m in (s.max_weight_raw, s.max_weight_scaled):
        assert 1 / n <= m <= 1


@pytest.mark.parametrize("spread", [0.1, 1.0, 3.0, 10.0])
def test_jacobian_norm_matches_autograd(spread):
    scores = torch.randn(5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * spread
    p = torch.softmax(scores, -1)
    norms = softmax_jacobian_norm(p)
    assert norms.shape == (5,)
    for row, norm in zip(scores, norms):
        jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), row)  # (7, 7)
        assert norm.item() == pytest.approx(torch.linalg.matrix_norm(jac).item(), rel=1e-9)
    one_hot = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    assert softmax_jacobian_norm(one_hot).item() == 0.0  # a saturated softmax passes no gradient
    with pytest.raises(TypeError, match="weights: expected a floating-point tensor"):
        softmax_jacobian_norm(torch.ones(3, dtype=torch.long))


def test_grad_norm_is_the_mean_jacobian_norm_of_the_rows():
    s = scaling_stats(64, n_rows=1)
    for example, norm in ((s.example_raw, s.grad_norm_raw), (s.example_scaled, s.grad_norm_scaled)):
        p = torch.tensor(example, dtype=torch.float64)
        assert norm == pytest.approx(softmax_jacobian_norm(p).item(), rel=1e-12)


def test_same_seed_same_numbers_other_seed_other_numbers():
    assert scaling_stats(64, seed=1) == scaling_stats(64, seed=1)
    assert scaling_stats(64, seed=1) != scaling_stats(64, seed=2)


def test_d_k_above_the_table():
    s = scaling_stats(600, n_rows=200)
    assert s.score_var_raw == pytest.approx(600, rel=0.15)


def test_curves_follow_the_grid():
    assert [c.d_k for c in scaling_curves()] == list(D_K_GRID)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"d_k": 0}, ValueError, "d_k: expected a positive int"),
    ({"d_k": 2.0}, TypeError, "d_k: expected a positive int"),
    ({"d_k": 4, "n_keys": 0}, ValueError, "n_keys"),
    ({"d_k": 4, "n_rows": -1}, ValueError, "n_rows"),
    ({"d_k": 4, "seed": 1.5}, TypeError, "seed: expected an int"),
])
@pytest.mark.parametrize("fn", [scaling_stats, sample_scores])
def test_bad_input(fn, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fn(**kwargs)


def test_sample_scores_are_what_the_stats_measure():
    raw = sample_scores(16, n_keys=8, n_rows=50, seed=3)
    s = scaling_stats(16, n_keys=8, n_rows=50, seed=3)
    assert raw.shape == (50, 8) and raw.dtype == torch.float64
    assert s.score_var_raw == pytest.approx(raw.var().item(), rel=1e-12)
    assert s.example_raw == pytest.approx(torch.softmax(raw[0], -1).tolist(), rel=1e-12)
