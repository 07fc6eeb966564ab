import pytest
import torch

import attn
import attn.masks
from attn import causal_mask, from_torch_mha_mask, padding_mask, sliding_window_mask, to_torch_mha_mask


def test_causal_mask_is_lower_triangle():
    m = causal_mask(3)
    assert m.dtype == torch.bool and m.shape == (3, 3)
    assert m.tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_causal_mask_rectangular():
    m = causal_mask(2, 4)
    assert m.shape == (2, 4)
    assert m.tolist() == [[True, False, False, False], [True, True, False, False]]


@pytest.mark.parametrize("L, T", [(1, 0), (1, 4), (3, 2), (4, 4)])
def test_causal_mask_offset_lets_new_queries_see_the_past(L, T):
    # L new queries at positions T..T+L-1 of S = T + L keys: query i sees keys 0..T+i
    m = causal_mask(L, T + L, offset=T)
    assert m.shape == (L, T + L)
    for i in range(L):
        assert m[i].tolist() == [j <= T + i for j in range(T + L)]
    assert torch.equal(causal_mask(L + T)[T:], m)  # the last L rows of the full triangle


def test_causal_mask_device():
    assert causal_mask(2, device="meta").device.type == "meta"


def test_padding_mask_shape_and_values():
    m = padding_mask(torch.tensor([3, 1]), 4)
    assert m.shape == (2, 1, 1, 4) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [[True, True, True, False], [True, False, False, False]]
    assert padding_mask([0, 4], 4)[:, 0, 0].tolist() == [[False] * 4, [True] * 4]


def test_padding_mask_broadcasts_to_heads():
    weights = torch.zeros(2, 3, 5, 4)  # (B, H, L, S)
    assert torch.broadcast_shapes(padding_mask([1, 2], 4).shape, weights.shape) == weights.shape


def test_conversion_round_trip():
    m = causal_mask(4)
    assert torch.equal(to_torch_mha_mask(m), ~m)
    assert torch.equal(from_torch_mha_mask(to_torch_mha_mask(m)), m)


@pytest.mark.parametrize("lengths, match", [
    (torch.tensor([-1, 2]), r"lengths: expected values >= 0, got \[-1, 2\]"),
    (torch.tensor([5, 2]), r"lengths: expected values <= max_len=4, got \[5, 2\]"),
    (torch.tensor([[1, 2]]), r"lengths: expected 1 dim \(B,\), got shape \(1, 2\)"),
])
def test_padding_mask_value_errors(lengths, match):
    with pytest.raises(ValueError, match=match):
        padding_mask(lengths, 4)


def test_padding_mask_type_errors():
    with pytest.raises(TypeError, match=r"lengths: expected an integer tensor, got dtype torch.float32"):
        padding_mask(torch.tensor([1.0, 2.0]), 4)
    with pytest.raises(TypeError, match=r"lengths: expected a list of ints"):
        padding_mask([1.5, 2], 4)
    with pytest.raises(TypeError, match=r"max_len: expected a positive int, got float"):
        padding_mask([1, 2], 4.0)


def test_mask_argument_errors():
    with pytest.raises(ValueError, match=r"L: expected a positive int, got 0"):
        causal_mask(0)
    with pytest.raises(TypeError, match=r"S: expected a positive int, got str"):
        causal_mask(3, "4")
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor \(True = may attend\), got dtype torch.int64"):
        to_torch_mha_mask(torch.ones(2, 2, dtype=torch.long))
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor \(True = blocked\), got dtype torch.float32"):
        from_torch_mha_mask(torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"offset: expected an int in 0..inf, got -1"):
        causal_mask(3, offset=-1)
    with pytest.raises(TypeError, match=r"offset: expected an int, got float 1.0"):
        causal_mask(3, offset=1.0)


def test_huge_masks_are_refused_before_any_memory_is_asked_for():
    with pytest.raises(ValueError, match=r"L/S: expected a \(L, S\) table of at most 2\*\*28 = 268,435,456 entries, "
                                         r"got \(L, S\) = \(1000000000000, 1000000000000\)"):
        causal_mask(10**12)
    with pytest.raises(ValueError, match=r"L/S: expected a \(L, S\) table of at most 2\*\*28.*got \(L, S\) = \(2, 1000000000000\)"):
        causal_mask(2, 10**12)
    with pytest.raises(ValueError, match=r"lengths/max_len: expected a \(B, S\) table of at most 2\*\*28.*"
                                         r"got \(B, S\) = \(2, 1000000000000\)"):
        padding_mask([1, 2], 10**12)
    # the bound is 2**28 entries exactly (on the meta device: shapes only, no memory)
    assert causal_mask(2**14, device="meta").shape == (2**14, 2**14)
    with pytest.raises(ValueError, match=r"L/S: .* got \(L, S\) = \(16384, 16385\), 268,451,840 entries"):
        causal_mask(2**14, 2**14 + 1, device="meta")


@pytest.mark.parametrize("build", [lambda device: causal_mask(3, device=device),
                                   lambda device: padding_mask([1, 3], 3, device=device)],
                         ids=["causal_mask", "padding_mask"])
def test_device_argument(build):
    assert build("meta").device.type == "meta"
    assert build(torch.device("cpu")).device.type == "cpu"
    with pytest.raises(ValueError, match=r"device: expected a device such as 'cpu' or 'cuda:0', got 'nonsense'"):
        build("nonsense")
    with pytest.raises(ValueError, match=r"device: expected a device this machine has \(.*\), got 'cuda:99'"):
        build("cuda:99")
    with pytest.raises(TypeError, match=r"device: expected a torch.device, a string such as 'cpu' or 'cuda:0', "
                                        r"or None, got int 0"):
        build(0)


