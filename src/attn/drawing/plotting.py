"""Attention heatmaps that can be redrawn in place; the figures and fonts of every picture.

A heatmap here is a notebook's static figure: an ``imshow`` of the cells' colours, a
matplotlib ``Text`` for each number, the tokens as tick labels. What each cell shows (its
colour, its string and that string's colour, the labels) is decided in ``attn.drawing._cells``,
once for this heatmap, for the explorers' live maps (``attn.widgets._mapview.MapView``) and
for the diagrams' blocks of cells; its functions are named here too (``text_colors``,
``settle``, ``real_minus``...), where the pictures' users look for them.

Nothing here touches matplotlib's global settings or pyplot's figure list: figures are built
with ``matplotlib.figure.Figure`` on an Agg canvas, so a widget can own one, change its data
and re-render it to PNG without a new figure per move.

Shape legend: L queries (rows), S keys (columns), H heads.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Callable, Sequence

import numpy as np
from matplotlib import rcParams
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.image import AxesImage
from matplotlib.text import Text

from .._checks import to_numpy
from ..language import get_language, tr
from ._cells import (MINUS, SETTLE_DECIMALS, MapLook, axis_labels, contrast_ratio, is_diverging, real_minus,
                     relative_luminance, settle, settled_for_colour, text_colors)

__all__ = ["new_figure", "figure_png", "power_of_ten_label", "token_font", "text_font", "title_font",
           "label_font", "relative_luminance", "contrast_ratio", "text_colors", "is_diverging", "MINUS",
           "real_minus", "SETTLE_DECIMALS", "settle", "settled_for_colour", "Heatmap", "heatmap",
           "HeadGrid", "head_grid"]


def new_figure(width: float, height: float, dpi: int = 72) -> Figure:
    """A figure on an Agg canvas, outside pyplot (never shown twice, never leaked)."""
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes (what a widget sends to the browser)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    return buf.getvalue()


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten_label(value: float, _pos: object = None) -> str:
    """A log axis' tick label as plain text, 10⁻² for 0.01 ("" between powers of ten).

    matplotlib's default writes these labels in mathtext, whose parser takes about a second
    to build the first time a process draws one."""
    if not value > 0:
        return ""
    exponent = math.log10(value)
    if abs(exponent - round(exponent)) > 1e-9:
        return ""
    return "10" + str(round(exponent)).translate(_SUPERSCRIPT)


@lru_cache(maxsize=1, typed=True)
def _font_path() -> str:
    return str(resources.files("attn.drawing") / "fonts" / "NotoSansCJKsc-course-subset.otf")


def token_font(size: float = 10) -> FontProperties:
    """A font that has the course's Chinese tokens (a Noto Sans CJK SC subset, shipped)."""
    return FontProperties(fname=_font_path(), size=size)


def text_font(size: float = 10) -> FontProperties:
    """The font of a picture's words in the current language (``attn.language``).

    English: matplotlib's default font (DejaVu Sans). Chinese: the shipped Noto Sans CJK SC
    subset, which also has the Latin letters, digits and signs, so a Chinese title with
    ``d_k = 16`` in it is one font.
    """
    return token_font(size) if get_language() == "zh" else FontProperties(size=size)


def title_font() -> FontProperties:
    """``text_font`` at the size of an axes title (matplotlib's ``axes.titlesize``, 12 pt):
    ``ax.set_title(text, fontproperties=title_font())`` draws an English title as
    ``ax.set_title(text)`` does."""
    return text_font(FontProperties(size=rcParams["axes.titlesize"]).get_size_in_points())


def label_font() -> FontProperties:
    """``text_font`` at the size of an axis label (matplotlib's ``axes.labelsize``, 10 pt)."""
    return text_font(FontProperties(size=rcParams["axes.labelsize"]).get_size_in_points())


