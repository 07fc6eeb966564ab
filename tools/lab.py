"""The course in real JupyterLab in a real browser: what the browser test and the latency probe share.

    with running_lab(Path("notebooks")) as lab, sync_playwright() as p:
        page = p.chromium.launch(**LAUNCH_ARGS).new_page(viewport=VIEWPORT)
        nb = Notebook(page, lab, "02_qkv.ipynb")
        nb.open()                                  # fresh workspace, kernel idle
        nb.run_all()                               # Edit > Clear Outputs, Run > Run All Cells
        nb.error_outputs(), nb.logged_errors()     # errors in the notebook, in Lab's Log Console
        lab.failures(since)                        # errors in the server's log
        for explorer in nb.explorers():            # every VBox holding a widget Image
            for control in explorer.controls:      # slider, drop-down, check box, text box, ...
                for move in control.moves():       # keys, option, click, typing, as a user would
                    move.picture_changed, move.latency_s

Why a subprocess and not pytest-jupyter's ``jp_serverapp``: that fixture runs the server in
the test's own process, on an asyncio loop that only turns while an ``async`` test awaits.
Playwright's sync API (pytest-playwright's fixtures) blocks that thread while it waits for the
page, so the page's requests would never be answered. A ``jupyter lab`` subprocess also writes
what a user's terminal would show, the kernels' stderr included (a traceback in a widget
callback goes there), into one log file that the test reads.

``running_voila`` serves a notebook in app mode (Voilà) the same way, as ``make app`` does.

Kernel errors are read where JupyterLab shows them: error outputs in the notebook; Lab's Log
Console (View > Show Log Console), where the output of a widget callback goes (ipywidgets
shows a callback's traceback there); and the server's log. Console and page errors are the
caller's (``page.on``).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from playwright.sync_api import TimeoutError as PlaywrightTimeout

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright's own browser download is not used
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LAUNCH_ARGS: dict[str, Any] = {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True}
VIEWPORT = {"width": 1400, "height": 1000}
ENABLE_HINT = ("install Debian's Chromium (`apt-get install chromium`, giving /usr/bin/chromium) "
               "and the pinned requirements (`make setup`); `playwright install` is not needed")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
ERROR_TEXT = r"Traceback|Error"  # in an output: a traceback or an exception's name

# The Log Console's entries that show an error (a widget callback's traceback lands there).
_JS_LOGGED_ERRORS = r"""
() => [...document.querySelectorAll('.jp-LogConsolePanel .jp-OutputArea-output')]
      .map((o) => o.innerText).filter((t) => /""" + ERROR_TEXT + r"""/.test(t))
"""

# Lines of the server's log (the kernels' stderr included) that mean a failure: a traceback
# (an exception in a widget callback: ipykernel logs "Exception in comm_msg" with it), an
# error line of the server or a kernel that died.
LOG_FAILURE = re.compile(r"Traceback|Exception in comm|^\[E |\bERROR\b|KernelRestarter: restarting")

# Settings written into the server's own settings folder.
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    # No news toast, no update check.
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    # Every cell attached to the DOM (no virtual scrolling), so every widget can be found.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # The served folder is a throwaway copy.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}


def browser_unavailable() -> str | None:
    """Why a browser cannot be driven here, or None when it can."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} not found; {ENABLE_HINT}"
    return None


def notebooks_folder() -> Path:
    """``notebooks/``, or ``$ATTN_NOTEBOOKS_DIR`` when set (to try the tests on other notebooks)."""
    return Path(os.environ.get("ATTN_NOTEBOOKS_DIR") or REPO / "notebooks").resolve()


def notebook_names(folder: Path, *, solutions: bool = True) -> list[str]:
    """Paths (relative to ``folder``) of its notebooks, ``solutions/`` ones too by default."""
    found = sorted(folder.glob("*.ipynb"))
    if solutions:
        found += sorted(folder.glob("solutions/*.ipynb"))
    return [p.relative_to(folder).as_posix() for p in found]


