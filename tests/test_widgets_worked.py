"""The worked-example explorer: the pure function behind it, then the widget and its picture."""
import io
import itertools

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from matplotlib.colors import Normalize
from PIL import Image

from attn.examples import worked_example_inputs
from attn.widgets.worked import DELTAS, SCALE_LABELS, worked_explorer, worked_state
from attn.worked_example import SCALES, worked_steps


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


def test_bad_inputs():
    with pytest.raises(ValueError, match="entry"):
        worked_state((3, 0))
    with pytest.raises(ValueError, match="entry"):
        worked_state([0, 0])
    with pytest.raises(TypeError, match="delta"):
        worked_state((0, 0), float("nan"))
    with pytest.raises(ValueError, match="scale"):
        worked_state((0, 0), 0.0, "sqrt")


def _pixel(ex, ax, x, y):
    px = np.asarray(Image.open(io.BytesIO(ex.image.value)).convert("RGB"))
    X, Y = ax.transData.transform((x, y))
    return px[int(round(px.shape[0] - Y)), int(round(X))]


def test_picture_shows_the_weights():
    """Read cell colours back from the PNG: they must be the colour map of the state's weights."""
    ex = worked_explorer()
    ax = ex.fig.axes[4]  # the weights panel
    norm, cmap = Normalize(0, 1), colormaps["Blues"]
    for scale in SCALES:
        ex.controls["scale"].value = scale
        w = ex.state.steps["weights"]
        for i, j in itertools.product(range(3), range(3)):
            want = np.array(cmap(norm(w[i, j]), bytes=True)[:3], dtype=int)
            got = _pixel(ex, ax, j - 0.4, i - 0.35).astype(int)  # a corner of the cell, away from its number
            assert np.abs(got - want).max() <= 2, (scale, i, j, got, want)


def test_numbers_are_drawn():
    """A cell with its number has dark or light text pixels that an empty cell does not."""
    ex = worked_explorer()
    ax = ex.fig.axes[4]
    px = np.asarray(Image.open(io.BytesIO(ex.image.value)).convert("RGB")).astype(int)
    X, Y = ax.transData.transform((0, 0))
    patch = px[int(px.shape[0] - Y) - 3:int(px.shape[0] - Y) + 4, int(X) - 8:int(X) + 9]
    assert patch.std() > 20  # text on a flat cell


def test_explorer_every_control_value():
    ex = worked_explorer()
    entry, delta, scale = ex.controls["entry"], ex.controls["delta"], ex.controls["scale"]
    assert set(o[1] for o in scale.options) == set(SCALES) == set(SCALE_LABELS)
    assert "chapter's own setting" in ex.readout.value
    images = {ex.image.value}
    for d in DELTAS:
        delta.value = d
        assert ex.state.delta == d and ex.state.X[entry.value] == worked_example_inputs()["X"].numpy()[entry.value] + d
        images.add(ex.image.value)
    assert len(images) == len(DELTAS)  # every nudge of X[1,1] changes the picture
    for e in [o[1] for o in entry.options]:
        entry.value = e
        assert ex.state.entry == e
        assert f"X[{e[0]},{e[1]}] changed by" in ex.readout.value
        images.add(ex.image.value)
    for sc in SCALES:
        scale.value = sc
        assert ex.state.scale == sc
        assert f"{ex.state.factor:.4f}" in ex.readout.value
        images.add(ex.image.value)
    assert len(images) > len(DELTAS) + 8
    assert ex.full_redraws == 1  # only the one at build time


def test_first_column_note_follows_v():
    ex = worked_explorer()
    assert "first column is 1" in ex.readout.value
    ex.controls["entry"].value = (0, 0)
    ex.controls["delta"].value = 1.0  # V row 0 becomes (2, 0): the note must go
    assert "first column is" not in ex.readout.value
