"""A real JupyterHub class: learners follow the teaching guide's nbgitpuller link, the teacher pushes.

One JupyterHub (with configurable-http-proxy, DummyAuthenticator, SimpleLocalProcessSpawner;
see tests/_hub.py) for two learners, and one headless Chromium. The teacher's repository is a
snapshot of this working tree in a temporary folder (branch main). The class, each learner in
their own browser context:

1. both learners follow the link of docs/teaching.md (filled in as the guide tells an
   instructor) and log in; the hub starts their servers, nbgitpuller clones the course into
   each home, and JupyterLab opens notebooks/00_start_here.ipynb: two servers run at once;
2. learner 1 opens the explorer notebook, clears its outputs (Edit > Clear Outputs of All
   Cells) and runs Run > Run All Cells: every code cell runs once, fresh (the kernel's
   execution count says so too), no cell fails, and the kernel imported ``attn`` from the
   learner's clone; then learner 1 moves the explorer's first slider with the keyboard, and
   the explorer's picture changes;
3. learner 2, in the class at the same time (learner 1's server still running), opens the same
   notebook in their own clone, clears it and runs only the two cells the explorer needs (the
   first code cell and the explorer's), and moves the same slider: the picture changes;
4. each learner types a note into that notebook's first code cell and saves it (File > Save
   Notebook).

Then the teacher commits a change to 00_start_here, and each learner follows the link again:
they land in 00_start_here showing the teacher's change, and their own note, and no other
learner's, is still in their notebook (nbgitpuller's merge keeps the learner's edits).

What the test waits for, since waiting for a status attribute alone let it click Run All before
the notebook had a kernel (the reliability review of 2026-12-06, §5a: JupyterLab then opened
its modal "Select Kernel" dialog, which took the next click, in 2 of about 10 fresh-clone runs on
loaded machines):

- the explorer's session is started through the server's REST API before its page opens, so
  JupyterLab joins that kernel and never has to pick one; the test then waits until the page
  shows it: the notebook's tab and all its cells, a kernel name other than "No Kernel" in its
  toolbar, "Idle" in the status bar, and the server counting the page's connection to the kernel;
- outputs are cleared before anything runs, so that a run is told from the saved notebook
  (which numbers every prompt) by fresh prompts;
- before each menu click, and while the test waits for the page, no dialog may be open: a
  "Select Kernel" dialog about another notebook (00_start_here, restored in its tab) is
  answered "No Kernel"; any other dialog fails the test, named;
- learner 2's JupyterLab gets a kernel list without python3, the notebooks' kernel, so it
  cannot pick that kernel itself, as when a loaded server does not answer its requests for the
  list: Lab asks with its "Select Kernel" dialog for every notebook opened without a session.
  The explorer must work all the same (the test checks that the fault took effect: Lab shows
  the kernel by its bare name, "python3");
- a failure says what was on the learner's screen (tabs, dialogs, kernel name and status,
  prompts) and where its screenshot is. Every wait polls for a state, with a deadline.

Without Chromium, playwright, configurable-http-proxy or nbgitpuller the hub test is skipped,
saying how to enable it; under CI (CI=true) it fails instead.
"""
from __future__ import annotations

import ast
import json
import re
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from _hub import (FOLDER, REPO, START, KernelClient, class_link, course_origin,
                  hub_unavailable, readme_link, run_git, running_hub, teacher_commit)
from _support import TEST_ONLY, read_pins, unavailable

LEARNERS = ["learner-1", "learner-2"]
# The explorer notebook of the class (benchmarks/hub.py times Run All of it too). Learner 1 runs
# all of it; learner 2 its first code cell (imports, seeds) and the cell that calls EXPLORER_CALL.
EXPLORER = "notebooks/06_visualization.ipynb"
EXPLORER_CALL = "pattern_explorer("
VIEWPORT = {"width": 1400, "height": 1000}
TEACHER_NOTE = "**Today's class:** notebooks 01 to 06, then the exercises of 06."
# Every cell attached to the page (no virtual scrolling), so the explorer's widget exists
# before the test scrolls to it, as in tests/delivery/test_browser.py.
LAB_SETTINGS = {"@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"}}
# Learner 2's JupyterLab gets a kernel list without python3, the notebooks' kernel (see
# _kernel_list_without_python): it shows that kernel by its bare name, not "Python 3 (ipykernel)".
KERNELSPECS = re.compile(r"/api/kernelspecs(\?|$)")
OTHER_KERNELS = {"default": "other", "kernelspecs": {"other": {
    "name": "other", "resources": {},
    "spec": {"argv": ["other"], "display_name": "Other", "language": "other", "metadata": {}}}}}
