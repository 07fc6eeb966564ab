"""The efficiency explorer (notebook 07): its pure function and every control across its range."""
from __future__ import annotations

import math

import pytest

from _pictures import box, changed, near, pixels

from attn.cost import measure
from attn.cost.counts import attention_cost
from attn.cost.measure import fit_slope
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


def test_every_control_across_its_range_changes_the_panels_it_names():
    seconds, peak, blocks = _curves()
    ex = efficiency_explorer(512, 128, seconds=seconds, peak_bytes=peak, blocks=blocks)
    assert set(ex.controls) == {"n", "block_size"}
    assert ex.state.n == 512 and ex.state.block_size == 128
    ax_t, ax_m, ax_b = ex.fig.axes[:3]
    for name in ("n", "block_size"):
        ctrl = ex.controls[name]
        values = LENGTHS if name == "n" else BLOCK_SIZES
        before = [box(pixels(ex), ax) for ax in (ax_t, ax_m, ax_b)]
        for value in values[::-1]:
            if value == ctrl.value:
                continue
            ctrl.value = value
            assert getattr(ex.state, name) == value
            now = [box(pixels(ex), ax) for ax in (ax_t, ax_m, ax_b)]
            # the markers (n) or the blockwise curves (b) move in both plots
            assert changed(before[0], now[0]) and changed(before[1], now[1]), (name, value)
            n, b = ex.state.n, ex.state.block_size
            assert _strip_width(ex) == pytest.approx(min(b, n) / n, abs=0.03), (n, b)  # b of n keys
            before = now
    ex.controls["n"].value = 1024
    ex.controls["block_size"].value = 16
    assert ex.state.blocks == 64
    assert "64 block(s)" in ex.readout.value and "4.0 MiB" in ex.readout.value
    assert ex.full_redraws == 1  # moves only redraw the live artists


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
    ex.controls["n"].value = 16
    assert ex.state.n == 16


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
