"""What the tests share: the repository, what to do when a tool they need is missing, and the
pins of the requirements files."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]


def in_ci() -> bool:
    """True under CI (env CI set to true/1/yes), where a missing tool is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    """Skip the calling test because a tool is missing, or fail it under CI (a CI that skips
    a test would pass without testing what it should)."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: failing instead of skipping)", pytrace=False)
    pytest.skip(reason)


# --- the pins of the requirements files -------------------------------------------------------

# In requirements.txt only: test and build tools that a Binder session or a hub's user image
# (which only run the notebooks) do not need.
TEST_ONLY = {"nbval", "pytest", "pytest-xdist", "filelock", "hypothesis", "playwright", "pytest-playwright",
             "jupyter-repo2docker", "jupyterhub", "jupyter-book", "pypdf",
             "babel"}  # babel: tools/catalogue.py, for translators and the catalogue test


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# Binder's machine: Linux x86_64 (binder/runtime.txt gives the Python), for environment markers.
BINDER_PLATFORM = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}


def read_pins(path: Path) -> tuple[dict[str, Version], list[str]]:
    """name -> pinned version on Binder's platform, and the option lines (``--...``) of a
    requirements file (a line whose environment marker is false there is left out).

    Every requirement must be pinned with ``==`` (ValueError otherwise)."""
    pins: dict[str, Version] = {}
    options = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate(BINDER_PLATFORM):
            continue
        spec = list(req.specifier)
        if len(spec) != 1 or spec[0].operator != "==":
            raise ValueError(f"{path.name}: expected an exact pin (name==version), got {line!r}")
        pins[norm(req.name)] = Version(spec[0].version)
    return pins, options
