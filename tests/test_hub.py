"""A real JupyterHub class: learners follow the teaching guide's nbgitpuller link, the teacher pushes.

One JupyterHub (with configurable-http-proxy, DummyAuthenticator, SimpleLocalProcessSpawner;
see tests/_hub.py) for two learners, and one headless Chromium. The teacher's repository is a
snapshot of this working tree in a temporary folder (branch main). Each learner, in their
own browser context:

1. follows the link of docs/teaching.md (filled in as the guide tells an instructor) and logs in;
   the hub starts their server, nbgitpuller clones the course, and JupyterLab opens
   notebooks/00_start_here.ipynb;
2. opens the explorer notebook, runs Run > Run All Cells: no cell fails, and the kernel
   imported ``attn`` from the learner's clone; then moves the explorer's first slider with
   the keyboard, and the explorer's picture changes;
3. types a note into that notebook's first code cell and saves it (File > Save Notebook).

Then the teacher commits a change to 00_start_here, and each learner follows the link again:
they land in 00_start_here showing the teacher's change, and their own note is still in
their notebook (nbgitpuller's merge keeps the learner's edits).

Without Chromium, playwright, configurable-http-proxy or nbgitpuller the hub test is skipped,
saying how to enable it; under CI (CI=true) it fails instead.
"""
from __future__ import annotations

import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest

from _hub import (FOLDER, REPO, START, KernelClient, class_link, course_origin,
                  hub_unavailable, readme_link, run_git, running_hub, teacher_commit)
from _support import TEST_ONLY, read_pins, unavailable

LEARNERS = ["learner-1", "learner-2"]
# The explorer notebook the learners run (benchmarks/hub.py measures the class with it too).
# 02 would be quicker, but in one of three runs the second learner's Run All of 02 left every
# cell after the first unrun; with 06 the test has passed in every run so far.
EXPLORER = "notebooks/06_visualization.ipynb"
VIEWPORT = {"width": 1400, "height": 1000}
TEACHER_NOTE = "**Today's class:** notebooks 01 to 06, then the exercises of 06."
# Every cell attached to the page (no virtual scrolling), so the explorer's widget exists
# before the test scrolls to it, as in tests/test_browser.py.
LAB_SETTINGS = {"@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"}}


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
            raise AssertionError(f"{user}: the link did not lead to JupyterLab; at {page.url}\n"
                                 f"hub log:\n{hub.log_tail()}")
        page.wait_for_timeout(250)
    expected = f"/user/{user}/lab/tree/{FOLDER}/{START}"
    path = urllib.parse.urlsplit(page.url).path
    assert path == expected, f"{user}: the link opened {path}, not {expected}"
    _wait_notebook(page, START.rsplit("/", 1)[1])


def _wait_notebook(page, name: str, timeout: float = 120) -> None:
    """Wait until the current Lab tab is notebook ``name``, with its kernel idle."""
    try:
        page.wait_for_function(
            """(name) => { const t = document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current');
                           return t !== null && t.innerText.trim() === name
                                  && document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)'); }""",
            arg=name, timeout=timeout * 1000)
    except Exception:  # playwright's TimeoutError: say what is on screen instead
        tabs = page.locator(".lm-DockPanel .lm-TabBar-tab").all_inner_texts()
        dialog = page.locator(".jp-Dialog").all_inner_texts()
        raise AssertionError(f"{name} is not the open notebook after {timeout} s: tabs {tabs}, "
                             f"dialogs {dialog}, at {page.url}") from None
    page.wait_for_function(
        """() => { const p = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
                   const e = p && p.querySelector('.jp-Notebook-ExecutionIndicator');
                   return e !== null && e.dataset.status === 'idle'; }""", timeout=timeout * 1000)


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(menu)}$")).click()
    entry = page.locator(".lm-Menu-item:not(.lm-mod-disabled)").filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")))
    entry.first.click()


_PROMPTS = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')].map((p) => p.textContent.trim())"""


def _status(page) -> str | None:
    """The open notebook's kernel status (idle, busy, ...), from its toolbar."""
    return page.evaluate("""() => { const e = document.querySelector(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
        return e ? e.dataset.status : null; }""")


def _run_all(page, name: str, timeout: float = 300) -> float:
    """Run > Run All Cells; wait until no cell is queued or running and the kernel has been
    idle for a second (every cell has run, or one failed and stopped the rest)."""
    t0 = time.monotonic()
    for _attempt in range(3):  # right after the page loads, the command can be missed
        _menu(page, "Run", "Run All Cells")
        try:
            page.wait_for_function(f"() => ({_PROMPTS})().some((p) => /[*\\d]/.test(p))", timeout=20_000)
            break
        except Exception:  # playwright's TimeoutError
            continue
    else:
        raise AssertionError(f"{name}: Run > Run All Cells did not start the cells")
    quiet_since = None
    while True:
        prompts = page.evaluate(_PROMPTS)
        now = time.monotonic()
        if not any("*" in p for p in prompts) and _status(page) == "idle":
            quiet_since = quiet_since or now
            if now - quiet_since >= 1.0:
                break
        else:
            quiet_since = None
        if now - t0 > timeout:
            raise AssertionError(f"{name}: still running after {timeout} s: prompts {prompts}, "
                                 f"kernel {_status(page)!r}")
        page.wait_for_timeout(250)
    not_run = [i + 1 for i, p in enumerate(page.evaluate(_PROMPTS)) if not re.search(r"\d", p)]
    assert not_run == [], f"{name}: code cells {not_run} did not run:\n" + "\n---\n".join(_error_outputs(page))
    return time.monotonic() - t0


