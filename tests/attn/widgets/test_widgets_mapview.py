"""The explorers' one map renderer (attn.widgets._mapview): cells, boxes, dots, text, labels."""
import numpy as np
import pytest
from _pictures import cell, draw_only, one_axes
from matplotlib import colormaps

from attn.drawing.plotting import MINUS, heatmap, new_figure, token_font
from attn.widgets._bitmaps import cell_edges
from attn.widgets._mapview import CellMap, MapView


def test_cell_map_fills_the_axes_with_the_colour_map():
    fig, ax = one_axes()
    cmap = colormaps["Blues"].with_extremes(bad="#ff0000")
    cm = CellMap(ax, cmap, (0.0, 1.0), numbers=True, frame=False)
    values = np.array([[0.0, 1.0, np.nan], [0.5, 0.25, 0.75]])
    blocked = np.array([[False, False, False], [False, True, False]])
    cm.set_values(values, blocked=blocked)
    values[0, 0] = 0.9  # the map keeps its own copy
    assert cm.values[0, 0] == 0.0
    px = draw_only(fig, cm)
    x, y = cell_edges(ax, 2, 3)
    H = px.shape[0]
    for i in range(2):
        for j in range(3):
            corner = px[H - y[i] + 2, x[j] + 2]  # away from the number in the middle
            if blocked[i, j]:
                want = (128, 128, 128)
            elif np.isnan(cm.values[i, j]):
                want = (255, 0, 0)
            else:
                want = cmap(cm.values[i, j], bytes=True)[:3]
            assert np.abs(corner - np.array(want)).max() <= 2, (i, j)
    assert cm.text.strings[0] == ["0.00", "1.00", "NaN"]
    cm.set_values(np.eye(4))  # another shape fills the same box
    px4 = draw_only(fig, cm)
    x4, y4 = cell_edges(ax, 4, 4)
    assert (x4[0], x4[-1], y4[0], y4[-1]) == (x[0], x[-1], y[0], y[-1])
    assert not np.array_equal(px4, px)


