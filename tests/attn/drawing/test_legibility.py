"""Digits legible at 1x, numbers on cells in 4.5:1 contrast, and a diverging map's sign kept in
greyscale (issue 20: item 22, and §4's and §5's legibility bullets).

A decimal point is read from the pixels of the bitmaps the explorers paste (pixel-exact, so a
bitmap is what the learner sees): the glyphs of a number are blobs of ink split by empty
columns, and the point is one of them: dark (4 pixels or more at alpha >= 200), on the
digits' baseline and much shorter than a digit.
"""
from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from _pictures import cell, colormaps_used, draw_only, one_axes

from attn.drawing.plotting import (MINUS, contrast_ratio, heatmap, is_diverging, real_minus,
                                   relative_luminance, text_colors, token_font)
from attn.widgets import EXPLORERS
from attn.widgets._bitmaps import AxesTitle, CellText, point_metrics, text_bitmap
from attn.widgets._mapview import CellMap, MapView

# every size a map writes numbers at: grep number_size in src/attn/widgets (7 and 8; the
# notes 1 smaller), the static heatmaps' 8 and the titles' 9-12
SIZES = (7, 8, 9, 10, 12)
NUMBERS = ("2.83", "0.35", f"{MINUS}0.07", "2.83*", "+0.12", "0.90*", f"{MINUS}4.4", "1.00")


def blobs(alpha: np.ndarray) -> list[tuple[int, int]]:
    """Column ranges [start, stop) of ink separated by columns without any ink."""
    ink = alpha.any(axis=0)
    edges = np.flatnonzero(np.diff(np.r_[0, ink.astype(int), 0]))
    return list(zip(edges[::2], edges[1::2]))


def glyph_rows(alpha: np.ndarray, cols: tuple[int, int]) -> np.ndarray:
    return np.flatnonzero(alpha[:, cols[0]:cols[1]].any(axis=1))


def assert_legible(text: str, alpha: np.ndarray) -> None:
    """Every glyph of ``text`` is its own blob, and each decimal point a dark dot on the baseline."""
    runs = blobs(alpha)
    assert len(runs) == len(text), (f"{text!r}: {len(runs)} blobs of ink for {len(text)} glyphs: "
                                     "glyphs touch (or a point vanished)")
    digit_rows = [glyph_rows(alpha, r) for ch, r in zip(text, runs) if ch.isdigit()]
    bottom = max(rows.max() for rows in digit_rows)  # the row on the baseline
    digit_height = min(rows.size for rows in digit_rows)
    for k, ch in enumerate(text):
        if ch != ".":
            continue
        c0, c1 = runs[k]
        dot = alpha[:, c0:c1]
        assert (dot >= 200).sum() >= 4, f"{text!r}: the point is {(dot >= 200).sum()} dark pixels"
        rows = glyph_rows(alpha, runs[k])
        assert rows.max() == bottom, f"{text!r}: the point is not on the baseline"
        assert rows.size <= digit_height / 2, f"{text!r}: the point is as tall as a digit"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("text", NUMBERS)
def test_a_decimal_point_is_a_point(text, size):
    assert_legible(text, text_bitmap(text, size=size)[..., 3])


def test_a_decimal_point_is_a_point_in_the_chinese_font_too():
    for text in ("0.27", "1.75"):
        assert_legible(text, text_bitmap(text, size=8, font=token_font())[..., 3])


def test_a_point_in_a_title_is_a_dark_dot_with_empty_columns_each_side():
    alpha = text_bitmap("scores × 0.58", size=10)[..., 3]
    side, gap = point_metrics(10)
    dark = alpha >= 200
    # a side x side block of full ink with a column free of any ink on each side
    found = [c for c in range(gap, alpha.shape[1] - side - gap + 1)
             if dark[:, c:c + side].sum() >= side * side and dark[:, c:c + side].any(1).sum() == side
             and not alpha[:, c - 1].any() and not alpha[:, c + side].any()]
    assert found, "no separated point in 'scores × 0.58'"
    assert not text_bitmap("scores", size=10)[..., 3].all()  # (the helper finds only points)