KERNEL_NAME_WITHOUT_SPEC = "python3"


@pytest.fixture(scope="module")
def hub_class(tmp_path_factory, browser):
    """The teacher's repository, a running hub for LEARNERS, and Chromium: pytest-playwright's
    session browser, so that this test runs beside the other browser tests (a second
    sync_playwright() in the same process fails while theirs is running)."""
    reason = hub_unavailable()
    if reason:
        unavailable(f"hub test: {reason}")
    root = tmp_path_factory.mktemp("hub-class")
    origin = course_origin(root / "git")
    with running_hub(root / "hub", LEARNERS, environment={"OMP_NUM_THREADS": "1"},
                     lab_settings=LAB_SETTINGS) as hub:
        yield hub, origin, browser


def test_readme_link_is_filled_in_as_the_readme_says(tmp_path):
    link = class_link("http://hub.example:8000", tmp_path / FOLDER)
    parts = urllib.parse.urlsplit(link)
    query = dict(urllib.parse.parse_qsl(parts.query))
    assert parts.netloc == "hub.example:8000"
    assert parts.path == "/hub/user-redirect/git-pull"
    assert query["repo"] == (tmp_path / FOLDER).as_uri()
    assert query["branch"] == "main"
    assert query["urlpath"] == f"lab/tree/{FOLDER}/{START}"


def test_class_link_rejects_a_link_without_hub_or_repo(tmp_path):
    with pytest.raises(ValueError, match="expected https://HUB"):
        class_link("http://h", tmp_path / FOLDER, "https://example.org/hub/git-pull?repo=x")
    with pytest.raises(ValueError, match="expected https://HUB"):
        class_link("http://h", tmp_path / FOLDER, "https://HUB/hub/user-redirect/git-pull?branch=main")


def _first_heading(notebook) -> str:
    """The text of the first Markdown heading of a notebook file (what the page must show)."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            m = re.search(r"^#+\s+(.+)$", source, re.MULTILINE)
            if m:
                return m.group(1).strip()
    raise ValueError(f"{notebook}: no Markdown heading")


def _code_cells(notebook: Path) -> list[str]:
    """The sources of a notebook file's code cells, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
            for c in cells if c["cell_type"] == "code"]


def _cell_count(notebook: Path) -> int:
    return len(json.loads(notebook.read_text(encoding="utf-8"))["cells"])


# --------------------------------------------------------------------------------------------
# What a learner's JupyterLab shows: read for the waits, and told when a step fails.

_SCREEN = r"""() => {
  const text = (e) => (e ? e.innerText.replace(/\s+/g, ' ').trim() : null);
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return {
    url: location.href,
    lab: document.querySelector('.jp-LabShell') !== null,
    tab: text(document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')),
    tabs: [...document.querySelectorAll('.lm-DockPanel .lm-TabBar-tab')].map(text),
    dialogs: [...document.querySelectorAll('.jp-Dialog')].map((d) => ({
      title: text(d.querySelector('.jp-Dialog-header')), body: text(d.querySelector('.jp-Dialog-body')),
      buttons: [...d.querySelectorAll('.jp-Dialog-button')].map(text)})),
    kernel: panel && text(panel.querySelector('[data-jp-item-name="kernelName"]')),
    indicator: indicator ? indicator.dataset.status : null,
    statusbar: text(document.querySelector('#jp-main-statusbar')),
    cells: panel ? panel.querySelectorAll('.jp-Cell').length : 0,
    prompts: panel ? [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(text) : [],
    outputs: panel ? panel.querySelectorAll('.jp-OutputArea-output').length : 0,
    widgets: panel ? panel.querySelectorAll('.jp-OutputArea-output > .jupyter-widgets').length : 0,
  };
}"""


def _screen(page) -> dict[str, Any]:
    """What the page shows now (``_SCREEN``); ``{"error": ...}`` when it cannot be read."""
    try:
        return page.evaluate(_SCREEN)
    except Exception as e:  # noqa: BLE001 - a closed or navigating page: say so
        return {"error": f"{e.__class__.__name__}: {str(e).splitlines()[0]}"}


def _prompts_in_short(prompts: list[str]) -> str:
    """``["[1]:", "[2]:", "[ ]:", "[ ]:"]`` -> ``"[1]: [2]: [ ]:x2"``."""
    runs: list[list[Any]] = []
    for p in prompts:
        if runs and runs[-1][0] == p:
            runs[-1][1] += 1
        else:
            runs.append([p, 1])
    return " ".join(p if n == 1 else f"{p}x{n}" for p, n in runs) or "none"


