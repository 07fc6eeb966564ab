"""What the browser tests share besides the session fixtures (tests/conftest.py): the
accessibility checker, axe-core, run in a page; what a screen reader hears from an explorer
(``heard_problems``); and the steps of a notebook test in JupyterLab (tests/delivery/test_browser.py):
the errors a page shows (``watch_page``), a notebook run (``run_all_checked``), a control's
move (``check_move``), the errors left at the end (``check_no_errors``) and a screenshot
(``screenshot``). And a page that refuses every request outside its own server and collects
what went wrong (``watched_page``: the website's tests). And ``make lab`` or ``make lab-zh`` run
as a learner runs them, up to the URL JupyterLab prints (``made_lab``: the set-up's and the
Chinese edition's tests)."""
from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from _support import REPO, unavailable
from tools import site
from tools.lab import VIEWPORT

AXE = site.NODE_MODULES / "axe-core" / "axe.min.js"
SERIOUS = {"serious", "critical"}  # the impacts a test fails on


def add_axe(page) -> None:
    """Load axe-core into ``page`` (skip, or fail under CI, if it is not installed)."""
    if not AXE.is_file():
        unavailable(f"{AXE} not found: npm ci --prefix site")
    page.add_script_tag(path=str(AXE))


# axe-core's documented option for a run whose violations alone are read: every violation in
# full, the passes and the rest cut to one node each, which saves their selectors (about a tenth
# of a lesson page's check here).
AXE_OPTIONS = {"resultTypes": ["violations"]}


def axe_violations(page) -> list[dict]:
    """axe-core's violations on the page (rule id, impact, help, the first nodes' selectors)."""
    add_axe(page)
    return page.evaluate("""async (options) => (await axe.run(document, options)).violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => n.target.join(' ')) }))""", AXE_OPTIONS)


# --- a page that loads nothing from outside ------------------------------------------------

def refuse_outside(page, server: str, refused: list[str] | None = None) -> list[str]:
    """Refuse every request of ``page`` that leaves the server at ``server`` (its host and port,
    for HTTP and WebSocket alike), as a firewall would. The refused URLs are added to
    ``refused`` (a new list if none is given), which is returned."""
    refused = [] if refused is None else refused
    local = urlparse(server).netloc

    def route(r):
        if urlparse(r.request.url).netloc == local:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return refused


