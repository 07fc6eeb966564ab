"""Static figures with a text alternative: how a notebook cell shows a matplotlib picture.

A static figure (a picture no explorer redraws) is shown with ``show_figure(fig, alt)``, where
``alt`` says what a reader who cannot see it needs: its type (heatmap, line plot, bar chart),
its axes, and what it shows, the claim the prose makes about it (``check_alt`` enforces the
first two, in English or in Chinese: 热力图, 折线图, 柱状图; 行, 列, 横轴, 纵轴). The cell's
output is one bundle, as an explorer's is:

- the view of a picture widget (``ipywidgets.Image``) whose ``title`` is ``alt``: what
  JupyterLab and Voilà show, and what screen readers and axe-core take as its text
  alternative. Their renderer of a plain image/png output writes none at all, whatever the
  bundle or its metadata hold (JupyterLab 4.6; Voilà 0.5 renders outputs with it too);
- the PNG, for viewers without a widget manager (an untrusted notebook, nbviewer,
  ``nbconvert --to html``), with ``{"image/png": {"alt": alt}}`` in the output's metadata:
  the key nbconvert's classic HTML template writes as ``alt``, and the one the website's
  Sphinx extension (site/_ext/attn_site.py) reads to put the figure on the page, and so in
  the handouts, as an ``<img alt=...>`` instead of the widget;
- ``alt`` as the ``text/plain``: what nbval compares (so an edited description that was not
  re-run fails the tests), and what a text-only viewer shows instead of
  ``<Figure size 720x244.8 with 2 Axes>``.

Explorers (``attn.widgets``) do not use this: their picture carries ``Explorer.alt_text()``.
"""
from __future__ import annotations

import base64
import io
import re
import sys

import ipywidgets
from matplotlib.figure import Figure
from traitlets import Unicode

from .._text import width

__all__ = ["Picture", "FIGURE_TYPES", "AXIS_WORDS", "FIGURE_TYPES_ZH", "AXIS_PATTERNS_ZH", "check_alt",
           "figure_bundle", "figure_picture", "show_figure"]

# A description names one of these types of picture (a diagram: attn.drawing.diagrams) ...
FIGURE_TYPES = ("heatmap", "line plot", "log-log plot", "bar chart", "scatter plot", "diagram")
# ... and its axes: a heatmap's rows and columns, a plot's x and y axes ("ms against n").
AXIS_WORDS = ("rows", "columns", "axis", "axes", "against")
# A Chinese description does the same in Chinese: heatmap, line plot, log-log, bar chart,
# scatter plot, diagram ...
FIGURE_TYPES_ZH = ("热力图", "热图", "折线图", "曲线图", "双对数", "柱状图", "条形图", "散点图", "示意图")
# ... and axes: any 轴 (横轴, 纵轴, x 轴, 坐标轴); 行 and 列 where they are the picture's rows and
# columns (每行, 各列, 行是 / 列为 / 行表示, 行和列; not 序列 "sequence" or 并行 "in parallel");
# "y 随 x 变化" for "y against x" (not 随机 "random").
AXIS_PATTERNS_ZH = (
    r"轴",
    r"[每各]一?[行列]",
    r"(?<![序排系队数并进运执流银平])[行列](?:是|为|表示|代表|对应)",
    r"行[和与、]列",
    r"随[^机，。；]{0,20}变化",
)
MIN_LENGTH = 80  # columns: a type, two axes and a claim do not fit in fewer (a Chinese character is 2)

_FILE_NAME = re.compile(r"^\S+\.(png|jpe?g|gif|svg|pdf)$", re.IGNORECASE)


class Picture(ipywidgets.Image):
    """An ``ipywidgets.Image`` whose ``tooltip`` becomes the picture's ``title``: its text
    alternative, read by screen readers (and accepted by axe-core's image-alt rule).

    The explorers' pictures are these too. ipywidgets 8.1's front end applies a tooltip only
    if the widget's ``description`` is empty, and Image has no ``description``, so setting one
    raises an error in the browser (jupyter-widgets/ipywidgets#3860); an empty, synced
    ``description`` lets it through.
    """

    description = Unicode("").tag(sync=True)