def _told(screen: dict[str, Any]) -> str:
    """The screen in one paragraph, for a failure message."""
    if "error" in screen:
        return f"(the page could not be read: {screen['error']})"
    dialogs = "; ".join(f"{d['title']!r}: {d['body']!r}, buttons {d['buttons']}" for d in screen["dialogs"])
    return (f"at {screen['url']}; tabs {screen['tabs']} (current {screen['tab']!r}); "
            f"dialogs: {dialogs or 'none'}; kernel {screen['kernel']!r}, execution indicator "
            f"{screen['indicator']!r}, status bar {screen['statusbar']!r}; {screen['cells']} cells, "
            f"prompts {_prompts_in_short(screen['prompts'])}; {screen['outputs']} outputs, "
            f"{screen['widgets']} of them widgets")


def _wait_screen(page, what: str, ready: Callable[[dict[str, Any]], bool], timeout: float,
                 notebook: str | None = None) -> dict[str, Any]:
    """Poll the screen every 250 ms until ``ready(screen)``; return that screen. After
    ``timeout`` s, fail saying ``what`` was awaited and what the screen showed. With
    ``notebook``, the learner works in that notebook: a dialog that opens meanwhile is answered
    or fails the test (``_answer_dialogs``)."""
    deadline = time.monotonic() + timeout
    while True:
        screen = _screen(page)
        if notebook is not None and screen.get("dialogs"):
            _answer_dialogs(page, notebook)
        elif "error" not in screen and ready(screen):
            return screen
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout:.0f} s; on screen: {_told(screen)}")
        page.wait_for_timeout(250)


@contextmanager
def _telling_the_screen(page, user: str, step: str, shots: Path, problems: list[str],
                        console: list[str]) -> Iterator[None]:
    """Run a step of ``user``; when it fails, add what their screen showed, a screenshot, and
    the uncaught errors and console errors of the pages so far to the failure."""
    try:
        yield
    except Exception as e:
        shot = shots / f"{user}-failed.png"
        try:
            page.screenshot(path=str(shot))
        except Exception as s:  # noqa: BLE001 - the step's failure is what matters
            shot = f"none ({s.__class__.__name__})"
        told = "" if "on screen:" in str(e) else f"\n{user}'s screen: {_told(_screen(page))}"
        raise AssertionError(f"{user}: {step}: {e}{told}\nscreenshot: {shot}\nuncaught errors in "
                             f"the pages: {problems or 'none'}\nconsole errors: {console or 'none'}") from e


# --------------------------------------------------------------------------------------------
# The learner's actions.

def _wait_heading(page, text: str, why: str, timeout: float = 30) -> None:
    """Wait until the open notebook shows a rendered heading containing ``text``."""
    headings = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown").locator(
        "h1, h2, h3, p").filter(has_text=text)
    try:
        headings.first.wait_for(timeout=timeout * 1000)
    except Exception as e:  # playwright's TimeoutError
        raise AssertionError(f"{why} {text!r} ({e.__class__.__name__})") from None


def _follow_link(page, link: str, user: str, hub, timeout: float = 300) -> None:
    """Open the link and log in when the hub asks; return once JupyterLab has loaded and shows
    a notebook; fail unless that is ``START`` in the learner's clone."""
    page.goto(link)
    login = page.locator("#username_input")
    lab = re.compile(rf"/user/{re.escape(user)}/lab(/|$|\?)")
    deadline = time.monotonic() + timeout
    while not (lab.search(page.url) and page.locator(".jp-LabShell").count()):
        if login.is_visible():
            login.fill(user)
            page.locator("#password_input").fill("any password")
            page.locator("#login_submit").click()
        if time.monotonic() > deadline:
            raise AssertionError(f"the link did not lead to JupyterLab in {timeout} s; at {page.url}\n"
                                 f"hub log:\n{hub.log_tail()}")
        page.wait_for_timeout(250)
    expected = f"/user/{user}/lab/tree/{FOLDER}/{START}"
    path = urllib.parse.urlsplit(page.url).path
    assert path == expected, f"the link opened {path}, not {expected}"
    name = START.rsplit("/", 1)[1]
    _wait_screen(page, f"{name} is the open notebook", lambda s: s["tab"] == name and s["cells"] > 0, 120)