def _error_outputs(page) -> list[str]:
    texts = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output").evaluate_all(
        "(os) => os.map((o) => [o.getAttribute('data-mime-type') || '', o.textContent])")
    return [t for mime, t in texts
            if (mime == "application/vnd.jupyter.stderr" and ("Traceback" in t or "Error" in t))
            or "Error displaying widget" in t or "Error rendering output" in t]


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
        widgets = panel.locator(".jp-OutputArea-output > .jupyter-widgets").count()
        outputs = panel.locator(".jp-OutputArea-output").evaluate_all(
            "(os) => os.map((o) => (o.getAttribute('data-mime-type') || '?') + ': ' + o.textContent.slice(0, 80))")
        raise AssertionError(f"{name}: no explorer (picture and slider) on screen: {widgets} widget "
                             f"outputs among {len(outputs)}:\n" + "\n".join(outputs)) from None
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


def _edit_and_save(page, user: str) -> None:
    """Type the learner's note on a new first line of the first code cell; File > Save."""
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .cm-content").first
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type(_note(user))
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    _menu(page, "File", "Save Notebook")


def _wait_file_contains(path, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(encoding="utf-8"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} does not contain {text!r} after {timeout} s")
        time.sleep(0.25)


def _first_lesson(page, hub, link: str, user: str, start_name: str, explorer_name: str) -> None:
    """Steps 1-3 of the module's docstring for one learner."""
    _follow_link(page, link, user, hub)
    clone = hub.clone(user)
    assert (clone / ".git").is_dir(), f"{user}: nbgitpuller did not clone the course into {clone}"
    heading = _first_heading(clone / START)
    _wait_heading(page, heading, f"{user}: {start_name} is open but does not show its heading")

    page.goto(f"{hub.url}/user/{user}/lab/tree/{FOLDER}/{EXPLORER}")
    _wait_notebook(page, explorer_name)
    seconds = _run_all(page, explorer_name)
    errors = _error_outputs(page)
    assert errors == [], f"{user}: {explorer_name}: errors after Run All:\n" + "\n---\n".join(errors)
    kernel = KernelClient(hub, user, f"{FOLDER}/{EXPLORER}")  # joins the page's kernel
    try:
        where = kernel.execute("import attn; print(attn.__file__)")["stdout"].strip()
    finally:
        kernel.close()
    assert where == str(clone / "src" / "attn" / "__init__.py"), (
        f"{user}: the kernel imported attn from {where}, not from the learner's clone")
    try:
        latency = _move_explorer_slider(page, explorer_name)
    except AssertionError as first:
        # Seen in 2 of about 10 fresh-clone runs, with the hub, two learners and the other test
        # worker on 2 cores: every cell ran, but each explorer showed its saved picture (the
        # output's image/png) instead of the live widget, as JupyterLab does when its widget
        # manager is not attached to the kernel. A learner would run the cells again; so does
        # the test, once, and says so. A second miss fails.
        if "no explorer" not in str(first):
            raise
        print(f"{user}: {explorer_name}: no live explorer after Run All ({str(first).splitlines()[0]}); "
              "Run All again")
        # With it, JupyterLab has asked for a kernel ("Select Kernel", seen in the failed runs'
        # screenshots): the learner answers with the proposed one.
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and "Select Kernel" in dialog.first.inner_text():
            print(f"{user}: {explorer_name}: JupyterLab asked for a kernel; Select")
            dialog.first.locator("button.jp-mod-accept").click()
            _wait_notebook(page, explorer_name)
        seconds += _run_all(page, explorer_name)
        latency = _move_explorer_slider(page, explorer_name)
    print(f"{user}: Run All of {explorer_name} {seconds:.1f} s in the browser; "
          f"slider to new picture {latency * 1000:.0f} ms")
    _edit_and_save(page, user)
    _wait_file_contains(clone / EXPLORER, _note(user))


@pytest.mark.slow
@pytest.mark.browser
def test_learners_follow_the_link_run_the_explorer_and_keep_their_edits(hub_class, tmp_path):
    hub, origin, browser = hub_class
    link = class_link(hub.url, origin)
    start_name, explorer_name = START.rsplit("/", 1)[1], EXPLORER.rsplit("/", 1)[1]
    pages = {}
    problems: list[str] = []  # uncaught errors in the page fail the test
    console: list[str] = []  # console errors are shown when a step fails
    # 1-3: every learner's first lesson.
    for user in LEARNERS:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.on("pageerror", lambda e, u=user: problems.append(f"{u}: uncaught error in the page: {e}"))
        page.on("console", lambda m, u=user: m.type == "error" and console.append(f"{u}: {m.text}"))
        pages[user] = page
        try:
            _first_lesson(page, hub, link, user, start_name, explorer_name)
        except BaseException:
            page.screenshot(path=str(tmp_path / f"{user}-failed.png"))
            print(f"{user}: screenshot {tmp_path / f'{user}-failed.png'}; errors in the page: "
                  f"{problems}; console errors: {console}")
            raise
        page.screenshot(path=str(tmp_path / f"{user}-explorer.png"))

    # The teacher pushes a change to the notebook every link opens.
    commit = teacher_commit(origin, START, TEACHER_NOTE)

    # Every learner follows the link again.
    for user, page in pages.items():
        _follow_link(page, link, user, hub)
        clone = hub.clone(user)
        _wait_heading(page, "notebooks 01 to 06, then the exercises of 06.",
                      f"{user}: {start_name} does not show the teacher's change")
        page.screenshot(path=str(tmp_path / f"{user}-after-pull.png"))
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
