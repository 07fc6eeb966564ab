"""The Chinese edition (notebooks/zh/) in real JupyterLab in a real browser: every control live,
in Chinese (issue 21).

The same JupyterLab, browser and steps as tests/test_browser.py (tests/_browser.py), on every
Chinese lesson that shows an explorer, in a fresh page: Clear Outputs, Run All Cells; every
code cell must run, no output may show an error, every stored widget must render. Then every
control of every explorer is moved once, as a user would, and each move must draw a new picture
without an error (Lab's Log Console, the server's log). Every explorer's title and readout
(before and after the moves) hold Chinese, and so does every control's name but a code name
(``d_k``); what a screen reader hears is checked after the moves. Errors in the browser fail
the test as in tests/test_browser.py.

Lean on purpose: this file runs beside tests/test_browser.py in ``make test`` (a file of its own,
so that ``--dist loadfile`` can give it the other worker). What the language does not change
is left to the English test: the second move of a slider (End), moving back to the settings
the notebook left and finding its picture again, the arrow keys on a drop-down, axe-core. A
Chinese explorer's every control and text in the kernel: tests/test_widgets_language.py;
every Chinese explorer in Voilà, heard and checked by axe-core: tests/test_live_forms.py. The
solutions show no explorer: strict nbval runs them. Browser pages share one context (so
JupyterLab's files come from its cache after the first notebook).
"""
from __future__ import annotations

import re
import time

import pytest

from tools.lab import VIEWPORT, Notebook, notebook_names, notebooks_folder, shows_widgets

from _browser import check_move, check_no_errors, heard_problems, run_all_checked, screenshot, watch_page

ZH = notebooks_folder() / "zh"
NOTEBOOKS = ["zh/" + name for name in notebook_names(ZH, solutions=False) if shows_widgets(ZH / name)]
pytestmark = pytest.mark.browser

CJK = re.compile(r"[\u4e00-\u9fff]")
# A control's name that is code, the same in both languages: a word with "_" or a digit (d_k).
CODE_NAME = re.compile(r"[A-Za-z]\w*(_|\d)\w*")
_TITLE = "(v) => (v.querySelector(':scope > .widget-html') || {innerText: ''}).innerText"
_READOUT = "(v) => ([...v.querySelectorAll(':scope > .widget-html')].pop() || {innerText: ''}).innerText"


@pytest.fixture(scope="module")
def shared_context(browser):
    """One browser context for the module's pages: JupyterLab's files are loaded once."""
    context = browser.new_context(viewport=VIEWPORT)
    yield context
    context.close()


@pytest.fixture
def page(shared_context):
    """A new page for each notebook, in the module's context (pytest-playwright's ``page``
    would give each a new context, loading JupyterLab's files anew)."""
    page = shared_context.new_page()
    yield page
    page.close()


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


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_chinese_notebook_runs_and_every_control_redraws(name, lab, page, tmp_path):
    problems = watch_page(page)
    log_start = lab.log_size()
    nb = Notebook(page, lab, name)
    t0 = time.monotonic()
    try:
        run_all_checked(nb)
        explorers, unknown = nb.explorers()
        assert unknown == [], f"{name}: controls the test cannot drive (teach tools.lab): {unknown}"
        assert explorers, f"{name}: the stored notebook shows widgets, but no explorer after Run All"
        moved = []
        for explorer in explorers:
            live = [c for c in explorer.controls if not c.disabled]
            assert live, f"{name}: {explorer} has no live control"
            untranslated = _not_chinese(explorer, explorer.controls, "before the moves")
            assert untranslated == [], f"{name}: not in Chinese:\n" + "\n".join(untranslated)
            for control in live:  # once each, from where the previous moves left the explorer
                move = next(control.moves(), None)
                assert move is not None, f"{name}: {control} offers no other value to choose"
                moved.append(check_move(nb, lab, control, move, log_start))
            untranslated = _not_chinese(explorer, [], "after the moves")
            assert untranslated == [], f"{name}: not in Chinese:\n" + "\n".join(untranslated)
            heard = heard_problems(explorer.locator)
            assert heard == [], f"{name}: {explorer}: what a screen reader hears:\n" + "\n".join(heard)
        print(f"{name}: {len(explorers)} explorers, {len(moved)} moves, {time.monotonic() - t0:.1f} s",
              *moved, sep="\n  ")
        check_no_errors(nb, lab, log_start, problems)
    except BaseException:
        screenshot(page, tmp_path, name)  # only of a failure: a screenshot costs time
        raise
    finally:
        lab.shutdown_kernels()
