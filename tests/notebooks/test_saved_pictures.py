"""The explorers seen without a kernel: their picture and text in the saved notebooks.

An explorer's output bundle holds the widget view (live with a kernel), an HTML of the view it
was displayed with (its PNG, with its text alternative, and a line that says to run the cell
to move the controls), and a text saying what it shows (``Explorer._repr_mimebundle_``). These
tests read the committed notebooks (no kernel) and convert them to HTML the way a viewer
without a widget manager does.
"""
from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from PIL import Image

from attn.language import language as in_language, tr
from attn.widgets import Explorer
from attn.widgets.scaling import scaling_explorer
from attn.widgets._base import RUN_TO_MOVE, html_to_text

from _pictures import explorer_outputs

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
ALL = sorted(p for p in NB_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


_SAVED_PNG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="')


def saved_png(html: str) -> str:
    """The base64 PNG of an explorer's saved HTML (``Explorer.saved_html``)."""
    found = _SAVED_PNG.findall(html)
    assert len(found) == 1, f"expected one picture in the explorer's HTML, found {len(found)}"
    return found[0]


LESSONS_WITH_EXPLORERS = [p for p in ALL if explorer_outputs(json.loads(p.read_text(encoding="utf-8")))]


def test_the_course_has_explorers_in_every_lesson():
    names = {p.name for p in LESSONS_WITH_EXPLORERS}
    missing = sorted({f"0{i}_" for i in range(1, 9)} - {n[:3] for n in names})
    assert not missing, (f"no saved explorer in the lessons {missing}: each lesson shows its explorer (a cell ending "
                         f"with it, tagged nbval-ignore-output); re-execute the lesson (python -m tools.execute NN_topic)")


@pytest.mark.parametrize("path", LESSONS_WITH_EXPLORERS, ids=lambda p: p.name)
def test_every_saved_explorer_holds_the_png_of_its_view(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for out, state_png in explorer_outputs(nb):
        data = out["data"]
        assert set(data) == {VIEW, "text/html", "text/plain"}, f"{path.name}: an explorer output of {sorted(data)}"
        html = "".join(data["text/html"])
        png = base64.b64decode(saved_png(html))  # the picture is stored once (no image/png beside it)
        # the same picture as the live view it was displayed with (the widget state's buffer)
        assert np.array_equal(_pixels(png), _pixels(state_png)), (
            f"{path.name}: an explorer's saved PNG is not the picture of its saved view: re-execute it "
            f"(python -m tools.execute {path.relative_to(NB_DIR.parent)})")
        assert _pixels(png).std() > 0, f"{path.name}: the explorer's PNG is blank"
        text = "".join(data["text/plain"])
        prefix = "图：" if "zh" in path.relative_to(NB_DIR).parts else "Picture: "  # tr("Picture: {title}")
        assert text.startswith(prefix) and "Explorer(" not in text, (
            f"{path.name}: an explorer's text is {text[:200]!r}, not its description starting {prefix!r}: build it "
            f"with attn.widgets (its _repr_mimebundle_ writes it) and re-execute")
        code = "zh" if "zh" in path.relative_to(NB_DIR).parts else "en"
        with in_language(code):
            assert html.endswith(f"<p>{tr(RUN_TO_MOVE)}</p></div>"), (
                f"{path.name}: an explorer's saved picture does not end with the line {tr(RUN_TO_MOVE)!r}: build it "
                f"with attn.widgets and re-execute (python -m tools.execute {path.relative_to(NB_DIR.parent)})")
    assert path.stat().st_size < 1_000_000, (f"{path.name}: {path.stat().st_size:,} bytes, at most 1 MB: show fewer "
                                             f"explorers or smaller pictures")


@pytest.mark.parametrize("path", LESSONS_WITH_EXPLORERS, ids=lambda p: p.name)
def test_html_without_widget_state_shows_every_explorer_picture(path):
    """``jupyter nbconvert --to html`` of the notebook stripped of its widget state (as a
    repository page or nbviewer sees it): each explorer's PNG is in the page, no widget repr."""
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    pngs = [saved_png("".join(out["data"]["text/html"])) for out, _ in explorer_outputs(nb)]
    nb.metadata.pop("widgets")
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    for png in pngs:
        assert f'src="data:image/png;base64,{png}"' in html, f"{path.name}: an explorer's picture is missing"
    assert "Explorer(children=" not in html, (f"{path.name}: without its widget state the page shows an explorer's "
                                              f"repr: every explorer must come from attn.widgets (its _repr_mimebundle_)")


def test_bundle_holds_widget_view_html_and_text_and_the_png_is_the_view(language):
    ex = scaling_explorer()
    ex.controls["d_k"].value = 4  # what is displayed is the view at display time
    bundle = ex._repr_mimebundle_()
    assert set(bundle) == {VIEW, "text/html", "text/plain"}
    assert bundle[VIEW]["model_id"] == ex.model_id
    assert base64.b64decode(saved_png(bundle["text/html"])) == bytes(ex.image.value)
    assert bundle["text/plain"] == ex.alt_text()
    # the line under the picture, in the explorer's language: "▶ Run this cell to move the controls."
    line = {"en": "▶ Run this cell to move the controls.", "zh": "▶ 运行这个单元格，即可拖动控件。"}[language]
    assert bundle["text/html"].endswith(f"<p>{line}</p></div>")
    if language != "en":
        return
    assert "d_k = 4" in bundle["text/plain"] and "Scaled vs unscaled" in bundle["text/plain"]


def test_alt_text_follows_the_readout_and_is_the_pictures_tooltip():
    ex = scaling_explorer()
    before = ex.image.tooltip
    ex.controls["d_k"].value = 16
    assert ex.image.tooltip == ex.alt_text() != before
    assert "d_k = 16" in ex.image.tooltip
    assert ex.image.get_state()["description"] == ""  # lets the front end apply the tooltip


def test_html_to_text_keeps_rows_cells_and_breaks():
    html = "<p><b>Row</b> of x</p><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>x<br>y"
    assert html_to_text(html) == "Row of x\na | b\n1 | 2\nx\ny"


def test_a_closed_explorer_has_no_bundle():
    ex = scaling_explorer()
    ex.close()
    assert ex._repr_mimebundle_ is None  # ipywidgets removes the repr of a closed widget
    assert isinstance(ex, Explorer)
