"""Multi-head attention as today's models run it: shared key/value heads, a sliding window and
the KV cache they shrink (notebook 14).

One seeded (untrained) layer of the chapter's size, d_model = 512 and 8 query heads of D = 64
numbers each, attends over 16 positions of a seeded input. The controls:

* **KV heads**, from 8 (multi-head attention) down to 1 (multi-query attention): the layer
  becomes ``attn.MultiHeadAttention(E, 8, num_kv_heads=H_kv)``, each key/value head shared by
  G = 8 / H_kv consecutive query heads. The queries and the output projection are the same at
  every setting; each group keeps the keys and values of its first head (one of the ways the
  GQA paper, Ainslie et al. 2023, turns a multi-head layer into a grouped one), so the first
  head of a group keeps its map and the others now look through their first head's keys;
* **window**: no window (causal attention) or W, each query seeing the W keys ending at its
  own position (``attn.masks.sliding_window_mask``);
* **sequence length** and **layers**: what the KV cache of such a model holds, in fp16.

The picture: on top, the 8 query heads and, under them, the key/value heads they read (a KV
head spans the query heads of its group); then each query head's attention map, under a band
in the colour of its KV head, with the group's number written on it (colour is not the only
cue: Okabe and Ito's palette, told apart with either common colour-vision deficiency). Masked
cells are grey, those that only the window hides carry a dot. Right: the cache's bytes at the
chosen length, for multi-head attention, for the chosen KV heads and with the window too.

The bytes: each position keeps a key and a value of D numbers per KV head, 2 bytes each in
fp16: 2 x H_kv x D x 2 bytes per position per layer; with a window the cache keeps at most W
positions (``attn.KVCache(window=W)``, a rolling buffer).

Shape legend: H query heads, H_kv key/value heads, L positions, D head size.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.patches import Rectangle

from .._checks import check_choice, check_int
from ..functional import repeat_kv
from ..lessons.modern.cache_budget import cache_bytes_per_token, chapter_configs
from ..language import tr
from ..lessons.cost.measure import format_bytes
from ..masks import causal_mask, sliding_window_mask
from ..modules import MultiHeadAttention
from ..drawing.plotting import new_figure, text_colors, text_font
from ._base import Explorer, listing, sentences
from ._bitmaps import AxesTitle
from ._mapview import MapView

__all__ = ["NUM_HEADS", "HEAD_SIZE", "POSITIONS", "KV_HEADS", "WINDOWS", "LENGTHS", "LAYERS",
           "BYTES_PER_NUMBER", "GROUP_COLORS", "ModernView", "modern_layer", "modern_input",
           "modern_view", "modern_attention_explorer"]

NUM_HEADS = 8
HEAD_SIZE = 64
POSITIONS = 16
#: The KV heads the slider offers: the divisors of NUM_HEADS, from multi-head to multi-query.
KV_HEADS = (8, 4, 2, 1)
#: The windows the slider offers (None: no window, causal attention).
WINDOWS = (None, 8, 4, 2)
#: The sequence lengths of the cache readout (tokens).
LENGTHS = (1024, 4096, 32768, 131072)
LAYERS = (1, 4, 8, 32)
BYTES_PER_NUMBER = 2  # fp16
#: One colour per KV head: Okabe and Ito's palette, the strongest first (any two stay apart
#: with deuteranopia and protanopia: tests/attn/drawing/test_colour_vision.py).
GROUP_COLORS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000")
_NO_WINDOW = 0  # the window slider's value for "none" (a selection slider cannot hold None)
_INPUT_SCALE = 2.0  # scores of about one unit: maps neither flat nor one-hot


@lru_cache(maxsize=1)
def _multi_head() -> MultiHeadAttention:
    """The seeded multi-head layer every setting is made from."""
    with torch.random.fork_rng(devices=[]):  # the learner's random state stays as it was
        torch.manual_seed(14)
        return MultiHeadAttention(NUM_HEADS * HEAD_SIZE, NUM_HEADS).double().eval()


@lru_cache(maxsize=len(KV_HEADS), typed=True)
def modern_layer(kv_heads: int) -> MultiHeadAttention:
    """The explorer's layer with ``kv_heads`` key/value heads: the seeded multi-head layer's
    W_q and W_o, and for each group the keys and values of its first query head.

    Args:
        kv_heads: H_kv, one of ``KV_HEADS``.

    Returns:
        ``attn.MultiHeadAttention(512, 8, num_kv_heads=kv_heads)``, float64, in eval mode
        (the same object on every call: do not change it).
    """
    check_int("kv_heads", kv_heads)
    check_choice("kv_heads", kv_heads, KV_HEADS)
    mha = _multi_head()
    with torch.random.fork_rng(devices=[]):  # (its weights are all copied below)
        layer = MultiHeadAttention(mha.d_model, NUM_HEADS, num_kv_heads=kv_heads).double().eval()
    group = NUM_HEADS // kv_heads

    def first(w: torch.Tensor) -> torch.Tensor:
        """The rows of the first head of each group: (H * D, E) -> (H, D, E) -> (H_kv * D, E)."""
        return w.view(NUM_HEADS, HEAD_SIZE, -1)[::group].reshape(-1, w.shape[1])

    with torch.no_grad():
        layer.W_q.weight.copy_(mha.W_q.weight)
        layer.W_o.weight.copy_(mha.W_o.weight)
        layer.W_k.weight.copy_(first(mha.W_k.weight))
        layer.W_v.weight.copy_(first(mha.W_v.weight))
    return layer


def modern_input() -> torch.Tensor:
    """The explorer's input: (1, POSITIONS, 512) seeded random vectors, float64 (a new copy)."""
    g = torch.Generator().manual_seed(41)
    return _INPUT_SCALE * torch.randn(1, POSITIONS, NUM_HEADS * HEAD_SIZE, generator=g, dtype=torch.float64)


