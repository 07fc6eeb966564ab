"""attn.positions: sinusoidal codes and RoPE, against their formulas written out element by element."""
import math

import pytest
import torch

from attn.positions import apply_rope, frequencies, offset_rotation, offset_spread, sinusoidal


@pytest.mark.parametrize("length,d", [(1, 2), (7, 4), (33, 16), (5, 384)])
def test_sinusoidal_is_the_formula(length, d):
    pe = sinusoidal(length, d)
    assert pe.shape == (length, d) and pe.dtype == torch.float64
    for p in range(length):
        for i in range(d // 2):
            angle = p / 10000 ** (2 * i / d)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_dot_product_depends_on_the_offset_only():
    pe = sinusoidal(200, 64)
    gram = pe @ pe.T  # (L, L)
    for k in range(-50, 51):
        d = torch.diagonal(gram, k)
        assert (d - d[0]).abs().max().item() < 1e-11
    # and the offset really matters: not a constant
    assert abs(gram[0, 0] - gram[0, 1]) > 0.1


def test_sinusoidal_empty_and_errors():
    assert sinusoidal(0, 4).shape == (0, 4)
    with pytest.raises(ValueError, match="d_model: expected a positive even int.*got 5"):
        sinusoidal(3, 5)
    with pytest.raises(ValueError, match="d_model: expected a positive even int.*got 0"):
        sinusoidal(3, 0)
    with pytest.raises(ValueError, match="d_model: expected a positive even int.*got -2"):
        sinusoidal(3, -2)
    with pytest.raises(ValueError, match="length: expected an int in 0..inf, got -1"):
        sinusoidal(-1, 4)
    with pytest.raises(TypeError, match="length: expected an int, got float"):
        sinusoidal(2.0, 4)
    with pytest.raises(TypeError, match="d_model: expected an int, got bool"):
        sinusoidal(2, True)


def test_frequencies():
    w = frequencies(8)
    assert torch.allclose(w, torch.tensor([1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75],
                                          dtype=torch.float64))
    with pytest.raises(ValueError, match="base: expected a positive number, got 0.0"):
        frequencies(8, base=0)


def _rope_by_hand(x, positions, base=10000.0):
    out = torch.empty_like(x)
    E = x.shape[-1]
    for row, p in enumerate(positions.tolist()):
        for i in range(E // 2):
            t = p * base ** (-2 * i / E)
            a, b = x[..., row, 2 * i], x[..., row, 2 * i + 1]
            out[..., row, 2 * i] = a * math.cos(t) - b * math.sin(t)
            out[..., row, 2 * i + 1] = a * math.sin(t) + b * math.cos(t)
    return out


@pytest.mark.parametrize("shape", [(5, 2), (3, 6, 8), (2, 2, 4, 6)])
def test_rope_is_the_rotation_of_each_pair(shape):
    x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    x0 = x.clone()
    got = apply_rope(x)
    want = _rope_by_hand(x, torch.arange(shape[-2]))
    assert torch.allclose(got, want, atol=1e-12)
    assert torch.equal(x, x0)  # the argument is not changed
    # a rotation keeps every pair's length
    assert torch.allclose(got.pow(2).sum(-1), x.pow(2).sum(-1), atol=1e-12)


def test_rope_positions_argument_and_base():
    x = torch.randn(4, 6, dtype=torch.float64)
    pos = torch.tensor([3, 0, 7, 2])
    assert torch.allclose(apply_rope(x, pos, base=100.0), _rope_by_hand(x, pos, base=100.0), atol=1e-12)
    assert torch.allclose(apply_rope(x, torch.zeros(4)), x)  # position 0 is no rotation
    assert apply_rope(x.float()).dtype == torch.float32


def test_rope_score_depends_on_the_offset_only_for_every_offset():
    g = torch.Generator().manual_seed(1)
    L, E = 24, 16
    q = torch.randn(E, dtype=torch.float64, generator=g)
    k = torch.randn(E, dtype=torch.float64, generator=g)
    Q = apply_rope(q.expand(L, E))  # the same query vector at every position
    K = apply_rope(k.expand(L, E))  # the same key vector at every position
    scores = Q @ K.T  # (L, L): scores[m, n] = score of the query at m for the key at n
    for offset in range(-(L - 1), L):
        d = torch.diagonal(scores, offset)
        assert (d - d[0]).abs().max().item() < 1e-12
    # and without RoPE there is no dependence on position at all
    assert torch.diagonal(scores, 1)[0] != pytest.approx(torch.diagonal(scores, 0)[0].item())


def test_rope_errors():
    with pytest.raises(ValueError, match=r"x: expected an even, positive last dim E.*got shape \(3, 5\)"):
        apply_rope(torch.zeros(3, 5))
    with pytest.raises(ValueError, match=r"x: expected at least 2 dims"):
        apply_rope(torch.zeros(4))
    with pytest.raises(TypeError, match="x: expected a floating-point tensor"):
        apply_rope(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"positions: expected shape \(3,\).*got shape \(4,\)"):
        apply_rope(torch.zeros(3, 4), torch.arange(4))
    with pytest.raises(TypeError, match="positions: expected a torch.Tensor of shape"):
        apply_rope(torch.zeros(3, 4), [0, 1, 2])
    with pytest.raises(TypeError, match="positions: expected integer or float positions"):
        apply_rope(torch.zeros(3, 4), torch.ones(3, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64])
def test_codes_refuse_dtypes_that_are_not_floating_point(dtype):
    # an integer dtype would truncate every sine and cosine to 0 or 1
    with pytest.raises(TypeError, match=rf"dtype: expected a floating-point dtype \(float32 or float64\), got {dtype}"):
        sinusoidal(4, 8, dtype=dtype)
    with pytest.raises(TypeError, match=rf"dtype: expected a floating-point dtype \(float32 or float64\), got {dtype}"):
        frequencies(8, dtype=dtype)


def test_codes_refuse_a_dtype_that_is_not_a_torch_dtype():
    with pytest.raises(TypeError, match=r"dtype: expected a torch.dtype such as torch.float64, got str 'float32'"):
        sinusoidal(4, 8, dtype="float32")


@pytest.mark.parametrize("position", [65_536, 10**6, 10**9])
def test_float32_codes_and_rotations_are_the_float64_ones_rounded(position):
    # the angles are computed in float64 whatever the dtype: in float32 the angle at 65,536
    # was off by up to 4e-3, at 10**9 by whole turns
    pos = torch.tensor([0, 1, position])
    w = frequencies(16)  # (8,) float64
    angle = pos.double()[:, None] * w[None, :]  # (3, 8)
    want = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)  # (3, 16): sin, cos interleaved
    if position == 65_536:  # the table itself, row 65,536
        pe = sinusoidal(position + 1, 16, dtype=torch.float32)
        assert pe.dtype == torch.float32
        torch.testing.assert_close(pe[position], sinusoidal(position + 1, 16)[position].float(), atol=1e-6, rtol=0)
        torch.testing.assert_close(pe[position], want[2].float(), atol=1e-6, rtol=0)
    x = torch.rand(3, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 2 - 1
    got = apply_rope(x.float(), pos)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, apply_rope(x, pos).float(), atol=1e-6, rtol=0)
    torch.testing.assert_close(got, _rope_by_hand(x, pos).float(), atol=1e-6, rtol=0)


def test_huge_tables_are_refused_before_any_memory_is_asked_for():
    with pytest.raises(ValueError, match=r"length/d_model: expected a \(L, d\) table of at most 2\*\*28 = 268,435,456 "
                                         r"entries, got \(L, d\) = \(1000000000000, 8\)"):
        sinusoidal(10**12, 8)
    with pytest.raises(ValueError, match=r"size: expected a \(size/2,\) table of at most 2\*\*28"):
        frequencies(2 * 10**12)
    with pytest.raises(ValueError, match=r"length/d_model: .* got \(L, d\) = \(33554433, 8\), 268,435,464 entries"):
        sinusoidal(2**25 + 1, 8)  # one row more than the largest allowed


def test_device_arguments_and_positions_on_another_device():
    assert sinusoidal(3, 4, device="meta").device.type == "meta"
    assert sinusoidal(3, 4, device=torch.device("cpu")).device.type == "cpu"
    with pytest.raises(ValueError, match=r"device: expected a device such as 'cpu' or 'cuda:0', got 'nonsense'"):
        sinusoidal(3, 4, device="nonsense")
    with pytest.raises(ValueError, match=r"device: expected a device this machine has \(.*\), got 'cuda:99'"):
        sinusoidal(3, 4, device="cuda:99")
    with pytest.raises(TypeError, match=r"device: expected a torch.device, a string such as 'cpu' or 'cuda:0', "
                                        r"or None, got int 0"):
        sinusoidal(3, 4, device=0)
    # the meta device is the one device besides the CPU that every machine has
    x = torch.zeros(3, 4, device="meta")
    assert apply_rope(x).device.type == "meta"  # the default positions follow x
    with pytest.raises(ValueError, match=r"positions: expected device meta \(the device of x\), got cpu"):
        apply_rope(x, torch.arange(3))
    with pytest.raises(ValueError, match=r"positions: expected a tensor with values \(the angles are computed "
                                         r"from them\), got one on the meta device"):
        apply_rope(torch.zeros(3, 4), torch.arange(3, device="meta"))


@pytest.mark.parametrize("k", [0, 1, 3, -5, 17.5])
@pytest.mark.parametrize("d", [2, 8, 64])
def test_offset_rotation_moves_every_code_by_k_positions(k, d):
    """Vaswani et al.'s argument: PE[p + k] = PE[p] R_k^T, one R_k for every p."""
    p = torch.arange(40, dtype=torch.float64)
    w = frequencies(d)
    shifted = torch.empty(40, d, dtype=torch.float64)
    shifted[:, 0::2] = torch.sin((p[:, None] + k) * w)
    shifted[:, 1::2] = torch.cos((p[:, None] + k) * w)
    R = offset_rotation(k, d)
    assert R.shape == (d, d)
    torch.testing.assert_close(sinusoidal(40, d) @ R.T, shifted, atol=1e-12, rtol=0)
    torch.testing.assert_close(R @ R.T, torch.eye(d, dtype=torch.float64), atol=1e-12, rtol=0)
    # block-diagonal: pair i only mixes with itself
    mask = torch.block_diag(*[torch.ones(2, 2)] * (d // 2)).bool()
    assert (R[~mask] == 0).all()


def test_offset_spread_is_zero_for_a_function_of_the_offset_only():
    m = torch.arange(6.0)[:, None]
    n = torch.arange(9.0)[None, :]
    assert offset_spread(torch.cos(n - m)) == 0.0
    assert offset_spread(torch.zeros(1, 1)) == 0.0
    # one entry off its diagonal's value by 0.5: the spread is exactly that
    scores = torch.cos(n - m)
    scores[3, 5] += 0.5
    assert offset_spread(scores) == pytest.approx(0.5)
    below = torch.cos(n - m)
    below[5, 1] -= 0.25  # a key before its query: offset -4
    assert offset_spread(below) == pytest.approx(0.25)
    assert offset_spread(m * n) == pytest.approx(5 * 8 - 0 * 3)  # offset 3: 0*3 .. 5*8


def test_offset_spread_rejects_bad_input():
    with pytest.raises(ValueError, match="scores: expected a non-empty"):
        offset_spread(torch.zeros(3))
    with pytest.raises(ValueError, match="scores: expected a non-empty"):
        offset_spread(torch.zeros(0, 3))
    with pytest.raises(ValueError, match="scores: expected finite"):
        offset_spread(torch.tensor([[1.0, float("nan")]]))
    with pytest.raises(TypeError, match="scores"):
        offset_spread([[1.0]])
    with pytest.raises(TypeError, match="offset"):
        offset_rotation("1", 4)
    with pytest.raises(ValueError, match="d_model"):
        offset_rotation(1, 3)