def _kernel_list_without_python(context) -> None:
    """Make ``context``'s pages get a kernel list without the notebooks' kernel: every
    /api/kernelspecs answer lists ``OTHER_KERNELS`` only.

    JupyterLab then cannot pick a notebook's kernel by name, as when its requests for the list
    fail on a loaded server (it has no list at all), and asks the learner with its modal "Select
    Kernel" dialog for every notebook it opens without a running session: the failed fresh-clone
    runs. Failing the requests does that too, but not in every run (Lab retries after a random
    0 to 61 s, and a failed request for a connected kernel's own spec is an uncaught error in
    Lab); answering them late does not (Lab waits for the first answer before it shows
    anything)."""
    context.route(KERNELSPECS, lambda route: route.fulfill(json=OTHER_KERNELS))


def _answer_dialogs(page, notebook: str, timeout: float = 30) -> None:
    """Leave no JupyterLab dialog open. A "Select Kernel" dialog about another notebook than
    ``notebook`` (00_start_here, restored in its tab while Lab cannot pick its kernel) gets an
    answer a learner may give, "No Kernel" (its reject button: neither starting a kernel nor
    sharing the explorer's, which the dialog offers too); any other dialog fails the test,
    named, and so does one that is still open ``timeout`` s after its answer."""
    while True:
        dialogs = _screen(page).get("dialogs", [])
        if not dialogs:
            return
        d = dialogs[0]
        about = (re.match(r'Select kernel for: "([^"]+)"', d["body"] or "")
                 if d["title"] == "Select Kernel" else None)
        if about is None or about.group(1) == notebook:
            raise AssertionError(f"JupyterLab shows the dialog {d['title']!r} ({d['body']!r}, buttons "
                                 f"{d['buttons']}) where the learner expects none")
        dialog = page.locator(".jp-Dialog").first
        button = dialog.locator(".jp-Dialog-button.jp-mod-reject").first
        print(f"JupyterLab asks {d['title']!r} for {about.group(1)}; "
              f"the learner answers {button.inner_text()!r}")
        button.click(timeout=timeout * 1000)
        try:
            dialog.wait_for(state="detached", timeout=timeout * 1000)
        except Exception:  # playwright's TimeoutError
            raise AssertionError(f"the dialog {d['title']!r} ({d['body']!r}) is still open "
                                 f"{timeout} s after the learner answered it") from None


def _menu(page, menu: str, item: str, notebook: str, timeout: float = 60) -> None:
    """Menu ``menu`` > ``item``, once no dialog is open (``_answer_dialogs``) and Lab enables
    the item. A click that a dialog opened meanwhile intercepts is not made (Playwright checks
    what is under the pointer first): the dialog is answered, and the menu tried again."""
    exact = lambda s: re.compile(f"^{re.escape(s)}$")  # noqa: E731
    label = page.locator(".lm-MenuBar-itemLabel", has_text=exact(menu))
    entry = page.locator(".lm-Menu-item:not(.lm-mod-disabled)").filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=exact(item))).first
    deadline = time.monotonic() + timeout
    while True:
        _answer_dialogs(page, notebook)
        try:
            if not entry.is_visible():
                label.click(timeout=5000)
            entry.click(timeout=5000)
            break
        except Exception as e:  # playwright's TimeoutError: a dialog, or the item still disabled
            if time.monotonic() > deadline:
                raise AssertionError(f"{menu} > {item}: not clicked in {timeout} s "
                                     f"({str(e).splitlines()[0]})") from None
    try:
        page.locator(".lm-Menu").first.wait_for(state="hidden", timeout=10_000)
    except Exception:  # playwright's TimeoutError
        raise AssertionError(f"{menu} > {item}: the menu is still open 10 s after the click") from None


def _open_explorer(page, hub, user: str, token: str) -> tuple[str, str]:
    """Start the explorer notebook's session through the REST API, open the notebook in the
    learner's Lab (its second tab: 00_start_here stays open) and wait until the page has joined
    that kernel and it is idle. Returns the kernel's id and the name the toolbar shows for it."""
    path = f"{FOLDER}/{EXPLORER}"
    kernel_id = hub.start_session(user, path, token=token)["kernel"]["id"]
    page.goto(f"{hub.url}/user/{user}/lab/tree/{path}")
    name, cells = Path(EXPLORER).name, _cell_count(hub.clone(user) / EXPLORER)
    _wait_screen(page, f"{name} open with its {cells} cells and a kernel",
                 lambda s: (s["tab"] == name and s["cells"] == cells
                            and s["kernel"] not in (None, "", "No Kernel")), 180, notebook=name)
    # Make it the current document, as a click on its tab does: Lab enables the Run menu's
    # notebook commands, and its status bar tells this notebook's kernel, only then.
    page.locator(".lm-DockPanel .lm-TabBar-tab.lm-mod-current").filter(has_text=name).first.click()
    screen = _wait_screen(page, f"{name}'s kernel idle, in its toolbar and in the status bar",
                 lambda s: (s["kernel"] not in (None, "", "No Kernel") and s["indicator"] == "idle"
                            and name in (s["statusbar"] or "") and re.search(r"\| Idle\b", s["statusbar"])),
                 120, notebook=name)
    deadline = time.monotonic() + 60
    while True:  # the server counts the page's websocket to the kernel started above
        model = hub.server_api(user, "GET", f"api/kernels/{kernel_id}", token=token)
        if model.get("connections", 0) >= 1 and model.get("execution_state") == "idle":
            return kernel_id, screen["kernel"]
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: the page has not joined kernel {kernel_id} after 60 s "
                                 f"(the server says {model})")
        page.wait_for_timeout(250)


