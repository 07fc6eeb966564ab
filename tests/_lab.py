"""Real JupyterLab in a real browser: the machinery of tests/test_browser.py (and benchmarks).

Two context managers and a notebook helper::

    with running_lab(Path("notebooks")) as lab, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        nb = LabNotebook(page, lab, "02_qkv.ipynb")
        nb.open()                          # fresh workspace, kernel started and idle
        nb.run_all()                       # Edit > Clear Outputs, Run > Run All Cells, wait
        assert nb.error_outputs() == [] and nb.kernel_errors == []
        for control in nb.controls():      # every slider / drop-down / toggle / checkbox / text
            for move in control.moves():   # keyboard / select / click, as a user would
                move.picture_changed, move.text_changed
                move.latency_s             # input event -> new picture decoded, in the page

A ``Move`` waits for the change itself (no fixed sleeps): a probe in the page stamps the first
input event and the moment the explorer's new picture is decoded (or its readout changes);
then the kernel must be idle and the explorer stable. ``Target.move(control, name, do,
timeout)`` does the same for any action (e.g. a benchmark's own key presses).

``running_lab`` serves a temporary copy of the notebooks (Lab autosaves what it opens) with
its own config, data, settings, workspaces and runtime folders, so nothing from an earlier
session (a restored workspace, a news pop-up, a user-level kernel) gets in the way.
``chromium`` drives Debian's ``/usr/bin/chromium`` through Playwright (Playwright's own
browser download is not used).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # we run as root in CI; Chromium's sandbox refuses root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1400, "height": 1000}
ENABLE_HINT = (
    "install Debian's Chromium (`apt-get install chromium`, giving /usr/bin/chromium) and the "
    "pinned requirements (`make setup`, which installs the Python package playwright); "
    "Playwright's own `playwright install` is not needed"
)

# User settings written into the server's own settings folder.
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    # No "Would you like to get notified about official Jupyter news?" toast, no update check.
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    # Every cell attached to the DOM (no virtual scrolling), so every widget can be found.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # The served folder is a throwaway copy; no autosave writes needed.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}


REPO = Path(__file__).resolve().parents[1]


def notebooks_folder() -> Path:
    """The folder of the course's notebooks: ``notebooks/``, or ``$ATTN_NOTEBOOKS_DIR`` when set
    (to try the launch-path tests on other notebooks)."""
    return Path(os.environ.get("ATTN_NOTEBOOKS_DIR") or REPO / "notebooks").resolve()


def top_level_notebooks() -> list[str]:
    """File names of the learners' notebooks (top level only: not solutions/)."""
    return sorted(p.name for p in notebooks_folder().glob("*.ipynb"))


def in_ci() -> bool:
    """True under CI (env CI set to true/1/yes), where a missing tool is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    """Skip the calling test because a tool is missing, or fail it under CI (a CI that skips
    the browser test would pass without testing what it should)."""
    import pytest

    if in_ci():
        pytest.fail(f"{reason} (CI=true: failing instead of skipping)", pytrace=False)
    pytest.skip(reason)


def browser_unavailable() -> str | None:
    """Why the browser test cannot run here, or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return f"the Python package playwright is not importable ({e}); {ENABLE_HINT}"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} not found; {ENABLE_HINT}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab server (see ``running_lab``)."""

    url: str  # base URL, ends with "/"
    token: str
    root: Path  # the served folder (a copy of the notebooks)
    proc: subprocess.Popen
    log: Path
    home: Path  # the server's private config/data/settings/workspaces/runtime folders

    def api(self, method: str, path: str, body: object = None, timeout: float = 10) -> Any:
        """Call the server's REST API (``path`` like ``"api/sessions"``); JSON in and out."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read()
        return json.loads(text) if text.strip() else None

    def notebook_url(self, name: str, workspace: str | None = None) -> str:
        """URL opening ``name`` (relative to the served folder) in Lab.

        With a ``workspace``, Lab starts from that named, reset (empty) workspace, so tabs
        opened for an earlier notebook are not restored.
        """
        if workspace is None:
            return f"{self.url}lab/tree/{name}?token={self.token}"
        return f"{self.url}lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """End every session and kernel the server runs (the notebook's kernel after a test)."""
        for session in self.api("GET", "api/sessions"):
            self.api("DELETE", f"api/sessions/{session['id']}")
        for kernel in self.api("GET", "api/kernels"):
            self.api("DELETE", f"api/kernels/{kernel['id']}")

    def log_tail(self, n: int = 60) -> str:
        lines = self.log.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])


