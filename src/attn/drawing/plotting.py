"""Attention heatmaps that can be redrawn in place.

Nothing here touches matplotlib's global settings or pyplot's figure list: figures are built
with ``matplotlib.figure.Figure`` on an Agg canvas, so a widget can own one, change its data
and re-render it to PNG without a new figure per move.

Shape legend: L queries (rows), S keys (columns), H heads.
"""
from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Sequence

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

__all__ = ["new_figure", "figure_png", "power_of_ten_label", "token_font", "text_font", "title_font",
           "label_font", "relative_luminance",
           "contrast_ratio", "text_colors", "is_diverging", "real_minus", "settle", "settled_for_colour", "Heatmap", "heatmap",
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


@lru_cache(maxsize=1)
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


def relative_luminance(rgb: object) -> np.ndarray:
    """WCAG 2.x relative luminance of sRGB colours: 0 for black, 1 for white.

    Args:
        rgb: (..., 3) floats in [0, 1] (an alpha channel, (..., 4), is ignored).

    Returns:
        (...,) floats: 0.2126 R + 0.7152 G + 0.0722 B of the linearised channels.
    """
    c = np.asarray(rgb, dtype=float)
    if c.ndim == 0 or c.shape[-1] not in (3, 4):
        raise ValueError(f"rgb: expected colours of shape (..., 3) or (..., 4), got {c.shape}")
    c = c[..., :3]
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def contrast_ratio(a: object, b: object) -> np.ndarray:
    """WCAG 2.x contrast ratio of two colours: from 1 (the same) to 21 (black on white);
    text needs at least 4.5.

    Args:
        a, b: (..., 3) or (..., 4) colours in [0, 1], broadcast against each other.

    Returns:
        (...,) floats: (lighter luminance + 0.05) / (darker luminance + 0.05).
    """
    la, lb = relative_luminance(a), relative_luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


def text_colors(rgb: object) -> np.ndarray:
    """The text colour, "black" or "white", with the higher contrast on each background.

    One of the two always reaches 4.58:1: black's ratio (Y + 0.05) / 0.05 and white's
    1.05 / (Y + 0.05) are equal only at Y = 0.179, where both are 4.58.

    Args:
        rgb: (..., 3) backgrounds in [0, 1] (or (..., 4): alpha ignored).

    Returns:
        (...,) array of "black" / "white".
    """
    y = relative_luminance(rgb)
    return np.where((y + 0.05) / 0.05 >= 1.05 / (y + 0.05), "black", "white")


def is_diverging(cmap: object) -> bool:
    """True for a colour map lighter in its middle than at both ends (RdBu_r, PuOr): its sign
    is carried by hue, which a grey print or a colour-blind reader may lose.

    Args:
        cmap: a matplotlib ``Colormap`` (called on [0, 0.5, 1]).
    """
    ends_and_middle = relative_luminance(np.asarray(cmap([0.0, 0.5, 1.0]))[:, :3])  # (3,)
    return bool(ends_and_middle[1] > max(ends_and_middle[0], ends_and_middle[2]) + 0.1)


MINUS = "\u2212"  #: the minus sign, as wide as "+" (the hyphen "-" is a short dash)


def real_minus(text: str) -> str:
    """``text`` with each hyphen that signs a number ("-0.07", "x -1", "-inf") written as the
    minus sign "\u2212": the hyphen is a short dash that touches the digit after it at 7-8 px."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    return re.sub(r"(?<![\w.])-(?=[0-9.]|inf)", MINUS, text)


# Round-off must not decide what a picture shows. A uniform row over 8 keys is 1/8 plus a few
# units of round-off (about 1e-17 in float64, 1e-8 in float32) that differ between CPUs and
# math libraries, and 1/8 is both the edge of a colour level (32 of the colour map's 256) and a
# rounding tie of "{:.2f}": one machine drew level 31 and "0.12", another level 32 and "0.13".
# So every renderer settles what it shows: the values written as digits, and the values
# normalised to 0..1 that pick a colour, rounded to SETTLE_DECIMALS decimals: far coarser than
# round-off, far finer than a colour level (1/256) or a written digit.
SETTLE_DECIMALS = 6


def settle(values: object) -> np.ndarray:
    """``values`` rounded to ``SETTLE_DECIMALS`` decimals, without negative zeros: what a
    picture shows of them, the same on every CPU (NaN and infinities stay as they are).

    Args:
        values: an array (any shape) or a number: values to write as digits, or values
            normalised to 0..1 that pick a colour (``settled_colours``).

    Returns:
        A new float64 array of the same shape.
    """
    return np.round(np.array(values, dtype=float), SETTLE_DECIMALS) + 0.0  # + 0.0: -0.0 -> 0.0


def settled_for_colour(values: object, vmin: float, vmax: float) -> np.ndarray:
    """``values`` moved onto the settled colour levels of ``vmin``..``vmax`` (for a picture
    that normalises them itself, as ``imshow`` does): values a round-off apart come out equal."""
    if not vmin < vmax:
        raise ValueError(f"vmin, vmax: expected vmin < vmax, got {vmin!r}, {vmax!r}")
    span = vmax - vmin
    return vmin + settle((np.array(values, dtype=float) - vmin) / span) * span


@dataclass
class Heatmap:
    """One attention map drawn with ``imshow``; ``update`` changes it in place."""

    ax: Axes
    image: AxesImage
    texts: list[Text] = field(default_factory=list)
    annotate: bool = False
    fmt: str = "{:.2f}"

    def _set_ticks(self, L: int, S: int, x_tokens: Sequence[str] | None,
                   y_tokens: Sequence[str] | None, font_size: float) -> None:
        ax, font = self.ax, token_font(font_size)
        ax.set_xticks(range(S))
        ax.set_yticks(range(L))
        ax.set_xticklabels(list(x_tokens) if x_tokens is not None else [str(j) for j in range(S)],
                           fontproperties=font, rotation=90 if S > 8 else 0)
        ax.set_yticklabels(list(y_tokens) if y_tokens is not None else [str(i) for i in range(L)],
                           fontproperties=font)

    def update(self, weights: object, x_tokens: Sequence[str] | None = None,
               y_tokens: Sequence[str] | None = None, *, title: str | None = None,
               font_size: float = 9) -> "Heatmap":
        """New data (L, S) into the existing image; labels are redone only if given."""
        w = to_numpy("weights", weights, ndim=2, legend="(L, S)")
        L, S = w.shape
        old = self.image.get_array().shape
        self.image.set_data(settled_for_colour(w, *self.image.get_clim()))
        if old != (L, S):
            self.image.set_extent((-0.5, S - 0.5, L - 0.5, -0.5))
            self.ax.set_xlim(-0.5, S - 0.5)
            self.ax.set_ylim(L - 0.5, -0.5)
        if old != (L, S) or x_tokens is not None or y_tokens is not None:
            self._set_ticks(L, S, x_tokens if x_tokens is not None else None,
                            y_tokens if y_tokens is not None else x_tokens, font_size)
        if self.annotate:
            self._annotate(w)
        if title is not None:
            self.ax.set_title(title, fontproperties=title_font())
        return self

    def _annotate(self, w: np.ndarray) -> None:
        L, S = w.shape
        while len(self.texts) < L * S:  # grow the pool once; later moves reuse it
            self.texts.append(self.ax.text(0, 0, "", ha="center", va="center", fontsize=8))
        colors = text_colors(self.image.to_rgba(settled_for_colour(w, *self.image.get_clim())))  # (L, S), NaN's too
        w = settle(w)  # the digits written
        for n, t in enumerate(self.texts):
            if n < L * S:
                i, j = divmod(n, S)
                v = w[i, j]
                t.set_position((j, i))
                t.set_text("NaN" if np.isnan(v) else real_minus(self.fmt.format(v)))
                t.set_color(str(colors[i, j]))
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
    fmt: str = "{:.2f}",
    font_size: float = 9,
) -> Heatmap:
    """Draw one (L, S) attention map: rows are queries, columns keys.

    Args:
        weights: (L, S) tensor or array.
        x_tokens: S key labels; y_tokens: L query labels (default: ``x_tokens``).
        ax: where to draw; a new 4x4-inch figure (outside pyplot) if None.
        annotate: write each value in its cell.
        title: the axes' title, drawn in ``title_font()`` (so it may be Chinese).

    Returns:
        A ``Heatmap``; call ``.update(new_weights)`` to redraw in place.
    """
    w = to_numpy("weights", weights, ndim=2, legend="(L, S)")
    if ax is None:
        ax = new_figure(4, 4, dpi=80).add_subplot()
    image = ax.imshow(settled_for_colour(w, vmin, vmax), cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="auto")
    hm = Heatmap(ax=ax, image=image, annotate=annotate, fmt=fmt)
    hm._set_ticks(w.shape[0], w.shape[1], x_tokens,
                  y_tokens if y_tokens is not None else x_tokens, font_size)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if annotate:
        hm._annotate(w)
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
