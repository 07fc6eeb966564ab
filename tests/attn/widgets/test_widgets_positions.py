"""The positions explorer of notebook 09 (attn.widgets.positions): its pure function, and its picture."""
import numpy as np
import pytest
from _pictures import box, cell, changed, pixels

from attn.examples import SENTENCE
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
