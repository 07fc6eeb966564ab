"""Root conftest: loaded for every pytest run in this repository (tests and notebooks)."""
from __future__ import annotations

import sys

import pytest


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
