"""Text drawn as cached bitmaps: what the explorers' maps write on every move.

A matplotlib ``Text`` lays out and rasterises its string on every draw (about a millisecond
each), and tick labels on a resized axes are laid out several times per draw: an explorer
with 8 labelled maps spent 100-350 ms per move on them. Here each distinct
(string, size, colour, font, rotation) is rendered once with FreeType (``text_bitmap``) and
kept; a frame pastes the kept bitmaps into one RGBA array and hands it to the renderer in a
single ``draw_image`` call (pixel-exact, no resampling). Numbers are laid out here, not by
FreeType, so that their points, minus signs and digits stay apart at 7-8 px (``text_bitmap``).
``attn.widgets._mapview`` builds the explorers' one map view from these pieces and its cells.

Every artist here places itself from its axes' box at draw time and ignores the data limits:
an (L, S) map's labels always sit on the axes' cells, whatever L and S were before. The
artists are meant as an explorer's live artists (``set_animated(True)``): they are never part
of the kept background.

Shape legend: L rows (queries), S columns (keys); bitmaps are (h, w, 4) uint8 RGBA.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.font_manager import FontProperties, findfont, get_font

from ..drawing.plotting import MINUS, real_minus

__all__ = ["text_bitmap", "point_metrics", "cell_edges", "BitmapText", "CellText", "AxesTitle", "TickLabels"]

_HA = ("left", "center", "right")
_VA = ("bottom", "baseline", "center", "top")


def _font_file(font: str | FontProperties | None) -> str:
    if font is None:
        return findfont(FontProperties())  # matplotlib's default font (DejaVu Sans)
    if isinstance(font, FontProperties):
        return font.get_file() or findfont(font)
    if isinstance(font, str):
        return font
    raise TypeError(f"font: expected None, a font file path or a FontProperties, "
                    f"got {type(font).__name__}")


def text_bitmap(text: str, *, size: float = 8.0, color: str = "black",
                font: str | FontProperties | None = None, rotation: int = 0,
                dpi: float = 72.0) -> np.ndarray:
    """``text`` rendered once with FreeType into an RGBA bitmap, cropped to its ink.

    Legible at 1x: a hyphen that signs a number is drawn as the minus sign "−" (the font's own
    hyphen is a short dash touching the digit), a decimal point as a dark square with empty
    columns each side (``point_metrics``), and a number glyph by glyph with an empty column
    between glyphs (at 7-8 px FreeType's hinted digits touch: "283" for "2.83").

    Args:
        text: the string ("" gives a (1, 1) transparent bitmap).
        size: font size in points, > 0.
        color: any matplotlib colour.
        font: a font file, a ``FontProperties`` (e.g. ``attn.drawing.plotting.token_font()`` for the
            course's Chinese tokens, ``attn.drawing.plotting.text_font()`` for words in the current
            language) or None for matplotlib's default font.
        rotation: 0 or 90 (degrees, counter-clockwise: read from bottom to top).
        dpi: pixels per inch of the figure it goes into.

    Returns:
        (h, w, 4) uint8, row 0 at the top, read-only (it is cached and shared).
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
        raise ValueError(f"size: expected a number > 0, got {size!r}")
    if rotation not in (0, 90):
        raise ValueError(f"rotation: expected 0 or 90, got {rotation!r}")
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not dpi > 0:
        raise ValueError(f"dpi: expected a number > 0, got {dpi!r}")
    try:
        rgb = to_rgb(color)
    except ValueError:
        raise ValueError(f"color: expected a matplotlib colour, got {color!r}") from None
    return _render(text, float(size), rgb, _font_file(font), int(rotation), float(dpi))[0]


#: A decimal point: a "." with a digit after it ("2.83", ".5", "-0.07"; not a sentence's end).
_POINT = re.compile(r"\.(?=[0-9])")
#: A number as the maps write it: digits, signs, points, and "*", "%" or "," after them.
_NUMBER = re.compile(r"[0-9.,+*%\u2212-]*[0-9][0-9.,+*%\u2212-]*")


def point_metrics(size: float, dpi: float = 72.0) -> tuple[int, int]:
    """(side, gap) in pixels of a decimal point drawn at ``size`` points: a dark square of
    ``side`` x ``side`` pixels sitting on the baseline, with ``gap`` empty columns on each side.

    FreeType draws DejaVu's point at 7-8 px as one or two grey pixels (alpha 57-147 of 255)
    with no empty column before the next digit, so "2.83" read as "283" at 1x. The point is
    drawn here instead: at least 2 x 2 fully dark pixels and at least 1 empty column each side
    (about 0.12 em of each at larger sizes, DejaVu's own proportions)."""
    px = size * dpi / 72  # the em in pixels
    return max(2, int(round(0.12 * px))), max(1, int(round(0.12 * px)))


def _freetype(text: str, size: float, path: str, dpi: float) -> tuple[np.ndarray, int]:
    """FreeType's rendering of ``text``: (alpha (h, w) uint8 cropped to its ink columns,
    descent: pixels from the bitmap's bottom up to the baseline, less 1). The bitmap has one
    empty row under the lowest ink (FreeType's padding): its baseline is ``descent + 1``
    rows above its bottom."""
    font = get_font(path)  # matplotlib's shared FT2Font for this file
    font.clear()
    font.set_size(size, dpi)
    font.set_text(text, 0.0)
    font.draw_glyphs_to_bitmap(antialiased=True)
    descent = int(round(font.get_descent() / 64))  # 26.6 fixed point -> pixels
    alpha = np.asarray(font.get_image(), dtype=np.uint8)  # (h, w)
    cols = np.flatnonzero(alpha.any(axis=0))
    alpha = alpha[:, cols[0]:cols[-1] + 1] if cols.size else alpha[:1, :1] * 0
    return alpha, descent


def _with_points(text: str, size: float, path: str, dpi: float) -> tuple[np.ndarray, int]:
    """``text`` as FreeType draws it, except that every decimal point is a ``point_metrics``
    square with ``gap`` empty columns each side, and that a number ("−0.07", "2.83*": only
    digits, signs, points and "*%,") is laid out glyph by glyph with ``gap`` empty columns
    between glyphs: at 7-8 px the hinted digits of DejaVu touch ("35" and "07" join up).

    Returns:
        (alpha (h, w) uint8, descent as ``_freetype``).
    """
    number = bool(_NUMBER.fullmatch(text))
    if number:
        pieces = list(text)  # one glyph each, the points among them
    else:
        pieces = [p for part in _POINT.split(text) for p in (part, ".")][:-1]  # text, ".", text
        pieces = [p for p in pieces if p]
        if len(pieces) == 1:
            return _freetype(text, size, path, dpi)
    side, gap = point_metrics(size, dpi)
    drawn = [None if p == "." else _freetype(p, size, path, dpi) for p in pieces]
    # rows above the baseline and from the baseline down to the bottom, over all pieces
    above = max([side] + [a.shape[0] - d - 1 for a, d in filter(None, drawn)])
    below = max([1] + [d + 1 for a, d in filter(None, drawn)])
    columns = []  # (h, w) blocks, left to right, with gap columns between them
    for piece in drawn:
        if piece is None:  # a decimal point, sitting on the baseline
            block = np.zeros((above + below, side), dtype=np.uint8)
            block[above - side:above] = 255
        else:
            a, d = piece
            if number:  # a glyph's faint edge columns (under 1/8 ink) go: the gap is the gap
                strong = np.flatnonzero(a.max(axis=0) >= 32)
                a = a[:, strong[0]:strong[-1] + 1] if strong.size else a
            block = np.zeros((above + below, a.shape[1]), dtype=np.uint8)
            top = above - (a.shape[0] - d - 1)  # its baseline on the common baseline
            block[top:top + a.shape[0]] = a
        if columns:
            columns.append(np.zeros((above + below, gap), dtype=np.uint8))
        columns.append(block)
    alpha = np.concatenate(columns, axis=1)  # (h, w)
    return alpha, below - 1


@lru_cache(maxsize=4096, typed=True)
def _render(text: str, size: float, rgb: tuple[float, float, float], path: str, rotation: int,
            dpi: float) -> tuple[np.ndarray, int]:
    """(bitmap (h, w, 4), descent: pixels from the bitmap's bottom up to the baseline)."""
    descent = 0
    if not text:
        out = np.zeros((1, 1, 4), dtype=np.uint8)
    else:
        text = real_minus(text)  # "-0.07" is drawn "−0.07": the hyphen is a short dash
        if MINUS in text and get_font(path).get_char_index(ord(MINUS)) == 0:
            text = text.replace(MINUS, "-")  # a font without the minus sign (the CJK subset)
        alpha, descent = _with_points(text, size, path, dpi)  # (h, w)
        out = np.zeros((*alpha.shape, 4), dtype=np.uint8)  # (h, w, 4)
        out[..., :3] = np.round(np.asarray(rgb) * 255).astype(np.uint8)
        out[..., 3] = alpha
        if rotation == 90:
            out = np.ascontiguousarray(np.rot90(out))  # (h, w, 4) -> (w, h, 4)
    out.setflags(write=False)
    return out, descent


def cell_edges(ax: Axes, L: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel edges of an (L, S) grid of cells filling ``ax``'s box.

    Returns:
        x_edges (S + 1,) left to right; y_edges (L + 1,) top to bottom (row 0 on top), both
        int display pixels (origin bottom left).
    """
    box = ax.bbox
    x = np.round(box.x0 + (box.x1 - box.x0) * np.arange(S + 1) / max(S, 1)).astype(int)
    y = np.round(box.y1 - (box.y1 - box.y0) * np.arange(L + 1) / max(L, 1)).astype(int)
    return x, y


class BitmapText(Artist):
    """Strings drawn as cached bitmaps (``text_bitmap``) at anchor points, in one image.

    Subclasses say where the strings go (``_anchors``); this class renders, composes and
    draws them. A composed frame is kept (a small cache), so moving back and forth is free.

    Args:
        ax: the axes the strings belong to (the artist is added to it).
        size, font: as ``text_bitmap``.
        ha, va: alignment of each bitmap on its anchor.
        rotation: 0 or 90.
        add: add the artist to ``ax`` (False: another artist draws it).
    """

    def __init__(self, ax: Axes, *, size: float = 8.0, font: str | FontProperties | None = None,
                 ha: str = "center", va: str = "center", rotation: int = 0,
                 add: bool = True) -> None:
        if not isinstance(ax, Axes):
            raise TypeError(f"ax: expected a matplotlib Axes, got {type(ax).__name__}")
        if ha not in _HA:
            raise ValueError(f"ha: expected one of {_HA}, got {ha!r}")
        if va not in _VA:
            raise ValueError(f"va: expected one of {_VA}, got {va!r}")
        text_bitmap("", size=size, font=font, rotation=rotation)  # validates the arguments
        super().__init__()
        self.set_animated(True)
        self.set_zorder(5)
        if add:
            ax.add_artist(self)
        else:  # drawn by an owner artist, not by the axes
            self.axes = ax
            self.set_figure(ax.figure)
        self._size, self._font = float(size), _font_file(font)
        self._ha, self._va, self._rotation = ha, va, rotation
        self._texts: tuple[str, ...] = ()
        self._colors: tuple[tuple[float, float, float], ...] = ()  # RGB in 0..1
        self._frames: dict[tuple, tuple[int, int, np.ndarray]] = {}

    def _set(self, texts: Sequence[str], colors: Sequence[str] | str) -> None:
        texts = tuple(texts)
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"texts: expected strings, got {type(t).__name__} {t!r}")
        colors = (colors,) * len(texts) if isinstance(colors, str) else tuple(colors)
        if len(colors) != len(texts):
            raise ValueError(f"colors: expected {len(texts)} colours (one per string), "
                             f"got {len(colors)}")
        try:
            rgb = tuple(to_rgb(c) for c in colors)
        except ValueError as e:
            raise ValueError(f"colors: expected matplotlib colours, got an error: {e}") from None
        self._texts, self._colors = texts, rgb
        self.stale = True

    @property
    def font_file(self) -> str:
        """The font file the strings are drawn with."""
        return self._font

    @property
    def texts(self) -> tuple[str, ...]:
        """The strings drawn now."""
        return self._texts

    def _anchors(self) -> np.ndarray:
        """(N, 2) display pixels, one anchor per string."""
        raise NotImplementedError

    def bitmap(self, k: int) -> tuple[np.ndarray, int]:
        """The bitmap of the k-th string (h, w, 4) and its descent in pixels."""
        return _render(self._texts[k], self._size, self._colors[k], self._font,
                       self._rotation, float(self.figure.dpi))

    def draw(self, renderer) -> None:  # noqa: ANN001 (a matplotlib renderer)
        if not self.get_visible() or not self._texts:
            return
        anchors = np.round(self._anchors()).astype(int)  # (N, 2)
        key = (self._texts, self._colors, self._rotation, anchors.tobytes(), self.figure.dpi)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._compose(anchors)
            if len(self._frames) >= 64:
                self._frames.pop(next(iter(self._frames)))
            self._frames[key] = frame
        x0, y0, image = frame
        if image.size:
            gc = renderer.new_gc()
            renderer.draw_image(gc, x0, y0, image)
            gc.restore()
        self.stale = False

    def _compose(self, anchors: np.ndarray) -> tuple[int, int, np.ndarray]:
        """All strings in one RGBA array: (left, bottom, (H, W, 4) bottom row first)."""
        bitmaps = [self.bitmap(k) for k in range(len(self._texts))]
        fx = {"left": 0.0, "center": 0.5, "right": 1.0}[self._ha]
        fy = {"bottom": 0.0, "baseline": 0.0, "center": 0.5, "top": 1.0}[self._va]
        boxes = []  # (left, top) in pixels from the canvas' bottom left, per bitmap
        for (ax_, ay), (b, descent) in zip(anchors, bitmaps):
            h, w = b.shape[:2]
            ay = ay - descent if self._va == "baseline" else ay
            boxes.append((int(round(ax_ - fx * w)), int(round(ay + (1 - fy) * h))))
        bitmaps = [b for b, _ in bitmaps]
        left = min(x for x, _ in boxes)
        top = max(y for _, y in boxes)
        right = max(x + b.shape[1] for (x, _), b in zip(boxes, bitmaps))
        bottom = min(y - b.shape[0] for (_, y), b in zip(boxes, bitmaps))
        canvas = np.zeros((top - bottom, right - left, 4), dtype=np.uint8)  # row 0 on top
        for (x, y), b in zip(boxes, bitmaps):
            r, c = top - y, x - left
            region = canvas[r:r + b.shape[0], c:c + b.shape[1]]
            stronger = b[..., 3] > region[..., 3]  # neighbouring strings may touch
            region[stronger] = b[stronger]
        return left, bottom, np.ascontiguousarray(canvas[::-1])  # the renderer wants bottom first


class CellText(BitmapText):
    """A string in every cell of an (L, S) map filling ``ax``; ``strings`` is what is written.

    ``dy`` moves every string down by that fraction of a cell's height (negative: up), so two
    CellTexts can write two lines in each cell."""

    def __init__(self, ax: Axes, *, size: float = 8.0, font: str | FontProperties | None = None,
                 add: bool = True, dy: float = 0.0) -> None:
        super().__init__(ax, size=size, font=font, add=add)
        self.strings: list[list[str]] = []
        self.dy = float(dy)

    def set_strings(self, strings: Sequence[Sequence[str]],
                    colors: Sequence[Sequence[str]] | str = "black") -> None:
        """strings: L rows of S strings; colors: the same shape, or one colour for all."""
        rows = [list(r) for r in strings]
        S = len(rows[0]) if rows else 0
        if any(len(r) != S for r in rows):
            raise ValueError(f"strings: expected L rows of the same length, got lengths "
                             f"{[len(r) for r in rows]}")
        flat_colors: Sequence[str] | str = colors
        if not isinstance(colors, str):
            crow = [list(r) for r in colors]
            if [len(r) for r in crow] != [len(r) for r in rows]:
                raise ValueError(f"colors: expected the shape of strings ({len(rows)}, {S}), "
                                 f"got {len(crow)} rows")
            flat_colors = [c for r in crow for c in r]
        self._set([s for r in rows for s in r], flat_colors)
        self.strings = rows

    def _anchors(self) -> np.ndarray:
        L = len(self.strings)
        S = len(self.strings[0]) if L else 0
        x, y = cell_edges(self.axes, L, S)
        cx = (x[:-1] + x[1:]) / 2  # (S,)
        cy = (y[:-1] + y[1:]) / 2 + self.dy * (y[1:] - y[:-1])  # (L,); y falls row by row
        return np.stack(np.meshgrid(cx, cy), -1).reshape(-1, 2)  # (L, S, 2) -> (L*S, 2)


class AxesTitle(BitmapText):
    """A title centred above ``ax``, its baseline ``pad`` pixels above the axes (as
    ``Axes.set_title``'s, in points, at 72 dpi); ``text`` is what is written."""

    def __init__(self, ax: Axes, *, size: float = 9.0, font: str | FontProperties | None = None,
                 pad: float = 6.0) -> None:
        super().__init__(ax, size=size, font=font, va="baseline")
        self.pad = float(pad)
        self.text = ""

    def set_text(self, text: str, color: str = "black") -> None:
        self._set([text], color)
        self.text = text

    def _anchors(self) -> np.ndarray:
        box = self.axes.bbox
        return np.array([[(box.x0 + box.x1) / 2, box.y1 + self.pad]])


class TickLabels(Artist):
    """Token labels beside an (L, S) map filling ``ax``: keys under it, queries left of it.

    Args:
        ax: the map's axes (its own ticks should be off: ``ax.set_xticks([])``).
        size, font: as ``text_bitmap`` (``attn.drawing.plotting.token_font()`` for Chinese tokens).
        rotate: stand the key labels up (90 degrees), so long or CJK labels do not overlap.
        x_labels: write the key labels (False: leave them to a map below).
        y_labels: write the query labels (False: leave them to a neighbouring map).
        pad: pixels between the axes and the labels.

    Attributes:
        x_strings, y_strings: the labels written now (keys, queries).
    """

    def __init__(self, ax: Axes, *, size: float = 8.0, font: str | FontProperties | None = None,
                 rotate: bool = False, x_labels: bool = True, y_labels: bool = True,
                 pad: float = 3.0) -> None:
        super().__init__()
        self.set_animated(True)
        ax.add_artist(self)
        self._x = (_EdgeLabels(ax, "x", size=size, font=font, rotation=90 if rotate else 0, pad=pad)
                   if x_labels else None)
        self._y = _EdgeLabels(ax, "y", size=size, font=font, rotation=0, pad=pad) if y_labels else None
        self.x_strings: list[str] = []
        self.y_strings: list[str] = []

    def set_tokens(self, x_tokens: Sequence[str], y_tokens: Sequence[str] | None = None, *,
                   rotate: bool | None = None) -> None:
        """S key labels and L query labels (default: the same as the keys); ``rotate``
        stands the key labels up or lays them down (None: as before)."""
        y_tokens = x_tokens if y_tokens is None else y_tokens
        if self._x is not None:
            self._x.set_tokens(x_tokens, rotation=None if rotate is None else 90 * bool(rotate))
            self.x_strings = list(x_tokens)
        if self._y is not None:
            self._y.set_tokens(y_tokens)
            self.y_strings = list(y_tokens)
        self.stale = True

    def parts(self) -> list[BitmapText]:
        """The key labels' and the query labels' artists (those it writes)."""
        return [part for part in (self._x, self._y) if part is not None]

    def draw(self, renderer) -> None:  # noqa: ANN001
        if not self.get_visible():
            return
        for part in (self._x, self._y):
            if part is not None:
                part.draw(renderer)
        self.stale = False


class _EdgeLabels(BitmapText):
    """Labels at the cell centres along the bottom ("x") or the left ("y") edge of ``ax``."""

    def __init__(self, ax: Axes, edge: str, *, size: float, font: str | FontProperties | None,
                 rotation: int, pad: float) -> None:
        ha, va = ("center", "top") if edge == "x" else ("right", "center")
        super().__init__(ax, size=size, font=font, ha=ha, va=va, rotation=rotation, add=False)
        self._edge, self._pad = edge, float(pad)

    def set_tokens(self, tokens: Sequence[str], rotation: int | None = None) -> None:
        if rotation is not None:
            self._rotation = rotation  # part of the frame cache's key
        self._set(list(tokens), "black")

    def _anchors(self) -> np.ndarray:
        n, box = len(self._texts), self.axes.bbox
        x, y = cell_edges(self.axes, n, n)
        if self._edge == "x":
            return np.column_stack([(x[:-1] + x[1:]) / 2, np.full(n, box.y0 - self._pad)])
        return np.column_stack([np.full(n, box.x0 - self._pad), (y[:-1] + y[1:]) / 2])
