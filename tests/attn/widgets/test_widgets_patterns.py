import math

import numpy as np
import pytest
import torch
from _pictures import box, cell, changed, pixels
from matplotlib import colormaps

from attn.examples import TWO_SENTENCE_TOKENS
from attn.lessons.handbuilt import heads as P
from attn.widgets.patterns import (
    D_K_CHOICES,
    PATTERN_CHOICES,
    PATTERN_MASKS,
    map_boxes,
    pattern_explorer,
    pattern_heads,
)


@pytest.mark.parametrize("pattern", PATTERN_CHOICES)
@pytest.mark.parametrize("mask", PATTERN_MASKS)
def test_pattern_heads_shapes_rows_and_mask(pattern, mask):
    s = pattern_heads(pattern, 8, n_tokens=10, d_k=16, strength=1.0, mask=mask)
    assert s.weights.shape == (8, 10, 10) and len(s.titles) == 8 and len(s.profiles) == 8
    np.testing.assert_allclose(s.weights.sum(-1), 1.0)
    assert (s.weights[:, ~s.mask] == 0).all()
    if mask == "padding":
        assert s.tokens[-2:] == ("[PAD]", "[PAD]") and not s.mask[:, -2:].any()
    else:
        assert s.tokens == TWO_SENTENCE_TOKENS[:10]


def test_weights_are_the_packages_head_weights(recwarn):
    for mask in PATTERN_MASKS:
        s = pattern_heads("mixed", 8, n_tokens=9, d_k=8, strength=1.3, scaled=mask != "none", mask=mask)
        for h, spec in enumerate(P.HEAD_VARIANTS["mixed"]):
            q, k = P.head_qk(spec, 9, 8, 1.3)
            ref = P.head_weights(q, k, torch.from_numpy(s.mask.copy()), scaled=mask != "none")
            np.testing.assert_allclose(s.weights[h], ref.numpy(), atol=1e-12)
    assert len(recwarn) == 0


def test_pattern_heads_matches_the_builders():
    s = pattern_heads("mixed", 8, n_tokens=12, d_k=32, strength=0.7, mask="causal")
    for h, spec in enumerate(P.HEAD_VARIANTS["mixed"]):
        q, k = P.head_qk(spec, 12, 32, 0.7)
        future = ~torch.ones(12, 12, dtype=torch.bool).tril()
        ref = torch.softmax((q @ k.T / math.sqrt(32)).masked_fill(future, float("-inf")), -1)
        np.testing.assert_allclose(s.weights[h], ref.numpy(), atol=1e-12)


def test_aligned_score_and_d_k_sharpening():
    scaled = [pattern_heads("diagonal", 1, d_k=d, strength=0.5) for d in D_K_CHOICES[3:]]
    assert [s.aligned_score for s in scaled] == [0.5 * math.sqrt(d) for d in D_K_CHOICES[3:]]
    selfs = [s.profiles[0].self_weight for s in scaled]
    assert all(a < b for a, b in zip(selfs, selfs[1:]))
    raw = pattern_heads("diagonal", 1, d_k=64, strength=0.5, scaled=False)
    assert raw.aligned_score == 32.0 and raw.profiles[0].self_weight > selfs[-2]
    # random heads: after scaling the spread does not grow with d_k
    rnd = [pattern_heads("random", 8, d_k=d, strength=1.0).profiles for d in (16, 128)]
    mean_max = [np.mean([p.max_weight for p in ps]) for ps in rnd]
    assert abs(mean_max[0] - mean_max[1]) < 0.15


def test_extremes_say_something_true_and_never_raise():
    flat = pattern_heads("block", 8, d_k=16, strength=0.0)
    np.testing.assert_allclose(flat.weights, 1 / 8)
    assert any("strength 0" in n for n in flat.notes)
    one = pattern_heads("diagonal", 3, d_k=1)
    np.testing.assert_allclose(one.weights, 1 / 8)
    assert any("d_k = 1" in n for n in one.notes)
    alias = pattern_heads("diagonal", 1, n_tokens=12, d_k=4, strength=2.0)
    assert any("repeat every 8" in n for n in alias.notes)
    assert alias.weights[0, 0, 8] == pytest.approx(alias.weights[0, 0, 0])
    causal = pattern_heads("diagonal", 3, n_tokens=5, d_k=16, mask="causal")
    assert causal.weights[2, 0, 0] == 1.0  # "next" head at the first token: only itself allowed
    assert pattern_heads("vertical", 1, n_tokens=3).profiles[0].top_keys == (0,)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="pattern: expected one of"):
        pattern_heads("stripes")
    with pytest.raises(ValueError, match="mask: expected one of"):
        pattern_heads(mask="left")
    with pytest.raises(ValueError, match="n_tokens: expected 3..12"):
        pattern_heads(n_tokens=13)
    with pytest.raises(ValueError, match="n_heads"):
        pattern_heads(n_heads=9)
    with pytest.raises(ValueError, match="d_k: expected one of"):
        pattern_explorer(d_k=3)


def _cells_drawn(ex) -> list[bool]:
    """For each of the 8 grid cells: is anything drawn in its axes box (else plain white)?"""
    px = pixels(ex)
    return [bool((box(px, m.ax) != 255).any()) for m in ex.maps]


