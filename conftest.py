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
