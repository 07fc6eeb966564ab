"""The explorer of notebook 14 (attn.widgets.modern_attention): its pure function (the layer's own
maps under the window, the keys a group shares, the cache's bytes) and its picture (bands and
key/value heads in the colour of the group, the window's grey and dotted cells, the cache bars)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _pictures import box, cell, near, pixels
from matplotlib.colors import to_rgb

from attn import KVCache
from attn.masks import causal_mask, sliding_window_mask
from attn.widgets.modern_attention import (BYTES_PER_NUMBER, GROUP_COLORS, HEAD_SIZE, KV_HEADS, LAYERS, LENGTHS,
                                           NUM_HEADS, POSITIONS, WINDOWS, modern_attention_explorer,
                                           modern_input, modern_layer, modern_view)

L = POSITIONS
GREY = (128, 128, 128)  # the maps' blocked colour, "0.5"


def rgb255(colour) -> tuple[int, ...]:
    return tuple(round(255 * c) for c in to_rgb(colour))


# --- the view's numbers -------------------------------------------------------------------

@pytest.mark.parametrize("kv_heads", KV_HEADS)
@pytest.mark.parametrize("window", WINDOWS)
def test_the_maps_are_the_layers_attention_under_the_window(kv_heads, window):
    """Each map is softmax(q kᵀ / √D) of the layer's own projections, its key/value heads shared
    as torch's grouped-query attention shares them, under the causal mask or the window."""
    v = modern_view(kv_heads, window)
    layer, x = modern_layer(kv_heads), modern_input()
    allowed = causal_mask(L) if window is None else sliding_window_mask(L, window)  # (L, L)
    assert np.array_equal(v.allowed, allowed.numpy())
    with torch.no_grad():
        q, k, val = layer.project(x, x, x)  # (1, H, L, D), (1, H_kv, L, D), (1, H_kv, L, D)
        G = NUM_HEADS // kv_heads
        scores = q @ k.repeat_interleave(G, dim=1).transpose(-2, -1) / math.sqrt(HEAD_SIZE)  # (1, H, L, L)
        expected = scores.masked_fill(~allowed, -math.inf).softmax(-1)[0]
        np.testing.assert_allclose(v.weights, expected.numpy(), atol=1e-12)
        heads = F.scaled_dot_product_attention(q, k, val, attn_mask=allowed, enable_gqa=True)  # (1, H, L, D)
    np.testing.assert_allclose(v.weights @ val.repeat_interleave(G, dim=1)[0].numpy(), heads[0].numpy(), atol=1e-10)
    assert np.all(v.weights[:, ~v.allowed] == 0)
    np.testing.assert_allclose(v.weights.sum(-1), 1.0)


@pytest.mark.parametrize("kv_heads", KV_HEADS)
def test_the_heads_of_a_group_read_exactly_the_same_keys(kv_heads):
    v = modern_view(kv_heads)
    G = NUM_HEADS // kv_heads
    assert v.group_size == G and v.groups == tuple(h // G for h in range(NUM_HEADS))
    assert v.keys.shape == (NUM_HEADS, L, HEAD_SIZE)
    for h in range(NUM_HEADS):
        for other in range(NUM_HEADS):
            same = np.array_equal(v.keys[h], v.keys[other])
            assert same == (v.groups[h] == v.groups[other]), (h, other)
    # each group keeps the keys of its first head in the multi-head layer, and so that head's map
    # (to round-off: a projection of another width sums in another order)
    mha = modern_view(NUM_HEADS)
    for g in range(kv_heads):
        np.testing.assert_allclose(v.keys[g * G], mha.keys[g * G], atol=1e-12)
        np.testing.assert_allclose(v.weights[g * G], mha.weights[g * G], atol=1e-12)
    if G > 1:  # the second head of a group now reads its first head's keys: another map
        assert not np.allclose(v.weights[1], mha.weights[1], atol=1e-3)


def test_the_window_hides_the_earlier_positions_beyond_it():
    assert not modern_view(window=None).hidden.any()
    for window in (w for w in WINDOWS if w is not None):
        v = modern_view(window=window)
        i, j = np.indices((L, L))
        assert np.array_equal(v.hidden, j <= i - window)  # earlier, outside the window
        assert np.array_equal(v.allowed, (j <= i) & (j > i - window))
        assert v.hidden.sum() == sum(max(0, i + 1 - window) for i in range(L))


@pytest.mark.parametrize("kv_heads", KV_HEADS)
def test_the_cache_bytes(kv_heads):
    for length in LENGTHS:
        for layers in LAYERS:
            free = modern_view(kv_heads, None, length, layers)
            per_token = 2 * kv_heads * HEAD_SIZE * 2  # a key and a value per KV head, fp16
            assert free.bytes_per_token == per_token and free.mha_bytes_per_token == 2 * 8 * 64 * 2
            assert free.no_window_bytes == free.cache_bytes == layers * length * per_token
            assert free.mha_bytes == free.no_window_bytes * NUM_HEADS // kv_heads
            assert free.kept == length and free.reach == length
            for window in (w for w in WINDOWS if w is not None):
                v = modern_view(kv_heads, window, length, layers)
                assert v.kept == window and v.cache_bytes == layers * window * per_token
                assert v.no_window_bytes == free.no_window_bytes
                assert v.reach == min(length, layers * (window - 1) + 1)


@pytest.mark.parametrize("window", WINDOWS)
def test_the_bytes_are_those_a_real_cache_holds(window):
    """The layer run position by position with an attn.KVCache holds bytes_per_token per position
    kept (in fp16), the last ``window`` of them with a window."""
    for kv_heads in KV_HEADS:
        layer, x = modern_layer(kv_heads), modern_input()
        cache = KVCache(window=window)
        with torch.no_grad():
            for t in range(L):
                layer(x[:, t:t + 1], cache=cache)
        numbers = cache.key.numel() + cache.value.numel()
        v = modern_view(kv_heads, window)
        assert cache.kept == (L if window is None else window)
        assert numbers * BYTES_PER_NUMBER == cache.kept * v.bytes_per_token


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"kv_heads: expected one of 8, 4, 2, 1, got 3"):
        modern_view(3)
    with pytest.raises(TypeError, match="kv_heads: expected an int, got float 2.0"):
        modern_view(2.0)
    with pytest.raises(ValueError, match="window: expected one of None, 8, 4, 2, got 5"):
        modern_view(8, 5)
    with pytest.raises(TypeError, match="window: expected an int, got bool True"):
        modern_view(8, True)
    with pytest.raises(ValueError, match="length: expected one of 1024, 4096, 32768, 131072, got 1000"):
        modern_view(length=1000)
    with pytest.raises(ValueError, match="layers: expected one of 1, 4, 8, 32, got 0"):
        modern_view(layers=0)
    with pytest.raises(ValueError, match="kv_heads: expected one of"):
        modern_layer(16)
    with pytest.raises(ValueError, match="kv_heads: expected one of"):
        modern_attention_explorer(kv_heads=5)