def test_a_sentence_full_stop_is_left_to_the_font():
    a = text_bitmap("end.", size=8)
    b = text_bitmap("end", size=8)
    assert a.shape[1] > b.shape[1]  # the font's own full stop, drawn (no digit follows it)


@pytest.fixture(scope="module")
def startup_cell_texts():
    """(explorer name, CellText) for every map's numbers of every explorer, as first shown;
    each explorer is built once for the tests below and closed after them."""
    built, found = [], []
    for name, make in EXPLORERS.items():
        ex = make()
        built.append(ex)
        for artist in ex._live():
            if isinstance(artist, CellText):
                found.append((name, artist))
            if isinstance(getattr(artist, "text", None), CellText):
                found.append((name, artist.text))
    yield found
    for ex in built:
        ex.close()


def test_every_explorer_writes_legible_numbers(startup_cell_texts):
    """Every number every explorer writes on its cells when first shown, at its own size."""
    seen = 0
    for _name, ct in startup_cell_texts:
        for k, s in enumerate(ct._texts):
            if "." in s and any(ch.isdigit() for ch in s):
                assert_legible(s, ct.bitmap(k)[0][..., 3])
                seen += 1
    assert seen > 100  # the numbers of 01, 03, 05, 09 and 11 at least


def test_numbers_keep_a_real_minus_sign():
    assert real_minus("-0.07") == f"{MINUS}0.07"
    assert real_minus("x -1.5 and -.5") == f"x {MINUS}1.5 and {MINUS}.5"
    assert real_minus("-inf") == f"{MINUS}inf"
    assert real_minus("d_k-1") == "d_k-1" and real_minus("a - b") == "a - b"  # not a number's sign
    with pytest.raises(TypeError, match="text: expected a str, got int"):
        real_minus(3)
    # the minus is its own blob, as wide as a digit and apart from the digit after it
    minus = text_bitmap(MINUS + "0", size=7)
    (m0, m1), (d0, d1) = blobs(minus[..., 3])
    assert m1 - m0 >= d1 - d0
    assert np.array_equal(text_bitmap("-0", size=7), minus)  # a signing hyphen is drawn as it
    assert not np.array_equal(text_bitmap("a-b", size=7), text_bitmap(f"a{MINUS}b", size=7))


# ---- contrast ---------------------------------------------------------------------------

def test_wcag_luminance_and_contrast():
    assert relative_luminance([1, 1, 1]) == pytest.approx(1) and relative_luminance([0, 0, 0]) == 0
    assert contrast_ratio([0, 0, 0], [1, 1, 1]) == pytest.approx(21)
    # WCAG's own example colours: #777 on white is 4.48:1, just short of 4.5
    assert contrast_ratio(np.array([0x77] * 3) / 255, [1, 1, 1]) == pytest.approx(4.48, abs=0.01)
    assert relative_luminance(np.array([0.5, 0.5, 0.5, 0.0])) == pytest.approx(0.214, abs=1e-3)
    with pytest.raises(ValueError, match=r"rgb: expected colours of shape .* got \(2,\)"):
        relative_luminance([0.1, 0.2])


def _course_colours() -> dict[str, np.ndarray]:
    """Every colour a cell can take: each colour map the package or a notebook names, sampled
    at 4096 points with its bad colour, and the blocked and NaN colours the maps set."""
    out = {}
    for name in sorted(colormaps_used() | {"cividis"}):  # cividis: notebook 09's static figures
        cmap = matplotlib.colormaps[name]
        out[name] = np.vstack([cmap(np.linspace(0, 1, 4096))[:, :3], [cmap.get_bad()[:3]]])
    out["blocked and NaN"] = np.array([matplotlib.colors.to_rgb(c) for c in ("0.5", "#f4a3a3")])
    return out


