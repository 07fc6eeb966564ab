"""What the whole test run shares, started when a test first asks for it: one Chromium
(pytest-playwright's session ``browser``, here Debian's /usr/bin/chromium) and one JupyterLab
(``lab``, serving a temporary copy of notebooks/). Under pytest-xdist each worker has its own.

Tests marked ``browser`` drive a real browser; ``network`` ones ask PyPI (``make test`` runs
them outside the network namespace, after the rest); ``slow`` ones start a hub, grade with
nbgrader or build the site (``make quick`` leaves all three out).
"""
from __future__ import annotations

import pytest

from _support import unavailable
from tools.lab import LAUNCH_ARGS, VIEWPORT, browser_unavailable, notebooks_folder, running_lab


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's Chromium, headless, with the flags it needs as root."""
    reason = browser_unavailable()
    if reason:
        unavailable(f"browser test: {reason}")
    return {**browser_type_launch_args, **LAUNCH_ARGS}


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
