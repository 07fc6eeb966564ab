"""The course's live forms besides JupyterLab itself: slides (presenting from JupyterLab with
jupyterlab-slideshow; the deck without code, Voilà's course-deck template), app mode (Voilà),
and what a learner meets in JupyterLab before and after running a notebook (axe-core).

- Slides, both routes, on notebook 05 (its explorer has a slider and toggle buttons), with
  every request outside the server refused: the explorer's slide shows the live explorer;
  ArrowRight on its slider, and the key that chooses a toggle button, redraw the picture and
  the slide stays; once the keys are handed back to the slides (a click on the explorer's
  picture in JupyterLab, Esc in the deck), Space turns the slide; nothing was asked from outside.
  From JupyterLab: run, select the explorer's cell, the deck button of the notebook's toolbar.
  The deck: the Chinese twin (notebooks/zh/05_pytorch_implementation.ipynb), opened as a
  Binder deck link opens it (``?template=course-deck``), code hidden.
- Voilà, app mode and the deck: the page's language (``<html lang>``) is the notebook's, "en"
  or, for the Chinese edition, "zh-CN" (as on the website), in both templates.
- Voilà (``make app NB=...``), with every request outside its server refused: nothing is
  asked from outside (the course's template drops the CDN style sheets); every control of the explorer is reached with Tab alone and
  moved with the keyboard alone, and each move changes the picture.
- Every explorer of the course, in each language, is proven in JupyterLab by
  tests/delivery/test_browser.py (every control moved, heard, checked by axe-core): issue 30's decision
  proves each explorer's front end once per language, there rather than in a Voilà page too.
- JupyterLab: before the kernel runs, a freshly opened (untrusted) notebook shows each
  explorer's saved PNG; after Run All, axe-core finds no serious or critical violation in the
  course's content (JupyterLab's own violations are listed, not counted).

Without Chromium the tests are skipped, saying how; under CI they fail instead.
"""
from __future__ import annotations

import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from _support import unavailable
from tools.lab import VIEWPORT, Notebook, notebooks_folder, running_voila

from _browser import AXE_OPTIONS, SERIOUS, add_axe, refuse_outside

pytestmark = pytest.mark.browser

# Run in JupyterLab once, then checked by axe-core and presented as slides (lab_lesson below)
LAB_NOTEBOOK = "05_pytorch_implementation.ipynb"  # a slider, a drop-down and toggle buttons
DECK_NOTEBOOK = "zh/05_pytorch_implementation.ipynb"  # the deck in the Chinese edition
DECK_TEMPLATE = "course-deck"  # deploy/app-template/course-deck
APP_TEMPLATE = "course"  # deploy/app-template/course, Voilà's default (deploy/app-template/voila.json)
PAGE_LANGUAGE = {"en": "en", "zh": "zh-CN"}  # <html lang> of each edition, as the website writes it
LANGUAGE_NOTEBOOK = "00_start_here.ipynb"  # its twins, in both templates
APP_NOTEBOOK = "05_pytorch_implementation.ipynb"  # a drop-down, a slider and toggle buttons
UNTRUSTED_NOTEBOOK = "03_worked_example.ipynb"  # opened, never run or saved by this module
IN_OUTPUT = ".jp-OutputArea-output"


def _wait_or_fail(page, message: str, script: str, *, arg: object = None, timeout: float = 10) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=timeout * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"{message} (waited {timeout} s)") from None


# --- Slides: presenting from JupyterLab, and the deck without code --------------------------

# The keys that move each control, as a teacher presses them in front of the class. In the deck
# a toggle button takes Space; in JupyterLab's deck Space turns the slide (jupyterlab-slideshow
# binds it, and ipywidgets' buttons let it through), so there it takes Enter.
_SLIDER = (".widget-slider .noUi-handle", "ArrowRight")
_TOGGLE = (".widget-toggle-buttons button:not(.mod-active)", "Space")
_TOGGLE_IN_LAB = (".widget-toggle-buttons button:not(.mod-active)", "Enter")


