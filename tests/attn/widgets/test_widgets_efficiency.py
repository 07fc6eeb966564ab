"""The efficiency explorer (notebook 07): its pure function and every control across its range."""
from __future__ import annotations

import math

import numpy as np
import pytest

from _pictures import box, changed, near, pixels

from attn.lessons.cost import measure
from attn.lessons.cost.counts import attention_cost
from attn.lessons.cost.measure import fit_slope
from attn.widgets.efficiency import (BLOCK_SIZES, LENGTHS, BlockMeasurements, efficiency_explorer,
                                     efficiency_view, measure_block_sizes)

METHODS = ("naive", "blockwise", "sdpa")


def _curves():
    seconds = {m: [1e-4 * (i + 1) * 2.0 ** (2 * k) for k in range(len(LENGTHS))]
               for i, m in enumerate(METHODS)}
    peak = {"naive": [8 * n * n for n in LENGTHS], "blockwise": [4096 * n for n in LENGTHS],
            "sdpa": [256 * n for n in LENGTHS]}
    blocks = BlockMeasurements(
        lengths=LENGTHS,
        seconds={b: tuple(1e-4 * n / b + 1e-6 * n for n in LENGTHS) for b in BLOCK_SIZES},
        peak_bytes={b: tuple(4 * n * min(b, n) + 512 * n for n in LENGTHS) for b in BLOCK_SIZES})
    return seconds, peak, blocks


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("b", BLOCK_SIZES)
def test_view_looks_up_and_counts(n, b):
    seconds, peak, blocks = _curves()
    v = efficiency_view(n, b, seconds=seconds, peak_bytes=peak, blocks=blocks)
    i = LENGTHS.index(n)
    assert v.seconds == {"naive": seconds["naive"][i], "blockwise": blocks.seconds[b][i],
                         "sdpa": seconds["sdpa"][i]}
    assert v.peak_bytes == {"naive": peak["naive"][i], "blockwise": blocks.peak_bytes[b][i],
                            "sdpa": peak["sdpa"][i]}
    assert v.cost == attention_cost(n, 64)
    assert v.blocks == math.ceil(n / b)
    assert v.block_bytes == n * min(b, n) * 4
    assert v.time_slope == pytest.approx(fit_slope(LENGTHS, seconds["naive"]))
    assert v.memory_slope == pytest.approx(2.0)


def test_view_errors():
    seconds, peak, blocks = _curves()
    with pytest.raises(ValueError, match="n: expected one of the measured lengths"):
        efficiency_view(100, 16, seconds=seconds, peak_bytes=peak, blocks=blocks)
    with pytest.raises(ValueError, match="block_size: expected a positive int"):
        efficiency_view(64, 0, seconds=seconds, peak_bytes=peak, blocks=blocks)
    with pytest.raises(ValueError, match=r"block_size: expected one of the measured \[16, 32"):
        efficiency_view(64, 48, seconds=seconds, peak_bytes=peak, blocks=blocks)
    with pytest.raises(TypeError, match="seconds: expected a dict with keys"):
        efficiency_view(64, 16, seconds={"naive": [1.0]}, peak_bytes=peak, blocks=blocks)
    with pytest.raises(ValueError, match=f"peak_bytes: expected {len(LENGTHS)} values per method"):
        efficiency_view(64, 16, seconds=seconds, peak_bytes={m: [1] for m in METHODS}, blocks=blocks)
    with pytest.raises(TypeError, match="blocks: expected BlockMeasurements"):
        efficiency_view(64, 16, seconds=seconds, peak_bytes=peak, blocks={})


def _strip_width(ex) -> float:
    """The blue block's width as a share of the n x n square, read from the picture."""
    square = box(pixels(ex), ex.fig.axes[2], inset=2)
    blue = near(square, (31, 119, 180), tol=10)  # tab:blue
    return blue.any(0).sum() / square.shape[1]


def test_block_size_across_its_range_changes_the_panels_it_names():
    seconds, peak, blocks = _curves()
    ex = efficiency_explorer(512, 128, seconds=seconds, peak_bytes=peak, blocks=blocks)
    assert set(ex.controls) == {"block_size"}  # no n slider: the curves show every n
    assert ex.state.n == 512 and ex.state.block_size == 128
    ax_t, ax_m, ax_b = ex.fig.axes[:3]
    ctrl = ex.controls["block_size"]
    before = [box(pixels(ex), ax) for ax in (ax_t, ax_m, ax_b)]
    for value in BLOCK_SIZES[::-1]:
        if value == ctrl.value:
            continue
        ctrl.value = value
        assert ex.state.block_size == value and ex.state.n == 512
        now = [box(pixels(ex), ax) for ax in (ax_t, ax_m, ax_b)]
        assert changed(before[0], now[0]) and changed(before[1], now[1]), value  # the blockwise curves
        assert _strip_width(ex) == pytest.approx(min(value, 512) / 512, abs=0.03), value  # b of n keys
        before = now
    assert ex.full_redraws == 1  # moves only redraw the live artists


