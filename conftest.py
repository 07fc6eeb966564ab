"""Root conftest: loaded for every pytest run in this repository (tests and notebooks)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# `make test` and the manual route of docs/setup.md run pytest, so what every run needs from its
# environment is set here, before any test imports torch:
# - one OpenMP thread per process: the tests run kernels, a Lab server and a browser side by
#   side on small tensors, where threads waiting on a busy core cost more than they gain
#   (ATTN_TEST_THREADS=2 gives two: `make portable` checks the stored outputs with two);
# - this interpreter's bin/ first on PATH: the kernels that nbval starts run `python` (the
#   venv's kernel spec says so), and tests start `jupyter` and `repo2docker` from there.
os.environ["OMP_NUM_THREADS"] = os.environ.get("ATTN_TEST_THREADS", "1")
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Drop Hypothesis's pytest plugin from runs that collected no Hypothesis test.

    The plugin imports all of Hypothesis in its terminal summary, even when no test used it:
    about 1.5 s on a 2-core machine, a sixth of the 10 s budget of one notebook under nbval.
    A run whose tests use Hypothesis has imported it during collection and keeps the plugin.
    """
    if "hypothesis" in sys.modules:
        return
    plugin = session.config.pluginmanager.get_plugin("hypothesispytest")
    if plugin is not None:
        session.config.pluginmanager.unregister(plugin)


# --- sharing the tests between pytest-xdist's two workers -------------------------------------
#
# `make test` runs `-n 2 --dist loadfile`: each file is one unit of work, so that a notebook's
# cells run in order in one kernel and a file's fixtures (a JupyterLab, a built site, a hub) are
# made once. Two changes make the two workers end together:
# 1. The files whose tests drive a browser or start servers (markers `browser` and `slow`) go
#    first, the one with the most such tests first: the longest units are handed out while the
#    many short ones can still fill the gaps (longest first), instead of last, when one worker
#    idles while the other still has minutes of work.
# 2. The files of SPREAD are shared test by test: each of their tests stands alone (every
#    explorer in JupyterLab, in one language), and each worker starts its own JupyterLab for them.
SPREAD = ("tests/delivery/test_browser.py",)
_HEAVY = ("browser", "slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the files with browser or slow tests first, the file with the most of them first
    (a stable sort: every file's tests keep their order, a notebook's cells theirs)."""
    heavy: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        heavy[path] = heavy.get(path, 0) + any(item.get_closest_marker(m) for m in _HEAVY)
    items.sort(key=lambda item: -heavy[item.nodeid.split("::", 1)[0]])


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: pytest -p no:xdist runs too
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """pytest-xdist's documented hook for a scheduler of one's own: `--dist loadfile`, except
    that a test of a SPREAD file is a unit of its own. Units are handed out in the order of the
    collection above (`--no-loadscope-reorder`, which the Makefile passes)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class CourseScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:  # the method xdist's own schedulers define
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else path

    return CourseScheduling(config, log)
