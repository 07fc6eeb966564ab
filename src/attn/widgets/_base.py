"""What every explorer shares: controls, one figure owned by the explorer, a PNG view of it.

A control move calls a pure function for the numbers, writes them into the figure's existing
artists and refreshes one ``ipywidgets.Image``. No new figure, no new output per move.

Speed: the parts of the figure that never change (axes, ticks, labels, background curves)
are rendered once and kept as a bitmap; a move restores that bitmap, draws only the "live"
artists on top (blitting) and encodes the canvas as PNG at a low compression level.

Seen without a kernel: an explorer's output bundle also holds its picture in HTML, with a line
that says to run the cell to move the controls, and a text that says what it shows
(``Explorer._repr_mimebundle_``); the live picture carries the same text as its text
alternative (``Explorer.alt_text``).

Heard, not only seen (in JupyterLab and Voilà, as on the site): every control has a name (its
``description``), a slider announces its name and the value it shows ("d_k = 16", where a
selection slider's handle would say the option's index), a toggle button says whether it is
the chosen one, the readout is a live region (a redraw
is announced), and the arrow keys move a drop-down instead of JupyterLab's cell cursor. ipywidgets
8.1 has no public way to set ARIA attributes, so each explorer carries a hidden ``Output`` that
holds a short script (``A11Y_SCRIPT``) run by the front end's own JavaScript renderer: it writes
those attributes into the explorer's controls and readout (see ``Explorer.value_text``).

In the learner's language (``attn.language``): an explorer speaks the language that was current
when it was built, on every later move too (``Explorer.language``); its words are translated
with ``tr`` when it is built or redrawn, never at import, and an option's label is translated
while its value stays the English one (``options``).
"""
from __future__ import annotations

import base64
import io
from html import escape
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
from IPython.display import Javascript
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from PIL import Image

from ..drawing.figures import Picture
from ..language import get_language, language, mark, tr

if TYPE_CHECKING:
    from ._mapview import MapView

__all__ = ["Explorer", "freeze_layout", "canvas_png", "html_to_text", "options", "listing",
           "sentences", "A11Y_SCRIPT", "RUN_TO_MOVE", "SAVED_CLASS"]


def freeze_layout(fig: Figure) -> None:
    """Run the layout engine once, then keep the axes where they are (faster redraws)."""
    fig.canvas.draw()
    fig.set_layout_engine("none")


def _has_layout_engine(fig: Figure) -> bool:
    """True if drawing the figure moves its axes (tight or constrained layout)."""
    engine = fig.get_layout_engine()
    return engine is not None and not isinstance(engine, PlaceHolderLayoutEngine)


def canvas_rgb(fig: Figure) -> Image.Image:
    """What the Agg canvas holds now (no redraw), as an RGB image."""
    canvas = fig.canvas
    w, h = canvas.get_width_height(physical=True)
    return Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")


def canvas_png(fig: Figure) -> bytes:
    """Encode what the Agg canvas holds now (no redraw) as PNG."""
    buf = io.BytesIO()
    canvas_rgb(fig).save(buf, format="png", compress_level=1)
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


# CSS classes (ipywidgets' public ``add_class``) by which the script finds an explorer's parts.
EXPLORER_CLASS, CONTROLS_CLASS, READOUT_CLASS = "attn-explorer", "attn-controls", "attn-readout"
#: The class of an explorer's saved picture, as shown where no widget manager draws it.
SAVED_CLASS = "attn-explorer-saved"
#: The line under that picture (in the explorer's language): the controls move once the cell runs.
RUN_TO_MOVE = mark("▶ Run this cell to move the controls.")

