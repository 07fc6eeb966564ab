"""The course in real JupyterLab in a real browser, as a learner uses it.

pytest-playwright's fixtures drive Debian's Chromium, and one JupyterLab
(``tools.lab.running_lab``: a subprocess, see there why not pytest-jupyter's in-process server)
serves a temporary copy of notebooks/ for the run (both: tests/conftest.py). For every notebook
that shows an explorer (the solutions show none: strict nbval runs them), in a fresh page:
Edit > Clear Outputs of All Cells, Run > Run All Cells; every
code cell must run, no output may show an error, every stored widget must render. Then every
control of every explorer is moved as a user would (slider keys, an option of a drop-down, a
click, typing then Enter), and after each move the explorer's picture (the bytes behind its
<img>) must differ from the one before. Errors fail the test wherever they show: error outputs
in the notebook, Lab's Log Console (where a widget callback's traceback goes), the browser's
console, uncaught errors in the page, and the server's log.
Heard as well as seen: every control has an accessible name, a slider's aria-valuetext is
"label = the value it shows", each readout is a polite live region and stays the same element
across the moves (so each redraw is announced), ArrowDown (ArrowUp from the last option) on a
focused drop-down changes its option and the picture while the focus stays on it, and axe-core
finds no serious or critical violation in the explorers.
A screenshot per notebook goes to the test's tmp_path.

Without /usr/bin/chromium the tests are skipped with a hint; under CI (CI=true) they fail
instead. ATTN_NOTEBOOKS_DIR=folder runs them on other notebooks.
"""
from __future__ import annotations

import pytest

from tools.lab import Notebook, notebook_names, notebooks_folder, shows_widgets

from _browser import (check_move, check_no_errors, heard_problems, run_all_checked, screenshot, serious_in,
                      watch_page)

NOTEBOOKS = [name for name in notebook_names(notebooks_folder())
             if shows_widgets(notebooks_folder() / name)]
pytestmark = pytest.mark.browser

# The readout (the explorer's last HTML child) marked before the moves; after them, still it?
_MARK_READOUT = "(v) => { [...v.querySelectorAll(':scope > .widget-html')].pop().attnMark = true; }"
_READOUT_KEPT = "(v) => [...v.querySelectorAll(':scope > .widget-html')].pop().attnMark === true"


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
    assert kept, f"{nb.name}: {control}: {key} took the focus away from the drop-down"
    assert control.value() != start and move.picture_changed, (
        f"{nb.name}: {control}: {key} left the option ({start!r}) or the picture as it was")
    control.restore(start)
    assert control.value() == start, f"{nb.name}: {control}: not back to {start!r}"
    ms = "?" if move.latency_s is None else f"{move.latency_s * 1000:.0f} ms"
    return f"{control}: {move.action}: {ms}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_and_every_control_redraws(name, lab, page, tmp_path):
    problems = watch_page(page)
    log_start = lab.log_size()
    nb = Notebook(page, lab, name)
    try:
        run_all_checked(nb)
        explorers, unknown = nb.explorers()
        assert unknown == [], f"{name}: controls the test cannot drive (teach tools.lab): {unknown}"
        moved = []
        for explorer in explorers:
            live = [c for c in explorer.controls if not c.disabled]
            assert live, f"{name}: {explorer} has no live control"
            heard = heard_problems(explorer.locator)
            assert heard == [], f"{name}: {explorer}: what a screen reader hears:\n" + "\n".join(heard)
            explorer.locator.evaluate(_MARK_READOUT)
            for control in live:
                n_moves = len(moved)
                start = [(c, c.value()) for c in live]  # the moved control first when going back
                start.sort(key=lambda cv: cv[0] is not control)
                start_picture = explorer.picture()
                for move in control.moves():  # each checked before the next is made
                    moved.append(check_move(nb, lab, control, move, log_start))
                assert len(moved) > n_moves, f"{name}: {control} offers no other value to choose"
                # Back to where it was (and any control it changed, such as the choices of
                # another), so that every control moves from the notebook's own settings.
                for other, value in start:
                    other.restore(value)
                    assert nb.logged_errors() == [], f"{name}: {other}: going back to {value!r}"
                assert explorer.picture() == start_picture, (
                    f"{name}: after {control} and back, the picture is not the one shown before "
                    f"(settings {[(str(c), v) for c, v in start]})")
            for control in [c for c in live if c.kind == "dropdown"]:
                moved.append(_arrow_key_in(nb, explorer, control))
            assert explorer.locator.evaluate(_READOUT_KEPT), (
                f"{name}: {explorer}: the readout is another element after the moves (a new live "
                f"region is not announced)")
            heard = heard_problems(explorer.locator)
            assert heard == [], f"{name}: {explorer}: after the moves:\n" + "\n".join(heard)
        print(f"{name}: {len(explorers)} explorers, {len(moved)} moves", *moved, sep="\n  ")
        serious = serious_in(page, ".jp-OutputArea-output [data-attn-explorer]")
        assert serious == [], f"{name}: axe-core, serious or critical, in the explorers: {serious}"
        check_no_errors(nb, lab, log_start, problems)
    finally:
        screenshot(page, tmp_path, name)
        lab.shutdown_kernels()
