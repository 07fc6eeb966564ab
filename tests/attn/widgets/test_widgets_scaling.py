"""The d_k explorer (attn.widgets.scaling): its pure function and its slider."""
import numpy as np
import pytest
import torch
from _pictures import box, changed, pixels

from attn.lessons.scaling import D_K_GRID, sample_scores, scaling_stats, softmax_jacobian_norm
from attn.widgets.scaling import BINS, MAP_QUERIES, VIEW_KEYS, scaling_explorer, scaling_view

# The numbers behind the readout (attn.lessons.scaling) are tested in test_scaling.py.


def test_view_scores_weights_and_gradients():
    for d_k in D_K_GRID:
        v = scaling_view(d_k)
        assert v.stats == scaling_stats(d_k)
        assert v.weights_raw.shape == v.weights_scaled.shape == (MAP_QUERIES, VIEW_KEYS)
        np.testing.assert_allclose(v.weights_raw.sum(-1), 1.0)
        for p, jac in ((v.weights_raw, v.jac_raw), (v.weights_scaled, v.jac_scaled)):
            np.testing.assert_allclose(jac, softmax_jacobian_norm(torch.tensor(p)).numpy())
        assert v.hist_scaled.sum() == pytest.approx(1.0)  # scaled scores all inside ±64
    small, large = scaling_view(1), scaling_view(512)
    np.testing.assert_allclose(small.weights_raw, small.weights_scaled)  # √1 = 1
    assert large.weights_raw.max(-1).mean() > large.weights_scaled.max(-1).mean() + 0.3
    assert large.jac_raw.mean() < 0.5 * large.jac_scaled.mean()
    # the unscaled scores spread out: less of them in the two middle bins at d_k = 512
    middle = slice(len(BINS) // 2 - 1, len(BINS) // 2 + 1)
    assert large.hist_raw[middle].sum() < 0.3 < large.hist_scaled[middle].sum()
    with pytest.raises(ValueError, match=r"^d_k: expected one of 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, got 3$"):
        scaling_view(3)


def test_picture_and_readout_are_one_sample():
    """The picture's 64 queries are the first of the readout's 1000 (issue 23: one source)."""
    for d_k in (1, 8, 512):
        v = scaling_view(d_k)
        raw = sample_scores(d_k)[:64]
        np.testing.assert_allclose(v.hist_raw, np.histogram(raw.numpy(), bins=BINS)[0] / raw.numel())
        np.testing.assert_allclose(v.weights_raw[0], v.stats.example_raw)  # the readout's first row
        np.testing.assert_allclose(v.weights_scaled[0], v.stats.example_scaled)


def test_explorer_slider_steps_in_powers_of_two_and_moves_every_panel():
    ex = scaling_explorer()
    slider = ex.controls["d_k"]
    assert tuple(slider.options) == D_K_GRID and slider.value == 64
    panels = [ex.fig.axes[0], ex.maps["unscaled"].ax, ex.maps["scaled"].ax, ex.fig.axes[-1]]
    before = [box(pixels(ex), ax) for ax in panels]
    for d_k in D_K_GRID[::-1]:
        slider.value = d_k
        assert ex.state.d_k == d_k and ex.state.stats == scaling_stats(d_k)
        assert f"d_k = {d_k}" in ex.readout.value
        np.testing.assert_allclose(ex.maps["unscaled"].cells.values, ex.state.weights_raw)
        now = [box(pixels(ex), ax) for ax in panels]
        if d_k != 64:
            for k, (a, b) in enumerate(zip(before, now)):
                assert changed(a, b), (d_k, k)  # histogram, both maps and the gradient bars
        before = now
    assert "scaling changes nothing" in ex.readout.value  # the last one was d_k = 1
    assert ex.full_redraws == 1


def test_explorer_bad_input():
    with pytest.raises(ValueError, match=r"^d_k: expected one of 1, 2, 4, .*, got 0$"):
        scaling_explorer(0)
    with pytest.raises(ValueError, match=r"^d_k: expected one of 1, 2, 4, .*, got 100$"):
        scaling_explorer(100)


@pytest.mark.parametrize("d_k, seed, error, message", [
    (True, 0, TypeError, r"^d_k: expected an int, got bool True$"),  # True == 1 would pass as d_k = 1
    (4.0, 0, TypeError, r"^d_k: expected an int, got float 4.0$"),
    ("64", 0, TypeError, r"^d_k: expected an int, got str '64'$"),
    (64, "0", TypeError, r"^seed: expected an int, got str '0'$"),
    (64, False, TypeError, r"^seed: expected an int, got bool False$"),
])
def test_view_names_a_bad_argument_expected_and_got(d_k, seed, error, message):
    with pytest.raises(error, match=message):
        scaling_view(d_k, seed=seed)


def test_histogram_and_readout_name_what_they_count_and_every_tick_fits():
    """Issue 33 (N7): the histogram's title and the readout's table each say how many queries and
    keys they count (64 x 16 of the same 1000 x 16), and no tick label is cut at the edge."""
    from attn.widgets.scaling import HIST_QUERIES, STATS_QUERIES, VIEW_KEYS

    ex = scaling_explorer()
    histogram = ex.fig.axes[0]
    assert histogram.get_title() == f"scores q·k: {HIST_QUERIES} queries × {VIEW_KEYS} keys"
    assert f"{STATS_QUERIES} queries × {VIEW_KEYS} keys" in ex.readout.value
    assert f"first {HIST_QUERIES} of the table's {STATS_QUERIES} queries" in ex.readout.value
    assert sample_scores(64)[:HIST_QUERIES].numel() == HIST_QUERIES * VIEW_KEYS
    renderer = ex.fig.canvas.get_renderer()
    for ax in ex.fig.axes:
        for label in ax.get_xticklabels() + ax.get_yticklabels():
            if label.get_visible() and label.get_text():
                box = label.get_window_extent(renderer)
                assert 0 <= box.x0 and box.x1 <= ex.fig.bbox.x1, (label.get_text(), box)
