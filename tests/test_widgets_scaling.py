"""The d_k explorer (attn.widgets.scaling): its pure function and its slider."""
import math

import numpy as np
import pytest
import torch

from attn.widgets.scaling import D_K_GRID, ScalingStats, scaling_curves, scaling_explorer, scaling_stats


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


def test_jacobian_norm_matches_autograd():
    # grad_norm is the mean Frobenius norm of d softmax / d scores over rows: check one row.
    from attn.widgets.scaling import _softmax_stats
    scores = torch.randn(1, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 3
    jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), scores[0])  # (7, 7)
    _, norm, p = _softmax_stats(scores.numpy())
    np.testing.assert_allclose(p, torch.softmax(scores, -1).numpy(), rtol=1e-12)
    assert norm == pytest.approx(torch.linalg.matrix_norm(jac).item(), rel=1e-9)


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
def test_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        scaling_stats(**kwargs)


def test_explorer_slider_across_its_range():
    ex = scaling_explorer()
    slider = ex.controls["d_k"]
    assert (slider.min, slider.max) == (1, 512)
    images, readouts = set(), set()
    for d_k in (1, 2, 3, 8, 63, 64, 100, 255, 511, 512):
        slider.value = d_k
        assert ex.state == scaling_stats(d_k)
        assert f"d_k = {d_k}" in ex.readout.value
        images.add(ex.image.value)
        readouts.add(ex.readout.value)
    assert len(images) == 10 and len(readouts) == 10
    slider.value = 1
    assert "scaling changes nothing" in ex.readout.value
    slider.value = 512
    assert "scaling changes nothing" not in ex.readout.value
    assert ex.full_redraws == 1


def test_explorer_bad_input():
    with pytest.raises(ValueError, match="d_k"):
        scaling_explorer(0)
