"""What every explorer shares: controls, one figure owned by the explorer, a PNG view of it.

A control move calls a pure function for the numbers, writes them into the figure's existing
artists and refreshes one ``ipywidgets.Image``. No new figure, no new output per move.

Speed: the parts of the figure that never change (axes, ticks, labels, background curves)
are rendered once and kept as a bitmap; a move restores that bitmap, draws only the "live"
artists on top (blitting) and encodes the canvas as PNG at a low compression level.

Seen without a kernel: an explorer's output bundle also holds a PNG of its view and a text
that says what it shows (``Explorer._repr_mimebundle_``), and the live picture carries the
same text as its text alternative (``Explorer.alt_text``).
"""
from __future__ import annotations

import base64
import io
from html.parser import HTMLParser
from typing import Callable, Iterable, Mapping

import ipywidgets as widgets
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from PIL import Image
from traitlets import Unicode

__all__ = ["Explorer", "freeze_layout", "canvas_png", "html_to_text"]


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


class _HTMLText(HTMLParser):
    """Collects the text of an HTML fragment: one line per paragraph, row or break, cells of a
    table row separated by " | "."""

    _LINE = {"p", "br", "tr", "table", "div", "li"}

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[list[str]] = [[]]
        self._cells = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self._LINE:
            self.lines.append([])
            self._cells = 0
        elif tag in ("td", "th"):
            if self._cells:
                self.lines[-1].append(" | ")
            self._cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._LINE:
            self.lines.append([])
            self._cells = 0

    def handle_data(self, data: str) -> None:
        self.lines[-1].append(data)


def html_to_text(html: str) -> str:
    """The words and numbers of an HTML fragment (a readout) as plain text, one line per
    paragraph or table row."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = (" ".join("".join(parts).split()) for parts in parser.lines)
    return "\n".join(line for line in lines if line)


class _Picture(widgets.Image):
    """An ``ipywidgets.Image`` whose ``tooltip`` becomes the picture's ``title``: its text
    alternative, read by screen readers (and accepted by axe-core's image-alt rule).

    ipywidgets 8.1's front end applies a tooltip only if the widget's ``description`` is empty,
    and Image has no ``description``, so setting one raises an error in the browser
    (jupyter-widgets/ipywidgets#3860); an empty, synced ``description`` lets it through.
    """

    description = Unicode("").tag(sync=True)


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
        state (the last result of ``update``), full_redraws (how many moves needed one),
        title.
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
        self.title = title
        self.image = _Picture(format="png", layout=widgets.Layout(max_width="100%"))
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
        png = canvas_png(self.fig)
        with self.image.hold_sync():  # the picture and its text alternative in one message
            self.image.tooltip = self.alt_text()
            self.image.value = png

    def alt_text(self) -> str:
        """What the picture shows, in words: the explorer's title, then its readout as text."""
        title = self.title.strip()
        heading = f"Picture: {title}" if title else "Picture of the explorer"
        heading += "" if heading.endswith((".", "?", "!")) else "."
        return f"{heading}\n{html_to_text(self.readout.value)}".strip()

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        """IPython's display protocol: the widget view, plus a PNG of the picture and a text.

        A front end shows the richest type it can render. With a widget manager (JupyterLab,
        Voilà, RISE, and a page holding the saved widget state), that is the live explorer
        (JupyterLab ranks the widget view above image/png). Without one (a repository page,
        nbviewer, ``nbconvert --to html`` without widget state, an untrusted notebook in
        JupyterLab before its cells run), it is the PNG of the view shown when the output was
        made, its default view; a text-only viewer gets ``alt_text()`` instead of the repr
        ``Explorer(children=...)``.
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:  # a closed widget has no view to show
            return None
        bundle["image/png"] = base64.b64encode(bytes(self.image.value)).decode("ascii")
        bundle["text/plain"] = self.alt_text()
        return bundle
