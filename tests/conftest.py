"""What the whole test run shares, started when a test first asks for it: one Chromium
(pytest-playwright's session ``browser``, here Debian's /usr/bin/chromium) and one JupyterLab
(``lab``, serving a temporary copy of notebooks/); under pytest-xdist each worker has its own.
The website (``built_site``) is built once for the whole run, workers included, and served by
each worker that tests it (``site_browser``, ``site_tab``): tests/delivery/test_site.py reads its pages,
tests/delivery/test_site_live.py its explorers.

A test that takes ``language`` runs once in each language of the course, English then Chinese
(the tests of the checkers: tests/_replies.py says what a reply must be in each).

Tests marked ``browser`` drive a real browser; ``network`` ones ask PyPI (``make test`` runs
them outside the network namespace, beside the rest); ``slow`` ones start a hub, grade with
nbgrader or build the site (``make quick`` leaves all three out).
"""
from __future__ import annotations

import os

import pytest
from filelock import FileLock

import attn.language

from _browser import watched_page
from _support import unavailable
from tools import site
from tools.lab import LAUNCH_ARGS, VIEWPORT, browser_unavailable, notebooks_folder, running_lab
from tools.serve import serving


@pytest.fixture(params=sorted(attn.language.LANGUAGES))
def language(request):
    """The language the test runs in, ``"en"`` or ``"zh"``: chosen for the test, and the one
    before chosen again after it."""
    with attn.language.language(request.param):
        yield request.param


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's Chromium, headless, with the flags it needs as root."""
    reason = browser_unavailable()
    if reason:
        unavailable(f"browser test: {reason}")
    return {**browser_type_launch_args, **LAUNCH_ARGS}


#: The tests during which this worker's Chromium closed (nothing but a crash closes it).
_CHROMIUM_LOST: list[str] = []


@pytest.fixture(autouse=True)
def _chromium_still_open(request):
    """A test that needs the browser fails at once, naming the test that lost it, when Chromium
    closed in an earlier test of the worker (pytest-playwright keeps one per worker); a test
    during which it closes is recorded (one CI run saw every later browser test of a worker fail
    with "Target page, context or browser has been closed", naming no culprit)."""
    if "browser" not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue("browser")
    if not browser.is_connected():
        pytest.fail(f"Chromium closed earlier in this worker, during {_CHROMIUM_LOST or 'a test not recorded'}")
    yield
    if not browser.is_connected():
        _CHROMIUM_LOST.append(request.node.nodeid)
        print(f"Chromium closed during {request.node.nodeid}")


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": VIEWPORT}


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab for the run, on a temporary copy of the notebooks folder (tests that
    save a notebook save it there)."""
    reason = browser_unavailable()
    if reason:
        unavailable(f"browser test: {reason}")
    with running_lab(notebooks_folder(), workdir=tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The website, built once for the run as ``make site`` builds it (from the committed
    notebooks, without running them) into a temporary folder: the English site, the Chinese one
    in its folder zh/. Under pytest-xdist the workers share it, as pytest-xdist's documentation
    shows: the first to ask builds it while holding a lock beside it, the others wait for the
    lock (however long a loaded machine takes; a builder that dies lets it go) and find it built."""
    reason = browser_unavailable()
    if reason:
        unavailable(f"website test: {reason}")
    if not site.NODE_MODULES.is_dir():
        unavailable("website test: the site's JavaScript is not installed: npm ci --prefix site "
                    "(make site and make test do it)")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    out, built = root / "site", root / "site.built"
    with FileLock(root / "site.lock"):
        if not built.is_file():
            seconds = site.build(out)
            for edition in site.EDITIONS.values():
                print(f"make site ({edition.code}): {seconds[edition.code]:.1f} s for "
                      f"{len(site.notebook_pages(edition.code))} notebook pages and "
                      f"{len(site.guide_pages(edition.code))} other pages")
            built.write_text("built\n")
    return out


@pytest.fixture(scope="session")
def site_browser(built_site, browser):
    """(the address the built site is served at, on 127.0.0.1; the browser)."""
    with serving(built_site) as url:
        yield url, browser


@pytest.fixture(scope="module")
def site_tab(site_browser):
    """``open(path) -> (page, facts)``: one browser page, kept open for the module's tests,
    showing the site's page ``path`` (under the site, with .html), every request outside the
    site refused as by ``watched_page``, and the facts (refused requests, failed responses,
    errors) of that page alone. On 8 lesson pages alone, a page opened in a new context cost
    Chromium about twice the CPU time of a navigation; over the whole run the gain was within
    the noise (Chromium 492 CPU-seconds against 501, CONTRIBUTING.md). Each ``open`` starts from
    a blank page with the screen's media and the viewport of the other tests."""
    url, browser = site_browser
    context, page, facts = watched_page(browser, url)

    def open_(path: str):
        page.goto("about:blank")
        page.emulate_media(media="screen")
        page.set_viewport_size(VIEWPORT)
        for found in facts.values():
            found.clear()
        page.goto(f"{url}{path}", wait_until="load")
        return page, facts

    yield open_
    context.close()
