"""The backward explorer of notebook 11 (attn.widgets.backward): its pure function, and its picture."""
import math

import numpy as np
import pytest
import torch
from _pictures import box, cell, changed, near, pixels

from attn import scaled_dot_product_attention
from attn.functional import attention_backward
from attn.widgets.backward import N, backward_explorer, cell_gradient


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
