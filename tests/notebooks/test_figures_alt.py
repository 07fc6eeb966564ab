"""Every static figure of every notebook has a real text alternative, and the website writes it.

A static figure is an image/png output that is not an explorer (an explorer's picture carries
``Explorer.alt_text()``, tests/notebooks/test_saved_pictures.py). Each one is shown with
``attn.drawing.figures.show_figure(fig, alt)``: a picture widget whose title is the description (what
JupyterLab and Voilà show), the PNG with the description in the output's metadata as
``{"image/png": {"alt": ...}}`` (which the site's Sphinx extension, site/_ext/attn_site.py,
writes as the picture's ``alt``), and the description as ``text/plain`` (so nbval compares
it). The built site itself is checked in tests/delivery/test_site.py.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from PIL import Image

from attn.drawing.figures import check_alt, figure_bundle, figure_picture, show_figure
from attn.drawing.plotting import new_figure

from _pictures import VIEW, static_figures, widget_state

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
PATHS = sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
IDS = [str(p.relative_to(NOTEBOOKS)) for p in PATHS]


def _site_extension():
    spec = importlib.util.spec_from_file_location("attn_site", REPO / "site" / "_ext" / "attn_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


attn_site = _site_extension()


def figure_problems(nb: dict) -> list[str]:
    """What is wrong with the text alternatives of a notebook's static figures (empty if none)."""
    problems, state = [], widget_state(nb)
    for i, out in static_figures(nb):
        text = "".join(out["data"].get("text/plain", ""))
        alt = out.get("metadata", {}).get("image/png", {}).get("alt")
        if alt is None:
            problems.append(f"cell {i}: a figure with no alt in its metadata (text/plain {text[:60]!r}); "
                            "show it with attn.drawing.figures.show_figure(fig, alt)")
            continue
        try:
            check_alt(alt)
        except (TypeError, ValueError) as e:
            problems.append(f"cell {i}: {e}")
        if text != alt:
            problems.append(f"cell {i}: text/plain {text[:60]!r} is not the alt {alt[:60]!r}")
        if VIEW in out["data"]:  # the picture widget JupyterLab, Voila and the site show
            model = state.get(out["data"][VIEW]["model_id"])
            if model is None:
                problems.append(f"cell {i}: the picture widget is not in the saved widget state")
            elif model["state"].get("tooltip") != alt:
                problems.append(f"cell {i}: the picture widget's title {model['state'].get('tooltip')!r:.60} "
                                "is not the alt")
    return problems


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_every_static_figure_has_a_description(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = figure_problems(nb)
    assert problems == [], f"{path.relative_to(NOTEBOOKS)}: " + "; ".join(problems)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_no_cell_shows_a_figure_without_its_description(path):
    """In the code itself, so a new figure is caught before the notebook is run: no cell ends
    in ``plt.show()`` or in a bare figure (both leave the picture without a text)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        lines = [line for line in "".join(cell["source"]).splitlines() if line.strip()]
        assert not any(line.strip() == "plt.show()" for line in lines), (
            f"{path.name} cell {i}: plt.show() shows a figure without a description; "
            "use attn.drawing.figures.show_figure(fig, alt)")
        assert not (lines and lines[-1].strip() == "fig"), (
            f"{path.name} cell {i}: a bare `fig` shows the figure without a description; "
            "use attn.drawing.figures.show_figure(fig, alt)")


def test_the_notebooks_have_static_figures():
    """The course's 21 static figures (at the time of writing); a miscount means the test
    above looks at nothing."""
    count = sum(len(static_figures(json.loads(p.read_text(encoding="utf-8")))) for p in PATHS)
    assert count >= 20, (f"{count} static figures found in the notebooks, the course has 21: static_figures "
                         f"(tests/_pictures.py) no longer finds show_figure's outputs")


# --- attn.drawing.figures -------------------------------------------------------------------------

GOOD = ("A heatmap of attention weights: rows are the six queries, columns the six keys; "
        "each row puts most of its weight on the word before it.")


@pytest.mark.parametrize("alt, error", [
    (None, TypeError),
    ("<Figure size 720x244.8 with 2 Axes>", ValueError),
    ("_images/e5bc4395ad9e408b9d76531af39d0c7f477d17bd45eadd9daf4098d33e7080af.png", ValueError),
    ("A heatmap: rows are queries, columns keys.", ValueError),  # too short to say what it shows
    (GOOD.replace("A heatmap", "A picture"), ValueError),  # no type
    ("A heatmap of attention weights over the chapter's sentence; most of each query's weight "
     "goes to the word before it, a dark line under the diagonal.", ValueError),  # no axes
])
def test_check_alt_rejects_what_says_nothing(alt, error):
    with pytest.raises(error, match="alt"):
        check_alt(alt)


def test_check_alt_accepts_a_description_and_folds_whitespace():
    assert check_alt(GOOD.replace(": rows", ":\n   rows")) == GOOD


def test_figure_bundle_holds_png_and_the_same_text_twice():
    fig = new_figure(3, 2, dpi=50)
    fig.add_subplot().plot([0, 1], [1, 0])
    data, metadata = figure_bundle(fig, GOOD)
    assert set(data) == {"image/png", "text/plain"}
    assert data["text/plain"] == metadata["image/png"]["alt"] == GOOD
    width, height = Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).size
    assert 0 < width <= 3 * 50 and 0 < height <= 2 * 50  # tight bounding box at the figure's dpi
    with pytest.raises(TypeError, match="fig"):
        figure_bundle("figure.png", GOOD)
    with pytest.raises(ValueError, match="alt"):
        figure_bundle(fig, "figure.png")


def test_figure_picture_is_a_widget_titled_by_the_description():
    fig = new_figure(3, 2, dpi=50)
    fig.add_subplot().plot([0, 1], [1, 0])
    picture, bundle, metadata = figure_picture(fig, GOOD)
    assert set(bundle) == {VIEW, "image/png", "text/plain"} and bundle["text/plain"] == GOOD
    assert picture.tooltip == GOOD and picture.format == "png"
    assert bytes(picture.value) == base64.b64decode(bundle["image/png"])  # the same picture twice
    assert metadata == {"image/png": {"alt": GOOD}}


def test_show_figure_displays_one_output_and_closes_a_pyplot_figure(monkeypatch):
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append((a, k)))
    fig, ax = plt.subplots(figsize=(2, 2), dpi=40)
    ax.plot([0, 1])
    show_figure(fig, GOOD)
    (args, kwargs), = shown
    assert set(args[0]) == {VIEW, "image/png", "text/plain"} and args[0]["text/plain"] == GOOD
    assert kwargs == {"raw": True, "metadata": {"image/png": {"alt": GOOD}}}
    assert fig.number not in plt.get_fignums()  # the inline backend will not show it again


# --- the website's Sphinx extension -------------------------------------------------------

def _png(colour: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), colour).save(buf, format="PNG")
    return buf.getvalue()


def _notebook(outputs: list[dict]) -> dict:
    return {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": outputs}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_figure_alts_finds_figures_by_widget_and_by_file():
    red, blue = _png("red"), _png("blue")
    nb = _notebook([
        {"output_type": "display_data", "metadata": {"image/png": {"alt": GOOD}},
         "data": {"image/png": base64.b64encode(red).decode(), "text/plain": GOOD}},
        {"output_type": "display_data", "metadata": {"image/png": {"alt": GOOD}},
         "data": {VIEW: {"model_id": "f" * 32}, "image/png": base64.b64encode(blue).decode()}},
        {"output_type": "display_data", "metadata": {},  # no description: not a static figure
         "data": {"image/png": base64.b64encode(blue).decode(), "text/plain": "<Figure size 4x3>"}},
        {"output_type": "execute_result", "metadata": {},  # an explorer
         "data": {VIEW: {"model_id": "e" * 32}, "image/png": base64.b64encode(blue).decode()}},
    ])
    by_widget, by_file = attn_site.figure_alts(nb)
    assert by_widget == {"f" * 32: (base64.b64encode(blue).decode(), GOOD)}
    assert by_file == {hashlib.sha256(red).hexdigest(): GOOD}


def test_the_extension_writes_the_alt_into_the_doctree(tmp_path):
    red, blue = _png("red"), _png("blue")
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps(_notebook([
        {"output_type": "display_data", "metadata": {"image/png": {"alt": GOOD}},
         "data": {"image/png": base64.b64encode(red).decode()}},
        {"output_type": "display_data", "metadata": {"image/png": {"alt": GOOD + ' "quoted"'}},
         "data": {VIEW: {"model_id": "f" * 32}, "image/png": base64.b64encode(blue).decode()}}])))
    doctree = new_document("page", get_default_settings(Parser))
    name = f"_build/jupyter_execute/{hashlib.sha256(red).hexdigest()}.png"
    script = '<script type="%s">{"model_id": "%s"}</script>'
    doctree += [nodes.image(uri=name), nodes.image(uri="_static/logo.svg", alt="logo"),
                nodes.raw(text=script % (VIEW, "f" * 32), format="html"),
                nodes.raw(text=script % (VIEW, "e" * 32), format="html")]  # an explorer: kept
    app = SimpleNamespace(env=SimpleNamespace(docname="page", doc2path=lambda docname: str(path)))
    attn_site._figure_alt(app, doctree)
    assert [img.get("alt") for img in doctree.findall(nodes.image)] == [GOOD, "logo"]
    raws = [r.astext() for r in doctree.findall(nodes.raw)]
    assert raws[0] == (f'<img class="attn-figure" alt="{GOOD} &quot;quoted&quot;" '
                       f'src="data:image/png;base64,{base64.b64encode(blue).decode()}">')
    assert raws[1] == script % (VIEW, "e" * 32)


# --- Voilà: the app mode shows each figure with its description ---------------------------

# The static figures in the page: every picture of an output that is not an explorer's (a
# picture widget from show_figure, or a plain image/png output), with its title or alt.
_FIGURE_TITLES = """() => [...document.querySelectorAll('.jp-OutputArea-output img')]
  .filter((img) => !img.closest('.widget-vbox'))
  .map((img) => img.getAttribute('title') || img.getAttribute('alt'))"""


def voila_figure_titles(notebook: Path, workdir: Path, browser, expected: int) -> list[str | None]:
    """Run ``notebook`` in Voilà and return the text alternative (title or alt) of each static
    figure's picture, once ``expected`` of them are shown."""
    from tools.lab import running_voila

    with running_voila(notebook, workdir) as url:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(url, timeout=300_000)
            page.wait_for_function(f"() => ({_FIGURE_TITLES})().length >= {expected}", timeout=300_000)
            return page.evaluate(_FIGURE_TITLES)
        finally:
            context.close()


@pytest.mark.browser
@pytest.mark.slow
def test_voila_shows_06s_figures_with_their_descriptions(browser, tmp_path):
    """The issue's case: in Voilà, notebook 06's five static figures had no text alternative."""
    path = NOTEBOOKS / "06_visualization.ipynb"
    alts = [out.get("metadata", {}).get("image/png", {}).get("alt")
            for _, out in static_figures(json.loads(path.read_text(encoding="utf-8")))]
    assert len(alts) == 5, (f"notebooks/06_visualization.ipynb stores {len(alts)} static figures, this test expects 5: "
                            f"if 06 draws another number now, write it here")
    titles = voila_figure_titles(path, tmp_path, browser, len(alts))
    assert None not in titles, f"Voilà shows figures without a text alternative: {titles}"
    for title in titles:
        check_alt(title)
    assert titles == alts, (f"Voilà shows other descriptions than notebooks/06_visualization.ipynb stores ({titles} against "
                            f"{alts}): re-execute 06 (python -m tools.execute 06_visualization)")