def _clear_outputs(page, name: str) -> None:
    """Edit > Clear Outputs of All Cells: no output and no prompt number left, so that what runs
    afterwards is told from what the notebook was saved with."""
    _menu(page, "Edit", "Clear Outputs of All Cells", name)
    _wait_screen(page, f"{name}: outputs and prompt numbers cleared",
                 lambda s: s["outputs"] == 0 and not any(re.search(r"[*\d]", p) for p in s["prompts"]), 60,
                 notebook=name)


def _ran(prompts: list[str]) -> list[int]:
    """0-based numbers of the code cells whose prompt holds an execution count."""
    return [i for i, p in enumerate(prompts) if re.search(r"\d", p)]


def _wait_quiet(page, name: str, timeout: float) -> dict[str, Any]:
    """Wait until some cell has run, none is queued or running and the kernel has been idle
    for a second; return the screen then."""
    quiet_since = None

    def quiet(s: dict[str, Any]) -> bool:
        nonlocal quiet_since
        if _ran(s["prompts"]) and not any("*" in p for p in s["prompts"]) and s["indicator"] == "idle":
            quiet_since = quiet_since or time.monotonic()
            return time.monotonic() - quiet_since >= 1.0
        quiet_since = None
        return False

    return _wait_screen(page, f"{name}: the cells ran and the kernel is idle", quiet, timeout, notebook=name)


def _run_all(page, name: str, timeout: float = 300) -> float:
    """Run > Run All Cells on the cleared notebook; wait until every code cell shows a fresh
    execution count (1, 2, ... in order), or the run stopped at a failing cell. Returns the
    seconds from the click to the kernel idle."""
    t0 = time.monotonic()
    _menu(page, "Run", "Run All Cells", name)
    prompts = _wait_quiet(page, name, timeout)["prompts"]
    seconds = time.monotonic() - t0
    expected = [f"[{i}]:" for i in range(1, len(prompts) + 1)]
    assert prompts == expected, (f"{name}: after Run All, the prompts read {_prompts_in_short(prompts)}, "
                                 f"not [1]: to [{len(prompts)}]:\n" + "\n---\n".join(_error_outputs(page)))
    return seconds


def _run_cells(page, name: str, cells: list[int], timeout: float = 120) -> float:
    """Run only the given code cells (0-based), in order, as a learner does: a click on the
    cell's prompt selects it, Run > Run Selected Cell and Do not Advance runs it. Every other
    cell stays unrun. Returns the seconds from the first click to the kernel idle."""
    code_cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")
    t0 = time.monotonic()
    for n, i in enumerate(cells, start=1):
        _answer_dialogs(page, name)
        code_cells.nth(i).locator(".jp-InputPrompt").click()
        assert code_cells.nth(i).evaluate("(c) => c.classList.contains('jp-mod-active')"), (
            f"{name}: a click on code cell {i + 1}'s prompt did not select it")
        _menu(page, "Run", "Run Selected Cell and Do not Advance", name)
        _wait_screen(page, f"{name}: code cell {i + 1} ran, as the kernel's execution {n}",
                     lambda s, i=i, n=n: s["prompts"][i] == f"[{n}]:" and s["indicator"] == "idle", timeout,
                     notebook=name)
    prompts = _wait_quiet(page, name, timeout)["prompts"]
    seconds = time.monotonic() - t0
    assert _ran(prompts) == cells, (f"{name}: code cells {[i + 1 for i in cells]} were to run, alone; "
                                    f"the prompts read {_prompts_in_short(prompts)}")
    return seconds


