"""Reading an explorer's picture back: the decoded pixels of ``.image.value``, whole or per axes.

The explorer tests assert on these pixels, not on the readout: a move that should change what
is shown must change the pixels of the panel that shows it.
"""
from __future__ import annotations

import io

import numpy as np
from matplotlib.axes import Axes
from PIL import Image

from attn.widgets._bitmaps import cell_edges


def pixels(explorer) -> np.ndarray:
    """The explorer's picture now, (H, W, 3) int, decoded from its PNG bytes."""
    assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n", "the picture is not a PNG"
    return np.asarray(Image.open(io.BytesIO(explorer.image.value)).convert("RGB")).astype(int)


def box(px: np.ndarray, ax: Axes, inset: int = 0) -> np.ndarray:
    """The pixels inside ``ax``'s box (its map, for a MapView), ``inset`` pixels in from its edges."""
    b = ax.bbox
    H = px.shape[0]
    top, bottom = int(round(H - b.y1)) + inset, int(round(H - b.y0)) - inset
    left, right = int(round(b.x0)) + inset, int(round(b.x1)) - inset
    return px[top:bottom, left:right]


def cell(px: np.ndarray, ax: Axes, L: int, S: int, i: int, j: int) -> np.ndarray:
    """The pixels of cell (i, j) of an (L, S) map filling ``ax`` (row 0 on top), cut at the
    map's own cell edges."""
    x, y = cell_edges(ax, L, S)
    H = px.shape[0]
    return px[H - y[i]:H - y[i + 1], x[j]:x[j + 1]]


def near(px: np.ndarray, rgb: tuple[int, int, int], tol: int = 12) -> np.ndarray:
    """(H, W) bool: pixels within ``tol`` of the colour ``rgb`` (0..255)."""
    return (np.abs(px - np.array(rgb)) <= tol).all(-1)


def changed(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape != b.shape or bool((a != b).any())