@dataclass
class Heatmap:
    """One (L, S) map of numbers as a static figure; ``update`` changes it in place.

    Attributes:
        ax: the axes it fills.
        image: the cells, an ``imshow`` of the (L, S, 4) colours ``look`` gives them.
        look: the ``MapLook`` deciding each cell's colour, string and string colour.
        texts: the numbers' ``Text``s (a pool, grown once: cells beyond the map are hidden).
        annotate: whether the numbers are written.
    """

    ax: Axes
    image: AxesImage
    look: MapLook
    texts: list[Text] = field(default_factory=list)
    annotate: bool = False

    def _set_ticks(self, labels: tuple[list[str], list[str]], font_size: float) -> None:
        (x_labels, y_labels), ax, font = labels, self.ax, token_font(font_size)
        ax.set_xticks(range(len(x_labels)))
        ax.set_yticks(range(len(y_labels)))
        ax.set_xticklabels(x_labels, fontproperties=font, rotation=90 if len(x_labels) > 8 else 0)
        ax.set_yticklabels(y_labels, fontproperties=font)

    def update(self, weights: object, x_tokens: Sequence[str] | None = None,
               y_tokens: Sequence[str] | None = None, *, title: str | None = None,
               font_size: float = 9) -> "Heatmap":
        """New data (L, S) into the existing image; labels are redone only if given (or if the
        shape changes: then the indices, unless given)."""
        w = to_numpy("weights", weights, ndim=2, legend="(L, S)")
        L, S = w.shape
        new_shape = self.image.get_array().shape[:2] != (L, S)
        labels = axis_labels(x_tokens, y_tokens, (L, S))  # checked before anything is drawn
        colours = self.look.colours(w)  # (L, S, 4)
        self.image.set_data(colours)
        if new_shape:
            self.image.set_extent((-0.5, S - 0.5, L - 0.5, -0.5))
            self.ax.set_xlim(-0.5, S - 0.5)
            self.ax.set_ylim(L - 0.5, -0.5)
        if new_shape or x_tokens is not None or y_tokens is not None:
            self._set_ticks(labels, font_size)
        if self.annotate:
            self._annotate(w, colours)
        if title is not None:
            self.ax.set_title(title, fontproperties=title_font())
        return self

    def _annotate(self, w: np.ndarray, colours: np.ndarray) -> None:
        """Write each cell's string (``look.strings``) in its text colour (``look.ink``)."""
        L, S = w.shape
        while len(self.texts) < L * S:  # grow the pool once; later moves reuse it
            self.texts.append(self.ax.text(0, 0, "", ha="center", va="center", fontsize=8))
        strings, ink = self.look.strings(w), self.look.ink(colours)  # L rows of S; (L, S)
        for n, t in enumerate(self.texts):
            if n < L * S:
                i, j = divmod(n, S)
                t.set_position((j, i))
                t.set_text(real_minus(strings[i][j]))
                t.set_color(str(ink[i, j]))
                t.set_visible(True)
            else:
                t.set_visible(False)


def heatmap(
    weights: object,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    annotate: bool = False,
    cmap: str = "Blues",
    vmin: float = 0.0,
    vmax: float = 1.0,
    title: str | None = None,
    colorbar: bool = False,
    fmt: str | Callable[[float], str] = "{:.2f}",
    font_size: float = 9,
) -> Heatmap:
    """Draw one (L, S) attention map: rows are queries, columns keys.

    Args:
        weights: (L, S) tensor or array.
        x_tokens: S key labels; y_tokens: L query labels (default: ``x_tokens``); the
            indices if neither is given.
        ax: where to draw; a new 4x4-inch figure (outside pyplot) if None.
        annotate: write each value in its cell, in black or white by contrast.
        cmap, vmin, vmax: the colour map and the values at its two ends.
        title: the axes' title, drawn in ``title_font()`` (so it may be Chinese).
        colorbar: draw a colour bar beside the map.
        fmt: how a value is written: a format string or a function of one value.
        font_size: the tick labels' size.

    Returns:
        A ``Heatmap``; call ``.update(new_weights)`` to redraw in place.
    """
    w = to_numpy("weights", weights, ndim=2, legend="(L, S)")
    if not vmin < vmax:
        raise ValueError(f"vmin, vmax: expected vmin < vmax, got {vmin!r}, {vmax!r}")
    look = MapLook(cmap, (vmin, vmax), fmt=fmt)
    labels = axis_labels(x_tokens, y_tokens, w.shape)
    if ax is None:
        ax = new_figure(4, 4, dpi=80).add_subplot()
    colours = look.colours(w)  # (L, S, 4)
    hm = Heatmap(ax=ax, image=ax.imshow(colours, interpolation="nearest", aspect="auto"), look=look,
                 annotate=annotate)
    hm._set_ticks(labels, font_size)
    if colorbar:
        ax.figure.colorbar(look.mappable(), ax=ax, fraction=0.046, pad=0.04)
    if annotate:
        hm._annotate(w, colours)
    if title is not None:
        ax.set_title(title, fontproperties=title_font())
    return hm


