"""The explorers' one map renderer: an (L, S) map whose every part is a live bitmap artist.

``MapView`` is what every map of every explorer is: coloured cells (``CellMap``), the numbers
in them, boxes drawn around chosen cells, dots on chosen cells, the token labels and a title.
Nothing is drawn by ``imshow`` or ``Axes.set_title``: the axes only give the box the map fills
(``ax.set_axis_off()``), so a map of 3 tokens and one of 24 fill the same box, and a map that
is not listed as live is simply not drawn (no cover, no hidden image, no transparent title).

Why bitmaps: ``imshow`` resamples its image and a ``Text`` lays out its string on every draw;
an explorer with 8 labelled maps spent 100-350 ms per move on that. A ``CellMap`` is a colour
lookup blown up with ``np.repeat`` to the axes' pixel box; text comes from the cache of
``attn.widgets._bitmaps``.

What the cells show is not decided here: each cell's colour, its string and the string's colour
come from ``attn.drawing._cells.MapLook``, as they do for a notebook's static heatmap
(``attn.drawing.plotting.heatmap``). This module only paints them, live: the data is changed in
place and the bitmaps are redrawn on every move.

Shape legend: L rows (queries), S columns (keys).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colorbar import Colorbar
from matplotlib.colors import Colormap, Normalize
from matplotlib.font_manager import FontProperties

from ..drawing._cells import MapLook, axis_labels, is_diverging, rgba255
from ._bitmaps import AxesTitle, CellText, TickLabels, cell_edges

__all__ = ["CellMap", "MapView"]

#: (row0, row1, col0, col1): the cells rows row0..row1 - 1 and columns col0..col1 - 1.
Box = tuple[int, int, int, int]


class CellMap(Artist):
    """An (L, S) map drawn as coloured cells filling ``ax``'s box, in one ``draw_image`` call.

    What the cells show is ``look``'s (``attn.drawing._cells.MapLook``): NaN takes the colour
    map's "bad" colour; ``blocked`` cells take ``blocked_color``. On top of the cells, in this
    order: ``boxes`` (a frame around each given block of cells), sign bars, ``marks`` (a dot in
    each marked cell) and, with ``numbers=True``, a string in every cell, black or white,
    whichever contrasts more with the cell (WCAG 2.x: at least 4.58:1 on any colour);
    ``strings`` replaces the formatted values (a hyphen that signs a number is drawn as the
    minus sign "−", as all text of ``attn.widgets._bitmaps``).

    A diverging map (``attn.drawing.plotting.is_diverging``: RdBu_r, PuOr) shows its sign by hue,
    which greyscale and colour-blind readers lose: a printed number keeps its minus sign, and
    where no number is printed, ``signs`` draws a short bar (a minus) in every cell below the
    middle of ``clim``.

    Args:
        ax: where to draw (its data limits are ignored: the map fills the axes).
        cmap: a colour map or its name; clim: (vmin, vmax).
        numbers: write a string in each cell; fmt: how values are written: a format string
            ("{:.2f}") or a function of one value returning its string.
        size, font: the strings' font size and font (``attn.drawing.plotting.token_font()`` for Chinese).
        frame: a 1-pixel black frame around the map.
        box_color, box_width: the frames drawn around ``boxes`` (pixels).
        mark_color, mark_radius: the dots drawn on ``marks`` (pixels).
        signs: draw the minus bars (None: when the colour map is diverging and ``numbers`` is
            False).

    Attributes:
        look: the ``MapLook`` deciding each cell's colour, string and string colour; cmap and
            norm are its colour map and normalisation.
        values: (L, S) float array drawn now; blocked, marks: (L, S) bool or None;
        boxes: the blocks framed now; text: the ``CellText`` of the numbers (or None).
    """

    def __init__(self, ax: Axes, cmap: str | Colormap = "Blues", clim: tuple[float, float] = (0.0, 1.0),
                 *, numbers: bool = False, fmt: str | Callable[[float], str] = "{:.2f}", size: float = 8.0,
                 font: str | FontProperties | None = None, frame: bool = True, blocked_color: str = "0.5", box_color: str = "black",
                 box_width: int = 3, mark_color: str = "tab:orange", mark_radius: int = 2,
                 signs: bool | None = None) -> None:
        if not isinstance(ax, Axes):
            raise TypeError(f"ax: expected a matplotlib Axes, got {type(ax).__name__}")
        self.look = MapLook(cmap, clim, fmt=fmt, blocked_color=blocked_color)  # checks all four
        super().__init__()
        self.set_animated(True)
        self.set_zorder(4)
        ax.add_artist(self)
        self._frame = frame
        self._box_rgba, self._box_width = rgba255(box_color), int(box_width)
        self._mark_rgba, self._mark_radius = rgba255(mark_color), int(mark_radius)
        if signs is not None and not isinstance(signs, bool):
            raise TypeError(f"signs: expected True, False or None, got {type(signs).__name__}")
        self.signs = (is_diverging(self.cmap) and not numbers) if signs is None else signs
        self.text = CellText(ax, size=size, font=font, add=False) if numbers else None  # drawn after the cells
        self.values = np.zeros((1, 1))
        self.blocked: np.ndarray | None = None
        self.marks: np.ndarray | None = None
        self.boxes: tuple[Box, ...] = ()
        self._strings: list[list[str]] | None = None

    def _cells_bool(self, name: str, a: object | None, shape: tuple[int, ...]) -> np.ndarray | None:
        if a is None:
            return None
        a = np.asarray(a, dtype=bool)
        if a.shape != shape:
            raise ValueError(f"{name}: expected shape {shape} like values, got {a.shape}")
        return a

    def set_values(self, values: object, *, blocked: object | None = None, marks: object | None = None,
                   boxes: Sequence[Box] = (), strings: Sequence[Sequence[str]] | None = None) -> None:
        """values (L, S); blocked, marks: (L, S) bool or None; boxes: blocks of cells to frame;
        strings: L rows of S strings written instead of the formatted values (numbers=True)."""
        if hasattr(values, "detach"):  # a torch tensor
            values = values.detach().cpu().numpy()
        v = np.array(values, dtype=float)  # a copy: the caller's array is never kept
        if v.ndim != 2:
            raise ValueError(f"values: expected 2 dims (L, S), got shape {v.shape}")
        L, S = v.shape
        boxes = tuple(tuple(int(i) for i in b) for b in boxes)
        for b in boxes:
            if len(b) != 4 or not (0 <= b[0] < b[1] <= L and 0 <= b[2] < b[3] <= S):
                raise ValueError(f"boxes: expected (row0, row1, col0, col1) inside {L} x {S} cells, got {b}")
        if strings is not None:
            strings = [list(r) for r in strings]
            if [len(r) for r in strings] != [S] * L:
                raise ValueError(f"strings: expected {L} rows of {S} strings like values, got "
                                 f"{[len(r) for r in strings]}")
        self.values = v
        self.blocked = self._cells_bool("blocked", blocked, v.shape)
        self.marks = self._cells_bool("marks", marks, v.shape)
        self.boxes, self._strings = boxes, strings
        self.stale = True

    @property
    def cmap(self) -> Colormap:
        return self.look.cmap

    @property
    def norm(self) -> Normalize:
        return self.look.norm

    def levels(self) -> np.ndarray:
        """(L, S) the values normalised to 0..1 as the colour map reads them, settled
        (``attn.drawing.plotting.settle``): the same on every CPU."""
        return self.look.levels(self.values)

    def rgba(self) -> np.ndarray:
        """(L, S, 4) uint8 colour of every cell (``MapLook.colours``)."""
        return self.look.colours(self.values, self.blocked)

    def ink(self) -> np.ndarray:
        """(L, S) "black" / "white": the colour of text on every cell (``MapLook.ink``)."""
        return self.look.ink(self.rgba())

    def _pixels(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The cells, frames, sign bars and dots as one (H, W, 4) array, row 0 on top."""
        rgba = self.rgba()
        cells = np.repeat(np.repeat(rgba, -np.diff(y), axis=0), np.diff(x), axis=1)  # (H, W, 4)
        rows, cols = y[0] - y, x - x[0]  # cell edges as array indices, (L + 1,), (S + 1,)
        w = self._box_width
        for r0, r1, c0, c1 in self.boxes:
            top, bottom, left, right = rows[r0], rows[r1], cols[c0], cols[c1]
            cells[top:top + w, left:right] = self._box_rgba
            cells[bottom - w:bottom, left:right] = self._box_rgba
            cells[top:bottom, left:left + w] = self._box_rgba
            cells[top:bottom, right - w:right] = self._box_rgba
        if self.signs:
            ink = np.where(self.look.ink(rgba) == "black", 0, 255).astype(np.uint8)  # (L, S)
            below = self.levels() < 0.5  # (L, S): below the middle; NaN compares False: no bar
            if self.blocked is not None:
                below &= ~self.blocked
            for i, j in zip(*np.nonzero(below)):
                height, width = rows[i + 1] - rows[i], cols[j + 1] - cols[j]
                half_w, thick = max(1, int(width * 0.15)), max(1, int(round(height * 0.06)))
                cy, cx = (rows[i] + rows[i + 1]) // 2, (cols[j] + cols[j + 1]) // 2
                cells[cy - thick // 2:cy - thick // 2 + thick, cx - half_w:cx + half_w, :3] = ink[i, j]
        if self.marks is not None:
            r = self._mark_radius
            dy, dx = np.mgrid[-r:r + 1, -r:r + 1]
            disc = dx**2 + dy**2 <= r * r + r  # (2r + 1, 2r + 1)
            for i, j in zip(*np.nonzero(self.marks)):
                cy = max((rows[i] + rows[i + 1]) // 2, r)  # the cell's centre, the dot inside
                cx = max((cols[j] + cols[j + 1]) // 2, r)
                patch = cells[cy - r:cy + r + 1, cx - r:cx + r + 1]
                patch[disc[:patch.shape[0], :patch.shape[1]]] = self._mark_rgba
        if self._frame:
            cells[[0, -1], :] = (0, 0, 0, 255)
            cells[:, [0, -1]] = (0, 0, 0, 255)
        return cells

    def draw(self, renderer) -> None:  # noqa: ANN001 (a matplotlib renderer)
        if not self.get_visible():
            return
        L, S = self.values.shape
        if L == 0 or S == 0:
            return
        x, y = cell_edges(self.axes, L, S)
        gc = renderer.new_gc()
        renderer.draw_image(gc, x[0], y[-1], np.ascontiguousarray(self._pixels(x, y)[::-1]))
        gc.restore()
        if self.text is not None:
            strings = self._strings or self.look.strings(self.values)
            self.text.set_strings(strings, self.ink().tolist())  # L rows of S; (L, S)
            self.text.draw(renderer)
        self.stale = False


class MapView:
    """One map of an explorer: cells, numbers, boxes, dots, token labels and a title, each a
    live artist drawn from bitmaps. ``set`` changes any of them; ``artists()`` is what an
    explorer lists as live (a map it does not list is not drawn).

    Args:
        ax: the box the map fills (turned off as an axes: no ticks, spines or patch).
        cmap, clim, numbers, fmt, box_color, mark_color, signs: as ``CellMap``.
        number_size, number_font: size and font of the numbers (or strings); notes: a second, smaller line in each cell
            (``set(notes=...)``), with the numbers moved up to make room.
        font, label_size, rotate: the token labels (``TickLabels``); x_labels / y_labels
            False leaves the key / query labels to a neighbouring map.
        title_size, title_font: the title above the map.

    Attributes:
        ax, cells (``CellMap``), labels (``TickLabels``), title (``AxesTitle``),
        notes (``CellText`` or None).
    """

    def __init__(self, ax: Axes, *, cmap: str | Colormap = "Blues", clim: tuple[float, float] = (0.0, 1.0),
                 numbers: bool = False, fmt: str | Callable[[float], str] = "{:.2f}", number_size: float = 8.0,
                 number_font: str | FontProperties | None = None, notes: bool = False, font: str | FontProperties | None = None,
                 label_size: float = 8.0, rotate: bool = False, x_labels: bool = True,
                 y_labels: bool = True, title_size: float = 9.0,
                 title_font: str | FontProperties | None = None, box_color: str = "black",
                 mark_color: str = "tab:orange", blocked_color: str = "0.5",
                 signs: bool | None = None) -> None:
        if not isinstance(ax, Axes):
            raise TypeError(f"ax: expected a matplotlib Axes, got {type(ax).__name__}")
        ax.set_axis_off()  # the map draws its own frame; the axes is only its box
        self.ax = ax
        self.cells = CellMap(ax, cmap, clim, numbers=numbers or notes, fmt=fmt, size=number_size,
                             font=number_font, box_color=box_color, mark_color=mark_color, blocked_color=blocked_color,
                             signs=signs)
        self.notes = CellText(ax, size=number_size - 1, add=False, dy=0.22) if notes else None
        if self.notes is not None:
            self.cells.text.dy = -0.18
        self.labels = (TickLabels(ax, size=label_size, font=font, rotate=rotate, x_labels=x_labels,
                                  y_labels=y_labels) if x_labels or y_labels else None)
        self.title = AxesTitle(ax, size=title_size, font=title_font)

    def set(self, values: object, *, x_tokens: Sequence[str] | None = None,
            y_tokens: Sequence[str] | None = None, title: str | None = None,
            blocked: object | None = None, marks: object | None = None, boxes: Sequence[Box] = (),
            strings: Sequence[Sequence[str]] | None = None,
            notes: Sequence[Sequence[str]] | None = None, rotate: bool | None = None) -> None:
        """New values (L, S) and, when given, new labels (S keys, L queries: default the
        keys; given the queries alone, the keys are the indices), title, blocked cells, marks, boxes, cell strings and notes. What is not given
        is cleared (blocked, marks, boxes, strings) or kept (labels, title, notes)."""
        labelled = (x_tokens is not None or y_tokens is not None) and self.labels is not None
        if labelled and len(np.shape(values)) == 2:  # (values of other dims: set_values says so)
            x_tokens, y_tokens = axis_labels(x_tokens, y_tokens, np.shape(values))  # one per cell
        self.cells.set_values(values, blocked=blocked, marks=marks, boxes=boxes, strings=strings)
        if labelled:
            self.labels.set_tokens(x_tokens, y_tokens, rotate=rotate)
        if title is not None:
            self.title.set_text(title)
        if notes is not None:
            if self.notes is None:
                raise ValueError("notes: this map was built without notes=True")
            self.notes.set_strings(notes, self.cells.ink().tolist())  # L rows of S; (L, S)

    def artists(self) -> list[Artist]:
        """What an explorer draws for this map, in order (the notes after the cells)."""
        out: list[Artist] = [self.cells]
        if self.notes is not None:
            out.append(self.notes)
        if self.labels is not None:
            out.append(self.labels)
        return out + [self.title]

    def colorbar(self, cax: Axes, **kwargs: object) -> Colorbar:
        """A colour bar in ``cax`` for this map's colours (static: part of the background)."""
        return self.ax.figure.colorbar(self.cells.look.mappable(), cax=cax, **kwargs)