def watched_page(browser, url: str):
    """A new page in its own context that refuses every request outside ``url``'s server, and
    the facts it collects: refused requests, failed responses, errors in the page."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    facts: dict = {"refused": refuse_outside(page, url), "failed": [], "errors": []}
    page.on("response", lambda r: r.status >= 400 and facts["failed"].append(f"{r.status} {r.url}"))
    page.on("pageerror", lambda e: facts["errors"].append(str(e)))
    page.on("console", lambda m: m.type == "error" and facts["errors"].append(f"console: {m.text}"))
    return context, page, facts


# --- what a screen reader hears from an explorer (its ARIA, written by attn.widgets' script) ---

# Every part of an explorer a user operates, with what assistive technology gets from it:
# role, the aria-valuetext of a slider, the text its readout shows; and the explorer's readout
# (role, aria-live). The names come from Playwright's accessible-name computation (aria_snapshot).
_JS_HEARD = r"""
(explorer) => {
  const clean = (s) => (s || '').replace(/[\u200b\s]+/g, ' ').trim();
  const sliders = [...explorer.querySelectorAll('.widget-slider')].map((s) => ({
    label: clean((s.querySelector(':scope > label.widget-label') || {}).textContent),
    shown: clean((s.querySelector('.widget-readout') || {}).textContent),
    valuetext: (s.querySelector('[role=slider]') || {getAttribute: () => null}).getAttribute('aria-valuetext')}));
  const toggles = [...explorer.querySelectorAll('.widget-toggle-buttons')].map((g) => ({
    label: clean((g.querySelector(':scope > label.widget-label') || {}).textContent),
    role: g.getAttribute('role'), name: g.getAttribute('aria-label'),
    pressed: [...g.querySelectorAll('button')].map((b) => [b.getAttribute('aria-pressed'),
                                                            b.classList.contains('mod-active')])}));
  const readouts = [...explorer.querySelectorAll(':scope > .widget-html')].slice(-1).map((r) => ({
    role: r.getAttribute('role'), live: r.getAttribute('aria-live')}));
  return {sliders, toggles, readouts};
}
"""
_NAMED = re.compile(r'^\s*- (slider|combobox|textbox|checkbox|radio|button|spinbutton|listbox)'
                    r'(?: "((?:[^"\\]|\\.)*)")?', re.M)


def unnamed_parts(explorer) -> list[str]:
    """The operable parts (slider, drop-down, text box, check box, buttons) of the explorer's
    controls that have no accessible name: "role" each (``explorer``: a Playwright locator)."""
    snapshot = "\n".join(row.aria_snapshot() for row in explorer.locator(":scope > .widget-hbox").all()
                         if row.locator("input, select, textarea, button, [role=slider]").count())
    return [role for role, name in _NAMED.findall(snapshot) if not (name or "").strip()]


def heard_problems(explorer) -> list[str]:
    """What is wrong with what a screen reader hears from the explorer: an unnamed part, a
    slider whose aria-valuetext is not "label = shown value", toggle buttons that are no group
    named by their label or do not say (aria-pressed) which one is chosen, a readout that is no
    polite live region. Empty when all is right."""
    problems = [f"a {role} without an accessible name" for role in unnamed_parts(explorer)]
    heard = explorer.evaluate(_JS_HEARD)
    for s in heard["sliders"]:
        want = f"{s['label']} = {s['shown']}"
        if s["valuetext"] != want:
            problems.append(f"slider {s['label']!r}: aria-valuetext {s['valuetext']!r}, expected {want!r}")
    for t in heard["toggles"]:
        if (t["role"], t["name"]) != ("group", t["label"]):
            problems.append(f"toggle buttons {t['label']!r}: role {t['role']!r}, name {t['name']!r}"
                            f" (expected a group named {t['label']!r})")
        if [pressed for pressed, _ in t["pressed"]] != [str(active).lower() for _, active in t["pressed"]]:
            problems.append(f"toggle buttons {t['label']!r}: aria-pressed {t['pressed']} (of each "
                            f"button: [aria-pressed, shown as chosen]) does not say which is chosen")
    if [(r["role"], r["live"]) for r in heard["readouts"]] != [("status", "polite")]:
        problems.append(f"the readout is not a polite live region (role=status): {heard['readouts']}")
    return problems


def serious_in(page, selector: str) -> list[dict]:
    """axe-core's serious and critical violations inside the elements matching ``selector``
    (rule id, impact, the node), one entry per node."""
    add_axe(page)
    found = page.evaluate("""async ([sel, options]) => {
        const nodes = [...document.querySelectorAll(sel)];
        if (!nodes.length) return [];
        return (await axe.run(nodes, options)).violations.flatMap((v) =>
          v.nodes.map((n) => ({id: v.id, impact: v.impact, target: n.target.join(' ')})));
      }""", [selector, AXE_OPTIONS])
    return [f for f in found if f["impact"] in SERIOUS]


# --- the steps of a notebook test in JupyterLab (tests/delivery/test_browser.py) ---------------------

# Console errors that are not the course's fault: (pattern, why it cannot be a course bug).
BENIGN_CONSOLE: list[tuple[str, str]] = []


def _benign(text: str) -> bool:
    return any(re.search(pattern, text) for pattern, _why in BENIGN_CONSOLE)


def watch_page(page) -> list[str]:
    """The list that every uncaught error in ``page`` and every console error (but the
    ``BENIGN_CONSOLE`` ones) is added to from now on."""
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"uncaught error in the page: {e}"))
    page.on("console", lambda m: m.type == "error" and not _benign(m.text)
            and problems.append(f"console error: {m.text}"))
    return problems


def run_all_checked(nb, widgets: int | None = None) -> float:
    """Open ``nb`` (a ``tools.lab.Notebook``) with Lab's Log Console, clear its outputs and run
    all its cells: every code cell must run, no output or logged message may show an error and
    ``widgets`` widgets must render (by default as many as the stored notebook shows). Returns
    the seconds Run All took."""
    name = nb.name
    nb.open()
    seconds = nb.run_all()
    print(f"{name}: Run All Cells took {seconds:.1f} s")
    assert nb.unexecuted_cells() == [], (
        f"{name}: code cells {nb.unexecuted_cells()} did not run (an earlier cell failed?)")
    errors = nb.error_outputs() + nb.logged_errors()
    assert errors == [], f"{name}: error outputs after Run All:\n" + "\n---\n".join(errors)
    expected = nb.n_widgets if widgets is None else widgets
    assert nb.widget_views() == expected, (
        f"{name}: {expected} widgets expected (the stored notebook's, unless the test says), "
        f"the page shows {nb.widget_views()}")
    return seconds


def check_move(nb, lab, control, move, log_start: int) -> str:
    """After ``move`` (a ``tools.lab.Move``) of ``control``: nothing in Lab's Log Console, no
    error in the server's log since byte ``log_start``, and a new picture. Returns the move
    with its latency, for the test's printout."""
    def log_tail() -> str:
        return "\n".join(lab.log_since(log_start)[-30:])

    logged = nb.logged_errors()
    assert logged == [], (f"{nb.name}: {control}: after {move.action}, the kernel "
                          f"reported (Log Console):\n" + "\n---\n".join(logged))
    failures = lab.failures(log_start)
    assert failures == [], (f"{nb.name}: {control}: after {move.action}, the server's "
                            f"log shows errors:\n" + "\n".join(failures)
                            + f"\n(last lines of the log:)\n{log_tail()}")
    assert move.picture_changed, (
        f"{nb.name}: {control}: after {move.action}, the picture is the same "
        f"(last lines of the server's log:\n{log_tail()})")
    ms = "?" if move.latency_s is None else f"{move.latency_s * 1000:.0f} ms"
    return f"{control}: {move.action}: {ms}"


