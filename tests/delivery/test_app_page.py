"""App mode's page of a lesson (tools/app.py, ``make app NB=02_qkv``): its explorers only.

Without a browser: the page is made from the lesson (its title, its first code cell, then each
explorer cell under the markdown cell above it, with an anchor, and the earlier cells that
compute what an explorer's call uses), holds no outputs, and a notebook without an explorer is
served as it is. In Voilà, in a real browser: the app page of 02 shows the explorer live at the
notebook's setting (the picture the notebook saved, not the still picture with its "run this
cell" line), under its anchor. How long that takes is a benchmark (benchmarks/app.py).
"""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _pictures import across_machines_problem, explorer_outputs
from tools import app
from tools.explorer_cells import explorer_cells

NOTEBOOKS = app.NOTEBOOKS


def _code(cell: dict) -> str:
    return "".join(cell["source"])


@pytest.mark.parametrize("name", ["02_qkv", "zh/02_qkv", "06_visualization"])
def test_app_page_is_the_first_code_cell_and_the_explorers(tmp_path, name):
    lesson = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    path = app.write_app(name, tmp_path)
    assert path == tmp_path / f"{name}.ipynb"
    page = json.loads(path.read_text(encoding="utf-8"))
    first = next(c for c in lesson["cells"] if c["cell_type"] == "code")
    (explorer,) = explorer_cells(NOTEBOOKS / f"{name}.ipynb")
    assert [c["cell_type"] for c in page["cells"]] == ["markdown", "code", "markdown", "code"]
    title, imports, heading, call = page["cells"]
    assert _code(title) == _code(lesson["cells"][0]).splitlines()[0] and _code(title).startswith("# ")
    assert _code(imports) == _code(first)
    assert _code(heading) == f'<a id="explorer-1"></a>\n\n{explorer.heading}'
    assert _code(call) == _code(lesson["cells"][explorer.cell])
    assert all(c.get("outputs") == [] for c in page["cells"] if c["cell_type"] == "code")
    assert "widgets" not in page["metadata"]


def test_app_page_computes_what_a_call_uses():
    """07's explorer uses the measured ``seconds`` and ``peak``; 08's the runs ``shipped`` and ``run``:
    the cells that compute them come before the explorer, and no other cell of the lesson."""
    for name, computing in (("07_efficiency", ["seconds = ", "peak = "]),
                            ("08_trained_heads", ["run = tiny.train_tiny", "shipped = "])):
        page = app.app_notebook(NOTEBOOKS / f"{name}.ipynb")
        codes = [_code(c) for c in page["cells"] if c["cell_type"] == "code"]
        calls = [c.call for c in explorer_cells(NOTEBOOKS / f"{name}.ipynb")]
        first_call = next(i for i, code in enumerate(codes) if "_explorer(" in code and "import" not in code)
        for start in computing:
            at = [i for i, code in enumerate(codes) if start in code]
            assert len(at) == 1 and 0 < at[0] < first_call, (name, start, at)
        assert len(codes) == 1 + len(computing) + len(calls), (name, [c[:30] for c in codes])


def test_a_notebook_without_explorer_is_served_whole(tmp_path):
    assert app.write_app("00_start_here", tmp_path) == NOTEBOOKS / "00_start_here.ipynb"
    assert not any(tmp_path.iterdir())


def test_a_name_that_is_no_notebook_says_what_to_give(tmp_path):
    with pytest.raises(ValueError, match=r"NB: expected a notebook of notebooks/ such as 02_qkv or zh/02_qkv, "
                                         r"got '2_qkv'"):
        app.write_app("2_qkv", tmp_path)


# --- in Voilà, in a real browser -----------------------------------------------------------

_SHOWN = """() => { const i = document.querySelector('.attn-explorer img.widget-image');
  return !!i && i.complete && i.naturalWidth > 0; }"""
_PIXELS = """async () => {
  const img = document.querySelector('.attn-explorer img.widget-image');
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  c.getContext('2d').drawImage(img, 0, 0);
  return c.toDataURL('image/png').split(',')[1];
}"""


@pytest.mark.browser
def test_app_page_of_02_shows_the_live_explorer_at_the_notebooks_setting(tmp_path, browser):
    from tools.lab import VIEWPORT, running_voila

    from _browser import refuse_outside

    page_path = app.write_app("02_qkv", tmp_path / "app")
    with running_voila(page_path, tmp_path) as url:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        refused = refuse_outside(page, url)
        try:
            page.goto(url, timeout=180_000)
            page.wait_for_function(_SHOWN, timeout=180_000)
            assert page.locator("#explorer-1").count() == 1, "no anchor for the explorer"
            assert page.locator(".attn-explorer .widget-slider").count() == 1  # live: its control
            assert "Run this cell" not in page.locator("body").inner_text()
            assert "scaling_explorer(" not in page.locator("body").inner_text()  # code hidden
            shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(page.evaluate(_PIXELS)))).convert("RGB"))
            lesson = json.loads((NOTEBOOKS / "02_qkv.ipynb").read_text(encoding="utf-8"))
            saved = np.asarray(Image.open(io.BytesIO(explorer_outputs(lesson)[0][1])).convert("RGB"))
            problem = across_machines_problem(shown, saved)
            assert problem is None, f"the app page does not start at the notebook's setting: {problem}"
            assert errors == [] and refused == [], (errors, refused)
        finally:
            context.close()
