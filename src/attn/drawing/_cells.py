"""What a cell of a map of numbers shows, decided once for every picture that draws one.

The course draws grids of numbers in three places:

- ``attn.drawing.plotting.heatmap``, a notebook's static figure: an ``imshow`` of the cells'
  colours, a matplotlib ``Text`` for each number, the tokens as tick labels;
- ``attn.widgets._mapview.MapView``, every map of every explorer: redrawn on each move from
  cached bitmaps, because matplotlib's text layout is too slow for a live control;
- ``attn.drawing.diagrams``, schematic diagrams: tensors as blocks of cells placed in inches
  among words and arrows.

Each paints in its own way, for the reasons above. What a cell shows is the same in all three,
and it is decided here:

- its colour: the value normalised to the colour range, settled (``settle``: round-off never
  picks a colour) and looked up in the colour map, as the 8-bit colour that is painted
  (``colours_of``); NaN takes the colour map's "bad" colour, a blocked cell (one a mask
  removes) the blocked colour (``MapLook.colours``);
- its string: the settled value formatted, "NaN" for NaN (``MapLook.strings``, ``cell_text``),
  a hyphen that signs a number drawn as the minus sign (``real_minus``);
- the string's colour: black or white, whichever contrasts more with the cell (WCAG 2.x,
  ``text_colors``);
- the labels along its edges: the tokens, or the indices (``axis_labels``).

Shape legend: L rows (queries), S columns (keys).
"""
from __future__ import annotations

import math
import re
from typing import Callable, Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, Normalize, to_rgba

__all__ = ["relative_luminance", "contrast_ratio", "text_colors", "is_diverging", "MINUS", "real_minus",
           "SETTLE_DECIMALS", "settle", "settled_for_colour", "colours_of", "cell_text", "axis_labels",
           "rgba255", "MapLook"]


