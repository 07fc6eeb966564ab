"""The course in real JupyterLab in a real browser, as a learner uses it.

One JupyterLab server (a temporary copy of notebooks/, its own settings) and one headless
Chromium (Debian's /usr/bin/chromium via Playwright) for the module; for every top-level
notebook, in a fresh workspace: Edit > Clear Outputs of All Cells, Run > Run All Cells, wait
for the kernel; no cell may fail, every stored widget must render; then every live control
(slider, drop-down, toggle buttons, checkbox, ...) is moved the way a user would (keyboard on
the slider handle, choosing an option, clicking) and what it drives (its explorer's picture or
readout) must change on screen. Uncaught errors in the page and console errors fail the test.
A screenshot per notebook is saved in the test's tmp_path.

Without Chromium or playwright the tests are skipped, saying how to enable them; under CI
(CI=true) they fail instead. ATTN_NOTEBOOKS_DIR=folder runs them on other notebooks.
"""
from __future__ import annotations

import re

import pytest

from _lab import VIEWPORT, LabNotebook, top_level_notebooks

NOTEBOOKS = top_level_notebooks()

# Console errors that are not the course's fault. Each entry: (pattern, why it is benign).
BENIGN_CONSOLE = [
    # (none needed so far; add a pattern only with the reason it cannot be a course bug)
]

# Lines of the server's log (which also receives the kernels' stderr) that mean a failure:
# a traceback in the kernel (e.g. an exception in a widget callback) or a server error.
LOG_FAILURE = re.compile(r"Traceback|Exception in comm|^\[E |\bERROR\b")


def _log_since(lab_server, start: int, lines: int | None = 40) -> str:
    """The last ``lines`` lines (all with None) the server and its kernels logged after byte
    ``start``."""
    log = lab_server.log.read_bytes()[start:].decode(errors="replace").splitlines()
    return "\n".join(log if lines is None else log[-lines:])


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1000:.0f} ms"


def _benign(text: str) -> bool:
    return any(re.search(pattern, text) for pattern, _why in BENIGN_CONSOLE)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_and_every_control_redraws(name, lab_server, lab_browser, tmp_path):
    context = lab_browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"uncaught error in the page: {e}"))
    page.on("console", lambda m: m.type == "error" and not _benign(m.text)
            and problems.append(f"console error: {m.text}"))
    log_start = lab_server.log.stat().st_size
    nb = LabNotebook(page, lab_server, name)
    shot = tmp_path / f"{name.removesuffix('.ipynb')}.png"
    moved = []
    try:
        nb.open()
        seconds = nb.run_all()
        print(f"{name}: Run All Cells took {seconds:.1f} s in the browser")

        assert nb.unexecuted_cells() == [], (
            f"{name}: code cells {nb.unexecuted_cells()} did not run (an earlier cell failed?)")
        errors = nb.error_outputs()
        assert errors == [], f"{name}: error outputs after Run All:\n" + "\n---\n".join(errors)
        assert nb.widget_views() == nb.n_widget_outputs, (
            f"{name}: the stored notebook shows {nb.n_widget_outputs} widgets, "
            f"the browser rendered {nb.widget_views()}")

        controls, unknown = nb.scan()
        assert unknown == [], f"{name}: controls the test cannot drive (teach _lab.Control.moves): {unknown}"
        live = [c for c in controls if not c.disabled]
        for control in live:
            try:
                moves = list(control.moves())
            except AssertionError as e:  # nothing changed: show what the kernel said
                raise AssertionError(f"{name}: {e}\nkernel errors:\n" + "\n".join(nb.kernel_errors)
                                     + f"\nserver log:\n{_log_since(lab_server, log_start)}") from None
            assert moves, f"{name}: {control} offers no other value to choose"
            for move in moves:
                assert move.picture_changed or move.text_changed, (
                    f"{name}: {control}: after {move.action} the kernel answered but the "
                    f"screen shows the same picture and text")
                moved.append(f"{control}: {move.action}: {_ms(move.latency_s)}")
        print(f"{name}: {len(live)} live controls, {len(moved)} moves", *moved, sep="\n  ")

        errors = nb.error_outputs()
        assert errors == [], f"{name}: error outputs after moving the controls:\n" + "\n---\n".join(errors)
        bad = [line for line in _log_since(lab_server, log_start, None).splitlines()
               if LOG_FAILURE.search(line)]
        assert bad == [], (f"{name}: the server / kernel logged errors:\n" + "\n".join(bad)
                           + f"\n(last lines of the log:)\n{_log_since(lab_server, log_start)}")
        assert nb.kernel_errors == [], f"{name}: the kernel reported errors:\n" + "\n".join(nb.kernel_errors)
        assert problems == [], f"{name}: errors in the browser:\n" + "\n".join(problems)
    finally:
        try:  # the first widget in view; a failed screenshot must not hide the real failure
            first = page.locator(".jp-OutputArea-output > .jupyter-widgets").first
            if first.count():
                first.scroll_into_view_if_needed(timeout=5000)
            page.screenshot(path=str(shot))
            print(f"{name}: screenshot {shot}")
        except Exception as e:  # noqa: BLE001 - reported, not raised
            print(f"{name}: no screenshot ({e})")
        finally:
            context.close()
            lab_server.shutdown_kernels()