# What the script writes, and where, in every explorer on the page (run once per page; a
# MutationObserver keeps it true as widgets render and values change):
# - each slider's handle (role=slider; ipywidgets names it nothing): aria-label = the slider's
#   description, aria-valuetext = "description = readout" (noUiSlider's own is the handle's
#   position, for a selection slider the option's index);
# - a row of toggle buttons: role=group named by its description ("fill"), and each button
#   aria-pressed (ipywidgets shows the chosen one by a CSS class only);
# - the readout: role=status, aria-live=polite (the element persists: ipywidgets replaces only
#   its content, so each redraw is announced);
# - the row of controls: the arrow keys (and Home, End, Page Up/Down) pressed on a drop-down, a
#   slider or a radio button stop there, after the control has used them; without this, they
#   reach JupyterLab's command-mode shortcuts (ArrowDown = the next cell, which takes the
#   focus), which listen on the document.
# Drop-downs and text boxes are named by ipywidgets itself (<label for=...>).
A11Y_SCRIPT = r"""
(() => {
  if (window.attnA11y) { window.attnA11y(); return; }
  const clean = (s) => (s || '').replace(/[\u200b\s]+/g, ' ').trim();
  const KEYS = new Set(['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown']);
  const set = (el, name, value) => { if (el.getAttribute(name) !== value) el.setAttribute(name, value); };
  const fix = (explorer) => {
    for (const row of explorer.querySelectorAll('.%(controls)s')) {
      if (row.dataset.attnKeys) continue;
      row.dataset.attnKeys = 'kept';
      row.addEventListener('keydown', (event) => {
        if (KEYS.has(event.key) && event.target.matches('select, [role=slider], input[type=radio]')) {
          event.stopPropagation();
        }
      });
    }
    for (const slider of explorer.querySelectorAll('.widget-slider')) {
      const name = clean((slider.querySelector(':scope > label.widget-label') || {}).textContent);
      const shown = clean((slider.querySelector('.widget-readout') || {}).textContent);
      for (const handle of slider.querySelectorAll('.noUi-handle')) {
        if (name) set(handle, 'aria-label', name);
        if (shown) set(handle, 'aria-valuetext', name ? `${name} = ${shown}` : shown);
      }
    }
    for (const group of explorer.querySelectorAll('.widget-toggle-buttons')) {
      const name = clean((group.querySelector(':scope > label.widget-label') || {}).textContent);
      set(group, 'role', 'group');
      if (name) set(group, 'aria-label', name);
      for (const button of group.querySelectorAll('button.widget-toggle-button')) {
        set(button, 'aria-pressed', String(button.classList.contains('mod-active')));
      }
    }
    for (const readout of explorer.querySelectorAll('.%(readout)s')) {
      set(readout, 'role', 'status');
      set(readout, 'aria-live', 'polite');
    }
  };
  const watched = new WeakSet();
  const scan = () => {
    for (const explorer of document.querySelectorAll('.%(explorer)s')) {
      fix(explorer);
      if (watched.has(explorer)) continue;
      watched.add(explorer);
      new MutationObserver(() => fix(explorer)).observe(explorer, {subtree: true, childList: true,
        characterData: true, attributes: true, attributeFilter: ['aria-valuetext', 'aria-label', 'class']});
    }
  };
  window.attnA11y = scan;
  new MutationObserver(scan).observe(document.body, {childList: true, subtree: true});
  scan();
})();
""" % {"explorer": EXPLORER_CLASS, "controls": CONTROLS_CLASS, "readout": READOUT_CLASS}


def options(values: Iterable[str]) -> list[tuple[str, str]]:
    """A drop-down's or toggle buttons' options: (label in the current language, value).

    Args:
        values: the options' values, English words marked for the catalogue where they are
            written (``mark("causal")``); each is also the English label.
    """
    return [(tr(value), value) for value in values]



def listing(items: Iterable[str]) -> str:
    """The items of a list in a sentence: "a, b, c" (Chinese: "a，b，c")."""
    return ("，" if get_language() == "zh" else ", ").join(items)


#: Punctuation that ends a Chinese sentence or clause: no space after it.
_FULL_WIDTH_ENDS = ("。", "！", "？", "；", "：", "）")


def sentences(parts: Iterable[str]) -> str:
    """Sentences one after the other: a space between two, but none after a Chinese full stop
    (English: ``" ".join``)."""
    out = ""
    for part in parts:
        if out and part and not out.endswith(_FULL_WIDTH_ENDS):
            out += " "
        out += part
    return out


#: What a check box's value reads as (English: Python's own words).
_BOOLEANS = {True: mark("True"), False: mark("False")}

_SLIDERS = (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider, widgets.SelectionSlider)


def _control_name(name: str, control: widgets.Widget) -> str:
    """The control's accessible name: its ``description`` (ipywidgets shows it as the label)."""
    label = getattr(control, "description", None)
    if not isinstance(label, str) or not label.strip():
        raise ValueError(f"controls[{name!r}]: a control needs a description (its visible and "
                         f"accessible name), got {type(control).__name__} with description={label!r}")
    return label.strip()