# ---- the colour of a cell's text: WCAG contrast ---------------------------------------------

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
        rgb: (..., 3) backgrounds in [0, 1], or (..., 4) with alpha: a colour that is not
            opaque is seen over white (the figures' background), so a transparent cell (a
            colour map's default "bad" colour) is white and gets black text.

    Returns:
        (...,) array of "black" / "white".
    """
    c = np.asarray(rgb, dtype=float)
    if c.ndim and c.shape[-1] == 4:
        alpha = c[..., 3:]
        c = c[..., :3] * alpha + (1.0 - alpha)  # (..., 4) -> (..., 3), over white
    y = relative_luminance(c)
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


# ---- what round-off may not decide ----------------------------------------------------------

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
            normalised to 0..1 that pick a colour (``colours_of``).

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


# ---- a cell's colour and its string ---------------------------------------------------------

def colours_of(values: object, cmap: Colormap, norm: Normalize) -> np.ndarray:
    """The colour of each value: normalised by ``norm``, settled, looked up in ``cmap``.

    Args:
        values: (...) numbers; NaN takes the colour map's "bad" colour.
        cmap, norm: the colour map and what maps a value to 0..1 on it.

    Returns:
        (..., 4) uint8 RGBA: the 8-bit colour painted (matplotlib's own conversion, as
        ``imshow`` paints it).
    """
    return cmap(settle(norm(np.asarray(values, dtype=float))), bytes=True)


def cell_text(value: float, fmt: Callable[[float], str]) -> str:
    """What a cell writes for a settled value (``settle``): ``fmt(value)``, "NaN" for NaN.
    A hyphen that signs it stays a hyphen here; every painter draws it as the minus sign."""
    return "NaN" if math.isnan(value) else fmt(value)


def _formatter(fmt: object) -> Callable[[float], str]:
    if isinstance(fmt, str):
        return fmt.format
    if callable(fmt):
        return fmt
    raise TypeError(f"fmt: expected a format string or a function, got {type(fmt).__name__}")


def axis_labels(x_tokens: Sequence[object] | None, y_tokens: Sequence[object] | None,
                shape: tuple[int, int]) -> tuple[list[str], list[str]]:
    """The labels along an (L, S) map's edges: S keys under it, L queries beside it.

    Args:
        x_tokens: S key labels, or None for the indices 0..S-1.
        y_tokens: L query labels; None: ``x_tokens`` again (self-attention: the queries are
            the keys), or the indices if ``x_tokens`` is None too.
        shape: (L, S).

    Returns:
        (x_labels, y_labels) as strings.
    """
    L, S = shape
    y_tokens = x_tokens if y_tokens is None else y_tokens
    labels = []
    for name, tokens, n, what in (("x_tokens", x_tokens, S, "column"), ("y_tokens", y_tokens, L, "row")):
        strings = [str(i) for i in range(n)] if tokens is None else [str(t) for t in tokens]
        if len(strings) != n:
            raise ValueError(f"{name}: expected {n} labels (one per {what} of the {L} x {S} map), "
                             f"got {len(strings)}")
        labels.append(strings)
    return labels[0], labels[1]


def rgba255(color: object) -> np.ndarray:
    """A matplotlib colour as the (4,) uint8 RGBA painted (each channel rounded)."""
    return np.round(np.array(to_rgba(color)) * 255).astype(np.uint8)


class MapLook:
    """How the cells of an (L, S) map of numbers look, whoever paints them: each cell's colour,
    its string and the string's colour.

    Args:
        cmap: a colour map or its name; its "bad" colour is the colour of NaN.
        clim: (vmin, vmax): the values at the two ends of the colour map.
        fmt: how a value is written: a format string ("{:.2f}") or a function of one value.
        blocked_color: the colour of a blocked cell (one a mask removes).

    Attributes:
        cmap (``Colormap``), norm (``Normalize``): what turns a value into a colour.
    """

    def __init__(self, cmap: str | Colormap = "Blues", clim: tuple[float, float] = (0.0, 1.0), *,
                 fmt: str | Callable[[float], str] = "{:.2f}", blocked_color: str = "0.5") -> None:
        if isinstance(cmap, str) and cmap not in colormaps:
            raise ValueError(f"cmap: expected a matplotlib colour map or its name, got {cmap!r}")
        if not isinstance(cmap, (str, Colormap)):
            raise TypeError(f"cmap: expected a matplotlib colour map or its name, got {type(cmap).__name__}")
        if len(clim) != 2 or not clim[0] < clim[1]:
            raise ValueError(f"clim: expected (vmin, vmax) with vmin < vmax, got {clim!r}")
        self.cmap = colormaps[cmap] if isinstance(cmap, str) else cmap
        self.norm = Normalize(*clim)
        self.fmt = _formatter(fmt)
        self._blocked = rgba255(blocked_color)  # (4,)

    def levels(self, values: np.ndarray) -> np.ndarray:
        """(L, S) the values normalised to 0..1 and settled: where ``colours`` reads the colour
        map (and where a diverging map's middle, 0.5, falls)."""
        return settle(self.norm(values))

    def colours(self, values: np.ndarray, blocked: np.ndarray | None = None) -> np.ndarray:
        """(L, S, 4) uint8: the colour of every cell; ``blocked`` (L, S) bool cells take the
        blocked colour, whatever their value."""
        rgba = colours_of(values, self.cmap, self.norm)  # (L, S, 4)
        if blocked is not None:
            rgba[blocked] = self._blocked
        return rgba

    def strings(self, values: np.ndarray) -> list[list[str]]:
        """L rows of S strings: what each cell writes (``cell_text`` of the settled values)."""
        return [[cell_text(v, self.fmt) for v in row] for row in settle(values)]

    @staticmethod
    def ink(colours: np.ndarray) -> np.ndarray:
        """(L, S) "black" / "white": the colour of the string on each cell of ``colours``
        ((L, S, 4) uint8, as ``colours`` gives them)."""
        return text_colors(np.asarray(colours) / 255.0)

    def mappable(self) -> ScalarMappable:
        """These colours as a matplotlib mappable: what a colour bar is drawn from."""
        return ScalarMappable(self.norm, self.cmap)