def test_explorer_every_control_across_its_range():
    ex = pattern_explorer()
    c = ex.controls
    assert set(c) == {"pattern", "n_heads", "mask", "d_k", "strength", "scaled", "n_tokens"}
    assert ex.state.n_tokens == 8 and ex.state.n_heads == 8
    previous = [box(pixels(ex), m.ax) for m in ex.maps]

    def moved(name, value):
        nonlocal previous
        before = ex.full_redraws
        c[name].value = value
        assert ex.full_redraws == before, (name, value)  # every part that changes is live
        now = [box(pixels(ex), m.ax) for m in ex.maps]
        shown = ex.state.n_heads
        if name != "n_heads":  # the maps drawn change (their cells, labels or both)
            assert any(changed(a, b) for a, b in zip(previous[:shown], now[:shown])), (name, value)
        else:
            assert any(changed(a, b) for a, b in zip(previous, now)), (name, value)
        previous = now

    for pattern in ("diagonal", "vertical", "block", "random", "mixed"):
        moved("pattern", pattern)
        assert ex.state.pattern == pattern
    for d in (1, 2, 4, 8, 32, 64, 128, 16):
        moved("d_k", d)
        assert ex.state.d_k == d
    for value in (0.0, 0.5, 2.0, 1.0):
        moved("strength", value)
        assert ex.state.strength == value
    moved("scaled", False)
    assert ex.state.aligned_score == 16.0 and "not scaled" in ex.readout.value
    moved("scaled", True)
    for h in (1, 3, 8):
        moved("n_heads", h)
        assert _cells_drawn(ex) == [k < h for k in range(8)] and ex.state.weights.shape[0] == h
        assert [m.title.text for m in ex.maps[:h]] == list(ex.state.titles)
    for m in ("causal", "padding", "none"):
        moved("mask", m)
        assert ex.state.mask_kind == m
        assert ex.maps[0].labels.x_strings == list(ex.state.tokens)
        assert ("[PAD]" in ex.maps[0].labels.x_strings) == (m == "padding")
    for n in (3, 12, 8):
        moved("n_tokens", n)
        assert ex.state.weights.shape[1:] == (n, n)
        for h in range(8):
            assert ex.maps[h].labels.x_strings == ex.maps[h].labels.y_strings == list(ex.state.tokens)
            assert ex.maps[h].cells.values.shape == (n, n)


def test_explorer_readout_and_image_data():
    ex = pattern_explorer("vertical", 2, d_k=64, strength=0.5)
    assert "0.50 · 8.00" in ex.readout.value and "[CLS]" in ex.readout.value
    for h in range(2):
        np.testing.assert_allclose(ex.maps[h].cells.values, ex.state.weights[h])
    assert ex.state.titles[0] == "1: all → [CLS]"
    assert [m.title.text for m in ex.maps[:2]] == list(ex.state.titles)
    # the picture: each cell of head 1 has the colour of its weight
    px, ax, n = pixels(ex), ex.maps[0].ax, ex.state.n_tokens
    cmap = colormaps["Blues"]
    for i in range(n):
        for j in range(n):
            c = cell(px, ax, n, n, i, j)
            want = np.array(cmap(ex.state.weights[0, i, j], bytes=True)[:3])
            assert np.abs(c[c.shape[0] // 2, c.shape[1] // 2] - want).max() <= 2, (i, j)
    # the titles of the two heads are drawn above their axes, none above the others
    for h, ax in enumerate(m.ax for m in ex.maps):
        band = px[int(px.shape[0] - ax.bbox.y1) - 14:int(px.shape[0] - ax.bbox.y1) - 3,
                  int(ax.bbox.x0):int(ax.bbox.x1)]
        assert bool((band < 128).any()) == (h < 2), h


def test_a_flat_block_head_is_explained():
    """Issue 20 item 23: with 8 tokens or fewer, mixed's head 6 (sentences) sees one sentence
    only and draws one flat block; the readout says so, and stops saying so at 9 tokens."""
    from attn.widgets.patterns import pattern_heads

    notes = pattern_heads("mixed", 8, n_tokens=8).notes
    flat = [n for n in notes if "one flat block" in n]
    assert flat and flat[0].startswith("head 6 (sentences)")
    w = pattern_heads("mixed", 8, n_tokens=8).weights[5]
    assert np.allclose(w[1:, 1:], w[1, 1])  # the picture: one flat block after [CLS]
    assert not any("one flat block" in n for n in pattern_heads("mixed", 8, n_tokens=9).notes)
    assert not any("one flat block" in n for n in pattern_heads("diagonal", 8, n_tokens=3).notes)


@pytest.mark.parametrize("n_heads", range(1, 9))
def test_maps_are_laid_out_for_the_heads_shown(n_heads):
    """Issue 33 (N10): one head fills the picture; more share it, inside it, none overlapping."""
    boxes = map_boxes(n_heads)
    assert len(boxes) == n_heads
    for left, bottom, width, height in boxes:
        assert 0 <= left and left + width <= 1 and 0 <= bottom and bottom + height <= 1
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            apart = a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1]
            assert apart, (a, b)
    if n_heads == 1:
        assert boxes[0][3] > 0.75  # the one map takes most of the picture's height
    assert len({round(b[1], 3) for b in boxes}) == (1 if n_heads <= 3 else 2)  # one row, or two


def test_one_head_is_drawn_alone_and_large():
    ex = pattern_explorer()
    ex.controls["n_heads"].value = 1
    px = pixels(ex)
    inside = box(px, ex.maps[0].ax)
    assert inside.shape[0] > 0.75 * px.shape[0], inside.shape  # not a thumbnail in a corner
    outside = px.copy()
    b = ex.maps[0].ax.bbox
    H = px.shape[0]
    top, left = max(0, int(H - b.y1) - 25), max(0, int(b.x0) - 60)
    outside[top:int(H - b.y0) + 50, left:int(b.x1) + 2] = 255  # the map, its labels and title
    assert (outside == 255).all(), "something is drawn outside the one head's map (a map of the 8 before?)"