def _error_outputs(page) -> list[str]:
    texts = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output").evaluate_all(
        "(os) => os.map((o) => [o.getAttribute('data-mime-type') || '', o.textContent])")
    return [t for mime, t in texts
            if (mime == "application/vnd.jupyter.stderr" and ("Traceback" in t or "Error" in t))
            or "Error displaying widget" in t or "Error rendering output" in t]


def _kernel_says(hub, user: str, token: str, kernel_id: str) -> tuple[str, int, list[str]]:
    """Ask the page's kernel (joined through the REST API, as the page did) where it imported
    ``attn`` from, how many cells it has run (its execution count, less one: the number
    the next cell would get) and the start of the last three. The question does not count
    as a cell."""
    kernel = KernelClient(hub, user, f"{FOLDER}/{EXPLORER}", token=token)
    try:
        assert kernel.kernel_id == kernel_id, (
            f"the notebook's session now has kernel {kernel.kernel_id}, not {kernel_id}, "
            "the one the page joined")
        out = kernel.execute("import attn", store_history=False, expressions={
            "where": "attn.__file__", "count": "get_ipython().execution_count",
            "inputs": "[s[:40] for s in In[-3:]]"})
    finally:
        kernel.close()
    assert out["status"] == "ok", f"asking the kernel failed: {out['error']}"
    said = out["expressions"]
    return ast.literal_eval(said["where"]), int(said["count"]) - 1, ast.literal_eval(said["inputs"])


def _move_explorer_slider(page, name: str) -> float:
    """Press an arrow key on the explorer's first slider; wait for its picture to change.
    Returns the seconds from the key press to the new picture in the page."""
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    explorer = panel.locator(".jp-OutputArea-output > .jupyter-widgets").filter(
        has=page.locator("img.widget-image")).filter(has=page.locator(".noUi-handle")).first
    try:  # attached first: an output far below the fold is not laid out until scrolled to
        explorer.wait_for(state="attached", timeout=60_000)
        explorer.scroll_into_view_if_needed(timeout=30_000)
        explorer.wait_for(state="visible", timeout=30_000)
    except Exception:  # playwright's TimeoutError: say what the outputs show instead
        outputs = panel.locator(".jp-OutputArea-output").evaluate_all(
            "(os) => os.map((o) => (o.getAttribute('data-mime-type') || '?') + ': '"
            " + o.textContent.slice(0, 80))")
        raise AssertionError(f"{name}: no explorer (picture and slider) on screen; its outputs:\n"
                             + "\n".join(outputs)) from None
    img = explorer.locator("img.widget-image").first
    handle = explorer.locator(".noUi-handle").first
    before = img.get_attribute("src")
    now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
    handle.focus()
    t0 = time.monotonic()
    handle.press("ArrowLeft" if now == top else "ArrowRight")
    try:
        page.wait_for_function("([img, before]) => img.src !== before && img.complete",
                               arg=[img.element_handle(), before], timeout=30_000)
    except Exception:  # playwright's TimeoutError
        raise AssertionError(f"{name}: the explorer's picture did not change within 30 s of the "
                             f"key press (slider {now} -> {handle.get_attribute('aria-valuenow')})") from None
    assert handle.get_attribute("aria-valuenow") != now, f"{name}: the slider did not move"
    return time.monotonic() - t0


def _note(user: str) -> str:
    return f"# {user}'s note: the diagonal head attends to itself"


def _edit_and_save(page, user: str, name: str) -> None:
    """Type the learner's note on a new first line of the first code cell; File > Save."""
    _answer_dialogs(page, name)
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .cm-content").first
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type(_note(user))
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    _menu(page, "File", "Save Notebook", name)