def _dilate(mask, r=3):
    out = mask.copy()
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            out |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return out


def test_only_what_moves_is_drawn_as_moving():
    """A b move changes the blockwise curves, their markers and the block, and no other pixel:
    the naive and SDPA curves and their markers at n stay where they were (the background)."""
    seconds, peak, blocks = _curves()
    ex = efficiency_explorer(1024, 128, seconds=seconds, peak_bytes=peak, blocks=blocks)
    live = set(ex.live_artists)
    assert all(line not in live for ax in ex.fig.axes[:2] for line in ax.lines
               if line.get_color() != "black")  # blockwise is drawn black (STYLE)
    ex.controls["block_size"].value = 16
    assert ex.state.blocks == 64 and "64 block(s)" in ex.readout.value and "4.0 MiB" in ex.readout.value
    a = pixels(ex)
    ex.controls["block_size"].value = 512
    b = pixels(ex)
    black = _dilate(near(a, (0, 0, 0), tol=90) | near(b, (0, 0, 0), tol=90))  # the blockwise artists
    moved = (a != b).any(-1) & ~black
    H = a.shape[0]
    bb = ex.fig.axes[2].bbox  # the block panel: the blue strip moves
    moved[int(H - bb.y1) - 2:int(H - bb.y0) + 2, int(bb.x0) - 2:int(bb.x1) + 2] = False
    assert not moved.any(), f"{moved.sum()} pixels moved outside the blockwise curves and the block"
    for m, colour in (("naive", (214, 39, 40)), ("sdpa", (31, 119, 180))):  # still drawn
        assert near(box(b, ex.fig.axes[0]), colour, tol=30).sum() > 50, m


def test_moving_b_shows_that_bs_measurements():
    seconds, peak, blocks = _curves()
    ex = efficiency_explorer(1024, 128, seconds=seconds, peak_bytes=peak, blocks=blocks)
    line_t = next(line for line in ex.fig.axes[0].lines if line.get_label() == "blockwise, chosen b")
    for b in BLOCK_SIZES:
        ex.controls["block_size"].value = b
        assert ex.state.seconds["blockwise"] == blocks.seconds[b][-1]
        assert ex.state.peak_bytes["blockwise"] == blocks.peak_bytes[b][-1]
        assert f"blockwise, b = {b}" in ex.readout.value
        assert list(line_t.get_ydata()) == [t * 1e3 for t in blocks.seconds[b]]


def test_block_larger_than_n_is_one_block():
    seconds, peak, blocks = _curves()
    ex = efficiency_explorer(64, 512, seconds=seconds, peak_bytes=peak, blocks=blocks)
    assert ex.state.blocks == 1 and ex.state.block_bytes == 64 * 64 * 4
    assert "1 block(s)" in ex.readout.value
    assert _strip_width(ex) == pytest.approx(1.0, abs=0.03)


def test_builds_from_its_own_measurements():
    ex = efficiency_explorer(32, 16, lengths=[16, 32])
    assert ex.state.n == 32
    assert all(s > 0 for s in ex.state.seconds.values())
    assert ex.state.peak_bytes["sdpa"] == 32 * 64 * 4
    ex.controls["block_size"].value = 32
    assert ex.state.block_size == 32 and ex.state.blocks == 1
    with pytest.raises(ValueError, match=r"n: expected one of the lengths \[16, 32\], got 64"):
        efficiency_explorer(64, 16, lengths=[16, 32])


def test_measure_block_sizes_measures_each_b(monkeypatch):
    """Each b reaches the blockwise method: the memory grows with b (one n x b block at once)."""
    blocks = measure_block_sizes([64, 128], [16, 64], repeats=1)
    assert blocks.lengths == (64, 128) and set(blocks.seconds) == {16, 64}
    assert all(t > 0 for ts in blocks.seconds.values() for t in ts)
    assert blocks.peak_bytes[64][1] > blocks.peak_bytes[16][1]
    seen = []
    real = measure.METHODS["blockwise"]
    monkeypatch.setitem(measure.METHODS, "blockwise",
                        lambda q, k, v, block_size=128: seen.append(block_size) or real(q, k, v, block_size=block_size))
    measure.time_curve([32], methods=["blockwise"], block_size=8, repeats=1)
    assert set(seen) == {8}  # time_curve passes b on
