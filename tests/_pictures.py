"""Reading an explorer's picture back: the decoded pixels of ``.image.value``, whole or per axes
(and, for the renderer's own tests, one axes drawn with only the artists under test).

The explorer tests assert on these pixels, not on the readout: a move that should change what
is shown must change the pixels of the panel that shows it.

The colour maps the package names (``colormaps_used``). And the pictures a saved notebook holds: its explorers' (``explorer_outputs``) and its static
figures (``static_figures``), read from the outputs and the saved widget state.
"""
from __future__ import annotations

import ast
import base64
import io
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from PIL import Image

from attn.drawing.plotting import new_figure
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


# A picture drawn on another machine (a notebook's saved picture, against one drawn here) may
# differ by round-off: a value that sits on the edge of a colour level falls on either side of
# it (issue 30: one level in the 240 pixels of one cell of notebook 06). attn.drawing.plotting.settle
# removes the edges that exact values sit on; what is left is a value that lands within
# round-off of an edge by chance, one level in one cell. So a picture from another machine is
# the same picture when no channel differs by more than ACROSS_LEVELS and at most ACROSS_SHARE
# of its pixels differ at all. A real change differs by more: another head's map, a moved cell
# or a changed number moves whole cells by many levels (tests/delivery/test_site_live.py plants each).
ACROSS_LEVELS = 2
ACROSS_SHARE = 0.01


def across_machines_problem(here: np.ndarray, there: np.ndarray) -> str | None:
    """Why ``here`` is not the picture ``there`` drawn on another machine ((H, W, 3) ints, see
    ``ACROSS_LEVELS``); None when it is."""
    if here.shape != there.shape:
        return f"sizes differ: {here.shape[1]}x{here.shape[0]} against {there.shape[1]}x{there.shape[0]}"
    delta = np.abs(here.astype(int) - there.astype(int)).max(axis=-1)  # (H, W)
    share = float((delta > 0).mean())
    if delta.max() > ACROSS_LEVELS or share > ACROSS_SHARE:
        rows, cols = np.nonzero(delta)
        return (f"{int((delta > 0).sum())} pixels ({share:.2%}) differ, by up to {int(delta.max())} levels, "
                f"in rows {rows.min()}-{rows.max()} and columns {cols.min()}-{cols.max()} "
                f"(round-off allows {ACROSS_LEVELS} levels in {ACROSS_SHARE:.0%} of the pixels)")
    return None


def changed(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape != b.shape or bool((a != b).any())


def one_axes(width: float = 4, height: float = 3) -> tuple[Figure, Axes]:
    """A white figure with one axes, turned off (as a MapView's is), laid out and drawn once."""
    fig = new_figure(width, height, dpi=72)
    fig.subplots_adjust(left=0.2, right=0.95, bottom=0.25, top=0.85)
    ax = fig.add_subplot()
    ax.set_axis_off()
    fig.canvas.draw()
    return fig, ax


def draw_only(fig: Figure, *artists) -> np.ndarray:
    """The canvas (H, W, 3) int after drawing only ``artists`` on the figure's background."""
    fig.canvas.draw()
    for a in artists:
        fig.draw_artist(a)
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)


VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def explorer_outputs(nb: dict) -> list[tuple[dict, bytes]]:
    """(output, PNG bytes of the explorer's picture in the saved widget state) for every output
    that displays an explorer (``tools.site.explorer_outputs`` finds them)."""
    from tools.site import explorer_outputs as places

    state = widget_state(nb)
    found = []
    for i, j in places(nb):
        out = nb["cells"][i]["outputs"][j]
        model = state[out["data"][VIEW]["model_id"]]
        for child in model["state"]["children"]:
            image = state.get(child.removeprefix("IPY_MODEL_"), {})
            if image.get("model_name") == "ImageModel":
                found.append((out, base64.b64decode(image["buffers"][0]["data"])))
    return found


def widget_state(nb: dict) -> dict:
    """model id -> saved model (``model_name``, ``state``) of the notebook's widget state."""
    return nb["metadata"].get("widgets", {}).get(STATE, {}).get("state", {})


def static_figures(nb: dict) -> list[tuple[int, dict]]:
    """(cell index, output) of every image/png output that is not an explorer's (an explorer
    is a VBox widget; a static figure is a plain image/png or a picture widget)."""
    state = widget_state(nb)
    return [(i, out) for i, cell in enumerate(nb["cells"]) for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {}) and (
                VIEW not in out["data"]
                or state.get(out["data"][VIEW]["model_id"], {}).get("model_name") != "VBoxModel")]


# --- the colour maps the package draws with ---------------------------------------------------

def colormaps_used() -> set[str]:
    """Names of matplotlib colour maps written as strings anywhere in the package."""
    names = set()
    for path in (Path(__file__).resolve().parents[1] / "src" / "attn").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in matplotlib.colormaps:
                names.add(node.value)
    return names