@pytest.mark.parametrize("name", list(_course_colours()))
def test_text_colour_reaches_4_5_to_1_on_every_cell_colour(name):
    rgb = _course_colours()[name]
    ink = np.array([matplotlib.colors.to_rgb(c) for c in text_colors(rgb)])
    ratio = contrast_ratio(ink, rgb)
    worst = int(np.argmin(ratio))
    assert ratio.min() >= 4.5, f"{name}: {ratio.min():.2f}:1 on {rgb[worst]}"


@pytest.mark.parametrize("cmap", ["Blues", "Purples", "PuOr", "RdBu_r", "Greys"])
def test_cell_map_writes_its_numbers_in_that_colour(cmap):
    """From the pixels: in every cell the ink that differs most from the cell reaches 4.5:1."""
    fig, ax = one_axes(6, 2)
    values = np.linspace(0, 1, 12).reshape(1, 12)
    cells = CellMap(ax, cmap, (0, 1), numbers=True, fmt="{:.1f}")
    cells.set_values(values)
    px = draw_only(fig, cells) / 255
    for j in range(12):
        block = cell(px, ax, 1, 12, 0, j)[3:-3, 3:-3]  # inside the frame
        background = np.median(block.reshape(-1, 3), axis=0)
        assert contrast_ratio(block, background).max() >= 4.5, (cmap, j)


@pytest.mark.parametrize("cmap", ["Blues", "PuOr", "RdBu_r", "cividis"])
def test_static_heatmap_numbers_reach_4_5_to_1(cmap):
    values = np.linspace(-1, 1, 16).reshape(4, 4)
    hm = heatmap(values, annotate=True, cmap=cmap, vmin=-1, vmax=1)
    painted = hm.image.get_array()  # (4, 4, 4) uint8: the cells as drawn
    for t, (i, j) in zip(hm.texts, np.ndindex(4, 4)):
        background = painted[i, j, :3] / 255
        assert contrast_ratio(matplotlib.colors.to_rgb(t.get_color()), background) >= 4.5, (cmap, i, j)
        assert t.get_text().startswith(MINUS) == (values[i, j] < 0)  # a real minus on every negative


@pytest.mark.parametrize("use", ["static heatmap", "explorer map"])
def test_a_nan_on_a_transparent_cell_is_written_in_black(use):
    """A colour map's default "bad" colour is transparent: a NaN cell shows the white behind
    it, so its "NaN" must be black, in a static heatmap and in an explorer's map alike."""
    assert matplotlib.colormaps["Blues"].get_bad()[3] == 0
    values = np.array([[np.nan, 0.0]])
    if use == "static heatmap":
        hm = heatmap(values, annotate=True)
        assert [(t.get_text(), t.get_color()) for t in hm.texts] == [("NaN", "black"), ("0.00", "black")]
        return
    fig, ax = one_axes(3, 1.5)
    cells = CellMap(ax, "Blues", numbers=True, frame=False)
    cells.set_values(values)
    px = draw_only(fig, cells)
    nan_cell = cell(px, ax, 1, 2, 0, 0)
    assert (nan_cell == 255).all(-1).mean() > 0.5  # the cell is the white behind it
    assert (nan_cell.max(-1) < 100).sum() > 10  # and its "NaN" is dark ink on it


# ---- the sign of a diverging map in greyscale ----------------------------------------------

def test_which_maps_are_diverging():
    assert is_diverging(matplotlib.colormaps["PuOr"]) and is_diverging(matplotlib.colormaps["RdBu_r"])
    for name in ("Blues", "Purples", "Greens", "Oranges", "Greys", "cividis"):
        assert not is_diverging(matplotlib.colormaps[name]), name


def _grey(px: np.ndarray) -> np.ndarray:
    return relative_luminance(px / 255)