@dataclass(frozen=True)
class ModernView:
    """The numbers behind the picture.

    Attributes:
        kv_heads, window (None: no window), length (tokens), layers: the controls.
        group_size: G = H / H_kv; groups: (H,) the KV head (0-based) each query head reads.
        allowed: (L, L) bool, True = may attend (causal, and within the window);
        hidden: (L, L) bool, the earlier positions that only the window hides.
        weights: (H, L, L) every head's attention weights, the layer's own;
        keys: (H, L, D) the keys each query head reads (a group's heads read the same).
        bytes_per_token: the cache's bytes per position and layer (keys and values, fp16);
        mha_bytes_per_token: the same for multi-head attention (8 KV heads);
        kept: positions the cache holds after ``length`` tokens (at most ``window``);
        cache_bytes: the cache of all ``layers`` after ``length`` tokens, with the window;
        no_window_bytes: the same without the window; mha_bytes: multi-head attention's,
        without a window; reach: how many positions the last layer's last token can draw
        on, through all the layers (window: layers x (W - 1) + 1, at most ``length``).
    """

    kv_heads: int
    window: int | None
    length: int
    layers: int
    group_size: int
    groups: tuple[int, ...]
    allowed: np.ndarray
    hidden: np.ndarray
    weights: np.ndarray
    keys: np.ndarray
    bytes_per_token: int
    mha_bytes_per_token: int
    kept: int
    cache_bytes: int
    no_window_bytes: int
    mha_bytes: int
    reach: int


def _bytes_per_token(kv_heads: int) -> int:
    """Bytes the KV cache keeps per position and layer: a key and a value of HEAD_SIZE numbers
    for each of ``kv_heads`` heads, in fp16 (``attn.lessons.modern.cache_budget``)."""
    config, = chapter_configs(NUM_HEADS * HEAD_SIZE, NUM_HEADS, kv_heads=(kv_heads,))
    return cache_bytes_per_token(config, bytes_per_number=BYTES_PER_NUMBER)


