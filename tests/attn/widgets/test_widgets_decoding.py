"""The decoding explorer of notebook 10 (attn.widgets.decoding): its pure function, and its picture."""
import numpy as np
import pytest
from _pictures import box, pixels

from attn.decoding import step_cost
from attn.widgets.decoding import POSITIONS, decode_view, decoding_explorer


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


def test_decoding_explorer_labels_the_cache_rows_with_positions():
    ex = decoding_explorer()
    keys = ex.maps["keys"]
    assert keys.labels.y_strings == [str(i) for i in range(keys.cells.values.shape[0])]
