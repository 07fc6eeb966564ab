"""The worked-example explorer: the pure function behind it, then the widget and its picture."""
import io
import itertools

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from matplotlib.colors import Normalize
from PIL import Image

from _pictures import box, cell, changed, near, pixels

from attn.examples import worked_example_inputs
from attn.widgets.worked import DELTAS, PRINTED_STEPS, SCALE_LABELS, worked_explorer, worked_state
from attn.lessons.chapter_check import check_chapter
from attn.lessons.worked_example import SCALES, printed, worked_steps

ORANGE = (255, 127, 14)  # the frame of the nudged X entry


def test_chapter_setting_is_the_worked_example():
    s = worked_state()
    assert s.is_chapter and s.delta == 0 and s.factor == pytest.approx(2**-0.5)
    right = worked_steps()
    for step in ("Q", "K", "V", "scaled", "weights", "output"):
        np.testing.assert_allclose(s.steps[step], right[step].numpy(), atol=1e-12)


@pytest.mark.parametrize("entry", [(0, 0), (1, 1), (2, 3)])
@pytest.mark.parametrize("delta", [-2.0, 0.5, 2.0])
@pytest.mark.parametrize("scale", list(SCALES))
def test_nudged_state(entry, delta, scale):
    s = worked_state(entry, delta, scale)
    X = worked_example_inputs()["X"].numpy()
    changed = np.argwhere(s.X != X)
    assert [tuple(int(v) for v in c) for c in changed] == [entry]
    assert s.X[entry] == X[entry] + delta
    ex = worked_example_inputs()
    ref = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(s.X) @ ex["W_Q"], torch.tensor(s.X) @ ex["W_K"], torch.tensor(s.X) @ ex["W_V"],
        scale=s.factor)
    np.testing.assert_allclose(s.steps["output"], ref.numpy(), atol=1e-12)
    assert s.sanity.ok  # any valid attention passes the sanity checks
    assert not s.is_chapter


def test_printed_numbers_and_their_differences():
    """At the chapter's setting the differences are the chapter's wrong entries (notebook 03)."""
    s = worked_state()
    checks = check_chapter()
    for step in PRINTED_STEPS:
        np.testing.assert_array_equal(s.printed[step], printed(step).numpy())
        assert [tuple(int(v) for v in ij) for ij in np.argwhere(s.differs[step])] == list(checks[step].wrong)
    typo = worked_state((1, 1), 1.0)  # X[1] = [0, 2, 0, 1]: Q row 2 becomes the printed one, K's breaks
    assert not typo.differs["Q"].any() and typo.differs["K"][1].tolist() == [True, False]


def test_bad_inputs():
    with pytest.raises(ValueError, match="entry"):
        worked_state((3, 0))
    with pytest.raises(ValueError, match="entry"):
        worked_state([0, 0])
    with pytest.raises(TypeError, match="delta"):
        worked_state((0, 0), float("nan"))
    with pytest.raises(ValueError, match="scale"):
        worked_state((0, 0), 0.0, "sqrt")


def _panel(ex, step):
    return box(pixels(ex), ex.maps[step].ax)


def test_picture_shows_the_weights():
    """Read cell colours back from the PNG: they must be the colour map of the state's weights."""
    ex = worked_explorer()
    ax = ex.maps["weights"].ax
    norm, cmap = Normalize(0, 1), colormaps["Blues"]
    for scale in SCALES:
        ex.controls["scale"].value = scale
        w, bad = ex.state.steps["weights"], ex.state.differs["weights"]
        for i, j in itertools.product(range(3), range(3)):
            want = np.array(cmap(norm(w[i, j]), bytes=True)[:3], dtype=int)
            c = cell(pixels(ex), ax, 3, 3, i, j)
            got = c[c.shape[0] // 8 + 4, c.shape[1] // 8 + 4]  # inside the frame, away from the numbers
            assert np.abs(got - want).max() <= 2, (scale, i, j, got, want)
            framed = (near(c[:3], (0, 0, 0), tol=5).mean() > 0.9)  # a black top edge: a framed cell
            assert framed == bad[i, j], (scale, i, j)


def test_numbers_and_printed_numbers_are_written():
    ex = worked_explorer()
    view = ex.maps["Q"]
    assert view.cells.text.strings == [[f"{v:.2f}" for v in row] for row in ex.state.steps["Q"]]
    assert view.notes.strings == [["2.00", "1.00"], ["0.00", "2.00*"], ["1.00", "1.00"]]
    c = cell(pixels(ex), view.ax, 3, 2, 0, 0)
    h = c.shape[0]
    assert c[: h // 2].std() > 20 and c[h // 2:].std() > 20  # ink above (computed) and below (printed)


def test_nudge_picker_moves_the_frame_on_x_even_at_by_zero():
    ex = worked_explorer()
    entry = ex.controls["entry"]
    assert ex.controls["delta"].value == 0
    for e in [o[1] for o in entry.options]:
        entry.value = e
        px = pixels(ex)
        framed = [(i, j) for i in range(3) for j in range(4)
                  if near(cell(px, ex.maps["X"].ax, 3, 4, i, j), ORANGE, tol=30).mean() > 0.05]
        assert framed == [e]


def test_explorer_every_control_value():
    ex = worked_explorer()
    entry, delta, scale = ex.controls["entry"], ex.controls["delta"], ex.controls["scale"]
    assert set(o[1] for o in scale.options) == set(SCALES) == set(SCALE_LABELS)
    assert "chapter's own setting" in ex.readout.value
    before = {step: _panel(ex, step) for step in ex.maps}
    for d in DELTAS:
        delta.value = d
        assert ex.state.delta == d and ex.state.X[entry.value] == worked_example_inputs()["X"].numpy()[entry.value] + d
        now = {step: _panel(ex, step) for step in ex.maps}
        if d != 0:  # X[1,1] feeds Q, K and V: every panel moves
            assert all(changed(before[step], now[step]) for step in ex.maps), d
        before = now
    for e in [o[1] for o in entry.options]:
        entry.value = e
        assert ex.state.entry == e
        assert f"X[{e[0]},{e[1]}] changed by" in ex.readout.value
    entry.value, delta.value = (1, 1), 0.0
    before = {step: _panel(ex, step) for step in ex.maps}
    for sc in ("1/d_k", "none"):
        scale.value = sc
        assert ex.state.scale == sc
        assert f"{ex.state.factor:.4f}" in ex.readout.value
        now = {step: _panel(ex, step) for step in ex.maps}
        for step in ex.maps:  # the scale moves the scores and what follows, not X, Q, K, V
            assert changed(before[step], now[step]) == (step in ("scaled", "weights", "output")), (sc, step)
        before = now
    assert ex.full_redraws == 1  # only the one at build time


def test_first_column_note_follows_v():
    ex = worked_explorer()
    assert "first column is 1" in ex.readout.value
    ex.controls["entry"].value = (0, 0)
    ex.controls["delta"].value = 1.0  # V row 0 becomes (2, 0): the note must go
    assert "first column is" not in ex.readout.value
