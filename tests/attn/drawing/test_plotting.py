import subprocess
import sys

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.ft2font import FT2Font

from attn.drawing import plotting


def test_import_changes_no_global_matplotlib_setting():
    code = ("import matplotlib, json; before = dict(matplotlib.rcParams); "
            "import attn, attn.drawing.plotting, attn.widgets; "
            "after = dict(matplotlib.rcParams); "
            "print(json.dumps(sorted(k for k in after if str(after[k]) != str(before[k]))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_font_has_the_course_tokens():
    font = FT2Font(plotting._font_path())
    for ch in "小明在北京大学学习人工智能[CLS]":
        assert font.get_char_index(ord(ch)) != 0, ch


def test_heatmap_updates_in_place():
    w = torch.softmax(torch.randn(3, 4, generator=torch.Generator().manual_seed(0)), -1)
    hm = plotting.heatmap(w, ["a", "b", "c", "d"], ["x", "y", "z"], annotate=True)
    image, fig = hm.image, hm.ax.figure
    blues = matplotlib.colormaps["Blues"]
    # the image is the cells' colours: the values (settled) through the colour map, as painted
    np.testing.assert_array_equal(image.get_array(), blues(np.round(w.double().numpy(), 6), bytes=True))
    assert [t.get_text() for t in hm.ax.get_xticklabels()] == ["a", "b", "c", "d"]
    assert [t.get_text() for t in hm.ax.get_yticklabels()] == ["x", "y", "z"]
    assert hm.texts[0].get_text() == f"{w[0, 0].item():.2f}"
    hm.update(torch.zeros(3, 4))
    assert hm.image is image and hm.ax.figure is fig
    assert (image.get_array() == blues(0.0, bytes=True)).all() and hm.texts[0].get_text() == "0.00"
    assert [t.get_text() for t in hm.ax.get_xticklabels()] == ["a", "b", "c", "d"]  # kept


def test_heatmap_update_changes_shape_and_shows_nan():
    hm = plotting.heatmap(np.eye(2), annotate=True)
    hm.update(np.full((3, 3), np.nan))
    assert hm.image.get_array().shape == (3, 3, 4)
    assert hm.ax.get_xlim() == (-0.5, 2.5)
    assert [t.get_text() for t in hm.ax.get_yticklabels()] == ["0", "1", "2"]  # the indices
    assert sum(t.get_visible() and t.get_text() == "NaN" for t in hm.texts) == 9


def test_heatmap_labels_default_to_the_keys_and_must_fit_the_map():
    hm = plotting.heatmap(np.eye(3), ["a", "b", "c"])
    assert [t.get_text() for t in hm.ax.get_yticklabels()] == ["a", "b", "c"]  # queries = keys
    with pytest.raises(ValueError, match=r"x_tokens: expected 3 labels \(one per column of the 2 x 3 map\), got 2"):
        plotting.heatmap(np.ones((2, 3)), ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match=r"y_tokens: expected 2 labels \(one per row of the 2 x 3 map\), got 3"):
        plotting.heatmap(np.ones((2, 3)), ["a", "b", "c"])  # the keys are not the queries here
    with pytest.raises(ValueError, match=r"y_tokens: expected 3 labels"):
        hm.update(np.eye(3), y_tokens=["x"])
    assert [t.get_text() for t in hm.ax.get_yticklabels()] == ["a", "b", "c"]  # checked before drawing


def test_heatmap_writes_numbers_with_fmt_and_a_real_minus():
    hm = plotting.heatmap(np.array([[-0.25, 0.5]]), annotate=True, vmin=-1, vmax=1, fmt=lambda v: f"{v:+.1f}")
    assert [t.get_text() for t in hm.texts] == [f"{plotting.MINUS}0.2", "+0.5"]


def test_head_grid_hides_unused_heads_and_updates_in_place():
    w = np.random.default_rng(0).random((8, 4, 4))
    grid = plotting.head_grid(w, list("abcd"))
    assert len(grid.heatmaps) == 8 and all(hm.ax.get_visible() for hm in grid.heatmaps)
    first = grid.heatmaps[0].image
    grid.update(w[:3])
    assert [hm.ax.get_visible() for hm in grid.heatmaps] == [True] * 3 + [False] * 5
    assert grid.heatmaps[0].image is first
    assert grid.heatmaps[0].ax.get_title() == "Head 1"
    assert plotting.figure_png(grid.fig)[:4] == b"\x89PNG"


def test_plotting_errors():
    with pytest.raises(ValueError, match=r"weights: expected 2 dims \(L, S\), got shape \(2, 2, 2\)"):
        plotting.heatmap(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"vmin, vmax: expected vmin < vmax, got 1.0, 0.0"):
        plotting.heatmap(np.zeros((2, 2)), vmin=1.0, vmax=0.0)
    with pytest.raises(ValueError, match=r"cmap: expected a matplotlib colour map or its name, got 'Bluez'"):
        plotting.heatmap(np.zeros((2, 2)), cmap="Bluez")
    with pytest.raises(TypeError, match=r"fmt: expected a format string or a function, got int"):
        plotting.heatmap(np.zeros((2, 2)), fmt=2)
    grid = plotting.head_grid(np.zeros((2, 3, 3)), nrows=1, ncols=2)
    with pytest.raises(ValueError, match=r"weights: expected at most 2 heads for this grid, got shape \(3, 3, 3\)"):
        grid.update(np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match=r"weights: expected 3 dims \(H, L, S\)"):
        grid.update(np.zeros((3, 3)))


# Values one round-off apart, as two CPUs compute a uniform row over 8 keys: 1/8 is the edge of
# colour level 32 of 256 and a rounding tie of "{:.2f}" (issue 30: 240 pixels of notebook 06).
_TIE = np.array([[0.125 - 1.4e-17, 0.125 + 5.6e-17, 0.25 - 3e-17, 0.5 + 1e-16, 1 - 1e-16, -1e-17, 1e-17]])
_EXACT = np.array([[0.125, 0.125, 0.25, 0.5, 1.0, 0.0, 0.0]])
_TIE_F32 = np.array([[np.nextafter(np.float32(0.125), np.float32(0)), np.float32(0.125)]], dtype=np.float32)


def test_settle_gives_values_a_round_off_apart_one_colour_and_one_string():
    from matplotlib import colormaps

    settle, exact = plotting.settle, _EXACT
    cmap = colormaps["Blues"]
    assert (cmap(settle(_TIE), bytes=True) == cmap(exact, bytes=True)).all()
    assert [f"{v:.2f}" for v in settle(_TIE)[0]] == [f"{v:.2f}" for v in exact[0]]
    assert settle(_TIE_F32)[0, 0] == settle(_TIE_F32)[0, 1] == 0.125
    # and keeps what a picture can show: a millionth
    assert settle(0.1234564) == 0.123456 and settle(-0.0) == 0.0 and str(settle(-1e-17)) == "0.0"
    assert np.isnan(settle(np.nan))
    # values that a colour map is given in their own range
    moved = plotting.settled_for_colour(_TIE * 4 - 2, -2.0, 2.0)
    assert (cmap((moved + 2) / 4, bytes=True) == cmap(exact, bytes=True)).all()
    with pytest.raises(ValueError, match="vmin, vmax: expected vmin < vmax"):
        plotting.settled_for_colour(1.0, 1.0, 1.0)


def test_heatmap_draws_values_a_round_off_apart_alike():
    shown = []
    for values in (_TIE, _EXACT):
        hm = plotting.heatmap(values, annotate=True)
        hm.ax.figure.canvas.draw()
        shown.append((np.asarray(hm.ax.figure.canvas.buffer_rgba()).copy(), [t.get_text() for t in hm.texts]))
        hm.update(values)
        hm.ax.figure.canvas.draw()
        assert (np.asarray(hm.ax.figure.canvas.buffer_rgba()) == shown[-1][0]).all()
    assert (shown[0][0] == shown[1][0]).all() and shown[0][1] == shown[1][1]