def test_padding_mask_device_follows_the_lengths_and_refuses_meta_lengths():
    lengths = torch.tensor([1, 3])
    assert padding_mask(lengths, 3).device == lengths.device
    assert torch.equal(padding_mask(lengths, 3, device="cpu"), padding_mask([1, 3], 3))
    with pytest.raises(ValueError, match=r"lengths: expected a tensor with values \(each is compared with max_len\), "
                                         r"got one on the meta device"):
        padding_mask(torch.tensor([1, 3], device="meta"), 3)


def test_padding_mask_refuses_a_length_too_large_for_torch_before_converting_it():
    with pytest.raises(ValueError, match=r"lengths: expected values in 0..max_len=4, got \[2, 10{30}\]"):
        padding_mask([2, 10**30], 4)
    with pytest.raises(ValueError, match=r"lengths: expected values in 0..max_len=4, got \[-1\]"):
        padding_mask([-1], 4)


# ---- the sliding window ----

@pytest.mark.parametrize("L, window, S, offset", [
    (5, 1, None, 0), (5, 2, None, 0), (5, 3, None, 0), (5, 5, None, 0), (5, 9, None, 0),
    (3, 2, 7, 0), (2, 3, 6, 4), (1, 4, 9, 8), (4, 2, 3, 0), (3, 3, 5, 1), (2, 1, 4, 2),
])
def test_sliding_window_mask_lets_query_i_see_the_window_keys_ending_at_its_own(L, window, S, offset):
    m = sliding_window_mask(L, window, S, offset=offset)
    S = L if S is None else S
    assert m.dtype == torch.bool and m.shape == (L, S)
    for i in range(L):  # keys offset+i-window+1 .. offset+i, clipped at 0 and S-1
        assert m[i].tolist() == [offset + i - window + 1 <= j <= offset + i for j in range(S)], i


def test_sliding_window_mask_small_case_written_out():
    assert sliding_window_mask(4, 2).int().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    assert sliding_window_mask(3, 1).int().tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


@pytest.mark.parametrize("L, T", [(1, 0), (1, 6), (3, 2), (4, 5)])
@pytest.mark.parametrize("window", [1, 2, 3, 20])
def test_sliding_window_mask_offset_is_the_last_rows_of_the_full_mask(L, T, window):
    full = sliding_window_mask(T + L, window)
    assert torch.equal(sliding_window_mask(L, window, T + L, offset=T), full[T:])
    # and its last columns, for a cache that kept only the last K positions
    K = min(T, window)
    assert torch.equal(sliding_window_mask(L, window, K + L, offset=K), full[T:, T - K:])


def test_sliding_window_mask_composes_with_the_other_masks():
    L = 6
    assert torch.equal(sliding_window_mask(L, L), causal_mask(L))  # a window as long as the sequence
    assert torch.equal(sliding_window_mask(L, 100), causal_mask(L))
    m = sliding_window_mask(L, 3)
    assert torch.equal(m & causal_mask(L), m)  # it is causal already
    assert not torch.equal(m, causal_mask(L))
    both = m & padding_mask([6, 4], L)  # (L, L) & (B, 1, 1, S) -> (B, 1, L, S)
    assert both.shape == (2, 1, L, L)
    for b, n in enumerate((6, 4)):
        for i in range(L):
            assert both[b, 0, i].tolist() == [i - 2 <= j <= i and j < n for j in range(L)]


def test_sliding_window_mask_is_exported_like_causal_mask():
    assert attn.sliding_window_mask is attn.masks.sliding_window_mask
    assert "sliding_window_mask" in attn.__all__ and "sliding_window_mask" in attn.masks.__all__


def test_sliding_window_mask_device_and_size():
    assert sliding_window_mask(3, 2, device="meta").device.type == "meta"
    with pytest.raises(ValueError, match=r"device: expected a device such as 'cpu' or 'cuda:0', got 'nonsense'"):
        sliding_window_mask(3, 2, device="nonsense")
    with pytest.raises(ValueError, match=r"L/S: expected a \(L, S\) table of at most 2\*\*28.*"
                                         r"got \(L, S\) = \(1000000000000, 1000000000000\)"):
        sliding_window_mask(10**12, 4)


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((3, 0), {}, ValueError, r"^window: expected a positive int, got 0$"),
    ((3, -1), {}, ValueError, r"^window: expected a positive int, got -1$"),
    ((3, True), {}, TypeError, r"^window: expected a positive int, got bool True$"),
    ((3, 2.0), {}, TypeError, r"^window: expected a positive int, got float 2.0$"),
    ((3, "2"), {}, TypeError, r"^window: expected a positive int, got str '2'$"),
    ((3, None), {}, TypeError, r"^window: expected a positive int, got NoneType None$"),
    ((0, 2), {}, ValueError, r"^L: expected a positive int, got 0$"),
    ((3, 2, 0), {}, ValueError, r"^S: expected a positive int, got 0$"),
    ((3, 2, 4.0), {}, TypeError, r"^S: expected a positive int, got float 4.0$"),
    ((3, 2), {"offset": -1}, ValueError, r"^offset: expected an int in 0..inf, got -1$"),
    ((3, 2), {"offset": False}, TypeError, r"^offset: expected an int, got bool False$"),
])
def test_sliding_window_mask_argument_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        sliding_window_mask(*args, **kwargs)
