"""Every explorer of the course in real JupyterLab in a real browser, in both languages, as a
learner uses it.

pytest-playwright's fixtures drive Debian's Chromium, and one JupyterLab
(``tools.lab.running_lab``: a subprocess, see there why not pytest-jupyter's in-process server)
serves a temporary copy of notebooks/ for the run (both: tests/conftest.py). Into that copy the
test writes the notebook of every explorer (``gallery_notebook``: one cell for each
explorer of ``attn.widgets.EXPLORERS``, built with its defaults, in the language under test),
and in a fresh page: Edit > Clear Outputs of All Cells, Run > Run All Cells; every code cell
must run, no output may show an error, every explorer must render. Then every control of every
explorer is moved as a user would (slider keys, an option of a drop-down, a click, typing then
Enter), and after each move the explorer's picture (the bytes behind its <img>) must differ from
the one before; each control then goes back to where it was, and the picture must be the one
shown before. Errors fail the test wherever they show: error outputs in the notebook, Lab's Log
Console (where a widget callback's traceback goes), the browser's console, uncaught errors in
the page, and the server's log.
Heard as well as seen: every control has an accessible name, a slider's aria-valuetext is
"label = the value it shows", each readout is a polite live region and stays the same element
across the moves (so each redraw is announced), ArrowDown (ArrowUp from the last option) on a
focused drop-down changes its option and the picture while the focus stays on it, and axe-core
finds no serious or critical violation in the explorers.
In Chinese, every control is moved once, from where the previous moves left the explorer, and
every explorer's title and readout (before and after the moves) must hold Chinese, and so must
every control's name but a code name (``d_k``); what the language does not change is left to
the English run: the second move of a slider (End), going back to the explorer's settings and
finding its picture again, the arrow keys on a drop-down.

Why the gallery and not each lesson's Run All: strict nbval already executes every lesson, and
an explorer's front end is the same whichever lesson builds it (the lessons' own arguments are
checked in Python: tests/test_widgets_*.py, and on the website: tests/delivery/test_site_live.py), so each
explorer's front end is proven here once in each language, without executing a lesson twice in
one run (issue 30's decision). A lesson run in JupyterLab from Run All on: tests/delivery/test_hub.py,
tests/delivery/test_live_forms.py.
A screenshot goes to the test's tmp_path.

``make lab-zh`` itself (issue 33): started as a learner starts it, beside ``make lab``, its
JupyterLab's menus are Chinese, the English one's stay English, and it reopens none of the
English one's tabs.

Without /usr/bin/chromium the tests are skipped with a hint; under CI (CI=true) they fail
instead.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

from tools.lab import Notebook

from _browser import (check_move, check_no_errors, heard_problems, made_lab, run_all_checked, screenshot,
                      serious_in, watch_page)
from _support import REPO

LANGUAGES = ("en", "zh")
pytestmark = pytest.mark.browser

GALLERY = "every_explorer.ipynb"
_GALLERY_TITLE = {"en": "# Every explorer of the course", "zh": "# 课程中的全部交互控件"}


def gallery_notebook(language: str):
    """A notebook (nbformat) that builds every explorer of ``attn.widgets.EXPLORERS``, one cell
    each, with its defaults, in ``language`` ("en" or "zh"): each explorer's front end (its
    controls, picture, readout and what a screen reader hears) is the same as in its lesson,
    where it is built with the lesson's arguments (the explorers' tests in Python check those),
    and no lesson is executed a second time to reach it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = ([nbformat.v4.new_markdown_cell(_GALLERY_TITLE[language]),
                 nbformat.v4.new_code_cell("from attn.language import set_language\n"
                                           f"from attn.widgets import EXPLORERS\nset_language({language!r})")]
                + [nbformat.v4.new_code_cell(f"EXPLORERS[{name!r}]()") for name in explorer_names()])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def explorer_names() -> list[str]:
    """The names of the course's explorers, in the order of the lessons: "sentence (01)", ...;
    where the environment sets ATTN_LESSON=NN (python -m tools.check does), only those that
    lesson NN's explorer cells call (a lesson may show another lesson's explorer)."""
    from attn.widgets import EXPLORERS
    from tools.explorer_cells import explorer_cells
    from tools.lab import notebooks_folder

    lesson = os.environ.get("ATTN_LESSON")
    if lesson is None:
        return list(EXPLORERS)
    called = {cell.function for path in notebooks_folder().glob(f"{lesson}_*.ipynb") for cell in explorer_cells(path)}
    return [name for name, build in EXPLORERS.items() if build.__name__ in called]