def _key_moves_the_control_not_the_slide(page, shown: str, which_slide: str,
                                         control: tuple[str, str]) -> None:
    """On the slide shown (``shown``: a CSS selector of it), press ``control``'s key on it
    (``(CSS selector, key)``): the explorer must redraw and the slide (``which_slide``, a
    script) stay."""
    selector, key = control
    slide = page.evaluate(which_slide)
    picture = page.locator(f"{shown} img.widget-image").first.element_handle()
    before = picture.get_attribute("src")
    page.locator(f"{shown} {selector}").first.focus()
    page.keyboard.press(key)
    _wait_or_fail(page, f"{key} on {selector} neither redrew the explorer nor turned the slide",
                  f"""([img, src, slide]) => (img.src !== src && img.complete)
                      || JSON.stringify(({which_slide})()) !== JSON.stringify(slide)""",
                  arg=[picture, before, slide], timeout=30)
    assert page.evaluate(which_slide) == slide, f"{key} on {selector} turned the slide"
    assert picture.get_attribute("src") != before, f"{key} on {selector} did not redraw the explorer"


def _space_turns_the_slide(page, which_slide: str) -> None:
    slide = page.evaluate(which_slide)
    page.keyboard.press("Space")  # the next slide, sub-slides first, in both decks
    _wait_or_fail(page, f"Space did not turn the slide {slide}",
                  f"(slide) => JSON.stringify(({which_slide})()) !== JSON.stringify(slide)", arg=slide)


# jupyterlab-slideshow shows the cells of the current slide (class jp-deck-mod-visible).
_LAB_SLIDE = """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')]
  .flatMap((c, i) => c.classList.contains('jp-deck-mod-visible') ? [i] : [])"""
_LAB_SHOWN = ".jp-Cell.jp-deck-mod-visible"