@lru_cache(maxsize=len(KV_HEADS) * len(WINDOWS), typed=True)
def _attention(kv_heads: int, window: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mask (L, L), every head's weights (H, L, L) and the keys each reads (H, L, D)."""
    layer = modern_layer(kv_heads)
    x = modern_input()
    allowed = causal_mask(POSITIONS) if window is None else sliding_window_mask(POSITIONS, window)  # (L, L)
    with torch.no_grad():
        _, weights = layer(x, mask=allowed)  # (1, H, L, L)
        _, k, _ = layer.project(x, x, x)  # (1, H_kv, L, D)
    keys = repeat_kv(k, NUM_HEADS // kv_heads)[0]  # (1, H_kv, L, D) -> (H, L, D)
    arrays = allowed.numpy(), weights[0].numpy(), keys.numpy()
    for a in arrays:
        a.setflags(write=False)  # kept for later calls: read-only
    return arrays


def modern_view(kv_heads: int = 8, window: int | None = None, length: int = 4096, layers: int = 32) -> ModernView:
    """What the explorer shows.

    Args:
        kv_heads: H_kv, one of ``KV_HEADS`` (8: multi-head attention, 1: multi-query).
        window: None (no window) or one of the windows of ``WINDOWS``.
        length: the tokens of the sequence whose cache is counted, one of ``LENGTHS``.
        layers: the model's layers, one of ``LAYERS``.

    Returns:
        A ``ModernView``.
    """
    check_int("kv_heads", kv_heads)
    check_choice("kv_heads", kv_heads, KV_HEADS)
    if window is not None:
        check_int("window", window)
        check_choice("window", window, WINDOWS)
    check_int("length", length)
    check_choice("length", length, LENGTHS)
    check_int("layers", layers)
    check_choice("layers", layers, LAYERS)
    allowed, weights, keys = _attention(kv_heads, window)
    group = NUM_HEADS // kv_heads
    kept = length if window is None else min(length, window)  # a windowed cache drops the older ones
    per_token, mha_per_token = _bytes_per_token(kv_heads), _bytes_per_token(NUM_HEADS)
    return ModernView(
        kv_heads=kv_heads, window=window, length=length, layers=layers, group_size=group,
        groups=tuple(h // group for h in range(NUM_HEADS)),
        allowed=allowed, hidden=causal_mask(POSITIONS).numpy() & ~allowed, weights=weights, keys=keys,
        bytes_per_token=per_token, mha_bytes_per_token=mha_per_token, kept=kept,
        cache_bytes=layers * kept * per_token, no_window_bytes=layers * length * per_token,
        mha_bytes=layers * length * mha_per_token,
        reach=length if window is None else min(length, layers * (window - 1) + 1))


def _heads(first: int, last: int) -> str:
    """Query heads first..last (1-based) in words."""
    return tr("head {h}", h=first) if first == last else tr("heads {first}–{last}", first=first, last=last)


def _readout(v: ModernView) -> str:
    G = v.group_size
    if v.kv_heads == NUM_HEADS:
        kind = tr("Multi-head attention: each of the {H} query heads has its own keys and values.", H=NUM_HEADS)
    else:
        shared = listing(tr("{heads} read KV head {g}", heads=_heads(g * G + 1, g * G + G), g=g + 1)
                         for g in range(v.kv_heads))
        kind = (tr("Multi-query attention: the {H} query heads share one key/value head.", H=NUM_HEADS)
                if v.kv_heads == 1 else
                tr("Grouped-query attention: {H_kv} key/value heads, each shared by {G} query heads: "
                   "{shared}.", H_kv=v.kv_heads, G=G, shared=shared))
        kind = sentences([kind, tr("The heads of a group read the same keys but ask with their own "
                                   "queries, so their maps differ.")])
    if v.window is None:
        seen = tr("No window: each position attends to itself and every position before it.")
    else:
        seen = tr("A window of {W}: each position attends to itself and the {before} before it; the dotted "
                  "cells are hidden by the window. Through {layers} layer(s), the last token still draws on "
                  "{reach:,} positions.", W=v.window, before=v.window - 1, layers=v.layers, reach=v.reach)
    per_token = tr("<b>KV cache</b>, per token and layer: 2 (key and value) × {H_kv} head(s) × {D} numbers × "
                   "2 bytes (fp16) = {bytes:,} bytes.", H_kv=v.kv_heads, D=HEAD_SIZE, bytes=v.bytes_per_token)
    if v.kv_heads != NUM_HEADS:
        per_token = sentences([per_token, tr("Multi-head attention keeps {mha:,} bytes, {ratio} times more.",
                                             mha=v.mha_bytes_per_token, ratio=v.mha_bytes_per_token // v.bytes_per_token)])
    total = tr("After {length:,} tokens, {layers} layer(s): {cache}.", length=v.length, layers=v.layers,
               cache=format_bytes(v.no_window_bytes))
    if v.window is not None:
        total = sentences([total, tr("With the window the cache keeps only the last {kept:,} positions: {cache}.",
                                     kept=v.kept, cache=format_bytes(v.cache_bytes))])
    return (f"<p>{sentences([kind, seen])}</p><p>{sentences([per_token, total])}</p>")


def _group_colormap() -> ListedColormap:
    return ListedColormap(GROUP_COLORS)


def modern_attention_explorer(kv_heads: int = 8, window: int | None = None, length: int = 4096,
                              layers: int = 32) -> Explorer:
    """KV heads, window, sequence length and layers: the query heads coloured by the KV head
    they share, their attention maps, and the bytes of the KV cache.

    Returns:
        An ``Explorer``; ``.maps`` is "head h" (1-based) -> that head's ``MapView``, "query
        heads" and "kv heads" -> the two rows on top; ``.bands`` the 8 coloured bands above the
        maps (``Rectangle``s, head order); ``.cache_bars`` the cache panel's three bars
        (multi-head, the chosen KV heads, with the window).
    """
    first = modern_view(kv_heads, window, length, layers)
    fig = new_figure(13, 6.6, dpi=72)
    # Top: the query heads and, under them, the key/value heads they read.
    rows = {}
    for name, y in (("query heads", 0.895), ("kv heads", 0.815)):
        rows[name] = MapView(fig.add_axes((0.10, y, 0.56, 0.055)), cmap=_group_colormap(),
                             clim=(-0.5, len(GROUP_COLORS) - 0.5), numbers=True, number_size=9,
                             x_labels=False, y_labels=False)
    fig.text(0.095, 0.9225, tr("query heads"), ha="right", va="center", fontproperties=text_font(10))
    fig.text(0.095, 0.8425, tr("key/value heads"), ha="right", va="center", fontproperties=text_font(10))
    # The maps, 2 rows of 4, each under a band in its KV head's colour. The bands are patches of
    # one axes over the whole figure (figure fractions), so that they can be compared.
    ax_bands = fig.add_axes((0, 0, 1, 1))
    ax_bands.set_axis_off()
    ax_bands.set_xlim(0, 1)
    ax_bands.set_ylim(0, 1)
    maps, bands = {}, []
    width, height = 0.125, 0.125 * 13 / 6.6  # square maps
    for h in range(NUM_HEADS):
        x0, y0 = 0.10 + 0.145 * (h % 4), 0.405 - 0.375 * (h // 4)
        view = MapView(fig.add_axes((x0, y0, width, height)), x_labels=False, y_labels=False,
                       mark_color="white", title_font=text_font(9))
        view.title.pad = 5.0
        maps[f"head {h + 1}"] = view
        band = Rectangle((x0, y0 + height + 0.004), width, 0.036, linewidth=0)
        ax_bands.add_patch(band)
        bands.append(band)
    fig.text(0.38, 0.755, tr("each query head's attention weights (a row: a position; its cells: the "
                             "positions it reads)"), ha="center", va="bottom", fontproperties=text_font(10))
    fig.text(0.38, 0.005, tr("grey: masked (a later position, or outside the window); white dot: "
                             "hidden by the window only"), ha="center", va="bottom", fontproperties=text_font(9))
    # Right: the cache's bytes, three bars on a log scale.
    ax_cache = fig.add_axes((0.72, 0.16, 0.26, 0.56))
    ax_cache.set_xscale("log")
    ax_cache.set_xlim(2**9, 2**36)
    ax_cache.set_xticks([2**10, 2**20, 2**30], ["1 KiB", "1 MiB", "1 GiB"])
    ax_cache.set_ylim(2.6, -0.8)
    ax_cache.set_yticks([])
    ax_cache.tick_params(labelsize=9)
    ax_cache.set_xlabel(tr("bytes of the KV cache (log scale)"), fontproperties=text_font(9))
    bars = ax_cache.barh([0, 1, 2], [1, 1, 1], left=1, height=0.45,
                         color=["0.78", "#6baed6", "#08519c"]).patches
    cache_title = AxesTitle(ax_cache, size=10, font=text_font(10), pad=8)
    bar_names = [ax_cache.text(2**9 * 1.3, y - 0.3, "", va="bottom", fontproperties=text_font(9))
                 for y in range(3)]

    def update(kv_heads: int, window: int, length: int, layers: int) -> tuple[ModernView, str]:
        v = modern_view(kv_heads, None if window == _NO_WINDOW else window, length, layers)
        G = v.group_size
        rows["query heads"].set(np.array([v.groups], dtype=float),
                                strings=[[str(h + 1) for h in range(NUM_HEADS)]])
        rows["kv heads"].set(np.arange(v.kv_heads, dtype=float)[None],
                             strings=[[tr("KV {g}", g=g + 1) for g in range(v.kv_heads)]])
        for h, (view, band) in enumerate(zip(maps.values(), bands)):
            colour = GROUP_COLORS[v.groups[h]]
            band.set_facecolor(colour)
            ink = text_colors(np.array([to_rgb(colour)]))[0]
            view.set(v.weights[h], blocked=~v.allowed, marks=v.hidden)
            view.title.set_text(tr("head {h} · KV {g}", h=h + 1, g=v.groups[h] + 1), ink)
        windowed = v.window is not None
        cache_title.set_text(tr("KV cache after {length:,} tokens, {layers} layer(s)", length=v.length, layers=v.layers))
        shown = [(tr("multi-head: {H} KV heads", H=NUM_HEADS), v.mha_bytes),
                 (tr("{H_kv} KV head(s), {G} query heads each", H_kv=v.kv_heads, G=G), v.no_window_bytes),
                 (tr("and a window of {W}", W=v.window) if windowed else tr("no window"), v.cache_bytes)]
        for bar, name, (label, n) in zip(bars, bar_names, shown):
            bar.set_width(n - 1)
            name.set_text(tr("{label}: {bytes}", label=label, bytes=format_bytes(n)))
        return v, _readout(v)

    def live() -> list:
        return [*(a for view in rows.values() for a in view.artists()), *bands,
                *(a for view in maps.values() for a in view.artists()), *bars, cache_title,
                *bar_names]

    window_options = [(tr("none") if w is None else str(w), _NO_WINDOW if w is None else w) for w in WINDOWS]
    controls = {
        "kv_heads": widgets.SelectionSlider(options=[(str(k), k) for k in KV_HEADS], value=first.kv_heads,
                                            description=tr("KV heads"), continuous_update=True),
        "window": widgets.SelectionSlider(options=window_options,
                                          value=_NO_WINDOW if first.window is None else first.window,
                                          description=tr("window"), continuous_update=True),
        "length": widgets.SelectionSlider(options=[(f"{n:,}", n) for n in LENGTHS], value=first.length,
                                          description=tr("tokens"), continuous_update=True),
        "layers": widgets.SelectionSlider(options=[(str(n), n) for n in LAYERS], value=first.layers,
                                          description=tr("layers"), continuous_update=True),
    }
    explorer = Explorer(controls, fig, update, live, maps={**maps, **rows},
                        title=tr("Shared key/value heads, a sliding window, and the KV cache"))
    explorer.bands, explorer.cache_bars = bands, bars
    return explorer
