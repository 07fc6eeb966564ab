"""What every explorer shares: controls, one figure owned by the explorer, a PNG view of it.

A control move calls a pure function for the numbers, writes them into the figure's existing
artists and refreshes one ``ipywidgets.Image``. No new figure, no new output per move.

Speed: the parts of the figure that never change (axes, ticks, labels, background curves)
are rendered once and kept as a bitmap; a move restores that bitmap, draws only the "live"
artists on top (blitting) and encodes the canvas as PNG at a low compression level.
"""
from __future__ import annotations

import io
from typing import Callable, Iterable, Mapping

import ipywidgets as widgets
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from PIL import Image

__all__ = ["Explorer", "freeze_layout", "canvas_png"]


def freeze_layout(fig: Figure) -> None:
    """Run the layout engine once, then keep the axes where they are (faster redraws)."""
    fig.canvas.draw()
    fig.set_layout_engine("none")


def _has_layout_engine(fig: Figure) -> bool:
    """True if drawing the figure moves its axes (tight or constrained layout)."""
    engine = fig.get_layout_engine()
    return engine is not None and not isinstance(engine, PlaceHolderLayoutEngine)


def canvas_png(fig: Figure) -> bytes:
    """Encode what the Agg canvas holds now (no redraw) as PNG."""
    canvas = fig.canvas
    w, h = canvas.get_width_height(physical=True)
    img = Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="png", compress_level=1)
    return buf.getvalue()


class Explorer(widgets.VBox):
    """Controls on top, the picture, then a readout of the numbers behind it.

    Args:
        controls: name -> control widget; ``update`` is called with these names as keywords.
        fig: the figure (Agg, outside pyplot) that the picture shows.
        update: ``update(**values) -> (state, html)`` or ``(state, html, full)``: writes the
            new numbers into existing artists; ``full=True`` when it changed something outside
            the live artists (tick labels, visibility of axes), so the whole figure is redrawn.
        live: returns the artists that change from move to move (drawn over the kept bitmap).

    Attributes:
        controls, fig, image (``ipywidgets.Image``), readout (``ipywidgets.HTML``),
        state (the last result of ``update``), full_redraws (how many moves needed one).
    """

    def __init__(
        self,
        controls: Mapping[str, widgets.Widget],
        fig: Figure,
        update: Callable[..., tuple],
        live: Callable[[], Iterable[Artist]],
        *,
        title: str = "",
    ) -> None:
        self.controls = dict(controls)
        self.fig = fig
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.readout = widgets.HTML()
        self._update = update
        self._live = live
        self._background = None
        self.state: object = None
        self.full_redraws = 0
        header = [widgets.HTML(f"<b>{title}</b>")] if title else []
        row = widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__(header + [row, self.image, self.readout])
        for control in self.controls.values():
            control.observe(self.redraw, names="value")
        if _has_layout_engine(fig):
            self._update(**self.values())  # the artists hold real numbers before the layout
            freeze_layout(fig)  # the one draw that runs the layout engine
        self.redraw(full=True)  # the one draw that keeps the background

    def values(self) -> dict[str, object]:
        return {name: c.value for name, c in self.controls.items()}

    def redraw(self, change: object = None, *, full: bool = False) -> None:
        """Recompute from the controls' values, update the artists, refresh the picture."""
        result = self._update(**self.values())
        self.state, html = result[0], result[1]
        full = full or (len(result) > 2 and bool(result[2])) or self._background is None
        self.readout.value = html
        artists = [a for a in self._live() if a is not None]
        for a in artists:
            a.set_animated(True)
        canvas = self.fig.canvas
        if full:
            self.full_redraws += 1
            canvas.draw()  # everything but the live artists
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        else:
            canvas.restore_region(self._background)
        for a in artists:
            if a.get_visible() and (a.axes is None or a.axes.get_visible()):
                self.fig.draw_artist(a)
        self.image.value = canvas_png(self.fig)
