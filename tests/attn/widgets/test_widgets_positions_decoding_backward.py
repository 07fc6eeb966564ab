"""The explorers of notebooks 09, 10 and 11: their pure functions, and their pictures."""
import math

import numpy as np
import pytest
import torch
from _pictures import box, cell, changed, near, pixels

from attn import scaled_dot_product_attention
from attn.decoding import step_cost
from attn.examples import SENTENCE
from attn.functional import attention_backward
from attn.widgets.backward import N, backward_explorer, cell_gradient
from attn.widgets.decoding import POSITIONS, decode_view, decoding_explorer
from attn.widgets.positions import ENCODINGS, MAX_SHIFT, positions_explorer, shift_view


# --- 09: sliding the sentence -------------------------------------------------------------

@pytest.mark.parametrize("shift", [0, 1, 17, MAX_SHIFT])
def test_rope_map_does_not_change_when_the_sentence_slides(shift):
    assert shift_view("RoPE", shift).largest < 1e-12
    assert shift_view("none", shift).largest < 1e-12


@pytest.mark.parametrize("shift", [1, 17, MAX_SHIFT])
def test_added_codes_change_the_map_when_the_sentence_slides(shift):
    assert shift_view("sinusoidal, added", shift).largest > 0.05


def test_reversing_the_words_changes_rope_and_added_codes_but_not_no_positions():
    assert shift_view("none", 5, "reversed").largest < 1e-12
    assert shift_view("RoPE", 5, "reversed").largest > 0.05
    assert shift_view("sinusoidal, added", 0, "reversed").largest > 0.05


def test_shift_view_rows_are_softmax_rows_and_errors():
    for e in ENCODINGS:
        v = shift_view(e, 3, "reversed")
        np.testing.assert_allclose(v.now.sum(1), 1.0)
        np.testing.assert_allclose(v.difference, v.now - v.reference)
    with pytest.raises(ValueError, match="encoding: expected one of"):
        shift_view("learned")
    with pytest.raises(ValueError, match=f"shift: expected an int in 0..{MAX_SHIFT}, got 61"):
        shift_view("RoPE", 61)
    with pytest.raises(ValueError, match="order: expected one of"):
        shift_view("RoPE", 0, "shuffled")


def test_positions_explorer_difference_map_is_blank_for_rope_and_not_for_added_codes():
    ex = positions_explorer(encoding="RoPE", shift=0)
    diff_ax = ex.maps["difference"].ax
    ex.controls["shift"].value = 20
    blank = box(pixels(ex), diff_ax, inset=3)
    ex.controls["encoding"].value = "sinusoidal, added"
    coloured = box(pixels(ex), diff_ax, inset=3)
    # a zero difference is the colour map's centre everywhere; added codes colour some cells
    assert len(np.unique(blank.reshape(-1, 3), axis=0)) < len(np.unique(coloured.reshape(-1, 3), axis=0))
    assert changed(blank, coloured)


def test_positions_explorer_maps_show_the_reference_now_and_difference_of_the_state():
    ex = positions_explorer(encoding="sinusoidal, added", shift=0)
    ex.controls["shift"].value = 20
    ex.controls["order"].value = "reversed"
    v, n = ex.state, len(SENTENCE)
    assert (v.shift, v.order) == (20, "reversed")
    assert np.abs(v.now - v.reference).max() > 0.05  # a map showing the wrong one would show it
    px = pixels(ex)
    for name, values in (("reference", v.reference), ("now", v.now), ("difference", v.difference)):
        m = ex.maps[name]
        for i in range(n):
            for j in range(n):
                c = cell(px, m.ax, n, n, i, j)
                want = np.array(m.cells.cmap(m.cells.norm(values[i, j]), bytes=True)[:3])
                assert np.abs(c[2, 2] - want).max() <= 2, (name, i, j)  # a corner of the cell: its colour


# --- 10: the KV cache ---------------------------------------------------------------------

def test_decode_view_counts():
    for step in (0, 5, POSITIONS - 1):
        with_cache, without = decode_view(step, "with cache"), decode_view(step, "without cache")
        assert with_cache.computed_rows == 1 and without.computed_rows == step + 1
        assert with_cache.cache_numbers == 2 * 1 * (step + 1) * 16
        c = step_cost(step, 16, 1)
        assert (with_cache.macs, without.macs) == (c.with_cache, c.without_cache)
    w = decode_view(7).weights
    np.testing.assert_allclose(w.sum(1), 1.0)
    assert np.allclose(np.triu(w, 1), 0)  # nobody sees the future
    with pytest.raises(ValueError, match=f"step: expected an int in 0..{POSITIONS - 1}"):
        decode_view(POSITIONS)
    with pytest.raises(ValueError, match="mode: expected one of"):
        decode_view(0, "sometimes")


