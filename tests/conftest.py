"""Fixtures of the launch-path tests (test_browser.py, test_binder.py, test_offline.py)."""
import sys
from pathlib import Path

import pytest

# The helper modules beside the tests (tests/_lab.py) import as top-level modules, whichever
# way pytest was started.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _lab import browser_unavailable, chromium, notebooks_folder, running_lab, unavailable  # noqa: E402


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory, notebooks_dir):
    """One JupyterLab server for the module, on a temporary copy of the notebooks folder."""
    reason = browser_unavailable()
    if reason:
        unavailable(f"browser test: {reason}")
    with running_lab(notebooks_dir, workdir=tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="module")
def lab_browser(lab_server):
    """Debian's Chromium, headless, driven by Playwright (one for the module)."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def notebooks_dir():
    """notebooks/ (or $ATTN_NOTEBOOKS_DIR)."""
    return notebooks_folder()
