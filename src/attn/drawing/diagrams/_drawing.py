"""What the diagrams are drawn with: heatmap blocks of numbers, words and arrows, in inches.

One renderer for this kind of picture: every diagram of ``attn.drawing.diagrams`` draws on a single
axes whose units are inches (``canvas``), tensors as ``grid``s of cells shaded by value on a
sequential map (darker is larger, in colour and in greyscale alike), their numbers written in
black or white by contrast, words in the current language's ``text_font``.

Why ``grid`` is not ``attn.drawing.plotting.heatmap``: a heatmap fills an axes of its own, one
cell per unit of data, with tick labels and a title, and writes every cell or none. A diagram
places several blocks of cells on one page measured in inches, beside words, frames and arrows
that point at single rows and cells (``Grid.row_y``, ``Grid.col_x``), sizes its cells to fit
the page, outlines each cell, and writes only the cells it talks about. What a cell shows is
the same, and comes from the same place (``attn.drawing._cells``): its colour (``colours_of``:
settled, the 8-bit colour an explorer or a heatmap paints for that value), its number's text
(``cell_text``) and the number's colour (``text_colors``). A diagram adds one rule of its own
(``number``): it never writes "-0.00", where a map keeps the sign of a small negative value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import Normalize, to_rgba_array
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.text import Text
from torch import Tensor

from .._cells import cell_text, colours_of, real_minus, settle, text_colors
from ..plotting import new_figure, text_font

__all__ = ["DPI", "CMAP", "ALLOWED", "BLOCKED", "MAX_TOKENS", "MAX_E", "WORDS", "SMALL", "NUMBERS", "number",
           "Grid", "canvas", "grid", "frame", "words", "arrow", "extent", "shape_text"]

DPI = 80
CMAP = "Blues"  # sequential: darker is larger, in colour and in greyscale alike
ALLOWED, BLOCKED = "#3b3b3b", "#ffffff"  # a mask's cells: dark = may attend, white = blocked
MAX_TOKENS, MAX_E = 8, 8  # the largest tensors a diagram can show legibly
WORDS, SMALL, NUMBERS = 9, 8, 7  # font sizes (points): words, notes, numbers in cells


def number(value: float) -> str:
    """A number as a diagram writes it: settled, two decimals (``cell_text``, as every map writes
    a cell), the minus sign, never "-0.00"."""
    text = cell_text(float(settle(value)), "{:.2f}".format)
    return real_minus("0.00" if text == "-0.00" else text)


@dataclass
class Grid:
    """One slice of a tensor drawn as a heatmap: a (rows, columns) block of shaded cells.

    Attributes:
        values: (R, C) the numbers drawn (row 0 on top).
        cells: R lists of C ``Rectangle``; their face colours are the shades.
        numbers: (row, column) -> the ``Text`` written in that cell (only the cells written).
        left, top: the block's top-left corner, in inches from the figure's bottom-left.
        cell_w, cell_h: a cell's size in inches.
    """

    values: np.ndarray
    cells: list[list[Rectangle]]
    numbers: dict[tuple[int, int], Text]
    left: float
    top: float
    cell_w: float
    cell_h: float

    @property
    def bottom(self) -> float:
        return self.top - self.values.shape[0] * self.cell_h

    @property
    def right(self) -> float:
        return self.left + self.values.shape[1] * self.cell_w

    def row_y(self, r: int) -> float:
        """The centre height of row ``r``."""
        return self.top - (r + 0.5) * self.cell_h

    def col_x(self, c: int) -> float:
        """The centre of column ``c``."""
        return self.left + (c + 0.5) * self.cell_w


def canvas(size: tuple[float, float], ax: Axes | None) -> Axes:
    """The axes to draw on, in inches: a new figure of ``size`` if ``ax`` is None."""
    if ax is None:
        ax = new_figure(*size, dpi=DPI).add_axes((0, 0, 1, 1))
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax: expected a matplotlib Axes or None, got {type(ax).__name__}")
    ax.set_xlim(0, size[0])
    ax.set_ylim(0, size[1])
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


def grid(ax: Axes, values: np.ndarray, left: float, top: float, *, norm: Normalize | None,
         cell: tuple[float, float], written: Sequence[tuple[int, int]] = (),
         colors: np.ndarray | None = None) -> Grid:
    """Draw ``values`` (R, C) as cells shaded by ``norm`` on ``CMAP`` (or filled with
    ``colors``, (R, C) colour names), writing the numbers of the ``written`` cells in black or
    white, whichever contrasts more with the cell."""
    R, C = values.shape
    w, h = cell
    faces = (colours_of(values, colormaps[CMAP], norm) / 255 if colors is None  # settled: as every CPU draws it
             else to_rgba_array(np.ravel(colors)).reshape(R, C, 4))  # (R, C, 4)
    cells = [[ax.add_patch(Rectangle((left + c * w, top - (r + 1) * h), w, h, facecolor=faces[r, c],
                                     edgecolor="#9a9a9a", linewidth=0.6))
              for c in range(C)] for r in range(R)]
    numbers = {(r, c): ax.text(left + (c + 0.5) * w, top - (r + 0.5) * h, number(values[r, c]),
                               ha="center", va="center", fontproperties=text_font(NUMBERS),
                               color=str(text_colors(faces[r, c])))
               for r, c in written}
    return Grid(values, cells, numbers, left, top, w, h)


def frame(ax: Axes, g: Grid, row: int) -> Rectangle:
    """A thick black frame around one row of the heatmap ``g`` (a followed or a new row)."""
    return ax.add_patch(Rectangle((g.left, g.top - (row + 1) * g.cell_h), g.right - g.left, g.cell_h,
                                  fill=False, edgecolor="black", linewidth=2.0, zorder=3))


def words(ax: Axes, x: float, y: float, text: str, *, size: float = WORDS,
          font: FontProperties | None = None, **kw: object) -> Text:
    """``text`` at (x, y) inches, in ``text_font(size)`` (the current language's) unless ``font``
    is given (``token_font`` for tokens); ``kw`` as ``Axes.text`` takes them."""
    return ax.text(x, y, text, fontproperties=font or text_font(size), **kw)


def arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], **kw: object) -> FancyArrowPatch:
    """A black arrow from ``start`` to ``end`` (inches)."""
    style = dict(arrowstyle="-|>", mutation_scale=12, linewidth=1.3, color="black", shrinkA=2, shrinkB=2)
    style.update(kw)
    return ax.add_patch(FancyArrowPatch(start, end, **style))


def extent(ax: Axes, text: Text) -> tuple[float, float, float, float]:
    """Where ``text`` is drawn, in the axes' units (inches): (left, bottom, right, top)."""
    box = text.get_window_extent(ax.figure.canvas.get_renderer()).transformed(ax.transData.inverted())
    return box.x0, box.y0, box.x1, box.y1


def shape_text(t: Tensor | tuple[int, ...]) -> str:
    """A tensor's shape as a diagram writes it: "(1, 6, 8)"."""
    return str(tuple(t.shape) if isinstance(t, Tensor) else tuple(t))