def test_cell_map_boxes_frame_exactly_the_given_cells():
    fig, ax = one_axes()
    cm = CellMap(ax, "Blues", box_color="#ff8000", box_width=3, frame=False)
    cm.set_values(np.zeros((4, 5)), boxes=[(1, 2, 0, 5), (3, 4, 2, 3)])  # row 1, and cell (3, 2)
    px = draw_only(fig, cm)
    orange = (np.abs(px - np.array([255, 128, 0])) <= 2).all(-1)
    for i in range(4):
        for j in range(5):
            framed = i == 1 or (i, j) == (3, 2)
            block = (np.abs(cell(px, ax, 4, 5, i, j) - np.array([255, 128, 0])) <= 2).all(-1)
            assert block.any() == framed, (i, j)
            if framed and i == 3:  # a frame round the cell, not a filled cell
                assert block[0].all() and block[-1].all() and not block[block.shape[0] // 2, block.shape[1] // 2]
    assert orange.sum() > 0


def test_cell_map_marks_put_a_dot_in_each_marked_cell():
    fig, ax = one_axes()
    cm = CellMap(ax, "Blues", mark_color="#ff8000", frame=False)
    marks = np.array([[False, True, False], [False, False, True], [False, False, False]])  # not symmetric
    cm.set_values(np.zeros((3, 3)), marks=marks)
    px = draw_only(fig, cm)
    for i in range(3):
        for j in range(3):
            block = (np.abs(cell(px, ax, 3, 3, i, j) - np.array([255, 128, 0])) <= 2).all(-1)
            assert block.any() == marks[i, j], (i, j)


def test_cell_map_strings_replace_the_numbers_and_frame_is_black():
    fig, ax = one_axes()
    cm = CellMap(ax, "Blues", numbers=True)
    cm.set_values(np.zeros((1, 2)), strings=[["-inf", "×"]])
    px = draw_only(fig, cm)
    assert cm.text.strings == [["-inf", "×"]]
    x, y = cell_edges(ax, 1, 2)
    H = px.shape[0]
    assert (px[H - y[0], x[0]:x[-1]] == 0).all()  # the top edge of the frame


@pytest.mark.parametrize("kwargs, match", [
    (dict(blocked=np.zeros((3, 3), dtype=bool)), r"blocked: expected shape \(2, 2\) like values, got \(3, 3\)"),
    (dict(marks=np.zeros((2, 3), dtype=bool)), r"marks: expected shape \(2, 2\) like values, got \(2, 3\)"),
    (dict(boxes=[(0, 3, 0, 1)]), r"boxes: expected \(row0, row1, col0, col1\) inside 2 x 2 cells, got \(0, 3, 0, 1\)"),
    (dict(strings=[["a"], ["b"]]), r"strings: expected 2 rows of 2 strings like values, got \[1, 1\]"),
])
def test_cell_map_errors_name_the_argument(kwargs, match):
    fig, ax = one_axes()
    cm = CellMap(ax)
    with pytest.raises(ValueError, match=match):
        cm.set_values(np.zeros((2, 2)), **kwargs)


def test_cell_map_bad_construction():
    fig, ax = one_axes()
    with pytest.raises(ValueError, match=r"values: expected 2 dims \(L, S\), got shape \(3,\)"):
        CellMap(ax).set_values(np.zeros(3))
    with pytest.raises(ValueError, match="clim: expected"):
        CellMap(ax, "Blues", (1.0, 0.0))
    with pytest.raises(TypeError, match="ax: expected a matplotlib Axes, got str"):
        CellMap("ax")


def test_map_view_draws_only_live_parts_on_an_axes_turned_off():
    fig, ax = one_axes()
    view = MapView(ax, numbers=True, notes=True, font=token_font(8))
    assert not ax.axison  # no ticks, spines or background patch: nothing drawn by the axes itself
    blank = draw_only(fig)
    assert (blank == 255).all()  # the kept background of a map is white
    view.set(np.array([[0.2, 0.9], [0.5, 0.1]]), x_tokens=["小明", "在"], title="head 1",
             notes=[["0.20", "0.90*"], ["0.50", "0.10"]], boxes=[(0, 1, 1, 2)])
    assert view.labels.x_strings == view.labels.y_strings == ["小明", "在"]
    assert view.title.text == "head 1" and view.notes.strings[0][1] == "0.90*"
    assert view.cells.text.dy < 0 < view.notes.dy  # numbers above, notes below the centre
    px = draw_only(fig, *view.artists())
    assert (px[..., 0] < 200).sum() > 100
    H = px.shape[0]
    ink = np.nonzero((px < 128).all(-1))
    assert (H - ink[0]).max() > ax.bbox.y1  # the title above the map
    with pytest.raises(ValueError, match="notes: this map was built without notes=True"):
        MapView(new_figure(2, 2).add_subplot()).set(np.zeros((1, 1)), notes=[["x"]])


def test_map_view_colorbar_uses_the_maps_colours():
    fig, ax = one_axes()
    view = MapView(ax, cmap="Purples", clim=(0.0, 2.0))
    cb = view.colorbar(fig.add_axes((0.96, 0.25, 0.02, 0.6)))
    assert cb.mappable.cmap.name == "Purples" and cb.mappable.norm.vmax == 2.0


def test_cell_map_draws_values_a_round_off_apart_alike():
    """A uniform row over 8 keys is 1/8 plus round-off that differs by CPU; 1/8 is the edge of
    colour level 32 and a tie of "{:.2f}": both must come out the same (attn.drawing.plotting.settle)."""
    tie = np.array([[0.125 - 1.4e-17, 0.125 + 5.6e-17, -1e-17], [1e-17, 0.5 - 1e-16, 0.5 + 1e-16]])
    exact = np.array([[0.125, 0.125, 0.0], [0.0, 0.5, 0.5]])
    drawn = []
    for values, cmap, clim in [(v, c, l) for c, l in (("Blues", (0.0, 1.0)), ("RdBu_r", (-1.0, 1.0)))
                               for v in (tie, exact)]:
        fig, ax = one_axes()
        cm = CellMap(ax, cmap, clim, numbers=True, signs=True)
        cm.set_values(values)
        drawn.append((cm.rgba(), draw_only(fig, cm), cm.text.strings))
    for (rgba, px, strings), (rgba_x, px_x, strings_x) in (drawn[:2], drawn[2:]):
        assert (rgba == rgba_x).all() and (px == px_x).all() and strings == strings_x


@pytest.mark.parametrize("cmap, clim", [("Blues", (0.0, 1.0)), ("PuOr", (-2.0, 2.0)), ("cividis", (-1.0, 1.0))])
def test_a_static_heatmap_and_an_explorer_map_show_the_same_cells(cmap, clim):
    """One renderer decides what a cell shows (attn.drawing._cells.MapLook): the same values
    give the same colours, strings and text colours in a notebook's static heatmap and in an
    explorer's live map, ties of round-off and NaN included."""
    rng = np.random.default_rng(0)
    values = rng.uniform(*clim, size=(5, 7))
    values[0, :4] = [np.nan, 0.125 - 1.4e-17, 0.125 + 5.6e-17, clim[0] - 1]  # NaN, ties, below the range
    hm = heatmap(values, annotate=True, cmap=cmap, vmin=clim[0], vmax=clim[1])
    fig, ax = one_axes()
    cm = CellMap(ax, cmap, clim, numbers=True)
    cm.set_values(values)
    draw_only(fig, cm)
    np.testing.assert_array_equal(hm.image.get_array(), cm.rgba())
    static = [[hm.texts[i * 7 + j] for j in range(7)] for i in range(5)]
    assert [[t.get_text() for t in row] for row in static] == [[s.replace("-", MINUS) for s in row]
                                                               for row in cm.text.strings]
    assert [[t.get_color() for t in row] for row in static] == cm.ink().tolist()


def test_map_view_labels_must_fit_the_map():
    fig, ax = one_axes()
    view = MapView(ax)
    with pytest.raises(ValueError, match=r"x_tokens: expected 3 labels \(one per column of the 2 x 3 map\), got 2"):
        view.set(np.zeros((2, 3)), x_tokens=["a", "b"], y_tokens=["x", "y"])
    with pytest.raises(ValueError, match=r"y_tokens: expected 2 labels \(one per row of the 2 x 3 map\), got 3"):
        view.set(np.zeros((2, 3)), x_tokens=["a", "b", "c"])
    assert view.cells.values.shape == (1, 1) and view.labels.x_strings == []  # nothing changed
    view.set(np.zeros((2, 3)), x_tokens=["a", "b", "c"], y_tokens=["x", "y"])
    assert view.labels.x_strings == ["a", "b", "c"] and view.labels.y_strings == ["x", "y"]


def test_map_view_takes_the_queries_labels_alone():
    """A map of keys by position (10's cache) labels its rows only: the columns get the indices."""
    fig, ax = one_axes()
    view = MapView(ax)
    view.set(np.zeros((3, 2)), y_tokens=["a", "b", "c"])
    assert view.labels.y_strings == ["a", "b", "c"] and view.labels.x_strings == ["0", "1"]
    view.set(np.ones((3, 2)))  # no labels given: the last ones are kept
    assert view.labels.y_strings == ["a", "b", "c"]