def test_decoding_explorer_grows_the_cache_with_the_step():
    ex = decoding_explorer(step=2)
    keys_ax = ex.maps["keys"].ax
    grey = np.array([128, 128, 128])
    before = (np.abs(box(pixels(ex), keys_ax, inset=4) - grey).sum(-1) < 10).mean()
    ex.controls["step"].value = 9
    after = (np.abs(box(pixels(ex), keys_ax, inset=4) - grey).sum(-1) < 10).mean()
    assert before > after + 0.3  # 9 of 12 rows not yet generated, then 2 of 12


def test_decoding_explorer_frames_one_row_with_the_cache_and_the_triangle_without():
    ex = decoding_explorer(step=8)
    w_ax = ex.maps["weights"].ax
    orange = np.array([255, 127, 14])

    def frame_height():
        rows = np.nonzero((np.abs(box(pixels(ex), w_ax) - orange).sum(-1) < 30).any(1))[0]
        return rows.max() - rows.min()

    one_row = frame_height()
    ex.controls["mode"].value = "without cache"
    assert frame_height() > 6 * one_row  # the frame goes round rows 0..8 instead of row 8


# --- 11: the softmax's backward pass ------------------------------------------------------

@pytest.mark.parametrize("d_k", [2, 32, 512])
@pytest.mark.parametrize("scaled", [True, False])
def test_cell_gradient_is_the_backward_pass(d_k, scaled):
    c = cell_gradient(2, 4, d_k, scaled)
    g = torch.Generator().manual_seed(11)
    q, k = (torch.randn(N, d_k, dtype=torch.float64, generator=g) for _ in range(2))
    v, d_out = (torch.randn(N, 4, dtype=torch.float64, generator=g) for _ in range(2))
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    s = (scale * q @ k.T).requires_grad_(True)
    w = torch.softmax(s, dim=-1)
    (w @ v).backward(d_out)
    np.testing.assert_allclose(c.dS, s.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(c.W, scaled_dot_product_attention(q, k, v, scale=scale)[1].numpy())
    assert c.value == pytest.approx(c.W[2, 4] * (c.dW[2, 4] - c.row_term))
    # and through the package's backward: dQ = scale * dS K
    dq = attention_backward(q, k, v, d_out, scale=scale)[0]
    np.testing.assert_allclose(dq.numpy(), scale * c.dS @ k.numpy(), atol=1e-10)


def test_unscaled_large_d_k_saturates_and_the_score_gradient_fades():
    scaled, unscaled = cell_gradient(0, 0, 512, True), cell_gradient(0, 0, 512, False)
    assert unscaled.row_max_weight > 0.99 > scaled.row_max_weight
    assert unscaled.row_size < 0.01 < scaled.row_size


def test_cell_gradient_errors():
    with pytest.raises(ValueError, match=f"row: expected an int in 0..{N - 1}"):
        cell_gradient(N)
    with pytest.raises(ValueError, match="d_k: expected one of"):
        cell_gradient(0, 0, 3)
    with pytest.raises(TypeError, match="scaled: expected a bool"):
        cell_gradient(0, 0, 8, "yes")


def test_cell_gradient_carries_the_package_backward_pass():
    """dQ, dK, dV are attention_backward's; each row of dS sums to 0; dQ_i is scale * dS_i K."""
    for d_k, scaled in ((8, True), (512, False)):
        c = cell_gradient(3, 1, d_k, scaled)
        q, k, v, d_out = (torch.from_numpy(np.array(a)) for a in (c.Q, c.K, c.V, c.dO))
        for got, want in zip((c.dQ, c.dK, c.dV), attention_backward(q, k, v, d_out, scale=c.scale)):
            np.testing.assert_allclose(got, want.numpy(), atol=1e-12)
        np.testing.assert_allclose(c.O, c.W @ c.V, atol=1e-12)
        np.testing.assert_allclose(c.S, c.scale * c.Q @ c.K.T, atol=1e-12)
        np.testing.assert_allclose(c.dS.sum(1), 0.0, atol=1e-12)
        np.testing.assert_allclose(c.dQ[3], c.scale * c.dS[3] @ c.K, atol=1e-12)
        assert c.dq_norm == pytest.approx(np.linalg.norm(c.dQ[3]))
        assert c.dk_norm == pytest.approx(np.linalg.norm(c.dK[1]))


# Which row or key each map frames (the path of entry (i, j)), as the explorer draws it.
FRAMES_ROW = ("S", "W", "O", "dO", "dW", "dS", "dQ")  # row i
FRAMES_KEY = ("V", "dK")  # row j
GREEN, ORANGE = (44, 160, 44), (255, 127, 14)


def _framed_rows(ex, name):
    """The cell rows of a map whose left edge is the frame's colour, read from the picture."""
    m = ex.maps[name]
    L, S = m.cells.values.shape
    px = pixels(ex)
    colour = ORANGE if name in ("S", "W", "V", "O") else GREEN
    return [i for i in range(L) if near(cell(px, m.ax, L, S, i, 0)[:, 1:3], colour, tol=40).mean() > 0.6]


def _framed_columns(ex, name):
    """The cell columns of a map whose left edge is green in a row the row frame is not on."""
    m = ex.maps[name]
    L, S = m.cells.values.shape
    px = pixels(ex)
    r = (ex.state.row + 3) % L
    return [j for j in range(S) if near(cell(px, m.ax, L, S, r, j)[:, 1:3], GREEN, tol=40).mean() > 0.6]


def test_backward_explorer_frames_the_path_of_the_chosen_entry():
    ex = backward_explorer(row=0, key=0)
    for row, key in ((2, 4), (5, 1), (0, 3)):
        ex.controls["row"].value, ex.controls["key"].value = row, key
        for name in FRAMES_ROW:
            assert _framed_rows(ex, name) == [row], (name, row, key)
        for name in FRAMES_KEY:
            assert _framed_rows(ex, name) == [key], (name, row, key)
        assert _framed_columns(ex, "dS") == [key]  # column j of dS: what reaches key j


def test_backward_explorer_row_and_key_move_only_their_maps():
    ex = backward_explorer(row=0, key=0)
    for control, value, moves in (("key", 4, {"S", "W", "dW", "dS", "V", "dK"}),
                                  ("row", 3, {"S", "W", "dW", "dS", "O", "dO", "dQ"})):
        before = {n: box(pixels(ex), m.ax) for n, m in ex.maps.items()}
        ex.controls[control].value = value
        after = {n: box(pixels(ex), m.ax) for n, m in ex.maps.items()}
        assert {n for n in ex.maps if changed(before[n], after[n])} == moves, control


def test_backward_explorer_unscaled_large_d_k_fades_the_score_gradients():
    ex = backward_explorer(row=0, key=0, d_k=512, scaled=True)
    ds_ax, dq_ax = ex.maps["dS"].ax, ex.maps["dQ"].ax

    def colour_spread(ax):  # how far the cells are from the map's white centre
        return np.abs(box(pixels(ex), ax, inset=3) - 247).mean()

    before = colour_spread(ds_ax), colour_spread(dq_ax)
    ex.controls["scaled"].value = False
    after = colour_spread(ds_ax), colour_spread(dq_ax)
    assert after[0] < 0.5 * before[0] and after[1] < 0.5 * before[1]
    assert "first 8 of 512" in ex.maps["dQ"].title.text


def test_backward_ds_numbers_fit_their_cells_in_every_state():
    """dS is written without its leading zero below 1 and with one decimal from 1 on, so that
    every state's numbers are at most 4 characters (5 with two decimals would overflow)."""
    from attn.widgets.backward import D_K_CHOICES, _no_leading_zero, _pass

    assert _no_leading_zero(0.04) == "+.04" and _no_leading_zero(-0.2) == "-.20"
    assert _no_leading_zero(1.195) == "+1.2" and _no_leading_zero(-0.999) == "-1.0"
    for d_k in D_K_CHOICES:
        for scaled in (True, False):
            assert max(len(_no_leading_zero(v)) for v in _pass(d_k, scaled)["dS"].ravel()) <= 4


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_backward_explorers_key_says_what_a_bar_in_a_cell_means(lang):
    """The maps that print no numbers mark each negative cell with a short bar (their sign,
    which purple against orange does not give every reader): the key says so, and names
    exactly the maps that draw the bars."""
    from attn.language import language
    from attn.widgets.backward import SIGN_BARS

    with language(lang):
        ex = backward_explorer()
    barred = tuple(name for name, m in ex.maps.items() if m.cells.signs)
    assert barred == SIGN_BARS == ("V", "S", "O", "dO", "dQ", "dK")
    key = ex.key.get_text()
    assert "−" in key and ", ".join(SIGN_BARS) in key  # the bar, and the maps that draw it
    assert ("negative" in key) if lang == "en" else ("负" in key)
    c = cell_gradient()
    assert (c.S < 0).any() and (c.S > 0).any()  # a map with bars holds both signs
    ex.close()
