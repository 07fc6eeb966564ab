"""What the launch-path tests (browser, offline, Binder) share: the repository, and what to do
when a tool they need is missing."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

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