# --- the picture --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def explorer():
    ex = modern_attention_explorer()
    yield ex
    ex.close()


def set_controls(ex, **values):
    for name, value in values.items():
        ex.controls[name].value = value


def band_colour(px, ex, h) -> np.ndarray:
    """The band over head h's map (0-based), read a few pixels in from its left end (the text
    is centred)."""
    band = ex.bands[h]
    H, W = px.shape[:2]
    x = int(round(band.get_x() * W)) + 3
    y = int(round(H - (band.get_y() + band.get_height() / 2) * H))
    return px[y - 2:y + 3, x:x + 3].reshape(-1, 3)


@pytest.mark.parametrize("kv_heads", KV_HEADS)
def test_the_bands_and_the_kv_row_colour_each_head_by_its_kv_head(explorer, kv_heads):
    set_controls(explorer, kv_heads=kv_heads, window=0)
    px = pixels(explorer)
    G = NUM_HEADS // kv_heads
    for h in range(NUM_HEADS):
        colour = rgb255(GROUP_COLORS[h // G])
        assert near(band_colour(px, explorer, h), colour, tol=2).all(), (kv_heads, h)
    # under each query head's cell, the key/value row shows the KV head it reads
    queries, kv = explorer.maps["query heads"].ax, explorer.maps["kv heads"].ax
    for h in range(NUM_HEADS):
        top = cell(px, queries, 1, NUM_HEADS, 0, h)
        under = px[int(round(px.shape[0] - kv.bbox.y1)) + 3, (int(round(queries.bbox.x0))
                                                            + int(round((h + 0.15) * queries.bbox.width / NUM_HEADS)))]
        colour = rgb255(GROUP_COLORS[h // G])
        assert near(top[3:6, 3:6].reshape(-1, 3), colour, tol=2).all(), (kv_heads, h)
        assert near(under[None], colour, tol=2).all(), (kv_heads, h, under)
    # every KV head's colour is another colour: as many colours as KV heads
    colours = {tuple(band_colour(px, explorer, h)[0]) for h in range(NUM_HEADS)}
    assert len(colours) == kv_heads


@pytest.mark.parametrize("window", [0, 4, 2])
def test_the_maps_grey_the_masked_cells_and_dot_those_the_window_hides(explorer, window):
    set_controls(explorer, kv_heads=2, window=window)
    px = pixels(explorer)
    for h in (0, 5):
        ax = explorer.maps[f"head {h + 1}"].ax
        for i in range(L):
            for j in range(L):
                c = cell(px, ax, L, L, i, j)[1:-1, 1:-1]  # inside the cell's edges (and the map's frame)
                centre, corner = c[c.shape[0] // 2, c.shape[1] // 2], c[0, 0]
                hidden = window > 0 and j <= i - window  # earlier than the window reaches
                masked = j > i or hidden
                assert near(corner[None], GREY, tol=2).all() == masked, (window, h, i, j, corner)
                if masked:  # a white dot on a cell the window hides, grey on a later position
                    assert near(centre[None], (255, 255, 255) if hidden else GREY, tol=2).all(), (window, h, i, j)


def test_a_map_shows_the_layers_weights(explorer):
    """The darkest cell of each row is where the head puts most weight (Blues: darker = more)."""
    set_controls(explorer, kv_heads=4, window=8)
    px = pixels(explorer)
    v = explorer.state
    for h in (0, 3, 7):
        ax = explorer.maps[f"head {h + 1}"].ax
        for i in (5, 11, 15):
            allowed = np.flatnonzero(v.allowed[i])
            darkness = [-cell(px, ax, L, L, i, j)[3:-3, 3:-3].mean() for j in allowed]  # cells of 7 or 8 pixels
            top_two = np.sort(v.weights[h, i, allowed])[-2:]
            if top_two[1] - top_two[0] > 0.05:  # a clear favourite
                assert allowed[int(np.argmax(darkness))] == allowed[int(np.argmax(v.weights[h, i, allowed]))]


def test_fewer_kv_heads_keep_a_groups_first_map_and_change_the_others(explorer):
    set_controls(explorer, kv_heads=8, window=0)
    before = pixels(explorer)
    set_controls(explorer, kv_heads=4)
    after = pixels(explorer)
    first, second = explorer.maps["head 1"].ax, explorer.maps["head 2"].ax
    assert np.array_equal(box(before, first), box(after, first))  # head 1 keeps its keys
    assert not np.array_equal(box(before, second), box(after, second))  # head 2 reads head 1's now


def test_the_length_and_the_layers_move_only_the_cache_panel(explorer):
    set_controls(explorer, kv_heads=2, window=4, length=4096, layers=32)
    before = pixels(explorer)
    set_controls(explorer, length=131072, layers=1)
    after = pixels(explorer)
    for h in range(NUM_HEADS):
        ax = explorer.maps[f"head {h + 1}"].ax
        assert np.array_equal(box(before, ax), box(after, ax))
    cache_ax = explorer.cache_bars[0].axes
    assert not np.array_equal(box(before, cache_ax), box(after, cache_ax))


def bar_pixels(px, explorer, k) -> int:
    """How many pixels long bar k of the cache panel is, read on its middle row."""
    bar = explorer.cache_bars[k]
    ax = bar.axes
    row_y = ax.transData.transform((1.0, bar.get_y() + bar.get_height() / 2))[1]
    row = px[int(round(px.shape[0] - row_y)), int(round(ax.bbox.x0)) + 2:int(round(ax.bbox.x1)) - 1]
    return int(near(row, rgb255(bar.get_facecolor()), tol=3).sum())


def test_the_cache_bars_follow_the_bytes(explorer):
    set_controls(explorer, kv_heads=8, window=0, length=32768, layers=8)
    px = pixels(explorer)
    mha, chosen, windowed = (bar_pixels(px, explorer, k) for k in range(3))
    assert mha == chosen == windowed > 50  # multi-head attention, no window: three equal bars
    set_controls(explorer, kv_heads=1)
    px = pixels(explorer)
    assert bar_pixels(px, explorer, 0) == mha
    ax = explorer.cache_bars[0].axes
    per_decade = ax.bbox.width / math.log10(2**36 / 2**9)
    # 8 times fewer bytes: log10(8) decades shorter, to a pixel or two
    assert abs((mha - bar_pixels(px, explorer, 1)) - math.log10(8) * per_decade) <= 2
    set_controls(explorer, window=2)
    px = pixels(explorer)
    assert bar_pixels(px, explorer, 2) < bar_pixels(px, explorer, 1) - 100  # 2 positions of 32,768


def test_the_readout_names_the_groups_and_the_bytes(explorer):
    set_controls(explorer, kv_heads=2, window=4, length=4096, layers=32)
    text = explorer.readout.value
    assert "heads 1–4 read KV head 1, heads 5–8 read KV head 2" in text
    assert "= 512 bytes" in text and "4 times more" in text
    assert "last 4 positions: 64.0 KiB" in text and "draws on 97 positions" in text
    set_controls(explorer, kv_heads=1, window=0)
    text = explorer.readout.value
    assert "Multi-query attention" in text and "No window" in text and "keeps only" not in text


def test_building_leaves_the_learners_random_state_alone():
    from attn.widgets import modern_attention

    for cached in (modern_attention._multi_head, modern_layer, modern_attention._attention):
        cached.cache_clear()  # built anew, as in a fresh kernel
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    modern_attention_explorer(kv_heads=2).close()
    assert torch.equal(torch.rand(3), expected)


def test_a_view_cannot_change_the_next_one():
    v = modern_view(2, 4)
    with pytest.raises(ValueError, match="read-only"):
        v.weights[0, 0, 0] = 5.0
    assert modern_view(2, 4).weights[0, 0, 0] == 1.0  # the first query sees only itself