def _wait_file_contains(path, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(encoding="utf-8"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} does not contain {text!r} after {timeout} s")
        time.sleep(0.25)


def _servers_ready(hub) -> dict[str, bool]:
    return {u: bool(hub.api("GET", f"users/{u}").get("servers", {}).get("", {}).get("ready"))
            for u in LEARNERS}


@pytest.mark.slow
@pytest.mark.browser
def test_learners_follow_the_link_run_the_explorer_and_keep_their_edits(hub_class, tmp_path):
    hub, origin, browser = hub_class
    link = class_link(hub.url, origin)
    start_name, name = Path(START).name, Path(EXPLORER).name
    pages, tokens = {}, {}
    problems: list[str] = []  # uncaught errors in the page fail the test
    console: list[str] = []  # console errors are shown when a step fails

    # 1: the class logs in; both servers run, each with its clone.
    for user in LEARNERS:
        context = browser.new_context(viewport=VIEWPORT)
        if user == LEARNERS[1]:
            _kernel_list_without_python(context)
        page = context.new_page()
        page.on("pageerror", lambda e, u=user: problems.append(f"{u}: uncaught error in the page: {e}"))
        page.on("console", lambda m, u=user: m.type == "error" and console.append(f"{u}: {m.text}"))
        pages[user] = page
        with _telling_the_screen(page, user, "following the class link", tmp_path, problems, console):
            _follow_link(page, link, user, hub)
            clone = hub.clone(user)
            assert (clone / ".git").is_dir(), f"nbgitpuller did not clone the course into {clone}"
            _wait_heading(page, _first_heading(clone / START),
                          f"{start_name} is open but does not show its heading")
        tokens[user] = hub.user_token(user)
    assert all(_servers_ready(hub).values()), f"not every learner's server is running: {_servers_ready(hub)}"

    # 2-3: learner 1 runs the whole explorer notebook; learner 2 only what the explorer needs.
    cells = _code_cells(hub.clone(LEARNERS[1]) / EXPLORER)
    needed = [0, next(i for i, source in enumerate(cells) if EXPLORER_CALL in source)]
    for user, page in pages.items():
        clone = hub.clone(user)
        with _telling_the_screen(page, user, f"the explorer notebook {name}", tmp_path, problems, console):
            kernel_id, shown = _open_explorer(page, hub, user, tokens[user])
            if user == LEARNERS[1]:  # the injected fault took effect
                assert shown == KERNEL_NAME_WITHOUT_SPEC, (
                    f"Lab shows the kernel as {shown!r}: it knows the kernel the test hid from "
                    f"it, so the test no longer tests a Lab that cannot pick one")
            _clear_outputs(page, name)
            if user == LEARNERS[0]:
                seconds, run = _run_all(page, name), list(range(len(cells)))
            else:
                seconds, run = _run_cells(page, name, needed), needed
            errors = _error_outputs(page)
            assert errors == [], f"{name}: errors after running its cells:\n" + "\n---\n".join(errors)
            where, count, last = _kernel_says(hub, user, tokens[user], kernel_id)
            assert where == str(clone / "src" / "attn" / "__init__.py"), (
                f"the kernel imported attn from {where}, not from the learner's clone")
            assert count == len(run), (f"the kernel has run {count} cells, where the learner ran "
                                       f"{len(run)} (the last ones began {last})")
            servers = _servers_ready(hub)
            assert all(servers.values()), f"a learner's server stopped during the class: {servers}"
            latency = _move_explorer_slider(page, name)
        print(f"{user}: {'Run All of' if len(run) == len(cells) else f'cells {[i + 1 for i in run]} of'} "
              f"{name} {seconds:.1f} s in the browser; slider to new picture {latency * 1000:.0f} ms")
        page.screenshot(path=str(tmp_path / f"{user}-explorer.png"))

    # 4: each learner's note, saved.
    for user, page in pages.items():
        with _telling_the_screen(page, user, f"typing a note into {name} and saving it", tmp_path,
                                 problems, console):
            _edit_and_save(page, user, name)
            _wait_file_contains(hub.clone(user) / EXPLORER, _note(user))

    # The teacher pushes a change to the notebook every link opens.
    commit = teacher_commit(origin, START, TEACHER_NOTE)

    # Every learner follows the link again.
    for user, page in pages.items():
        with _telling_the_screen(page, user, "following the link after the teacher's push", tmp_path,
                                 problems, console):
            _follow_link(page, link, user, hub)
            _wait_heading(page, "notebooks 01 to 06, then the exercises of 06.",
                          f"{start_name} does not show the teacher's change")
        page.screenshot(path=str(tmp_path / f"{user}-after-pull.png"))
        clone = hub.clone(user)
        pulled = TEACHER_NOTE in (clone / START).read_text(encoding="utf-8")
        assert pulled, f"{user}: the teacher's change is not in their {START}"
        run_git(clone, "merge-base", "--is-ancestor", commit, "HEAD")  # raises if not merged
        mine = (clone / EXPLORER).read_text(encoding="utf-8")
        kept = _note(user) in mine
        assert kept, f"{user}: their note in {EXPLORER} was lost at the pull"
        others = [_note(u) for u in LEARNERS if u != user and _note(u) in mine]
        assert others == [], f"{user}: {EXPLORER} holds another learner's note: {others}"
        page.context.close()
    assert problems == [], "errors in the browser:\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------
# Zero to JupyterHub: deploy/hub/z2jh-config.yaml against the tested set-up and the measured figures.

HUB_CONFIG = REPO / "deploy" / "hub" / "z2jh-config.yaml"
HUB_FIGURES = REPO / "benchmarks" / "results" / "hub.json"
IMAGE = "REGISTRY/attention-course"
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}  # KubeSpawner's byte units


