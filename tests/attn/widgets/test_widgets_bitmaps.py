"""The bitmap text the explorers' maps write on every move (attn.widgets._bitmaps)."""
import warnings

import numpy as np
import pytest
from _pictures import draw_only, one_axes

from attn.drawing.plotting import token_font
from attn.widgets._bitmaps import AxesTitle, CellText, TickLabels, cell_edges, text_bitmap


def test_text_bitmap_has_ink_is_cached_and_differs_by_string():
    a = text_bitmap("0.25", size=8)
    assert a.dtype == np.uint8 and a.ndim == 3 and a.shape[2] == 4
    assert a[..., 3].max() > 200 and (a[..., 3] == 0).any()  # ink and background
    assert text_bitmap("0.25", size=8) is a  # rendered once, then kept
    assert not a.flags.writeable  # shared: nobody may draw into it
    b = text_bitmap("0.75", size=8)
    assert a.shape != b.shape or not np.array_equal(a, b)
    assert text_bitmap("0.25", size=16).shape[0] > a.shape[0]  # larger size, taller bitmap
    wide = text_bitmap("[PAD]", size=8)
    up = text_bitmap("[PAD]", size=8, rotation=90)
    assert up.shape[:2] == wide.shape[1::-1]  # stood up: width and height swap
    red = text_bitmap("x", size=8, color="red")
    assert tuple(red[red[..., 3] > 0][0, :3]) == (255, 0, 0)
    assert text_bitmap("", size=8).shape == (1, 1, 4)


def test_text_bitmap_renders_chinese_with_the_course_font():
    cjk = text_bitmap("北京", size=10, font=token_font())
    with warnings.catch_warnings():  # DejaVu has no CJK glyphs: it warns (once) and draws boxes
        warnings.simplefilter("ignore")
        fallback = text_bitmap("北京", size=10)
    assert cjk[..., 3].sum() > 0
    assert cjk.shape != fallback.shape or not np.array_equal(cjk, fallback)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(text=3), TypeError, "text: expected a str, got int"),
    (dict(text="a", size=0), ValueError, "size: expected a number > 0, got 0"),
    (dict(text="a", size="8"), ValueError, "size: expected a number > 0"),
    (dict(text="a", rotation=45), ValueError, "rotation: expected 0 or 90, got 45"),
    (dict(text="a", dpi=-1), ValueError, "dpi: expected a number > 0, got -1"),
    (dict(text="a", color="nocolour"), ValueError, "color: expected a matplotlib colour, got 'nocolour'"),
    (dict(text="a", font=3), TypeError, "font: expected None, a font file path or a FontProperties, got int"),
])
def test_text_bitmap_errors_name_the_argument(kwargs, error, match):
    text = kwargs.pop("text")
    with pytest.raises(error, match=match):
        text_bitmap(text, **kwargs)


def test_cell_edges_split_the_axes_box():
    fig, ax = one_axes()
    x, y = cell_edges(ax, 3, 5)
    assert x.shape == (6,) and y.shape == (4,)
    assert (x[0], x[-1]) == (round(ax.bbox.x0), round(ax.bbox.x1))
    assert (y[0], y[-1]) == (round(ax.bbox.y1), round(ax.bbox.y0))  # row 0 on top
    assert (np.diff(x) > 0).all() and (np.diff(y) < 0).all()


def test_cell_text_writes_each_cell_and_is_cached():
    fig, ax = one_axes()
    cells = CellText(ax)
    cells.set_strings([["a", "b"], ["c", "d"]], [["black", "red"], ["black", "black"]])
    assert cells.strings == [["a", "b"], ["c", "d"]]
    px = draw_only(fig, cells)
    x, y = cell_edges(ax, 2, 2)
    H = px.shape[0]
    for i in range(2):
        for j in range(2):
            block = px[H - y[i]:H - y[i + 1], x[j]:x[j + 1]]
            assert (block < 200).any(), (i, j)  # ink in every cell
    top_right = px[H - y[0]:H - y[1], x[1]:x[2]]
    assert ((top_right[..., 0] > 200) & (top_right[..., 1] < 100)).any()  # the red one
    assert len(cells._frames) == 1
    draw_only(fig, cells)
    assert len(cells._frames) == 1  # the same frame again: composed once
    with pytest.raises(ValueError, match=r"strings: expected L rows of the same length, got lengths \[2, 1\]"):
        cells.set_strings([["a", "b"], ["c"]])
    with pytest.raises(ValueError, match="colors: expected the shape of strings"):
        cells.set_strings([["a", "b"]], [["black"]])
    with pytest.raises(TypeError, match="texts: expected strings, got int"):
        cells.set_strings([[1, 2]])
    with pytest.raises(ValueError, match="colors: expected matplotlib colours"):
        cells.set_strings([["a"]], [["nocolour"]])


def test_axes_title_is_centred_above_theone_axes():
    fig, ax = one_axes()
    title = AxesTitle(ax, size=12, font=token_font())
    title.set_text("1: all → 北京")
    assert title.text == "1: all → 北京"
    px = draw_only(fig, title)
    H = px.shape[0]
    ink = np.nonzero((px < 128).all(-1))
    rows, cols = H - ink[0], ink[1]  # display pixels, origin bottom left
    assert rows.min() > ax.bbox.y1 and rows.max() < ax.bbox.y1 + 30
    assert abs((cols.min() + cols.max()) / 2 - (ax.bbox.x0 + ax.bbox.x1) / 2) <= 2
    with pytest.raises(TypeError, match="ax: expected a matplotlib Axes, got str"):
        AxesTitle("ax")


def test_tick_labels_sit_under_and_left_of_theone_axes():
    fig, ax = one_axes()
    labels = TickLabels(ax, font=token_font(8), rotate=True)
    labels.set_tokens(["小明", "在", "北京"])
    assert labels.x_strings == labels.y_strings == ["小明", "在", "北京"]
    px = draw_only(fig, labels)
    H = px.shape[0]
    ink = np.nonzero((px < 160).all(-1))
    rows, cols = H - ink[0], ink[1]
    below = rows < ax.bbox.y0
    left = cols < ax.bbox.x0
    assert below.any() and left.any() and (below | left).all()  # nothing inside the axes
    x, _ = cell_edges(ax, 3, 3)
    for j in range(3):  # one label under every column
        assert ((cols[below] >= x[j]) & (cols[below] < x[j + 1])).any(), j
    labels.set_tokens(["a", "b"], rotate=False)
    assert labels.x_strings == ["a", "b"]
    assert not np.array_equal(draw_only(fig, labels), px)


def test_cell_text_dy_moves_the_strings_down():
    fig, ax = one_axes()
    up, down = CellText(ax, dy=-0.25), CellText(ax, dy=0.25)
    for t in (up, down):
        t.set_strings([["8"]])
    H = draw_only(fig).shape[0]
    rows = [H - np.nonzero((draw_only(fig, t) < 128).all(-1))[0] for t in (up, down)]  # display rows of ink
    middle = (ax.bbox.y0 + ax.bbox.y1) / 2
    assert rows[0].min() > middle and rows[1].max() < middle  # above and below the cell's centre


def test_tick_labels_without_key_labels_write_only_the_queries():
    fig, ax = one_axes()
    labels = TickLabels(ax, x_labels=False)
    labels.set_tokens(["a", "b"], ["step 1", "step 2", "step 3"])
    assert labels.x_strings == [] and labels.y_strings == ["step 1", "step 2", "step 3"]
    px = draw_only(fig, labels)
    ink = np.nonzero((px < 160).all(-1))
    assert (ink[1] < ax.bbox.x0).all()  # all of it left of the axes, none under it
