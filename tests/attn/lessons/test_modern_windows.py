"""Sliding windows layer by layer (attn.lessons.modern.windows): the receptive-field formula
against the composed masks, the cache measured on real KVCaches, what leaves the window."""
import pytest
import torch

from attn.lessons.modern import windows


@pytest.mark.parametrize("L, window, layers", [
    (12, 3, 1), (12, 3, 2), (12, 3, 4), (20, 4, 3), (9, 1, 5), (16, 5, 0), (16, 16, 2), (30, 7, 6),
])
def test_the_formula_is_the_composed_masks(L, window, layers):
    widths = windows.receptive_widths(L, window, layers)
    assert widths.tolist() == [windows.receptive_width(i, window, layers) for i in range(L)]


def test_the_field_is_the_band_ending_at_each_position():
    r = windows.reachable(10, 3, 2)  # each position sees 2 back per layer: 4 back after 2 layers
    for i in range(10):
        assert r[i].nonzero().flatten().tolist() == list(range(max(0, i - 4), i + 1))


def test_the_field_grows_by_w_minus_one_a_layer_then_stops_at_the_start():
    grows = [windows.receptive_widths(40, 4, l)[-1].item() for l in range(8)]
    assert grows == [1, 4, 7, 10, 13, 16, 19, 22]
    assert windows.receptive_widths(10, 4, 8)[-1].item() == 10  # capped by the sequence
    assert windows.receptive_width(131_071, 4096, 32) == 32 * 4095 + 1  # Mistral: ~131K back


def test_one_layer_is_the_window_itself():
    from attn.masks import sliding_window_mask
    assert torch.equal(windows.reachable(8, 3, 1), sliding_window_mask(8, 3))


def test_the_cache_stops_growing_at_the_window():
    rows = windows.cache_growth(10, 4, num_kv_heads=2, head_dim=3)
    assert [t for t, _, _ in rows] == list(range(1, 11))
    assert [full for _, full, _ in rows] == [2 * t * 2 * 3 for t in range(1, 11)]
    assert [kept for _, _, kept in rows] == [2 * min(t, 4) * 2 * 3 for t in range(1, 11)]


def test_what_leaves_the_window_is_causal_and_outside_it():
    gone = windows.out_of_window(6, 2)
    assert gone.tolist()[5] == [True, True, True, True, False, False]
    assert not gone.triu().any()  # never the future, never itself
    assert not windows.out_of_window(6, 6).any()  # a window as long as the sequence hides nothing
    # what one layer no longer sees directly, two layers still reach
    assert (gone & windows.reachable(6, 2, 2)).any()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="layers: expected an int in 0..inf, got -1"):
        windows.reachable(4, 2, -1)
    with pytest.raises(ValueError, match="window: expected a positive int, got 0"):
        windows.receptive_width(3, 0, 1)
    with pytest.raises(TypeError, match="L: expected a positive int"):
        windows.out_of_window(4.0, 2)
    with pytest.raises(ValueError, match="tokens: expected a positive int, got 0"):
        windows.cache_growth(0, 2)
    with pytest.raises(ValueError, match="i: expected an int in 0..inf, got -2"):
        windows.receptive_width(-2, 3, 1)