def _mib(quantity: str | int) -> float:
    """A KubeSpawner memory quantity ("640M", "1.5G", bytes) in MiB."""
    text = str(quantity).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", text)
    if m is None:
        raise ValueError(f"memory quantity: expected a number with K, M, G or T, got {quantity!r}")
    return float(m.group(1)) * _UNITS.get(m.group(2), 1) / 2**20


def test_mib_reads_kubespawner_quantities():
    assert _mib("640M") == 640 and _mib("1.5G") == 1536 and _mib(2**20) == 1
    with pytest.raises(ValueError, match="got '1Gi'"):
        _mib("1Gi")


@pytest.fixture(scope="module")
def z2jh():
    yaml = pytest.importorskip("yaml")  # PyYAML: a dependency of jupyter_events, so of Lab
    return yaml.safe_load(HUB_CONFIG.read_text(encoding="utf-8"))


def _repo2docker_singleuser_version() -> tuple[int, int]:
    """The jupyterhub-singleuser version in repo2docker's Python 3.11 base environment (its
    conda lock file): what the Binder image, so the hub's user image, runs."""
    import repo2docker

    lock = (Path(repo2docker.__file__).parent / "buildpacks" / "conda"
            / "environment.py-3.11-linux-64.lock").read_text()
    m = re.search(r"/jupyterhub-singleuser-(\d+)\.(\d+)\.\d+-", lock)
    if m is None:
        raise ValueError("repo2docker's lock file names no jupyterhub-singleuser")
    return int(m.group(1)), int(m.group(2))


def test_z2jh_user_image_has_what_the_tested_hub_had(z2jh):
    """The user image is the Binder image (repo2docker from binder/), so its packages are those
    of binder/requirements.txt; those must hold everything the hub test's servers ran with."""
    singleuser = z2jh["singleuser"]
    text = HUB_CONFIG.read_text(encoding="utf-8")
    assert singleuser["image"]["name"] == IMAGE
    assert re.search(rf"repo2docker [^\n]*\\\n\s*#\s+--image-name {IMAGE}:{singleuser['image']['tag']} "
                     r"https://github\.com/OWNER/REPO", text), "the build command must make the image used"
    top, _ = read_pins(REPO / "requirements.txt")
    binder, _ = read_pins(REPO / "binder" / "requirements.txt")
    runtime = set(top) - TEST_ONLY
    assert runtime <= set(binder), f"missing from the user image: {sorted(runtime - set(binder))}"
    for name in runtime:
        assert binder[name].public == top[name].public, f"{name}: image {binder[name]}, tested {top[name]}"
    assert "nbgitpuller" in binder, "the class link needs nbgitpuller in the user image"
    # The image's single-user server: same JupyterHub major version as the tested hub.
    assert _repo2docker_singleuser_version()[0] == top["jupyterhub"].major
    # attn from the pulled clone, in the folder the README's link opens.
    urlpath = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(readme_link()).query))["urlpath"]
    folder = urlpath.split("/")[2]  # lab/tree/<folder>/notebooks/...
    assert singleuser["extraEnv"]["PYTHONPATH"] == f"/home/jovyan/{folder}/src"
    assert singleuser["extraEnv"]["OMP_NUM_THREADS"] == "1"  # as the measured hub
    assert singleuser["defaultUrl"] == "/lab"


def test_z2jh_memory_fits_the_measured_figures(z2jh):
    """Guarantee: one learner's server and notebook 08's kernel after Run All (RSS), with less
    than 2x to spare. Limit: that at its peak, plus one more kernel (notebook 06, after Run All)."""
    figures = json.loads(HUB_FIGURES.read_text(encoding="utf-8"))
    memory = z2jh["singleuser"]["memory"]
    guarantee, limit = _mib(memory["guarantee"]), _mib(memory["limit"])
    after_08 = figures["memory"]["after_run_all"]["total"]
    assert after_08["rss_mib"] <= guarantee <= 2 * after_08["rss_mib"], (guarantee, after_08)
    one = next(r for r in figures["classes"] if r["learners"] == 1)
    kernel_06 = one["memory_after_run_all"]["rss_mib"] - figures["memory"]["idle"]["server"]["rss_mib"]
    assert limit >= after_08["peak_rss_mib"] + 2 * kernel_06, (limit, after_08, kernel_06)