# The readout (the explorer's last HTML child) marked before the moves; after them, still it?
_MARK_READOUT = "(v) => { [...v.querySelectorAll(':scope > .widget-html')].pop().attnMark = true; }"
_READOUT_KEPT = "(v) => [...v.querySelectorAll(':scope > .widget-html')].pop().attnMark === true"
CJK = re.compile(r"[\u4e00-\u9fff]")
# A control's name that is code, the same in both languages: a word with "_" or a digit (d_k).
CODE_NAME = re.compile(r"[A-Za-z]\w*(_|\d)\w*")
_TITLE = "(v) => (v.querySelector(':scope > .widget-html') || {innerText: ''}).innerText"
_READOUT = "(v) => ([...v.querySelectorAll(':scope > .widget-html')].pop() || {innerText: ''}).innerText"


def _not_chinese(explorer, controls, when: str) -> list[str]:
    """What of the explorer is not Chinese: its title, its readout, a control's name (but a
    code name)."""
    found = []
    for part, script in (("title", _TITLE), ("readout", _READOUT)):
        text = explorer.locator.evaluate(script)
        if not CJK.search(text):
            found.append(f"{explorer}: {when}, its {part} {text[:120]!r}")
    found += [f"{explorer}: the name of {c.kind} {c.label!r}" for c in controls
              if not CJK.search(c.label) and not CODE_NAME.fullmatch(c.label)]
    return found