@pytest.mark.parametrize("cmap", ["PuOr", "RdBu_r"])
@pytest.mark.parametrize("numbers", [True, False])
def test_a_diverging_map_keeps_its_sign_in_greyscale(cmap, numbers):
    """A cell of -0.6 and one of +0.6 look nearly alike in grey; a printed minus, or a bar where
    no number is printed, tells them apart."""
    fig, ax = one_axes(3, 1.5)
    view = MapView(ax, cmap=cmap, clim=(-1.0, 1.0), numbers=numbers, x_labels=False, y_labels=False)
    view.set(np.array([[-0.6, 0.6]]))
    px = draw_only(fig, *view.artists())
    neg, pos = (_grey(cell(px, ax, 1, 2, 0, j)[3:-3, 3:-3]) for j in (0, 1))
    h, w = min(neg.shape[0], pos.shape[0]), min(neg.shape[1], pos.shape[1])
    neg, pos = neg[:h, :w], pos[:h, :w]
    assert abs(np.median(neg) - np.median(pos)) < 0.15  # the colours alone: about one grey
    # ink: pixels far from the cell's own grey; the negative cell has more of it (the sign)
    ink_neg = (np.abs(neg - np.median(neg)) > 0.2).sum()
    ink_pos = (np.abs(pos - np.median(pos)) > 0.2).sum()
    assert ink_neg >= ink_pos + 5, f"{cmap}: the negative cell's sign is {ink_neg - ink_pos} pixels"
    if numbers:  # the hyphen of "-0.60" is drawn as a minus sign: its own, wide blob
        assert view.cells.text.strings[0] == ["-0.60", "0.60"]
        neg_text, pos_text = (view.cells.text.bitmap(k)[0][..., 3] for k in (0, 1))
        assert len(blobs(neg_text)) == len(blobs(pos_text)) + 1
        assert np.array_equal(neg_text, text_bitmap(f"{MINUS}0.60", size=8)[..., 3])
    else:
        assert view.cells.signs and ink_pos == 0  # a bar on the negative cell only


def test_signs_can_be_set_and_are_checked():
    fig, ax = one_axes()
    assert not CellMap(ax, "Blues").signs  # sequential: no bars
    assert CellMap(ax, "Blues", signs=True).signs
    assert not CellMap(ax, "PuOr", (-1.0, 1.0), numbers=True).signs  # the numbers carry the sign
    with pytest.raises(TypeError, match="signs: expected True, False or None, got str"):
        CellMap(ax, "PuOr", signs="yes")


def test_the_point_metrics_grow_with_the_size():
    assert point_metrics(7) == (2, 1) and point_metrics(8) == (2, 1)
    side, gap = point_metrics(24)
    assert side == 3 and gap == 3
    t = AxesTitle(one_axes()[1], size=9)  # (titles use the same renderer)
    t.set_text("0.5")
    assert_legible("0.5", t.bitmap(0)[0][..., 3])


def test_every_explorer_number_fits_its_cell(startup_cell_texts):
    """Issue 20 item 22, the kind: a number wider than its cell runs into the next one
    ("+0.04+0.11"), which no point can save. Every number an explorer writes on a cell, when
    first shown, leaves at least one empty pixel column on each side inside its cell."""
    from attn.widgets._bitmaps import cell_edges

    too_wide = []
    for name, ct in startup_cell_texts:
        if not ct.strings or not ct.axes.get_visible():
            continue
        L, S = len(ct.strings), len(ct.strings[0])
        x, _ = cell_edges(ct.axes, L, S)
        width = int(np.min(np.diff(x)))
        for k, s in enumerate(ct._texts):
            alpha = ct.bitmap(k)[0][..., 3]
            ink = np.nonzero(alpha.max(axis=0) > 0)[0]
            if s and ink.size and ink[-1] - ink[0] + 1 > width - 2:
                too_wide.append(f"{name}: {s!r} is {ink[-1] - ink[0] + 1} px in a {width} px cell")
    assert not too_wide, too_wide[:10]