@dataclass
class HeadGrid:
    """A grid of per-head maps (the chapter's 2 x 4 figure); ``update`` redraws in place."""

    fig: Figure
    heatmaps: list[Heatmap]

    def update(self, weights: object, tokens: Sequence[str] | None = None,
               titles: Sequence[str] | None = None) -> "HeadGrid":
        """weights (H, L, S) with H <= the grid's size; unused cells are hidden. Without
        ``titles``, head h is titled "Head h" in the current language (``attn.language``)."""
        w = to_numpy("weights", weights, ndim=3, legend="(H, L, S)")
        if w.shape[0] > len(self.heatmaps):
            raise ValueError(
                f"weights: expected at most {len(self.heatmaps)} heads for this grid, "
                f"got shape {tuple(w.shape)}"
            )
        for h, hm in enumerate(self.heatmaps):
            visible = h < w.shape[0]
            hm.ax.set_visible(visible)
            if visible:
                title = titles[h] if titles is not None else tr("Head {h}", h=h + 1)
                hm.update(w[h], tokens, title=title)
        return self


def _grid_margins(fig: Figure, nrows: int, ncols: int, tokens: Sequence[str] | None,
                  n: int, font_size: float = 8) -> None:
    """Fixed margins for ``head_grid`` (no layout engine: constrained layout reruns on every
    draw). Estimated in inches from the longest tick label (a CJK character is about 1 em)."""
    W, H = fig.get_size_inches()
    chars = max((len(str(t)) for t in tokens), default=1) if tokens else len(str(n - 1))
    label = chars * font_size / 72 + 0.1  # widest y tick label, with the tick and its pad
    line = font_size / 72 + 0.1           # height of the x tick labels, likewise
    title = 0.27                          # the axes title ("Head h", 12 pt) and its pad
    edge = 0.05
    left, right = (label + edge) / W, 1 - edge / W
    bottom, top = (line + edge) / H, 1 - (title + edge) / H
    gap_w, gap_h = label + 0.1, line + title + 0.1
    ax_w = max((W * (right - left) - (ncols - 1) * gap_w) / ncols, 1e-3)
    ax_h = max((H * (top - bottom) - (nrows - 1) * gap_h) / nrows, 1e-3)
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top,
                        wspace=gap_w / ax_w, hspace=gap_h / ax_h)


def head_grid(
    weights: object,
    tokens: Sequence[str] | None = None,
    *,
    nrows: int = 2,
    ncols: int = 4,
    fig: Figure | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: int = 72,
    annotate: bool = False,
    cmap: str = "Blues",
    titles: Sequence[str] | None = None,
) -> HeadGrid:
    """Draw H = weights.shape[0] heads in an nrows x ncols grid.

    Args:
        weights: (H, L, S) with H <= nrows * ncols.
        tokens: labels for both axes (self-attention), or None for indices.
        fig: an existing figure to draw into; a new Agg figure (outside pyplot) if None.

    Returns:
        A ``HeadGrid``; ``.update(new_weights)`` redraws in place and hides unused cells.
    """
    w = to_numpy("weights", weights, ndim=3, legend="(H, L, S)")
    if fig is None:
        fig = new_figure(*(figsize or (2.6 * ncols, 2.6 * nrows)), dpi=dpi)
    _grid_margins(fig, nrows, ncols, tokens, w.shape[1])
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    maps = []
    for ax in axes:
        maps.append(heatmap(np.zeros(w.shape[1:]), tokens, ax=ax, annotate=annotate, cmap=cmap,
                            font_size=8))
    grid = HeadGrid(fig=fig, heatmaps=maps)
    return grid.update(w, tokens, titles)