def shows_widgets(path: Path) -> bool:
    """True if the stored notebook displays a widget."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return any(WIDGET_MIME in out.get("data", {})
               for c in cells if c["cell_type"] == "code" for out in c.get("outputs", []))


# --- the server -----------------------------------------------------------------------------

@dataclass
class Lab:
    """A running JupyterLab (see ``running_lab``)."""

    url: str  # ends with "/"
    token: str
    root: Path  # the served copy of the notebooks
    log: Path  # the server's stdout and stderr, with its kernels'

    def api(self, method: str, path: str, timeout: float = 10) -> Any:
        """Call the REST API (``path`` like ``"api/sessions"``); JSON out."""
        req = urllib.request.Request(self.url + path, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read()
        return json.loads(text) if text.strip() else None

    def notebook_url(self, name: str) -> str:
        """``name`` opened in a new, empty workspace (no tabs restored from an earlier test)."""
        workspace = "w-" + secrets.token_hex(4)
        return f"{self.url}lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        for session in self.api("GET", "api/sessions"):
            self.api("DELETE", f"api/sessions/{session['id']}")
        for kernel in self.api("GET", "api/kernels"):
            self.api("DELETE", f"api/kernels/{kernel['id']}")

    def log_size(self) -> int:
        return self.log.stat().st_size

    def log_since(self, start: int) -> list[str]:
        """The lines logged after byte ``start``."""
        return self.log.read_bytes()[start:].decode(errors="replace").splitlines()

    def failures(self, start: int) -> list[str]:
        """The lines logged after byte ``start`` that mean a failure (``LOG_FAILURE``)."""
        return [line for line in self.log_since(start) if LOG_FAILURE.search(line)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _private_env(home: Path) -> dict[str, str]:
    """Environment of a server that reads no user config, kernel, setting or workspace."""
    env = dict(os.environ)
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")]:
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    page_config = home / "config" / "labconfig" / "page_config.json"  # no "build recommended"
    page_config.parent.mkdir(parents=True)
    page_config.write_text(json.dumps({"buildCheck": False, "buildAvailable": False}))
    for plugin, values in LAB_SETTINGS.items():
        f = home / "settings" / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))
    return env


@contextmanager
def running_lab(notebooks_dir: Path, *, workdir: Path | None = None,
                startup_timeout: float = 120) -> Iterator[Lab]:
    """``jupyter lab`` on 127.0.0.1 (a free port, a random token) serving a copy of ``notebooks_dir``.

    Args:
        notebooks_dir: the folder to serve (copied first, sub-folders too).
        workdir: a new or empty folder for the copy, the server's private folders and its
            log (default: a temporary folder, removed afterwards).
        startup_timeout: seconds to wait for the server to answer.
    """
    notebooks_dir = Path(notebooks_dir)
    if not notebooks_dir.is_dir():
        raise ValueError(f"notebooks_dir: expected a folder, got {notebooks_dir!s}")
    with tempfile.TemporaryDirectory(prefix="attn-lab-") as tmp:
        work = Path(workdir or tmp)
        if work.exists() and any(work.iterdir()):
            raise ValueError(f"workdir: expected a new or empty folder, got {work!s} with files in it")
        root = work / "notebooks"
        shutil.copytree(notebooks_dir, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        port, token = _free_port(), secrets.token_hex(16)
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        lab = Lab(f"http://127.0.0.1:{port}/", token, root, work / "jupyterlab.log")
        with open(lab.log, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=root, env=_private_env(work / "lab-home"),
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n"
                                       + "\n".join(lab.log_since(0)[-40:]))
                try:
                    lab.api("GET", "api/status", timeout=2)
                    break
                except OSError:  # URLError, ConnectionError, timeouts: not up yet
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"JupyterLab did not answer in {startup_timeout} s:\n"
                                           + "\n".join(lab.log_since(0)[-40:]))
                    time.sleep(0.25)
            yield lab
        finally:
            _stop(lab, proc)


@contextmanager
def running_voila(notebook: Path, workdir: Path, timeout: float = 120) -> Iterator[str]:
    """``voila notebook`` on 127.0.0.1 (as ``make app`` runs it, without opening a browser);
    yields the page's URL. ``notebook`` may be a folder: its notebooks are then at
    ``URL + "voila/render/" + name``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the kernel is this Python's (ipykernel's own spec); no user config or runtime folders
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "JUPYTER_CONFIG_DIR": str(workdir / "config"),
           "JUPYTER_RUNTIME_DIR": str(workdir / "runtime"),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    log = workdir / "voila.log"
    cmd = [str(Path(sys.executable).parent / "voila"), str(notebook), "--no-browser",
           f"--port={port}", "--Voila.ip=127.0.0.1"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=notebook.parent, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"voila exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(url + "api", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # it answers
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"voila did not answer in {timeout} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _stop(lab: Lab, proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            lab.shutdown_kernels()
            lab.api("POST", "api/shutdown")
        except OSError:
            pass
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- a notebook in the page -----------------------------------------------------------------

# Marks every explorer (a VBox with a widget Image as a child) and every control of the
# outputs; returns the controls, each with its explorer (-1 if it is in none).
_JS_SCAN = r"""
(panel) => {
  const clean = (s) => (s || '').replace(/[\u200b\s]+/g, ' ').trim();
  const kinds = [['slider', '.widget-slider'], ['dropdown', '.widget-dropdown'],
                 ['select', '.widget-select'], ['toggle-buttons', '.widget-toggle-buttons'],
                 ['toggle-button', 'button.widget-toggle-button'], ['checkbox', '.widget-checkbox'],
                 ['radio', '.widget-radio'], ['text', '.widget-text'], ['textarea', '.widget-textarea']];
  const explorers = [...panel.querySelectorAll('.jp-OutputArea-output .widget-vbox')]
      .filter((v) => [...v.children].some((c) => c.matches('img.widget-image')));
  explorers.forEach((v, i) => { v.dataset.attnExplorer = String(i); });
  const controls = [], covered = new Set();
  for (const [kind, sel] of kinds) {
    for (const w of panel.querySelectorAll('.jp-OutputArea-output ' + sel)) {
      if (w.dataset.attnControl !== undefined) continue;
      if (kind === 'toggle-button' && w.closest('.widget-toggle-buttons')) continue;
      const parts = [w, ...w.querySelectorAll('input, select, textarea, button, [role=slider]')];
      parts.forEach((p) => covered.add(p));
      const host = w.closest('[data-attn-explorer]');
      w.dataset.attnControl = String(controls.length);
      controls.push({index: controls.length, kind,
                     explorer: host ? Number(host.dataset.attnExplorer) : -1,
                     label: clean((w.querySelector(':scope > label.widget-label') || {}).innerText) ||
                            clean((w.querySelector('.widget-label-basic span') || {}).innerText) ||
                            clean(w.getAttribute('title')),
                     disabled: parts.some((p) => p.disabled) || !!w.querySelector('[disabled]')});
    }
  }
  const unknown = [...panel.querySelectorAll('.jp-OutputArea-output .jupyter-widgets :is(input, select, textarea, button, [role=slider])')]
      .filter((el) => !covered.has(el))
      .map((el) => `${el.tagName.toLowerCase()} in <${el.closest('.jupyter-widgets').className}>`);
  const titles = explorers.map((v) => clean((v.querySelector(':scope > .widget-html') || {}).innerText).slice(0, 60));
  return {titles, controls, unknown};
}
"""

# The open notebook has a kernel: its toolbar names one, not "No Kernel".
_JS_HAS_KERNEL = r"""
() => {
  const name = document.querySelector('.jp-NotebookPanel [data-jp-item-name="kernelName"]');
  return name !== null && name.innerText.trim() !== '' && !/No Kernel/.test(name.innerText);
}
"""

# SHA-256 of the bytes behind the explorer's picture (its <img> src: a blob URL).
_JS_PICTURE = r"""
async (v) => {
  const img = v.querySelector(':scope > img.widget-image');
  const bytes = await (await fetch(img.src)).arrayBuffer();
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...hash].map((b) => b.toString(16).padStart(2, '0')).join('');
}
"""

# The latency probe: t0 = the first input event after arming (key, pointer, input, change);
# t1 = the first frame after the explorer's picture got a new src and that image was decoded.
_JS_ARM = r"""
(v) => {
  if (window.attnProbe) window.attnProbe.observer.disconnect();
  const probe = {t0: null, t1: null};
  window.attnProbe = probe;
  const start = () => { if (probe.t0 === null) probe.t0 = performance.now(); };
  for (const ev of ['keydown', 'pointerdown', 'input', 'change']) {
    document.addEventListener(ev, start, {capture: true, once: true});
  }
  const img = v.querySelector(':scope > img.widget-image');
  probe.observer = new MutationObserver(() => {
    probe.observer.disconnect();
    img.decode().catch(() => null).then(() => requestAnimationFrame(() => {
      probe.t1 = performance.now();
    }));
  });
  probe.observer.observe(img, {attributes: true, attributeFilter: ['src']});
}
"""


# What a control shows as its value, by kind (see Control.value).
_JS_VALUE = r"""
(w, kind) => {
  if (kind === 'slider') return w.querySelector('.widget-readout').innerText.trim();
  if (kind === 'dropdown' || kind === 'select') {
    const s = w.querySelector('select');
    return s.selectedIndex < 0 ? '' : s.options[s.selectedIndex].text;
  }
  if (kind === 'toggle-buttons') return (w.querySelector('button.mod-active') || {innerText: ''}).innerText.trim();
  if (kind === 'radio') {
    const r = w.querySelector('input:checked');
    return r ? r.closest('label').innerText.trim() : '';
  }
  if (kind === 'checkbox') return String(w.querySelector('input').checked);
  if (kind === 'toggle-button') return String(w.classList.contains('mod-active'));
  return w.querySelector('textarea, input').value;
}
"""


@dataclass
class Move:
    """One user action on a control and what it did to the explorer's picture."""

    action: str
    before: str  # SHA-256 of the picture's bytes
    after: str
    latency_s: float | None  # first input event -> first frame with the new picture decoded

    @property
    def picture_changed(self) -> bool:
        return self.before != self.after


class Notebook:
    """A notebook opened alone in JupyterLab in ``page``."""

    def __init__(self, page: Any, lab: Lab, name: str) -> None:
        self.page, self.lab, self.name = page, lab, name
        self.panel = page.locator(".jp-NotebookPanel").first
        cells = json.loads((lab.root / name).read_text(encoding="utf-8"))["cells"]
        self.n_cells = len(cells)
        self.n_widgets = sum(WIDGET_MIME in out.get("data", {}) for c in cells
                             if c["cell_type"] == "code" for out in c.get("outputs", []))

    def open(self, timeout: float = 120, *, log_console: bool = True) -> None:
        """Load Lab with this notebook and wait until every cell is shown and its kernel idle;
        with ``log_console``, open Lab's Log Console too (see ``logged_errors``)."""
        self.page.goto(self.lab.notebook_url(self.name), timeout=timeout * 1000)
        self.page.wait_for_function(
            "(n) => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length === n",
            arg=self.n_cells, timeout=timeout * 1000)
        # Make it the current document, as a click on its tab does (Lab enables the Run menu's
        # notebook commands only then).
        tab = Path(self.name).name
        self.page.locator(".lm-TabBar-tab.lm-mod-current").filter(has_text=tab).first.click()
        if log_console:
            self.menu("View", "Show Log Console")
            self.page.locator(".jp-LogConsolePanel").wait_for(timeout=30_000)
        # A kernel, not only an idle status: the toolbar's indicator reads "idle" while the
        # notebook has "No Kernel" yet, and a click on Run then opens JupyterLab's modal
        # "Select Kernel" dialog (the hub test's failures under load, review of 2026-12-06).
        try:
            self.page.wait_for_function(_JS_HAS_KERNEL, timeout=timeout * 1000)
        except PlaywrightTimeout:
            raise AssertionError(f"{self.name}: no kernel after {timeout} s: the toolbar shows "
                                 f"{self.kernel_name()!r}; dialogs {self.dialogs()}") from None
        self.wait_idle(timeout, quiet=1.0)

    def kernel_name(self) -> str | None:
        """The kernel the notebook's toolbar names ("Python 3 (ipykernel)", "No Kernel")."""
        name = self.panel.locator('[data-jp-item-name="kernelName"]').first
        return name.inner_text().strip() if name.count() else None

    def dialogs(self) -> list[str]:
        """The text of each JupyterLab dialog open on the page."""
        return [" ".join(t.split()) for t in self.page.locator(".jp-Dialog").all_inner_texts()]

    def status(self) -> str | None:
        """The notebook toolbar's kernel status (idle, busy, starting, ...)."""
        ind = self.panel.locator(".jp-Notebook-ExecutionIndicator").first
        return ind.get_attribute("data-status") if ind.count() else None

    def prompts(self) -> list[str]:
        """The code cells' input prompts, e.g. ``["[1]:", "[*]:", "[ ]:"]``."""
        return self.panel.locator(".jp-CodeCell .jp-InputPrompt").evaluate_all(
            "(ps) => ps.map((p) => p.innerText.trim())")

    def wait_idle(self, timeout: float = 60, quiet: float = 0.5) -> None:
        """Wait until no cell is queued or running and the kernel has been idle for ``quiet`` s."""
        deadline = time.monotonic() + timeout
        since = None
        while True:
            now = time.monotonic()
            if self.status() == "idle" and not any("*" in p for p in self.prompts()):
                since = now if since is None else since
                if now - since >= quiet:
                    return
            else:
                since = None
            if now > deadline:
                raise AssertionError(f"{self.name}: kernel {self.status()!r}, prompts "
                                     f"{self.prompts()} after {timeout} s")
            time.sleep(0.1)

    def menu(self, menu: str, item: str) -> None:
        """Click a menu of the menu bar, then its item ``item`` once Lab enables it."""
        exact = lambda s: re.compile(f"^{re.escape(s)}$")  # noqa: E731
        open_dialogs = self.dialogs()  # a modal dialog would take the click: say which instead
        assert open_dialogs == [], f"{self.name}: a dialog is open before {menu} > {item}: {open_dialogs}"
        self.page.locator(".lm-MenuBar-itemLabel", has_text=exact(menu)).click()
        entry = self.page.locator(".lm-Menu-item:not(.lm-mod-disabled)").filter(
            has=self.page.locator(".lm-Menu-itemLabel", has_text=exact(item)))
        entry.click(timeout=30_000)
        self.page.locator(".lm-Menu").first.wait_for(state="hidden", timeout=10_000)

    def run_all(self, timeout: float = 300) -> float:
        """Edit > Clear Outputs of All Cells, Run > Run All Cells; wait until done and every
        widget is rendered. Returns the seconds from the click to an idle kernel."""
        self.menu("Edit", "Clear Outputs of All Cells")
        t0 = time.monotonic()
        self.menu("Run", "Run All Cells")
        first = self.panel.locator(".jp-CodeCell .jp-InputPrompt").first
        first.filter(has_text=re.compile(r"[*\d]")).wait_for(timeout=30_000)  # it started
        self.wait_idle(timeout, quiet=0.5)
        seconds = time.monotonic() - t0
        self.page.wait_for_function(  # widget views render after the kernel is idle
            "() => !document.querySelector('.jp-NotebookPanel').innerText.includes('Loading widget...')",
            timeout=60_000)
        return seconds

    def unexecuted_cells(self) -> list[int]:
        """1-based numbers (among code cells) of the cells without an execution count.

        A cell whose input is folded (a notebook's check cell, ``source_hidden``) shows no
        prompt, since JupyterLab does not update a hidden input's prompt; it counts as run when
        it shows an output, as every check cell prints its claims."""
        cells = self.panel.locator(".jp-CodeCell").evaluate_all(
            """(cs) => cs.map((c) => [
                (c.querySelector('.jp-InputPrompt') || {innerText: ''}).innerText.trim(),
                c.querySelector('.jp-InputPlaceholder') !== null,
                c.querySelectorAll('.jp-OutputArea-output').length])""")
        return [i + 1 for i, (prompt, folded, outputs) in enumerate(cells)
                if not re.search(r"\d", prompt) and not (folded and outputs)]

    def error_outputs(self) -> list[str]:
        """Texts of outputs that show an error: a traceback (Lab gives error outputs the
        stderr MIME type) or a widget that failed to render."""
        outputs = self.panel.locator(".jp-OutputArea-output").evaluate_all(
            "(os) => os.map((o) => [o.getAttribute('data-mime-type') || '', o.innerText])")
        return [text for mime, text in outputs
                if (mime == "application/vnd.jupyter.stderr" and re.search(ERROR_TEXT, text))
                or "Error displaying widget" in text or "Error rendering output" in text]

    def logged_errors(self) -> list[str]:
        """Errors in Lab's Log Console: output of the kernel that belongs to no cell, such as
        the traceback of a widget callback (``open(log_console=True)`` shows the console)."""
        return self.page.evaluate(_JS_LOGGED_ERRORS)

    def widget_views(self) -> int:
        """How many top-level widget views the outputs show."""
        return self.panel.locator(".jp-OutputArea-output > .jupyter-widgets").count()

    def explorers(self) -> tuple[list["ExplorerView"], list[str]]:
        """Every explorer with its controls, and what the scan could not drive: controls
        outside any explorer, interactive elements of no known kind."""
        found = self.panel.evaluate(_JS_SCAN)
        views = [ExplorerView(self, i, title) for i, title in enumerate(found["titles"])]
        unknown = list(found["unknown"])
        for c in found["controls"]:
            if c["explorer"] < 0:
                unknown.append(f"{c['kind']} {c['label']!r} outside any explorer")
            else:
                view = views[c["explorer"]]
                view.controls.append(Control(view, c["index"], c["kind"], c["label"], c["disabled"]))
        return views, unknown


class ExplorerView:
    """An explorer on the page: its picture and its controls."""

    def __init__(self, nb: Notebook, index: int, title: str) -> None:
        self.nb, self.title = nb, title
        self.locator = nb.page.locator(f'[data-attn-explorer="{index}"]')
        self.controls: list[Control] = []

    def picture(self) -> str:
        """SHA-256 of the bytes of the picture shown now."""
        return self.locator.evaluate(_JS_PICTURE)

    def move(self, action: str, do: Callable[[], None], timeout: float = 30,
             before_do: Callable[[], None] | None = None) -> Move:
        """``before_do()`` (typing that sends nothing yet), arm the probe, ``do()`` the action,
        wait for a new picture or an error in the Log Console (up to ``timeout`` s: a move that
        keeps the picture costs that long), then for the kernel to be idle."""
        page = self.nb.page
        before = self.picture()
        if before_do is not None:
            before_do()
        self.locator.evaluate(_JS_ARM)
        do()
        try:
            page.wait_for_function(
                f"() => window.attnProbe.t1 !== null || ({_JS_LOGGED_ERRORS})().length > 0",
                timeout=timeout * 1000, polling=20)
        except PlaywrightTimeout:  # no new picture: the caller sees it in the Move
            pass
        self.nb.wait_idle(timeout, quiet=0.3)
        after = self.picture()
        probe = page.evaluate("() => window.attnProbe")
        t0, t1 = probe["t0"], probe["t1"]
        latency = None if t0 is None or t1 is None else (t1 - t0) / 1000
        return Move(action, before, after, latency)

    def __str__(self) -> str:
        return f"the explorer {self.title!r}"


def _same_number(a: str, b: str | None) -> bool:
    try:
        return b is not None and float(a) == float(b)
    except ValueError:
        return False


class Control:
    """One control of an explorer; ``moves()`` does a user's actions on it."""

    def __init__(self, explorer: ExplorerView, index: int, kind: str, label: str, disabled: bool) -> None:
        self.explorer, self.kind, self.label, self.disabled = explorer, kind, label, disabled
        self.locator = explorer.nb.page.locator(f'[data-attn-control="{index}"]')

    def __str__(self) -> str:
        return f"{self.kind} {self.label!r} of {self.explorer}"

    def value(self) -> str:
        """The value the control shows (a slider's readout, the chosen option, ...)."""
        return self.locator.evaluate(_JS_VALUE, self.kind)

    def restore(self, value: str, timeout: float = 30) -> Move | None:
        """Bring back ``value`` (from ``value()``) as a user would, or None if it is shown.

        slider: type it into the readout, Enter (a selection slider, whose readout takes no
        typed label: Home, then ArrowRight to it); drop-down / list, toggle buttons,
        radio: choose it; check box, toggle button: click; text box: type it, Enter.
        """
        if self.value() == value:
            return None
        act = lambda do, **kw: self.explorer.move(f"back to {value!r}", do, timeout, **kw)  # noqa: E731
        if self.kind == "slider":
            readout = self.locator.locator(".widget-readout").first
            handle = self.locator.locator(".noUi-handle").first
            if _same_number(readout.inner_text(), handle.get_attribute("aria-valuenow")):
                # a number slider (a selection slider's handle holds an index, not its label)
                return act(lambda: readout.press("Enter"), before_do=lambda: readout.fill(value))

            def walk() -> None:  # one key at a time, each answered before the next
                for key in ["Home"] + ["ArrowRight"] * int(float(handle.get_attribute("aria-valuemax"))):
                    if key != "Home" and readout.inner_text().strip() == value:
                        break
                    handle.press(key)
                    self.explorer.nb.wait_idle(timeout, quiet=0.2)
            return act(walk)
        if self.kind in ("dropdown", "select"):
            return act(lambda: self.locator.locator("select").select_option(label=value))
        if self.kind in ("toggle-buttons", "radio"):
            return act(self.locator.get_by_text(value, exact=True).first.click)
        if self.kind in ("checkbox", "toggle-button"):
            return next(self.moves(timeout))
        field = self.locator.locator("textarea, input").first
        commit = "Tab" if self.kind == "textarea" else "Enter"
        return act(lambda: field.press(commit), before_do=lambda: field.fill(value))

    def moves(self, timeout: float = 30) -> Iterator[Move]:
        """Change the value as a user would, one action per Move.

        slider: the handle's arrow key, then End (Home from the top); drop-down / list: the
        next option; toggle buttons: an inactive one; toggle button, check box: a click;
        radio: an unchecked one; text box: type another of its suggestions (without any: add
        the word "again", or take it away), then Enter (the probe starts at Enter); number
        box: ArrowUp, Enter.
        """
        move = lambda action, do, **kw: self.explorer.move(action, do, timeout, **kw)  # noqa: E731
        if self.kind == "slider":
            handle = self.locator.locator(".noUi-handle").first
            handle.scroll_into_view_if_needed()
            value = lambda attr: float(handle.get_attribute(attr))  # noqa: E731
            up = value("aria-valuenow") < value("aria-valuemax")
            step, jump, end = ("ArrowRight", "End", "aria-valuemax") if up else ("ArrowLeft", "Home", "aria-valuemin")
            for key in (step, jump):
                if value("aria-valuenow") == value(end):
                    break
                yield move(f"key {key}", lambda key=key: handle.press(key))
        elif self.kind in ("dropdown", "select"):
            select = self.locator.locator("select")
            values = select.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
            if len(values) > 1:
                current = select.input_value()
                nxt = values[(values.index(current) + 1) % len(values)] if current in values else values[0]
                yield move(f"select {nxt!r}", lambda: select.select_option(nxt))
        elif self.kind == "toggle-buttons":
            button = self.locator.locator("button.widget-toggle-button:not(.mod-active)").first
            yield move(f"click {button.inner_text().strip()!r}", button.click)
        elif self.kind == "toggle-button":
            yield move("click", self.locator.click)
        elif self.kind == "checkbox":
            yield move("click", self.locator.locator("input[type=checkbox]").click)
        elif self.kind == "radio":
            yield move("click", self.locator.locator("input[type=radio]:not(:checked)").first.click)
        elif self.kind in ("text", "textarea"):
            field = self.locator.locator("textarea, input").first
            field.scroll_into_view_if_needed()
            if field.get_attribute("type") == "number":
                yield move("key ArrowUp, Enter", lambda: (field.press("ArrowUp"), field.press("Enter")))
                return
            current = field.input_value()
            suggestions = field.evaluate("(f) => f.list ? [...f.list.options].map((o) => o.value) : []")
            if not suggestions:  # add a word, or take it away again (back to a sentence seen before)
                suggestions = [current.removesuffix(" again") if current.endswith(" again")
                               else f"{current} again".strip()]
            new = next((s for s in suggestions if s != current), suggestions[0])
            commit = "Tab" if self.kind == "textarea" else "Enter"
            yield move(f"type {new!r}, {commit}", lambda: field.press(commit),
                       before_do=lambda: field.fill(new))