def check_alt(alt: object) -> str:
    """Check that ``alt`` is a real text alternative for a figure; return it, whitespace folded.

    Args:
        alt: the description: a str of at least ``MIN_LENGTH`` columns (a Chinese character
            takes two) that names a type of picture from ``FIGURE_TYPES`` and its axes (a word
            of ``AXIS_WORDS``), or, in Chinese, from ``FIGURE_TYPES_ZH`` and
            ``AXIS_PATTERNS_ZH``, and is not a file name or matplotlib's ``<Figure size ...>``
            text.

    Returns:
        ``alt`` on one line (runs of whitespace, newlines included, become one space).

    Raises:
        TypeError: ``alt`` is not a str.
        ValueError: it is too short, a file name or a figure's repr, or names no type or axes.
    """
    if not isinstance(alt, str):
        raise TypeError(f"alt: expected a str describing the figure, got {type(alt).__name__}")
    text = " ".join(alt.split())
    if text.startswith("<Figure") or _FILE_NAME.match(text):
        raise ValueError(f"alt: expected a description of the figure, got {text!r} "
                         "(a file name or a figure's repr says nothing about the picture)")
    if width(text) < MIN_LENGTH:
        raise ValueError(f"alt: expected at least {MIN_LENGTH} characters (the type of picture, "
                         f"its axes and what it shows; a Chinese character counts as two), "
                         f"got {width(text)}: {text!r}")
    lower = text.lower()
    if not any(t in lower for t in FIGURE_TYPES + FIGURE_TYPES_ZH):
        raise ValueError(f"alt: expected the type of picture, one of {FIGURE_TYPES} "
                         f"(in Chinese {FIGURE_TYPES_ZH}), in {text!r}")
    if not (any(re.search(rf"\b{w}\b", lower) for w in AXIS_WORDS)
            or any(re.search(pattern, text) for pattern in AXIS_PATTERNS_ZH)):
        raise ValueError(f"alt: expected the axes (a heatmap's rows and columns, a plot's x and y "
                         f"axes, 'y against x'; one of the words {AXIS_WORDS}; in Chinese 行 and "
                         f"列, 横轴 and 纵轴, 'y 随 x 变化') in {text!r}")
    return text


def figure_bundle(fig: Figure, alt: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The kernel-free part of the output that shows ``fig``: (data, metadata).

    Args:
        fig: a matplotlib figure (from pyplot or ``attn.drawing.plotting.new_figure``).
        alt: its description (see ``check_alt``).

    Returns:
        ``({"image/png": base64 PNG, "text/plain": alt}, {"image/png": {"alt": alt}})``: the
        PNG drawn as JupyterLab's inline backend draws it (the figure's dpi and colours, the
        bounding box tight around what is drawn), ``alt`` on one line.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
    text = check_alt(alt)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight",
                facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    return {"image/png": png, "text/plain": text}, {"image/png": {"alt": text}}


def figure_picture(fig: Figure, alt: str) -> tuple["ipywidgets.Image", dict[str, str], dict[str, dict[str, str]]]:
    """The picture widget of ``fig`` and the output bundle that shows it: (widget, data, metadata).

    Args:
        fig: a matplotlib figure.
        alt: its description (see ``check_alt``).

    Returns:
        The ``ipywidgets.Image`` (PNG value, ``alt`` as its title), and ``figure_bundle``'s
        data with the widget's view added, and its metadata.
    """
    data, metadata = figure_bundle(fig, alt)
    picture = Picture(value=base64.b64decode(data["image/png"]), format="png", tooltip=data["text/plain"])
    bundle = picture._repr_mimebundle_()  # IPython's display protocol: the widget view (and its repr)
    bundle.update(data)  # the PNG, and the description instead of the widget's repr
    return picture, bundle, metadata


def show_figure(fig: Figure, alt: str) -> None:
    """Show ``fig`` in the notebook with ``alt`` as its text alternative (one output).

    A pyplot figure is closed afterwards, so the inline backend does not show it a second time
    (without a description) when the cell ends.

    Args:
        fig: a matplotlib figure.
        alt: what it shows: type, axes and the claim (see ``check_alt``).
    """
    from IPython.display import display

    _, bundle, metadata = figure_picture(fig, alt)
    display(bundle, raw=True, metadata=metadata)
    pyplot = sys.modules.get("matplotlib.pyplot")  # loaded only if the notebook uses it
    if pyplot is not None:
        pyplot.close(fig)
