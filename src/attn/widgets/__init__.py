"""Explorers: builders that return a widget (not displayed) driven by pure functions.

Each builder returns an ``Explorer`` (an ``ipywidgets.VBox``) with ``.controls`` (name ->
widget), ``.image`` (the picture), ``.readout`` (the numbers) and ``.state`` (the last
result of the pure function behind it). ``EXPLORERS`` lists every builder by name (the
benchmarks and tests walk it).
"""
from typing import Callable

from ._base import Explorer
from .scaling import scaling_explorer, scaling_stats

EXPLORERS: dict[str, Callable[[], Explorer]] = {
    "scaling": scaling_explorer,
}

__all__ = ["Explorer", "EXPLORERS", "scaling_explorer", "scaling_stats"]
