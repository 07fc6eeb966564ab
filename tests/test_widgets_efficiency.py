"""The efficiency explorer (notebook 07): its pure function and every control across its range."""
from __future__ import annotations

import math

import pytest

from attn.cost.counts import attention_cost
from attn.cost.measure import fit_slope
from attn.widgets.efficiency import BLOCK_SIZES, LENGTHS, efficiency_explorer, efficiency_view

METHODS = ("naive", "blockwise", "sdpa")


def _curves():
    seconds = {m: [1e-4 * (i + 1) * 2.0 ** (2 * k) for k in range(len(LENGTHS))]
               for i, m in enumerate(METHODS)}
    peak = {"naive": [8 * n * n for n in LENGTHS], "blockwise": [4096 * n for n in LENGTHS],
            "sdpa": [256 * n for n in LENGTHS]}
    return seconds, peak


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("b", BLOCK_SIZES)
def test_view_looks_up_and_counts(n, b):
    seconds, peak = _curves()
    v = efficiency_view(n, b, seconds=seconds, peak_bytes=peak)
    i = LENGTHS.index(n)
    assert v.seconds == {m: seconds[m][i] for m in METHODS}
    assert v.peak_bytes == {m: peak[m][i] for m in METHODS}
    assert v.cost == attention_cost(n, 64)
    assert v.blocks == math.ceil(n / b)
    assert v.block_bytes == n * min(b, n) * 4
    assert v.time_slope == pytest.approx(fit_slope(LENGTHS, seconds["naive"]))
    assert v.memory_slope == pytest.approx(2.0)


def test_view_errors():
    seconds, peak = _curves()
    with pytest.raises(ValueError, match="n: expected one of the measured lengths"):
        efficiency_view(100, 16, seconds=seconds, peak_bytes=peak)
    with pytest.raises(ValueError, match="block_size: expected a positive int"):
        efficiency_view(64, 0, seconds=seconds, peak_bytes=peak)
    with pytest.raises(TypeError, match="seconds: expected a dict with keys"):
        efficiency_view(64, 16, seconds={"naive": [1.0]}, peak_bytes=peak)
    with pytest.raises(ValueError, match=f"peak_bytes: expected {len(LENGTHS)} values per method"):
        efficiency_view(64, 16, seconds=seconds, peak_bytes={m: [1] for m in METHODS})


def test_every_control_across_its_range_changes_picture_and_readout():
    seconds, peak = _curves()
    ex = efficiency_explorer(512, 128, seconds=seconds, peak_bytes=peak)
    assert set(ex.controls) == {"n", "block_size"}
    assert ex.state.n == 512 and ex.state.block_size == 128
    for name, values in (("n", LENGTHS), ("block_size", BLOCK_SIZES)):
        ctrl = ex.controls[name]
        seen_png, seen_html = set(), set()
        for value in values:
            ctrl.value = value
            assert getattr(ex.state, name) == value
            assert ex.image.value[:8] == b"\x89PNG\r\n\x1a\n"
            seen_png.add(ex.image.value)
            seen_html.add(ex.readout.value)
        assert len(seen_png) == len(values), name  # each position draws a different picture
        assert len(seen_html) == len(values), name
    ex.controls["n"].value = 1024
    ex.controls["block_size"].value = 16
    assert ex.state.blocks == 64
    assert "64 block(s)" in ex.readout.value and "4.0 MiB" in ex.readout.value
    assert ex.full_redraws == 1  # moves only redraw the live artists


def test_block_larger_than_n_is_one_block():
    seconds, peak = _curves()
    ex = efficiency_explorer(64, 512, seconds=seconds, peak_bytes=peak)
    assert ex.state.blocks == 1 and ex.state.block_bytes == 64 * 64 * 4
    assert "1 block(s)" in ex.readout.value


def test_builds_from_its_own_measurements():
    ex = efficiency_explorer(32, 16, lengths=[16, 32])
    assert ex.state.n == 32
    assert all(s > 0 for s in ex.state.seconds.values())
    assert ex.state.peak_bytes["sdpa"] == 32 * 64 * 4
    ex.controls["n"].value = 16
    assert ex.state.n == 16