def _lab_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    dirs = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_DATA_DIR": home / "data",  # no user-level kernels or extensions
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": home / "settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / "workspaces",
        "IPYTHONDIR": home / "ipython",  # no user startup files in the kernel
    }
    for name, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    env["JUPYTER_PLATFORM_DIRS"] = "1"  # silences jupyter_core's deprecation warning
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    # No "build recommended" check (it rebuilds nothing here; it only costs seconds of CPU).
    page_config = dirs["JUPYTER_CONFIG_DIR"] / "labconfig" / "page_config.json"
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps({"buildCheck": False, "buildAvailable": False}))
    for plugin, values in LAB_SETTINGS.items():
        f = dirs["JUPYTERLAB_SETTINGS_DIR"] / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values, indent=2))
    return env


@contextmanager
def running_lab(
    notebooks_dir: Path | str,
    *,
    workdir: Path | str | None = None,
    startup_timeout: float = 120,
) -> Iterator[Lab]:
    """Start JupyterLab on 127.0.0.1 (free port, random token) serving a copy of ``notebooks_dir``.

    Args:
        notebooks_dir: the folder whose files are served (copied first, with sub-folders).
        workdir: a new or empty folder for the copy, the server's private folders and its
            log (default: a temporary folder removed afterwards).
        startup_timeout: seconds to wait for the server to answer.

    On exit: every kernel is shut down, then the server (``POST api/shutdown``, then
    SIGTERM / SIGKILL of the process it started if it is still there).
    """
    notebooks_dir = Path(notebooks_dir)
    if not notebooks_dir.is_dir():
        raise ValueError(f"notebooks_dir: expected a folder, got {notebooks_dir!s}")
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="attn-lab-")
        workdir = tmp.name
    workdir = Path(workdir)
    if workdir.exists() and any(workdir.iterdir()):
        raise ValueError(f"workdir: expected a new or empty folder, got {workdir!s} with files in it")
    root = workdir / "notebooks"
    shutil.copytree(notebooks_dir, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home = workdir / "lab-home"
    env = _lab_env(home)
    port, token = free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = workdir / "jupyterlab.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    lab = Lab(f"http://127.0.0.1:{port}/", token, root, proc, log, home)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{lab.log_tail()}")
            try:
                lab.api("GET", "api/status", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not answer in {startup_timeout} s:\n{lab.log_tail()}")
                time.sleep(0.25)
        yield lab
    finally:
        _stop(lab)
        if tmp is not None:
            tmp.cleanup()


def _stop(lab: Lab) -> None:
    if lab.proc.poll() is None:
        try:
            lab.shutdown_kernels()
            lab.api("POST", "api/shutdown")
        except (urllib.error.URLError, OSError):
            pass
        try:
            lab.proc.wait(20)
        except subprocess.TimeoutExpired:
            lab.proc.terminate()
            try:
                lab.proc.wait(10)
            except subprocess.TimeoutExpired:
                lab.proc.kill()
                lab.proc.wait()


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium driven by Playwright (a ``playwright.sync_api.Browser``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()



# --------------------------------------------------------------------------------------------
# A notebook open in Lab, its controls, and what they change.

# Marks every widget control and the thing it changes (its explorer, or else its output),
# returns their descriptions; lists interactive elements no handler knows.
_JS_SCAN = r"""
(panel) => {
  const outputs = [...panel.querySelectorAll('.jp-OutputArea-output')];
  const cells = [...panel.querySelectorAll('.jp-Cell')];
  const targets = [], controls = [], unknown = [];
  const text = (el) => (el ? el.innerText || el.textContent || '' : '').trim().replace(/\s+/g, ' ');
  const isExplorer = (n) => n.classList.contains('widget-vbox') &&
      [...n.children].some((c) => c.matches('img.widget-image'));
  const targetOf = (el) => {
    let n = el.parentElement;
    while (n && !n.classList.contains('jp-OutputArea-output')) {
      if (isExplorer(n)) return n;
      n = n.parentElement;
    }
    return n;
  };
  const markTarget = (t) => {
    if (t.dataset.attnTarget === undefined) {
      t.dataset.attnTarget = String(targets.length);
      // An explorer's title is an HTML widget above its picture (the readout is below).
      const kids = [...t.children];
      const img = kids.findIndex((c) => c.matches('img.widget-image'));
      const title = kids.slice(0, Math.max(img, 0)).find((c) => c.matches('.widget-html'));
      targets.push({index: targets.length, explorer: isExplorer(t),
                    title: isExplorer(t) && title ? text(title).slice(0, 80) : ''});
    }
    return Number(t.dataset.attnTarget);
  };
  const clean = (s) => s.replace(/[\u200b]/g, '').trim();
  const labelOf = (w) => {
    const l = w.querySelector(':scope > label.widget-label');
    return clean(text(l)) || clean(text(w.querySelector('.widget-label-basic span'))) ||
           clean(w.getAttribute('title') || '');
  };
  const kinds = [
    ['slider', '.widget-slider'],
    ['dropdown', '.widget-dropdown'],
    ['select', '.widget-select'],
    ['toggle-buttons', '.widget-toggle-buttons'],
    ['toggle-button', 'button.widget-toggle-button'],
    ['checkbox', '.widget-checkbox'],
    ['radio', '.widget-radio'],
    ['text', '.widget-text'],
    ['textarea', '.widget-textarea'],
  ];
  const covered = new Set();
  for (const out of outputs) {
    for (const [kind, sel] of kinds) {
      for (const w of out.querySelectorAll(sel)) {
        if (kind === 'toggle-button' && w.closest('.widget-toggle-buttons')) continue;
        if (w.dataset.attnControl !== undefined) continue;
        const parts = [w, ...w.querySelectorAll('input, select, textarea, button, [role=slider]')];
        parts.forEach((p) => covered.add(p));
        const disabled = parts.some((p) => p.disabled) ||
            !!w.querySelector('.noUi-target[disabled]');
        const cell = cells.indexOf(w.closest('.jp-Cell'));
        w.dataset.attnControl = String(controls.length);
        controls.push({index: controls.length, kind, label: labelOf(w), cell,
                       target: markTarget(targetOf(w)), disabled});
      }
    }
    for (const el of out.querySelectorAll(
        '.jupyter-widgets input, .jupyter-widgets select, .jupyter-widgets textarea, ' +
        '.jupyter-widgets button, .jupyter-widgets [role=slider]')) {
      if (!covered.has(el)) {
        const w = el.closest('.jupyter-widgets');
        unknown.push(`${el.tagName.toLowerCase()} in <${w.className}> (cell ${cells.indexOf(el.closest('.jp-Cell')) + 1})`);
      }
    }
  }
  return {targets, controls, unknown};
}
"""

# The parts of a target that show results (not the controls): an explorer's picture and HTML
# readouts, or, for a control outside any explorer, the images and HTML/Output widgets of its
# output that are neither controls nor hold one.
_JS_PARTS = r"""
const attnParts = (t, explorer) => {
  if (explorer) return [...t.children].filter((c) => c.matches('img.widget-image, .widget-html'));
  return [...t.querySelectorAll('img, .widget-html, .widget-output')].filter(
    (e) => !e.closest('[data-attn-control]') && !e.querySelector('[data-attn-control]'));
};
"""

# Installs a probe on a target: t0 = the first user input event after arming; picture = when a
# new picture of the target was decoded and the next frame began; text = when its text changed.
_JS_ARM = "(t, explorer) => {" + _JS_PARTS + r"""
  if (window.__attnProbe) window.__attnProbe.observer.disconnect();
  const probe = {t0: null, picture: null, text: null, observer: null};
  window.__attnProbe = probe;
  const start = () => { if (probe.t0 === null) probe.t0 = performance.now(); };
  for (const ev of ['keydown', 'pointerdown', 'mousedown', 'input', 'change']) {
    document.addEventListener(ev, start, {capture: true, once: true});
  }
  const frame = (key) => requestAnimationFrame(() => {
    if (probe[key] === null) probe[key] = performance.now();
  });
  probe.observer = new MutationObserver((records) => {
    const imgs = [...new Set(records.map((r) => r.target).filter((n) => n.tagName === 'IMG'))];
    if (records.some((r) => r.target.tagName !== 'IMG')) frame('text');
    if (imgs.length) Promise.all(imgs.map((i) => i.decode().catch(() => null))).then(() => frame('picture'));
  });
  for (const part of attnParts(t, explorer)) {
    probe.observer.observe(part, {subtree: true, childList: true, characterData: true,
                                  attributes: true, attributeFilter: ['src']});
  }
}
"""


@dataclass
class Snapshot:
    """What a target shows: its image sources, its text, screenshots of its pictures."""

    srcs: list[str]
    text: str
    pixels: list[bytes] = field(default_factory=list)

    def same_state(self, other: "Snapshot") -> bool:
        return self.srcs == other.srcs and self.text == other.text


@dataclass
class Move:
    """One user action on a control and its effect."""

    control: "Control"
    action: str
    before: Snapshot
    after: Snapshot
    picture_latency_s: float | None  # first input event -> new picture decoded and drawn
    text_latency_s: float | None  # first input event -> the readout text changed

    @property
    def latency_s(self) -> float | None:
        """Input to new picture on screen (to new text when the picture did not change)."""
        return self.picture_latency_s if self.picture_latency_s is not None else self.text_latency_s

    @property
    def picture_changed(self) -> bool:
        return self.before.pixels != self.after.pixels

    @property
    def text_changed(self) -> bool:
        return self.before.text != self.after.text


class Target:
    """What controls change: an explorer (VBox with an image) or, else, the control's output."""

    def __init__(self, nb: "LabNotebook", index: int, explorer: bool, title: str) -> None:
        self.nb, self.index, self.explorer, self.title = nb, index, explorer, title
        self.locator = nb.page.locator(f'[data-attn-target="{index}"]')

    def snapshot(self, pixels: bool = True) -> Snapshot:
        """The target's image sources and text; with ``pixels``, screenshots of its parts."""
        state = self.locator.evaluate(
            "(t, explorer) => {" + _JS_PARTS + """
                const parts = attnParts(t, explorer);
                parts.forEach((p, i) => { p.dataset.attnPart = String(i); });
                return {srcs: parts.filter((p) => p.tagName === 'IMG').map((i) => i.src),
                        text: parts.filter((p) => p.tagName !== 'IMG').map((p) => p.innerText).join('\\n'),
                        n: parts.length};
            }""",
            self.explorer,
        )
        snap = Snapshot(state["srcs"], state["text"])
        if pixels:
            parts = [self.locator.locator(f'[data-attn-part="{i}"]').first for i in range(state["n"])]
            snap.pixels = [p.screenshot() for p in parts if p.is_visible()]
        return snap

    def move(self, control: "Control", action: str, do: Callable[[], None], timeout: float,
             pixels: bool = True) -> Move:
        """Arm the probe, ``do`` the user action, wait until the picture or text changed and
        the kernel is idle and the target stable; return the Move (with both snapshots;
        ``pixels=False`` skips their screenshots, for the benchmark, which only needs the
        probe's times)."""
        page = self.nb.page
        before = self.snapshot(pixels)
        errors = len(self.nb.kernel_errors)
        self.locator.evaluate(_JS_ARM, self.explorer)
        do()
        deadline = time.monotonic() + timeout
        try:
            while not page.evaluate(
                    "() => window.__attnProbe.picture !== null || window.__attnProbe.text !== null"):
                if len(self.nb.kernel_errors) > errors:
                    raise AssertionError(f"{control}: after {action}, the kernel reported an error")
                if time.monotonic() > deadline:
                    raise AssertionError(f"{control}: after {action}, neither the picture nor the "
                                         f"text of {self} changed within {timeout} s")
                time.sleep(0.02)
            self.wait_stable(timeout)
        finally:
            probe = page.evaluate(
                """() => { const p = window.__attnProbe; p.observer.disconnect();
                           return {t0: p.t0, picture: p.picture, text: p.text}; }""")
        after = self.snapshot(pixels)
        t0 = probe["t0"]

        def since(t: float | None) -> float | None:
            return None if t is None or t0 is None else (t - t0) / 1000

        return Move(control, action, before, after, since(probe["picture"]), since(probe["text"]))

    def wait_stable(self, timeout: float, quiet: float = 0.3) -> None:
        """Wait until the kernel is idle and the target's state stops changing for ``quiet`` s."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            self.nb.wait_idle(timeout=max(1.0, deadline - time.monotonic()))
            now = self.snapshot(pixels=False)
            if last is not None and now.same_state(last):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self} kept changing for {timeout} s")
            last = now
            time.sleep(quiet)

    def __str__(self) -> str:
        if self.explorer:
            return f"the explorer {self.title!r}" if self.title else "the explorer"
        return "the cell's output"


class Control:
    """One live widget control; ``moves()`` performs a user's actions on it."""

    def __init__(self, nb: "LabNotebook", info: dict[str, Any], target: Target) -> None:
        self.nb, self.target = nb, target
        self.index, self.kind, self.label = info["index"], info["kind"], info["label"]
        self.cell, self.disabled = info["cell"], info["disabled"]
        self.locator = nb.page.locator(f'[data-attn-control="{self.index}"]')

    def __str__(self) -> str:
        name = f"{self.kind} {self.label!r}" if self.label else f"unlabelled {self.kind}"
        return f"{name} (cell {self.cell + 1}) of {self.target}"

    def moves(self, timeout: float = 30, pixels: bool = True) -> Iterator[Move]:
        """Change the value the way a user would, one action at a time; yield each Move.

        slider: focus the handle, ArrowRight, then End (from the top: ArrowLeft, then Home);
        drop-down / list: select the next option; toggle buttons: click an inactive one;
        toggle button, checkbox: click; radio buttons: click an unchecked one; text / combo
        box: type another of its suggestions (or add a word) and press Enter; number box:
        ArrowUp, Enter.
        """
        move = lambda action, do: self.target.move(self, action, do, timeout, pixels)  # noqa: E731
        if self.kind == "slider":
            handle = self.locator.locator(".noUi-handle").first
            handle.scroll_into_view_if_needed()

            def value(attr: str) -> float:
                return float(handle.get_attribute(attr))

            up = value("aria-valuenow") < value("aria-valuemax")
            step, jump, limit = ("ArrowRight", "End", "aria-valuemax") if up else ("ArrowLeft", "Home", "aria-valuemin")
            for key in (step, jump):
                if value("aria-valuenow") == value(limit):
                    break
                yield move(f"key {key}", lambda key=key: handle.press(key))
        elif self.kind in ("dropdown", "select"):
            select = self.locator.locator("select")
            values = select.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
            if len(values) < 2:
                return
            current = select.input_value()
            nxt = values[(values.index(current) + 1) % len(values)] if current in values else values[0]
            yield move(f"select option {nxt!r}", lambda: select.select_option(nxt))
        elif self.kind == "toggle-buttons":
            button = self.locator.locator("button.widget-toggle-button:not(.mod-active)").first
            name = button.inner_text().strip()
            yield move(f"click {name!r}", lambda: button.click())
        elif self.kind == "toggle-button":
            yield move("click", lambda: self.locator.click())
        elif self.kind == "checkbox":
            box = self.locator.locator("input[type=checkbox]")
            yield move("click", lambda: box.click())
        elif self.kind == "radio":
            radio = self.locator.locator("input[type=radio]:not(:checked)").first
            yield move("click", lambda: radio.click())
        elif self.kind in ("text", "textarea"):
            field = self.locator.locator("textarea" if self.kind == "textarea" else "input").first
            field.scroll_into_view_if_needed()
            kind = field.get_attribute("type") or "text"
            if kind == "number":  # IntText / FloatText / Bounded...: one step up, then commit
                def step() -> None:
                    field.press("ArrowUp")
                    field.press("Enter")
                yield move("key ArrowUp, Enter", step)
                return
            current = field.input_value()
            presets = field.evaluate("(f) => f.list ? [...f.list.options].map((o) => o.value) : []")
            others = [p for p in presets if p != current]
            # A Combobox: choose another of its suggestions; free text: add a word.
            new = others[0] if others else (current + " again").strip()

            def type_it() -> None:
                field.fill(new)
                field.press("Tab" if self.kind == "textarea" else "Enter")  # commits the value
            yield move(f"type {new!r}", type_it)
        else:  # pragma: no cover - _JS_SCAN only reports the kinds above
            raise AssertionError(f"no user action known for {self}")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def kernel_message(frame: bytes | str) -> tuple[str, dict, dict] | None:
    """(channel, header, content) of one kernel websocket frame: Lab's binary
    ``v1.kernel.websocket.jupyter.org`` framing (a count, offsets, then channel, header,
    parent header, metadata, content, buffers) or the older JSON text frames."""
    try:
        if isinstance(frame, str):
            msg = json.loads(frame)
            return msg.get("channel", ""), msg["header"], msg.get("content", {})
        n = int.from_bytes(frame[:8], "little")
        offsets = [int.from_bytes(frame[8 + 8 * i: 16 + 8 * i], "little") for i in range(n)]
        parts = [frame[a:b] for a, b in zip(offsets, offsets[1:] + [len(frame)])]
        return parts[0].decode(), json.loads(parts[1]), json.loads(parts[4])
    except (ValueError, KeyError, IndexError, UnicodeDecodeError):
        return None


class LabNotebook:
    """A notebook opened in JupyterLab in ``page`` (one notebook per page).

    ``kernel_errors`` collects every error the kernel reports while the page is open, also
    those no cell shows (an exception in a widget callback goes to Lab's log console only).
    """

    def __init__(self, page: Any, lab: Lab, name: str) -> None:
        self.page, self.lab, self.name = page, lab, name
        self.kernel_errors: list[str] = []
        page.on("websocket", self._watch)
        self.panel = page.locator(".jp-NotebookPanel").first
        nb = json.loads((lab.root / name).read_text(encoding="utf-8"))
        self.n_cells = len(nb["cells"])
        self.n_code_cells = sum(c["cell_type"] == "code" for c in nb["cells"])
        # Widgets the stored notebook displayed: the browser must show as many.
        self.n_widget_outputs = sum(
            "application/vnd.jupyter.widget-view+json" in o.get("data", {})
            for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))

    def open(self, timeout: float = 120) -> None:
        """Load Lab with this notebook alone (a fresh workspace) and wait until it is ready:
        every cell shown, its kernel started and connected, and idle for a second."""
        workspace = "w-" + secrets.token_hex(4)
        self.page.goto(self.lab.notebook_url(self.name, workspace), timeout=timeout * 1000)
        self.page.wait_for_function(
            """(n) => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length === n""",
            arg=self.n_cells, timeout=timeout * 1000)
        # Make it the current document, as a user's click on its tab does.
        self.page.locator(".lm-TabBar-tab.lm-mod-current").filter(has_text=self.name).first.click()
        deadline = time.monotonic() + timeout
        while not any(s["path"] == self.name and s["kernel"]["execution_state"] == "idle"
                      for s in self.lab.api("GET", "api/sessions")):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no idle kernel after {timeout} s")
            time.sleep(0.25)
        self.wait_quiet(timeout)

    def wait_quiet(self, timeout: float = 60, quiet: float = 1.0) -> None:
        """Wait until the toolbar has shown an idle kernel for ``quiet`` seconds in a row."""
        deadline = time.monotonic() + timeout
        since = None
        while True:
            now = time.monotonic()
            if self.status() == "idle":
                since = now if since is None else since
                if now - since >= quiet:
                    return
            else:
                since = None
            if now > deadline:
                raise AssertionError(f"{self.name}: kernel status {self.status()!r} after {timeout} s")
            time.sleep(0.1)

    def _watch(self, ws: Any) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", self._frame)

    def _frame(self, frame: bytes | str) -> None:
        msg = kernel_message(frame)
        if msg is None:
            return
        channel, header, content = msg
        if channel == "iopub" and header.get("msg_type") == "error":
            tb = _ANSI.sub("", "\n".join(content.get("traceback", [])))
            self.kernel_errors.append(f"{content.get('ename')}: {content.get('evalue')}\n{tb[-3000:]}")

    def menu(self, menu: str, item: str) -> None:
        """Click a menu of the menu bar, then one of its items (exact label) once it is enabled
        (Lab enables notebook commands only while a notebook is the current document)."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(menu)}$")).click()
        entry = self.page.locator(".lm-Menu-item").filter(
            has=self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")))
        entry.and_(self.page.locator(":not(.lm-mod-disabled)")).wait_for(timeout=30_000)
        entry.click()
        self.page.locator(".lm-Menu").first.wait_for(state="hidden", timeout=10_000)

    def status(self) -> str | None:
        """The notebook toolbar's kernel status (idle, busy, ...)."""
        ind = self.panel.locator(".jp-Notebook-ExecutionIndicator")
        return ind.first.get_attribute("data-status") if ind.count() else None

    def wait_idle(self, timeout: float = 60) -> None:
        self.page.wait_for_function(
            """() => { const e = document.querySelector(
                          '.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
                       return e !== null && e.dataset.status === 'idle'; }""",
            timeout=timeout * 1000)

    def prompts(self) -> list[str]:
        """The input prompts of the code cells, e.g. ``["[1]:", "[*]:", "[ ]:"]``."""
        return self.panel.locator(".jp-CodeCell .jp-InputPrompt").evaluate_all(
            "(ps) => ps.map((p) => p.innerText.trim())")

    def run_all(self, timeout: float = 300) -> float:
        """Edit > Clear Outputs of All Cells, then Run > Run All Cells; wait until the kernel is
        done (no cell queued or running, kernel idle, stable). Returns the seconds it took."""
        self.menu("Edit", "Clear Outputs of All Cells")
        self.page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')]
                     .every((p) => !/\\d/.test(p.innerText))""", timeout=30_000)
        t0 = time.monotonic()
        deadline = t0 + timeout
        started = """() => { const p = document.querySelector('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt');
                             return p === null || /[*\\d]/.test(p.innerText); }"""
        for attempt in range(3):
            self.menu("Run", "Run All Cells")
            try:  # started: the first code cell is queued, running or done
                self.page.wait_for_function(started, timeout=20_000)
                break
            except Exception:  # playwright's TimeoutError: the command did not take; again
                print(f"{self.name}: Run All Cells did not start (prompts {self.prompts()}, "
                      f"kernel {self.status()!r}); clicking it again")
                if attempt == 2:
                    raise AssertionError(f"{self.name}: Run > Run All Cells did not start the cells "
                                         f"(prompts {self.prompts()}, kernel {self.status()!r})")
        quiet = 0
        while quiet < 2:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: still running after {timeout} s: {self.prompts()}")
            busy = any("*" in p for p in self.prompts()) or self.status() != "idle"
            quiet = 0 if busy else quiet + 1
            time.sleep(0.25)
        elapsed = time.monotonic() - t0
        # Widget views render after the kernel is idle; wait for the "Loading widget..." ones.
        self.page.wait_for_function(
            """() => !document.querySelector('.jp-NotebookPanel').innerText.includes('Loading widget...')""",
            timeout=60_000)
        return elapsed

    def unexecuted_cells(self) -> list[int]:
        """1-based numbers (among code cells) of the cells that have no execution count."""
        return [i + 1 for i, p in enumerate(self.prompts()) if not any(ch.isdigit() for ch in p)]

    def error_outputs(self) -> list[str]:
        """Texts of outputs that show an error: a traceback / error on stderr (Lab renders error
        outputs with the stderr MIME type) or a widget that failed to render."""
        texts = self.panel.locator(".jp-OutputArea-output").evaluate_all(
            """(os) => os.map((o) => [o.getAttribute('data-mime-type') || '', o.innerText])""")
        bad = []
        for mime, text in texts:
            if mime == "application/vnd.jupyter.stderr" and ("Traceback" in text or "Error" in text):
                bad.append(text)
            elif "Error displaying widget" in text or "Error rendering output" in text:
                bad.append(text)
        return bad

    def widget_views(self) -> int:
        """How many top-level widget views the outputs show."""
        return self.panel.locator(".jp-OutputArea-output > .jupyter-widgets").count()

    def scan(self) -> tuple[list[Control], list[str]]:
        """Every widget control in the outputs (with its target), and the interactive elements
        that no handler knows (the test fails on those: teach ``Control.moves`` first)."""
        found = self.panel.evaluate(_JS_SCAN)
        targets = [Target(self, t["index"], t["explorer"], t["title"]) for t in found["targets"]]
        controls = [Control(self, c, targets[c["target"]]) for c in found["controls"]]
        return controls, found["unknown"]

    def controls(self) -> list[Control]:
        return self.scan()[0]