@pytest.fixture(scope="module")
def lab_lesson(lab, browser):
    """LAB_NOTEBOOK run in JupyterLab (Run All, no error output), in a page that refuses every
    request outside the server: (the page, the notebook, the page's uncaught errors, the refused
    requests). Its tests check it in the order of the file: axe-core first, then the slides."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    refused = refuse_outside(page, lab.url)
    try:
        nb = Notebook(page, lab, LAB_NOTEBOOK)
        nb.open(log_console=False)
        nb.run_all()
        assert nb.error_outputs() == [], nb.error_outputs()
        yield page, nb, errors, refused
    finally:
        context.close()
        lab.shutdown_kernels()


def _stop_the_deck(page) -> None:
    """The deck's on/off is a user setting that JupyterLab saves: left on, the next notebook
    opened would open as a deck."""
    if page.locator(".jp-deck-mod-stop").count():
        with page.expect_response(lambda r: "api/settings/jupyterlab-slideshow" in r.url
                                  and r.request.method == "PUT"):
            page.locator(".jp-deck-mod-stop").first.click()


def test_axe_in_lab_finds_no_serious_violation_in_the_course(lab_lesson):
    page, nb, _errors, _refused = lab_lesson
    assert nb.widget_views() >= 1
    add_axe(page)
    found = page.evaluate("""async (options) => (await axe.run(document, options)).violations.flatMap((v) =>
        v.nodes.map((n) => ({id: v.id, impact: v.impact, target: n.target.join(' '),
          course: !!document.querySelector(n.target.join(' '))?.closest(
              '.jp-OutputArea-output, .jp-MarkdownOutput, .jp-RenderedMarkdown')})))""", AXE_OPTIONS)
    lab_own = [f for f in found if not f["course"]]
    course = [f for f in found if f["course"]]
    for label, group in (("JupyterLab's own", lab_own), ("the course's", course)):
        rules = sorted({(f["impact"], f["id"]) for f in group})
        for impact, rule in rules:
            nodes = [f["target"] for f in group if f["id"] == rule]
            print(f"axe, {label}: {impact}: {rule} ({len(nodes)} nodes, e.g. {nodes[0][:100]})")
    serious = [f for f in course if f["impact"] in SERIOUS]
    assert serious == [], f"axe-core in JupyterLab, the course's content: {serious}"


def test_lab_slideshow_keeps_the_explorer_live(lab_lesson):
    """Presenting from JupyterLab, as docs/teaching.md says (module docstring)."""
    page, nb, errors, refused = lab_lesson
    explorer = nb.panel.locator(".jp-CodeCell").filter(has=page.locator(".widget-toggle-buttons")).first
    explorer.locator(".jp-InputPrompt").click()  # the deck starts at the selected cell
    t0 = time.monotonic()
    try:
        nb.panel.locator('.jp-NotebookPanel-toolbar [data-command="deck:toggle"]').click()
        _wait_or_fail(page, "the deck did not show the explorer's slide",
                      f"() => document.querySelector('{_LAB_SHOWN} .widget-toggle-buttons') !== null", timeout=30)
        print(f"JupyterLab: the deck on in {time.monotonic() - t0:.1f} s, on cells {page.evaluate(_LAB_SLIDE)}")
        for control in (_SLIDER, _TOGGLE_IN_LAB):
            _key_moves_the_control_not_the_slide(page, _LAB_SHOWN, _LAB_SLIDE, control)
        page.locator(f"{_LAB_SHOWN} img.widget-image").first.click()  # the keys back to the slides
        _space_turns_the_slide(page, _LAB_SLIDE)
    finally:
        _stop_the_deck(page)
    assert refused == [], f"JupyterLab, the notebook and its slides asked outside the server for: {refused}"
    assert errors == [], errors


_DECK_SLIDE = "() => { const i = Reveal.getIndices(); return [i.h, i.v]; }"
_DECK_SHOWN = ".reveal section.present:not(.stack)"  # a vertical stack is "present" too


def _need_the_deck() -> None:
    installed = Path(sys.prefix) / "share/jupyter/voila/templates" / DECK_TEMPLATE / "static/reveal.js/dist/reveal.js"
    if not installed.exists():
        unavailable(f"the deck's template is not installed ({installed} is missing): `make deck` "
                    "installs it (npm ci --prefix deploy/app-template, then python -m tools.jupyter_config)")


def test_deck_keeps_the_explorer_live_and_hides_the_code(tmp_path, browser):
    """The deck without code, on the Chinese twin (module docstring)."""
    _need_the_deck()
    with running_voila(notebooks_folder() / DECK_NOTEBOOK, tmp_path) as url:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        refused = refuse_outside(page, url)
        t0 = time.monotonic()
        page.goto(f"{url}?template={DECK_TEMPLATE}", timeout=180_000)
        _wait_or_fail(page, "the deck did not start",
                      "() => window.Reveal && Reveal.isReady() && document.querySelector('.reveal img.widget-image')",
                      timeout=180)
        print(f"Voilà deck: {DECK_NOTEBOOK} ready in {time.monotonic() - t0:.1f} s")
        assert page.evaluate("() => document.documentElement.lang") == PAGE_LANGUAGE["zh"]
        title = page.locator(_DECK_SHOWN).inner_text()
        assert title.startswith("05 · ") and any("\u4e00" <= ch <= "\u9fff" for ch in title), title[:120]
        assert page.locator(".jp-CodeCell .jp-InputArea, .jp-CodeMirrorEditor").count() == 0  # code hidden
        assert "mask_explorer(" not in page.locator("body").inner_text()
        # to the explorer's slide, as its number in the URL would (#/h/v)
        page.evaluate("""() => { const s = document.querySelector('.reveal .widget-toggle-buttons').closest('section');
                                 const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v); }""")
        for control in (_SLIDER, _TOGGLE):
            _key_moves_the_control_not_the_slide(page, _DECK_SHOWN, _DECK_SLIDE, control)
        page.keyboard.press("Escape")  # the keys back to the slides
        _space_turns_the_slide(page, _DECK_SLIDE)
        context.close()
    assert refused == [], f"the deck asked outside its server for: {refused}"
    assert errors == [], errors


# --- Voilà ---------------------------------------------------------------------------------

def test_voila_page_language_is_the_notebooks(tmp_path):
    """App mode and the deck write ``<html lang>`` in the notebook's language: "zh-CN" for the
    Chinese edition, "en" otherwise (the templates read the language that the first code cell
    sets, as tools/twins.py requires of every notebook). On both twins of LANGUAGE_NOTEBOOK, cut
    after that cell (what the templates read; a page that runs in about two seconds)."""
    import nbformat

    _need_the_deck()
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for language, path in (("en", notebooks_folder() / LANGUAGE_NOTEBOOK),
                           ("zh", notebooks_folder() / "zh" / LANGUAGE_NOTEBOOK)):
        nb = nbformat.read(path, as_version=4)
        first_code = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
        nb.cells = nb.cells[:first_code + 1]
        nbformat.write(nb, folder / f"{language}.ipynb")
    got, want = {}, {}
    with running_voila(folder, tmp_path) as url:
        for language in PAGE_LANGUAGE:
            for template in (APP_TEMPLATE, DECK_TEMPLATE):
                page_url = f"{url}voila/render/{language}.ipynb?template={template}"
                with urllib.request.urlopen(page_url, timeout=120) as response:
                    html = response.read().decode()
                assert ("Reveal.initialize(" in html) == (template == DECK_TEMPLATE), (
                    f"{page_url}: not the page of the template {template}")
                tag = re.search(r"<html\b[^>]*>", html)
                got[language, template] = tag and tag.group(0)
                want[language, template] = f'<html lang="{PAGE_LANGUAGE[language]}">'
    assert got == want


# Which control the focused element belongs to: "kind:index" (index among the explorer's
# controls of that kind), or "" when the focus is elsewhere.
_FOCUSED = """() => { const a = document.activeElement; if (!a) return '';
  for (const [kind, sel] of [['slider', '.widget-slider'], ['dropdown', '.widget-dropdown'],
                             ['toggle', '.widget-toggle-buttons'], ['checkbox', '.widget-checkbox'],
                             ['text', '.widget-text']]) {
    const all = [...document.querySelectorAll(sel)];
    const i = all.findIndex((w) => w.contains(a));
    if (i >= 0) return kind + ':' + i;
  }
  return ''; }"""
_CONTROLS = """() => [['slider', '.widget-slider'], ['dropdown', '.widget-dropdown'],
  ['toggle', '.widget-toggle-buttons'], ['checkbox', '.widget-checkbox'], ['text', '.widget-text']]
  .flatMap(([kind, sel]) => [...document.querySelectorAll(sel)].map((_, i) => kind + ':' + i))"""
_PICTURE = "() => { const i = document.querySelector('img.widget-image'); return i ? i.src : null; }"


@pytest.fixture(scope="module")
def voila_page(tmp_path_factory, browser):
    work = tmp_path_factory.mktemp("voila")
    with running_voila(notebooks_folder() / APP_NOTEBOOK, work) as url:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.refused = refuse_outside(page, url)
        t0 = time.monotonic()
        page.goto(url, timeout=180_000)
        page.wait_for_selector("img.widget-image", timeout=180_000)
        page.wait_for_function("() => [...document.images].every((i) => i.complete && i.naturalWidth)")
        print(f"Voilà: {APP_NOTEBOOK} ready in {time.monotonic() - t0:.1f} s")
        yield page, errors
        context.close()


def test_voila_hides_the_code_and_shows_the_explorer(voila_page):
    page, errors = voila_page
    assert page.evaluate("() => document.documentElement.lang") == PAGE_LANGUAGE["en"]
    assert page.locator(".jp-CodeCell .jp-InputArea, .jp-CodeMirrorEditor").count() == 0  # code hidden
    assert "mask_explorer(" not in page.locator("body").inner_text()
    assert page.locator("img.widget-image").count() == 1
    assert errors == [], errors


def test_voila_loads_nothing_from_outside(voila_page):
    """The course's template (deploy/app-template/course) drops the lab template's CDN style sheets."""
    page, _ = voila_page
    assert page.refused == [], f"app mode asked outside its server for: {page.refused}"


# Keys that move a focused control of each kind, forwards then backwards (a control may
# start at its last value). A toggle button group: Tab moves between its buttons, Space chooses.
_KEYS = {"slider": ("ArrowRight", "ArrowLeft"), "dropdown": ("ArrowDown", "ArrowUp"),
         "toggle": ("Space",), "checkbox": ("Space",), "text": ("ArrowUp", "ArrowDown")}


def _move_by_keyboard(page, kind: str) -> bool:
    """Press the keys of ``kind`` on the focused control until the explorer's picture changes."""
    if kind == "toggle" and page.evaluate("() => document.activeElement.classList.contains('mod-active')"):
        page.keyboard.press("Tab")  # the next button of the group: one not chosen yet
    for key in _KEYS[kind]:
        before = page.evaluate(_PICTURE)
        page.keyboard.press(key)
        try:
            page.wait_for_function("(src) => { const i = document.querySelector('img.widget-image');"
                                   " return i && i.src !== src && i.complete; }", arg=before, timeout=15_000)
            return True
        except Exception:  # playwright's TimeoutError: at the end of its range; the other way
            continue
    return False


