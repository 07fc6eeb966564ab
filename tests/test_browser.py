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
A screenshot per notebook goes to the test's tmp_path.

Without /usr/bin/chromium the tests are skipped with a hint; under CI (CI=true) they fail
instead. ATTN_NOTEBOOKS_DIR=folder runs them on other notebooks.
"""
from __future__ import annotations

import re

import pytest

from tools.lab import Notebook, notebook_names, notebooks_folder, shows_widgets

NOTEBOOKS = [name for name in notebook_names(notebooks_folder())
             if shows_widgets(notebooks_folder() / name)]
pytestmark = pytest.mark.browser

# Console errors that are not the course's fault: (pattern, why it cannot be a course bug).
BENIGN_CONSOLE: list[tuple[str, str]] = []


def _benign(text: str) -> bool:
    return any(re.search(pattern, text) for pattern, _why in BENIGN_CONSOLE)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_and_every_control_redraws(name, lab, page, tmp_path):
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"uncaught error in the page: {e}"))
    page.on("console", lambda m: m.type == "error" and not _benign(m.text)
            and problems.append(f"console error: {m.text}"))
    log_start = lab.log_size()

    def log_tail() -> str:
        return "\n".join(lab.log_since(log_start)[-30:])

    nb = Notebook(page, lab, name)
    try:
        nb.open()
        seconds = nb.run_all()
        print(f"{name}: Run All Cells took {seconds:.1f} s")
        assert nb.unexecuted_cells() == [], (
            f"{name}: code cells {nb.unexecuted_cells()} did not run (an earlier cell failed?)")
        errors = nb.error_outputs() + nb.logged_errors()
        assert errors == [], f"{name}: error outputs after Run All:\n" + "\n---\n".join(errors)
        assert nb.widget_views() == nb.n_widgets, (
            f"{name}: the stored notebook shows {nb.n_widgets} widgets, the page {nb.widget_views()}")

        explorers, unknown = nb.explorers()
        assert unknown == [], f"{name}: controls the test cannot drive (teach tools.lab): {unknown}"
        moved = []
        for explorer in explorers:
            live = [c for c in explorer.controls if not c.disabled]
            assert live, f"{name}: {explorer} has no live control"
            for control in live:
                n_moves = len(moved)
                start = [(c, c.value()) for c in live]  # the moved control first when going back
                start.sort(key=lambda cv: cv[0] is not control)
                start_picture = explorer.picture()
                for move in control.moves():  # each checked before the next is made
                    logged = nb.logged_errors()
                    assert logged == [], (f"{name}: {control}: after {move.action}, the kernel "
                                          f"reported (Log Console):\n" + "\n---\n".join(logged))
                    failures = lab.failures(log_start)
                    assert failures == [], (f"{name}: {control}: after {move.action}, the server's "
                                            f"log shows errors:\n" + "\n".join(failures)
                                            + f"\n(last lines of the log:)\n{log_tail()}")
                    assert move.picture_changed, (
                        f"{name}: {control}: after {move.action}, the picture is the same "
                        f"(last lines of the server's log:\n{log_tail()})")
                    ms = "?" if move.latency_s is None else f"{move.latency_s * 1000:.0f} ms"
                    moved.append(f"{control}: {move.action}: {ms}")
                assert len(moved) > n_moves, f"{name}: {control} offers no other value to choose"
                # Back to where it was (and any control it changed, such as the choices of
                # another), so that every control moves from the notebook's own settings.
                for other, value in start:
                    other.restore(value)
                    assert nb.logged_errors() == [], f"{name}: {other}: going back to {value!r}"
                assert explorer.picture() == start_picture, (
                    f"{name}: after {control} and back, the picture is not the one shown before "
                    f"(settings {[(str(c), v) for c, v in start]})")
        print(f"{name}: {len(explorers)} explorers, {len(moved)} moves", *moved, sep="\n  ")

        errors = nb.error_outputs() + nb.logged_errors()
        assert errors == [], f"{name}: error outputs after the moves:\n" + "\n---\n".join(errors)
        failures = lab.failures(log_start)
        assert failures == [], (f"{name}: the server's log shows errors:\n" + "\n".join(failures)
                                + f"\n(last lines of the log:)\n{log_tail()}")
        assert problems == [], f"{name}: errors in the browser:\n" + "\n".join(problems)
    finally:
        try:  # a failed screenshot must not hide the real failure
            first = page.locator(".jp-OutputArea-output > .jupyter-widgets").first
            if first.count():
                first.scroll_into_view_if_needed(timeout=5000)
            shot = tmp_path / (name.replace("/", "_").removesuffix(".ipynb") + ".png")
            page.screenshot(path=str(shot))
            print(f"{name}: screenshot {shot}")
        except Exception as e:  # noqa: BLE001 - reported, not raised
            print(f"{name}: no screenshot ({e})")
        lab.shutdown_kernels()