def check_no_errors(nb, lab, log_start: int, problems: list[str]) -> None:
    """At the end of a notebook's test: no error output, nothing in Lab's Log Console, no
    error in the server's log since byte ``log_start``, none in the browser (``problems``,
    from ``watch_page``)."""
    name = nb.name
    errors = nb.error_outputs() + nb.logged_errors()
    assert errors == [], f"{name}: error outputs after the moves:\n" + "\n---\n".join(errors)
    failures = lab.failures(log_start)
    assert failures == [], (f"{name}: the server's log shows errors:\n" + "\n".join(failures)
                            + "\n(last lines of the log:)\n" + "\n".join(lab.log_since(log_start)[-30:]))
    assert problems == [], f"{name}: errors in the browser:\n" + "\n".join(problems)


def screenshot(page, folder: Path, name: str) -> None:
    """A screenshot of ``page`` at its first widget into ``folder``; a failure is printed, not
    raised (it must not hide the test's own failure)."""
    try:
        first = page.locator(".jp-OutputArea-output > .jupyter-widgets").first
        if first.count():
            first.scroll_into_view_if_needed(timeout=5000)
        shot = folder / (name.replace("/", "_").removesuffix(".ipynb") + ".png")
        page.screenshot(path=str(shot))
        print(f"{name}: screenshot {shot}")
    except Exception as e:  # noqa: BLE001 - reported, not raised
        print(f"{name}: no screenshot ({e})")


# --- make lab and make lab-zh, as a learner starts them ----------------------------------------

@dataclass
class MadeLab:
    """What ``make lab`` (or ``make lab-zh``) showed, up to JupyterLab's URL."""

    url: str  # the URL JupyterLab printed, token included
    hint_port: int  # the port of the SSH reminder that make printed before JupyterLab started
    output: list[str]  # the lines of the terminal up to the URL


_URL = re.compile(r"(http://localhost:\d+/\S*\?token=\w+)")
_HINT = re.compile(r"ssh -N -L (\d+):localhost:(\d+) ")


@contextmanager
def made_lab(target: str, *args: str, home: Path, timeout: float = 180) -> Iterator[MadeLab]:
    """``make <target> <args>`` in the repository, as a learner types it, until JupyterLab prints
    its URL and answers there; stopped (make and JupyterLab, one process group) on leaving. No browser is opened
    (BROWSER=true), and JupyterLab's user folders are under ``home`` (settings, workspaces,
    runtime files): the user's own ~/.jupyter stays as it was. ``make lab-zh`` names its own
    folders, which these do not replace."""
    env = {**os.environ, "BROWSER": "true", "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    proc = subprocess.Popen(["make", "--no-print-directory", target, *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:  # all along: a full pipe would stop JupyterLab
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        output: list[str] = []
        url = None
        while url is None:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"make {target}: no URL after {timeout} s:\n" + "\n".join(output)) from None
            if line is None:
                raise AssertionError(f"make {target} stopped before JupyterLab printed its URL "
                                     f"(exit {proc.wait()}):\n" + "\n".join(output))
            output.append(line)
            found = _URL.search(line)
            url = found.group(1) if found else None
        hints = [tuple(map(int, m.groups())) for m in map(_HINT.search, output) if m]
        assert len(hints) == 1 and hints[0][0] == hints[0][1], f"make {target}: SSH reminders {hints}:\n" + "\n".join(output)
        # JupyterLab prints its URL a moment before it answers there: retry, as a user would
        answer_by = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
                    assert response.status == 200, f"{url}: HTTP {response.status}"
                break
            except urllib.error.URLError as e:
                if time.monotonic() > answer_by or proc.poll() is not None:
                    raise AssertionError(f"make {target}: {url}: {e}\n" + "\n".join(output)) from e
                time.sleep(0.25)
        yield MadeLab(url, hints[0][0], output)
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen, grace: float = 30) -> None:
    """Stop ``proc``'s process group (make, its shells, JupyterLab) and wait until none of it is
    left: SIGTERM, which JupyterLab answers by shutting its kernels down, then SIGKILL after
    ``grace`` seconds (JupyterLab's kernels then stop by themselves: they watch their parent).
    Waiting for make alone would leave a JupyterLab still shutting down, or stuck doing so."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # reap make, so that it leaves the group
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