def _arrow_key_in(nb, explorer, control) -> str:
    """ArrowDown (ArrowUp from the last option) on the focused drop-down: the focus stays on it
    (JupyterLab's command mode would take it to the next cell), its option and the picture
    change; then back to the option it had."""
    select = control.locator.locator("select")
    start = control.value()
    last = select.evaluate("(s) => s.selectedIndex === s.options.length - 1")
    key = "ArrowUp" if last else "ArrowDown"
    select.focus()
    move = explorer.move(f"key {key}", lambda: nb.page.keyboard.press(key))
    kept = select.evaluate("(s) => document.activeElement === s")
    assert kept, f"{control}: {key} took the focus away from the drop-down"
    assert control.value() != start and move.picture_changed, (
        f"{control}: {key} left the option ({start!r}) or the picture as it was")
    control.restore(start)
    assert control.value() == start, f"{control}: not back to {start!r}"
    ms = "?" if move.latency_s is None else f"{move.latency_s * 1000:.0f} ms"
    return f"{control}: {move.action}: {ms}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_explorer_runs_and_every_control_redraws(language, lab, page, tmp_path):
    name = GALLERY if language == "en" else f"{language}/{GALLERY}"
    nbformat.write(gallery_notebook(language), lab.root / name)
    names = explorer_names()
    problems = watch_page(page)
    log_start = lab.log_size()
    nb = Notebook(page, lab, name)
    t0 = time.monotonic()
    try:
        run_all_checked(nb, widgets=len(names))
        explorers, unknown = nb.explorers()
        assert unknown == [], f"{name}: controls the test cannot drive (teach tools.lab): {unknown}"
        assert len(explorers) == len(names), f"{name}: {len(explorers)} explorers shown for {names}"
        moved = []
        for ident, explorer in zip(names, explorers):
            where = f"{ident} ({language})"
            live = [c for c in explorer.controls if not c.disabled]
            assert live, f"{where}: {explorer} has no live control"
            if language != "en":
                untranslated = _not_chinese(explorer, explorer.controls, "before the moves")
                assert untranslated == [], f"{where}: not in Chinese:\n" + "\n".join(untranslated)
            heard = heard_problems(explorer.locator)
            assert heard == [], f"{where}: {explorer}: what a screen reader hears:\n" + "\n".join(heard)
            explorer.locator.evaluate(_MARK_READOUT)
            for control in live:
                if language != "en":  # once each, from where the previous moves left the explorer
                    move = next(control.moves(), None)
                    assert move is not None, f"{where}: {control} offers no other value to choose"
                    moved.append(check_move(nb, lab, control, move, log_start))
                    continue
                n_moves = len(moved)
                start = [(c, c.value()) for c in live]  # the moved control first when going back
                start.sort(key=lambda cv: cv[0] is not control)
                start_picture = explorer.picture()
                for move in control.moves():  # each checked before the next is made
                    moved.append(check_move(nb, lab, control, move, log_start))
                assert len(moved) > n_moves, f"{where}: {control} offers no other value to choose"
                # Back to where it was (and any control it changed, such as the choices of
                # another), so that every control moves from the explorer's own settings.
                for other, value in start:
                    other.restore(value)
                    assert nb.logged_errors() == [], f"{where}: {other}: going back to {value!r}"
                assert explorer.picture() == start_picture, (
                    f"{where}: after {control} and back, the picture is not the one shown before "
                    f"(settings {[(str(c), v) for c, v in start]})")
            for control in [c for c in live if c.kind == "dropdown" and language == "en"]:
                moved.append(_arrow_key_in(nb, explorer, control))
            assert explorer.locator.evaluate(_READOUT_KEPT), (
                f"{where}: {explorer}: the readout is another element after the moves (a new live "
                f"region is not announced)")
            heard = heard_problems(explorer.locator)
            assert heard == [], f"{where}: {explorer}: after the moves:\n" + "\n".join(heard)
            if language != "en":
                untranslated = _not_chinese(explorer, [], "after the moves")
                assert untranslated == [], f"{where}: not in Chinese:\n" + "\n".join(untranslated)
        print(f"{name}: {len(explorers)} explorers, {len(moved)} moves, {time.monotonic() - t0:.1f} s",
              *moved, sep="\n  ")
        serious = serious_in(page, ".jp-OutputArea-output [data-attn-explorer]")
        assert serious == [], f"{name}: axe-core, serious or critical, in the explorers: {serious}"
        check_no_errors(nb, lab, log_start, problems)
    finally:
        screenshot(page, tmp_path, name)
        lab.shutdown_kernels()


# --- make lab-zh: JupyterLab in Chinese, beside make lab --------------------------------------

# The menu bar's first menu, in each edition's JupyterLab.
FILE_MENU = {"en": "File", "zh": "文件"}
_MENUS = "() => [...document.querySelectorAll('.lm-MenuBar-itemLabel')].map((m) => m.innerText.trim())"
# The tooltip of each tab of the main area: "Name: …", then "Path: …" (名称, 路径 in Chinese).
_TAB_TITLES = "() => [...document.querySelectorAll('.lm-DockPanel .lm-TabBar-tab')].map((t) => t.title)"


def menus_once_shown(page, language: str, timeout: float = 120) -> list[str]:
    """The menu bar's labels once its File menu shows in ``language`` (or, after ``timeout`` s,
    whatever it shows then)."""
    try:
        page.wait_for_function(f"() => ({_MENUS})().includes({FILE_MENU[language]!r})", timeout=timeout * 1000)
    except Exception:  # noqa: BLE001 - the caller's assertion says what was shown instead
        pass
    return page.evaluate(_MENUS)


def open_paths(page, timeout: float = 60) -> list[str]:
    """The path of each document open in the main area, from its tab's tooltip (once every tab
    has one: Lab writes it when the document has loaded)."""
    page.wait_for_function(f"() => ({_TAB_TITLES})().every((t) => t.includes('\\n'))", timeout=timeout * 1000)
    return [title.splitlines()[1].split(":", 1)[-1].split("：", 1)[-1].strip() for title in page.evaluate(_TAB_TITLES)]


