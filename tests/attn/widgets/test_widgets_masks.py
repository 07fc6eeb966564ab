import math

import numpy as np
import pytest
import torch
from _pictures import box, cell, changed, pixels

from attn.functional import masked_softmax
from attn.masks import causal_mask
from attn.widgets.masks import FILLS, MASK_KINDS, MAX_LEN, mask_and_tokens, mask_explorer, masked_map


@pytest.mark.parametrize("L", [1, 2, 5, 12])
def test_mask_kinds(L):
    none, tokens = mask_and_tokens("none", L)
    assert none.all() and tokens == tuple(str(i) for i in range(L))
    causal, _ = mask_and_tokens("causal", L)
    assert torch.equal(causal, causal_mask(L))
    n_pad = max(1, L // 3)
    pad, tokens = mask_and_tokens("padding", L)
    assert pad.dtype == torch.bool and pad.shape == (L, L)
    assert not pad[:, L - n_pad:].any() and pad[:, : L - n_pad].all()
    assert tokens[L - n_pad:] == ("[PAD]",) * n_pad
    left, tokens = mask_and_tokens("causal + left padding", L)
    assert tokens[:n_pad] == ("[PAD]",) * n_pad
    assert not left[:n_pad].any()  # the first queries see only padding: fully blocked rows
    assert torch.equal(left[n_pad:, n_pad:], causal_mask(L - n_pad)) if L > n_pad else True


@pytest.mark.parametrize("L", [2, 6, 12])
def test_fully_blocked_rows_nan_uniform_zeros(L):
    kind = "causal + left padding"
    inf, big, pkg = (masked_map(kind, L, f) for f in FILLS)
    n_pad = max(1, L // 3)
    assert inf.blocked_rows == big.blocked_rows == pkg.blocked_rows == tuple(range(n_pad))
    assert inf.nan_rows == inf.blocked_rows and big.nan_rows == () and pkg.nan_rows == ()
    rows = list(inf.blocked_rows)
    assert torch.isnan(inf.weights[rows]).all()
    torch.testing.assert_close(big.weights[rows], torch.full((n_pad, L), 1 / L, dtype=torch.float64))
    assert torch.equal(pkg.weights[rows], torch.zeros(n_pad, L, dtype=torch.float64))
    assert all(math.isnan(s) for s in inf.row_sums[:n_pad])
    assert pkg.row_sums[:n_pad] == (0.0,) * n_pad
    # the other rows are the same under every fill, and match attn.masked_softmax
    assert inf.fills_agree == 0.0
    ok = slice(n_pad, L)
    torch.testing.assert_close(inf.weights[ok], pkg.weights[ok])
    torch.testing.assert_close(pkg.weights, masked_softmax(pkg.scores, pkg.mask))


@pytest.mark.parametrize("kind", MASK_KINDS[:3])
def test_no_blocked_rows_means_every_fill_agrees(kind):
    maps = [masked_map(kind, 7, f) for f in FILLS]
    assert all(m.blocked_rows == () and m.nan_rows == () for m in maps)
    for m in maps:
        torch.testing.assert_close(torch.tensor(m.row_sums, dtype=torch.float64),
                                   torch.ones(7, dtype=torch.float64))
        assert (m.weights[~m.mask] == 0).all()
    assert maps[0].fills_agree == 0.0


def test_scores_are_seeded_and_shared_across_lengths():
    a, b = masked_map("none", 5, "-inf"), masked_map("none", 9, "-inf")
    assert torch.equal(a.scores, b.scores[:5, :5])
    assert not torch.equal(masked_map("none", 5, "-inf", seed=1).scores, a.scores)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="kind: expected one of"):
        masked_map("diagonal", 4, "-inf")
    with pytest.raises(ValueError, match="fill: expected one of"):
        masked_map("causal", 4, "0")
    with pytest.raises(ValueError, match="length: expected 1..12"):
        masked_map("causal", 13, "-inf")
    with pytest.raises(TypeError, match="length"):
        masked_map("causal", 4.0, "-inf")
    with pytest.raises(ValueError, match="length: expected 2..12"):
        mask_explorer(length=1)


def test_explorer_every_control_across_its_range():
    ex = mask_explorer()
    assert set(ex.controls) == {"kind", "length", "fill"}
    assert bytes(ex.image.value[:4]) == b"\x89PNG"
    panels = {name: view.ax for name, view in ex.maps.items()}

    def both():
        return {name: box(pixels(ex), ax) for name, ax in panels.items()}

    previous = both()
    for fill in FILLS[1:] + FILLS[:1]:  # the default is "-inf": move away, then back
        before = ex.full_redraws
        ex.controls["fill"].value = fill
        assert ex.full_redraws == before  # same labels: no full redraw
        assert ex.state == masked_map(ex.controls["kind"].value, ex.controls["length"].value, fill)
        now = both()
        # the fill is written in the blocked score cells, and the blocked rows' weights change
        assert changed(previous["scores"], now["scores"]) and changed(previous["weights"], now["weights"])
        previous = now
    for kind in MASK_KINDS[::-1]:
        if kind == ex.controls["kind"].value:
            continue
        ex.controls["kind"].value = kind
        assert ex.state.kind == kind
        now = both()
        assert changed(previous["scores"], now["scores"]) and changed(previous["weights"], now["weights"])
        previous = now
    for L in range(2, MAX_LEN + 1):
        before = ex.full_redraws
        ex.controls["length"].value = L
        assert ex.full_redraws == before  # new tick labels are live bitmaps: no full redraw
        assert ex.state.length == L and ex.state.weights.shape == (L, L)
        for name in ("scores", "weights"):
            assert ex.maps[name].labels.x_strings == list(ex.state.tokens)
            assert ex.maps[name].labels.y_strings == list(ex.state.tokens)
            assert ex.maps[name].cells.values.shape == (L, L)
        now = both()
        assert changed(previous["scores"], now["scores"]) and changed(previous["weights"], now["weights"])
        previous = now


def test_explorer_shows_nan_and_the_fill_in_the_cells():
    ex = mask_explorer("causal + left padding", 6, "-inf")
    scores, weights = ex.maps["scores"].cells.text, ex.maps["weights"].cells.text
    assert weights.strings[0] == ["NaN"] * 6  # query 0 sees only padding
    assert scores.strings[0] == ["-inf"] * 6 and scores.strings[5][5] == f"{ex.state.scores[5, 5]:.1f}"
    assert "NaN" in ex.readout.value
    assert np.isnan(ex.maps["weights"].cells.values[0]).all()
    np.testing.assert_array_equal(ex.maps["scores"].cells.blocked, ~ex.state.mask.numpy())
    # the NaN row is drawn in the colour map's "bad" colour (pink), not as any weight
    px = pixels(ex)
    assert tuple(cell(px, ex.maps["weights"].ax, 6, 6, 0, 0)[3, 3]) == (0xf4, 0xa3, 0xa3)
    assert tuple(cell(px, ex.maps["scores"].ax, 6, 6, 0, 0)[3, 3]) == (128, 128, 128)  # blocked: grey
    ex.controls["fill"].value = "-1e9"
    assert weights.strings[0] == [f"{1 / 6:.2f}"] * 6 and scores.strings[0][0] == "-1e9"
    assert "uniform" in ex.readout.value
    ex.controls["fill"].value = "package"
    assert weights.strings[0] == ["0.00"] * 6 and scores.strings[0][0] == "×"
    assert "zeros" in ex.readout.value
    ex.controls["length"].value = 12
    assert len(weights.strings) == 12 and len(weights.strings[0]) == 12
    assert ex.maps["weights"].cells.values.shape == (12, 12)
    # every cell of the picture has its label's ink in it (dark or light text on the cell)
    px = pixels(ex)
    for i in range(12):
        for j in range(12):
            c = cell(px, ex.maps["weights"].ax, 12, 12, i, j)
            h, w = c.shape[:2]
            assert c[h // 2 - 2:h // 2 + 3, w // 2 - 6:w // 2 + 7].std() > 20, (i, j)