def test_voila_every_control_reached_and_moved_by_keyboard(voila_page):
    page, errors = voila_page
    controls = page.evaluate(_CONTROLS)
    assert len(controls) >= 3, controls
    page.locator("body").click(position={"x": 5, "y": 5})
    reached = []
    for _ in range(60):  # Tab alone, from the top of the page
        page.keyboard.press("Tab")
        here = page.evaluate(_FOCUSED)
        if not here:
            continue
        if here not in reached:
            reached.append(here)
            assert _move_by_keyboard(page, here.split(":")[0]), f"{here}: no key moved it"
        if set(reached) == set(controls):
            break
    assert sorted(reached) == sorted(controls), f"reached by Tab: {reached}; controls: {controls}"
    assert errors == [], errors


# --- JupyterLab ----------------------------------------------------------------------------

def test_lab_shows_the_saved_picture_before_the_kernel_runs(lab, browser):
    """A notebook opened from disk is untrusted: JupyterLab shows the safe text/html of each
    explorer's output, its saved picture with the line "▶ Run this cell to move the controls."
    (not ``Explorer(children=...)``), until the cell runs again."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        nb = Notebook(page, lab, UNTRUSTED_NOTEBOOK)
        nb.open(log_console=False)
        shown = page.evaluate(f"""() => [...document.querySelectorAll('{IN_OUTPUT}')]
            .filter((o) => o.innerText.includes('Explorer(') || o.querySelector('img'))
            .map((o) => [o.dataset.mimeType || '', o.innerText.slice(0, 40)])""")
        assert ["text/html", "▶ Run this cell to move the controls."] in shown, shown
        assert not any("Explorer(" in t for _, t in shown), shown
    finally:
        context.close()
        lab.shutdown_kernels()


def test_readme_gives_app_mode_for_every_notebook():
    """README.md: one app-mode command per notebook, and one Binder app-mode link once the
    repository's address is set (site/_config.yml), none before."""
    from tools.site import repository_url

    readme = (notebooks_folder().parent / "README.md").read_text(encoding="utf-8")
    url, branch = repository_url()
    for path in sorted(notebooks_folder().glob("*.ipynb")):
        assert f"make app NB={path.stem}" in readme, \
            f"README.md: no `make app NB={path.stem}`: run python -m tools.lesson sync"
        if url:
            link = (f"https://mybinder.org/v2/gh/{url.removeprefix('https://github.com/')}/{branch}"
                    f"?urlpath=voila/render/notebooks/{path.name}")
            assert link in readme, f"README.md: no app-mode link for {path.name}: run python -m tools.lesson sync"
    if not url:
        assert "mybinder.org/v2/gh" not in readme, \
            "README.md links Binder while site/_config.yml sets no repository address: run python -m tools.lesson sync"