class Explorer(widgets.VBox):
    """Controls on top, the picture, then a readout of the numbers behind it.

    Args:
        controls: name -> control widget; ``update`` is called with these names as keywords.
        fig: the figure (Agg, outside pyplot) that the picture shows.
        update: ``update(**values) -> (state, html)`` or ``(state, html, full)``: writes the
            new numbers into existing artists; ``full=True`` when it changed something outside
            the live artists (tick labels, visibility of axes), so the whole figure is redrawn.
        live: returns the artists that change from move to move (drawn over the kept bitmap).
        maps: the attention maps the figure holds, each a ``MapView``: name -> map, or a list
            in the figure's order (one per head); empty for an explorer without maps.

    Attributes:
        controls, fig, image (``ipywidgets.Image``), readout (``ipywidgets.HTML``, a live
        region in the browser), state (the last result of ``update``), full_redraws (how many
        moves needed one), title, language (the one it was built in: every redraw speaks it),
        maps, encode_png (below).

    The fast path for a program that reads the pictures and shows none: set ``encode_png``
    to False, and each redraw leaves ``image`` as it was; ``pixels()`` gives the picture drawn
    (the website's builder, tools/live_states.py, reads 7,000 states so, without a PNG encoded
    and decoded again for each).

    Raises:
        ValueError: a control without a ``description`` (it would have no accessible name), or
            a slider whose readout is hidden (it would announce no value).
    """

    def __init__(
        self,
        controls: Mapping[str, widgets.Widget],
        fig: Figure,
        update: Callable[..., tuple],
        live: Callable[[], Iterable[Artist]],
        *,
        title: str = "",
        maps: Mapping[str, MapView] | Sequence[MapView] = (),
    ) -> None:
        self.controls = dict(controls)
        self.maps: dict[str, MapView] | list[MapView] = dict(maps) if isinstance(maps, Mapping) else list(maps)
        for name, control in self.controls.items():
            _control_name(name, control)
            if isinstance(control, _SLIDERS) and not control.readout:
                raise ValueError(f"controls[{name!r}]: a slider must show its readout (the "
                                 f"value it announces), got readout=False")
        self.fig = fig
        self.title = title
        self.language = get_language()
        self.image = Picture(format="png", layout=widgets.Layout(max_width="100%"))
        self.readout = widgets.HTML()
        self.readout.add_class(READOUT_CLASS)
        # The script that gives the controls and the readout their ARIA attributes (hidden).
        self.a11y = widgets.Output(layout=widgets.Layout(display="none"))
        self.a11y.append_display_data(Javascript(A11Y_SCRIPT))
        self.encode_png = True
        self._update = update
        self._live = live
        self._background = None
        self.state: object = None
        self.full_redraws = 0
        header = [widgets.HTML(f"<b>{title}</b>")] if title else []
        row = widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        row.add_class(CONTROLS_CLASS)
        super().__init__(header + [row, self.image, self.readout, self.a11y])
        self.add_class(EXPLORER_CLASS)
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
        with language(self.language):  # the words of the language it was built in
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
        if not self.encode_png:
            return
        png = canvas_png(self.fig)
        with self.image.hold_sync():  # the picture and its text alternative in one message
            self.image.tooltip = self.alt_text()
            self.image.value = png

    def pixels(self) -> Image.Image:
        """The picture as drawn now, an RGB image: the pixels of ``image``'s PNG, without one."""
        return canvas_rgb(self.fig)

    def value_text(self, name: str) -> str:
        """What a screen reader hears for the control ``name`` (the script writes the same for
        a slider: its ``aria-valuetext``): its description, "=", the value it shows, e.g.
        ``"d_k = 16"`` (a selection slider shows its option's label, not its index).

        Raises:
            KeyError: ``name`` is not one of ``controls``.
        """
        control = self.controls[name]
        label = _control_name(name, control)
        if isinstance(control, widgets.SelectionSlider):
            shown = control.label
        elif isinstance(control, (widgets.FloatSlider, widgets.IntSlider)):
            shown = format(control.value, control.readout_format)
        elif hasattr(control, "options"):  # drop-down, toggle buttons: the option's label
            shown = control.label
        elif isinstance(control.value, bool):  # a check box
            shown = tr(_BOOLEANS[control.value])
        else:
            shown = str(control.value)
        return f"{label} = {shown}"

    def alt_text(self) -> str:
        """What the picture shows, in words: the explorer's title, then its readout as text."""
        title = self.title.strip()
        with language(self.language):
            if not title:
                heading = tr("Picture of the explorer.")
            elif title.endswith((".", "?", "!", "。", "？", "！")):
                heading = tr("Picture: {title}", title=title)
            else:
                heading = tr("Picture: {title}.", title=title)
        return f"{heading}\n{html_to_text(self.readout.value)}".strip()

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        """IPython's display protocol: the widget view, plus the picture in HTML and a text.

        A front end shows the richest type it can render. With a widget manager (JupyterLab,
        Voilà, RISE, and a page holding the saved widget state), that is the live explorer
        (JupyterLab ranks the widget view above HTML). Without one (a repository page,
        nbviewer, ``nbconvert --to html`` without widget state, an untrusted notebook in
        JupyterLab before its cells run), it is ``saved_html()``: a PNG of the view shown when
        the output was made, with its text alternative, and one line that says to run the cell
        to move the controls (the picture is stored once: in the HTML, not also as image/png).
        A text-only viewer gets ``alt_text()`` instead of the repr ``Explorer(children=...)``.
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:  # a closed widget has no view to show
            return None
        bundle["text/html"] = self.saved_html()
        bundle["text/plain"] = self.alt_text()
        return bundle

    def saved_html(self) -> str:
        """The explorer as a page without a widget manager shows it: its picture now (a PNG,
        with ``alt_text()``) and ``RUN_TO_MOVE`` in its language."""
        png = base64.b64encode(bytes(self.image.value)).decode("ascii")
        with language(self.language):
            line = tr(RUN_TO_MOVE)
        return (f'<div class="{SAVED_CLASS}"><img src="data:image/png;base64,{png}" '
                f'alt="{escape(self.alt_text(), quote=True)}"><p>{escape(line)}</p></div>')