def saved_documents(workspaces: Path, wanted: str, timeout: float = 60) -> list[str]:
    """The documents open in the main area of the workspace that JupyterLab saved into the folder
    ``workspaces``, once it lists ``wanted`` (JupyterLab saves its layout soon after a change)."""
    deadline = time.monotonic() + timeout
    while True:
        for saved in workspaces.glob("*.jupyterlab-workspace"):
            main = json.loads(saved.read_text(encoding="utf-8"))["data"].get("layout-restorer:data", {}).get("main", {})
            documents = re.findall(r'"(\w+:[^"]+)"', json.dumps(main.get("dock", {})))
            if wanted in documents:
                return documents
        assert time.monotonic() < deadline, f"no workspace in {workspaces} lists {wanted} after {timeout} s"
        time.sleep(0.25)


def a_free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_lab_zh_shows_chinese_menus_and_none_of_the_english_labs_tabs(browser, tmp_path):
    """``make lab`` first: its menus are English, and it saves its workspace (00_start_here
    open). Then ``make lab-zh`` beside it: its menus are Chinese, from the language setting that
    ``make setup`` wrote into the Chinese edition's own settings folder, and the one document it
    shows is its start page, zh/00_start_here.ipynb, without the English Lab's tabs. What the
    Labs write stays out of the repository: they serve a copy of notebooks/ (a notebook opened
    gets a checkpoint beside it), and the Chinese one's folders are a copy of the venv's."""
    if os.environ.get("ATTN_LESSON"):
        pytest.skip("make check NB=...: one lesson's explorers, not make lab-zh")
    dry = subprocess.run(["make", "-n", "lab-zh"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    settings = re.search(r'--LabApp\.user_settings_dir=([^\s"]+)', dry).group(1)
    zh_folder = tmp_path / "lab-zh"
    shutil.copytree(REPO / settings, zh_folder / "user-settings")  # as make setup left it
    notebooks = tmp_path / "notebooks"
    shutil.copytree(REPO / "notebooks", notebooks, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home = tmp_path / "home"  # the English Lab's user folders (made_lab)
    with made_lab("lab", f"LAB_PORT={a_free_port()}", f"LAB_ROOT={notebooks}", home=home) as english:
        context = browser.new_context()  # closed before its Lab stops: a Lab with pages open is slow to stop
        try:
            page = context.new_page()
            page.goto(english.url)
            menus = menus_once_shown(page, "en")
            assert FILE_MENU["en"] in menus and FILE_MENU["zh"] not in menus, f"make lab: menus {menus}"
            saved_documents(home / "workspaces", "notebook:00_start_here.ipynb")
        finally:
            context.close()
        with made_lab("lab-zh", f"LAB_ZH_PORT={a_free_port()}", f"LAB_ZH={zh_folder}", f"LAB_ROOT={notebooks}",
                      home=home) as chinese:
            assert urlparse(chinese.url).port == chinese.hint_port != urlparse(english.url).port
            context = browser.new_context()
            try:
                page = context.new_page()
                page.goto(chinese.url)
                menus = menus_once_shown(page, "zh")
                assert FILE_MENU["zh"] in menus and FILE_MENU["en"] not in menus, f"make lab-zh: menus {menus}"
                opened = saved_documents(zh_folder / "workspaces", "notebook:zh/00_start_here.ipynb")
                assert opened == ["notebook:zh/00_start_here.ipynb"], f"make lab-zh reopened {opened}"
                assert open_paths(page) == ["zh/00_start_here.ipynb"], page.evaluate(_TAB_TITLES)
                page.screenshot(path=str(tmp_path / "lab-zh.png"))
                print(f"make lab-zh: menus {menus}, tabs {open_paths(page)}; screenshot {tmp_path / 'lab-zh.png'}")
            finally:
                context.close()
