"""attn.lessons.cost.measure: the tensor memory meter, timing curves, backward memory."""
from __future__ import annotations

import pytest
import torch

from attn.lessons.cost.measure import (
            METHODS,
            TensorMemoryMeter,
            backward_memory,
            best_time,
            fit_slope,
            format_bytes,
            memory_curve,
            peak_tensor_bytes,
            time_curve,
)


@pytest.mark.parametrize("n,text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"),
                                    (4 * 2**20, "4.0 MiB"), (64 * 2**30, "64.0 GiB"),
                                    (3 * 2**40, "3.0 TiB"), (2**50, "1024.0 TiB")])
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_format_bytes_errors():
    with pytest.raises(ValueError, match="n: expected a number >= 0"):
        format_bytes(-1)
    with pytest.raises(TypeError, match="n: expected a number, got str"):
        format_bytes("12")


def test_meter_counts_new_storages_once_and_frees_them():
    x = torch.randn(100)  # made before: not counted
    with TensorMemoryMeter() as m:
        a = torch.empty(1000)  # 4000 bytes
        assert m.now == 4000
        b = a.view(10, 100).t()  # views share the storage
        y = x[:50]  # a view of an input
        assert m.now == 4000
        del a
        assert m.now == 4000  # b still holds the storage
        del b
        assert m.now == 0
        c = torch.empty(10, dtype=torch.float64)
        c.add_(1.0)  # in place: nothing new
        assert m.now == 80
    assert m.peak == 4000 and m.total == 4080
    assert y.shape == (50,)


def test_meter_counts_what_autograd_saves_and_leaves_no_hook_behind():
    q, k, v = (torch.randn(1, 1, 32, 8, requires_grad=True) for _ in range(3))
    with TensorMemoryMeter() as m:
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    # the output (32 x 8 floats) and, saved for the backward pass only, one float per query row
    assert m.now == 32 * 8 * 4 + 32 * 4
    with TensorMemoryMeter() as m2:
        with torch.no_grad():
            torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert m2.peak == 32 * 8 * 4 and m2.now == 0  # no gradients: nothing saved, the output freed
    out.sum().backward()  # outside the meter: the hooks are gone, the graph still works
    assert q.grad.shape == q.shape


def test_meter_sees_the_weight_matrix_of_naive_attention():
    for L in (64, 128, 256):
        q, k, v = (torch.randn(1, L, 16) for _ in range(3))
        naive = peak_tensor_bytes(METHODS["naive"], q, k, v)
        assert naive >= L * L * 4  # at least the (L, L) float32 weights
        sdpa = peak_tensor_bytes(METHODS["sdpa"], q, k, v)
        assert sdpa == L * 16 * 4  # only its output: the fused kernel returns no (L, L) tensor


def test_memory_curve_is_exact_and_shows_the_growth():
    lengths = [128, 256, 512, 1024]
    a = memory_curve(lengths)
    b = memory_curve(lengths)
    assert a == b  # the same bytes on every run
    naive, block, sdpa = a["naive"], a["blockwise"], a["sdpa"]
    for i in range(len(lengths) - 1):  # doubling L: about 4x for naive, about 2x for the others
        assert 3.5 < naive[i + 1] / naive[i] <= 4.0
        assert sdpa[i + 1] / sdpa[i] == 2.0
    assert 1.5 < block[-1] / block[-2] <= 2.0
    assert block[-1] < naive[-1] / 3
    assert 1.8 < fit_slope(lengths, naive) < 2.05


def test_memory_curve_block_size_changes_blockwise_only():
    small = memory_curve([512], block_size=16, methods=["naive", "blockwise"])
    large = memory_curve([512], block_size=256, methods=["naive", "blockwise"])
    assert small["naive"] == large["naive"]
    assert small["blockwise"][0] < large["blockwise"][0]


def test_time_curve_shape_and_threads_restored():
    before = torch.get_num_threads()
    t = time_curve([16, 32], methods=["naive", "sdpa"], repeats=1)
    assert set(t) == {"naive", "sdpa"} and all(len(v) == 2 and min(v) > 0 for v in t.values())
    assert torch.get_num_threads() == before


def test_best_time_is_the_fastest_call():
    calls = []
    assert best_time(lambda: calls.append(1), repeats=4) >= 0
    assert len(calls) == 5  # one warm-up + four timed


def test_curve_errors():
    with pytest.raises(ValueError, match="methods: expected one of"):
        time_curve([16], methods=["flash"])
    with pytest.raises(TypeError, match="methods: expected a list of names"):
        memory_curve([16], methods="naive")
    with pytest.raises(TypeError, match="lengths: expected a non-empty list"):
        memory_curve([])
    with pytest.raises(ValueError, match="lengths: expected a positive int"):
        time_curve([0])
    with pytest.raises(ValueError, match="repeats: expected a positive int"):
        best_time(lambda: None, repeats=0)


@pytest.mark.parametrize("power", [1.0, 2.0, 3.0, 0.5])
def test_fit_slope_recovers_powers(power):
    xs = [64, 128, 256, 512, 1024]
    assert fit_slope(xs, [3.0 * x**power for x in xs]) == pytest.approx(power, abs=1e-9)


def test_fit_slope_errors():
    with pytest.raises(ValueError, match="xs/ys: expected two lists of equal length"):
        fit_slope([1, 2], [1])
    with pytest.raises(ValueError, match="xs/ys: expected positive numbers"):
        fit_slope([1, 2], [0, 1])


def test_backward_memory_naive_keeps_the_weights_sdpa_does_not():
    L = 512
    naive = backward_memory("naive", L)
    sdpa = backward_memory("sdpa", L)
    assert naive.kept_bytes >= L * L * 4  # the (L, L) weights, saved for the backward pass
    assert sdpa.kept_bytes == L * 64 * 4 + L * 4  # its output and one number per query row
    assert naive.node.endswith("Backward0") and sdpa.node.endswith("Backward0")
    with pytest.raises(ValueError, match="methods: expected one of"):
        backward_memory("flash", L)
