"""Explorers: builders that return a widget (not displayed) driven by pure functions.

Each builder returns an ``Explorer`` (an ``ipywidgets.VBox``) with ``.controls`` (name ->
widget), ``.image`` (the picture), ``.readout`` (the numbers) and ``.state`` (the last
result of the pure function behind it).
"""
from ._base import Explorer
from .scaling import scaling_explorer, scaling_stats

__all__ = ["Explorer", "scaling_explorer", "scaling_stats"]
