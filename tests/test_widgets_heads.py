"""The heads explorer: the pure function behind it, then the widget driven through its controls."""
import io

import numpy as np
import pytest
import torch
from PIL import Image

from attn.cost.counts import multi_head_cost, valid_num_heads
from attn.examples import SENTENCE
from attn.widgets.heads import D_MODELS, MAX_HEADS, _cached_state, _inputs, heads_explorer, heads_state

N = len(SENTENCE)


@pytest.mark.parametrize("d_model", D_MODELS)
def test_state_shapes_and_maps(d_model):
    for h in valid_num_heads(d_model, max_heads=MAX_HEADS):
        s = heads_state(d_model, h)
        D = d_model // h
        shapes = dict(s.shapes)
        assert shapes["X"] == (1, N, d_model)
        assert shapes["Q split into heads"] == (1, h, N, D)
        assert shapes["head outputs"] == (1, h, N, D)
        assert shapes["concat(heads)"] == shapes["concat W^O"] == (1, N, d_model)
        assert s.weights.shape == (h, N, N) and s.head_dim == D
        np.testing.assert_allclose(s.weights.sum(-1), 1.0, atol=1e-12)
        assert s.params == 4 * d_model**2 and s.softmax_entries == h * N * N
        assert s.macs == multi_head_cost(N, d_model, h).macs


def test_one_head_is_full_size_attention():
    """h = 1: a single map, the softmax of Q K^T / sqrt(d_model) over the whole projection."""
    one, four = heads_state(16, 1), heads_state(16, 4)
    assert one.weights.shape == (1, N, N)
    assert not np.allclose(one.weights[0], four.weights[0])  # same Q, K cut differently


def test_state_is_seeded_and_leaves_global_rng_alone():
    _cached_state.cache_clear()
    _inputs.cache_clear()
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a = heads_state(12, 3).weights.copy()
    assert torch.equal(torch.get_rng_state(), before)
    _cached_state.cache_clear()
    _inputs.cache_clear()
    torch.manual_seed(7)
    np.testing.assert_array_equal(heads_state(12, 3).weights, a)
    assert not np.allclose(heads_state(12, 3, seed=1).weights, a)
    with pytest.raises(ValueError):
        heads_state(12, 3).weights[0, 0, 0] = 1.0  # cached: read-only


def test_state_bad_inputs():
    with pytest.raises(ValueError, match="num_heads"):
        heads_state(12, 5)
    with pytest.raises(TypeError, match="d_model"):
        heads_state(12.0, 3)
    with pytest.raises(ValueError, match="d_model"):
        heads_explorer(d_model=10)
    with pytest.raises(ValueError, match="num_heads"):
        heads_explorer(d_model=16, num_heads=16)


def _pixels(ex):
    return np.asarray(Image.open(io.BytesIO(ex.image.value)).convert("RGB"))


def _cell_is_blank(ex, h):
    """Is grid cell h (0-based) all background, as read from the picture?"""
    px = _pixels(ex)
    ax = ex.fig.axes[h]
    (x0, y0), (x1, y1) = ax.get_window_extent().get_points()
    H = px.shape[0]
    region = px[int(H - y1) + 1:int(H - y0) - 1, int(x0) + 1:int(x1) - 1]
    return bool((region == 255).all())


def test_explorer_every_d_model_and_head_count():
    ex = heads_explorer()
    d_box, h_box = ex.controls["d_model"], ex.controls["num_heads"]
    calls = []
    inner = ex._update
    ex._update = lambda **kw: calls.append(kw) or inner(**kw)
    seen = {ex.image.value}
    full = ex.full_redraws
    for d in D_MODELS[::-1] + D_MODELS:
        before = h_box.value
        calls.clear()
        d_box.value = d
        if d == ex.state.d_model and calls == []:
            continue  # same value twice in a row: no event
        assert len(calls) == 1, "a d_model move must redraw once"
        assert h_box.options == valid_num_heads(d, max_heads=MAX_HEADS)
        want = max(h for h in h_box.options if h <= before)
        assert h_box.value == want
        assert ex.state.d_model == d and ex.state.num_heads == want
        for h in h_box.options:
            if h != h_box.value:
                h_box.value = h
            s = ex.state
            assert (s.d_model, s.num_heads) == (d, h)
            assert f"d_model = {d}" in ex.readout.value
            for k in range(MAX_HEADS):
                assert _cell_is_blank(ex, k) == (k >= h), (d, h, k)
            seen.add(ex.image.value)
    assert ex.full_redraws == full  # hiding heads never needs a full redraw
    assert len(seen) > 30


def test_explorer_one_head_readout():
    ex = heads_explorer(d_model=512, num_heads=8)
    ex.controls["num_heads"].value = 1
    assert ex.state.weights.shape == (1, N, N)
    assert "1 head of d_k = d_v = 512" in ex.readout.value
    assert "(1, 1, 6, 512)" in ex.readout.value
