"""Explorers: builders that return a widget (not displayed) driven by pure functions.

Each builder returns an ``Explorer`` (an ``ipywidgets.VBox``) with ``.controls`` (name ->
widget), ``.image`` (the picture), ``.readout`` (the numbers) and ``.state`` (the last
result of the pure function behind it). ``EXPLORERS`` lists every explorer of the course as
a no-argument builder (the benchmarks and tests walk it).

Every control needs a ``description``: it is the control's name for a screen reader as well
as its label (``Explorer`` refuses a control without one); ``Explorer.value_text`` says what a
slider announces ("d_k = 16"). See ``_base`` for how the page gets them.
"""
from __future__ import annotations

from typing import Callable

from ._base import Explorer
from .efficiency import efficiency_explorer
from .splitting import heads_explorer
from .masks import mask_explorer
from .patterns import pattern_explorer
from .scaling import scaling_explorer
from .sentence import sentence_explorer
from .worked import worked_explorer


def _training() -> Explorer:
    from ..lessons.trained.tasks import TASKS
    from ..lessons.trained.tiny import load_run
    from .trained import training_explorer

    return training_explorer({task: load_run(task) for task in TASKS})


def _examples() -> Explorer:
    from ..lessons.trained.tasks import TASKS
    from ..lessons.trained.tiny import load_trained
    from .trained import example_explorer

    return example_explorer({task: load_trained(task) for task in TASKS})


def _positions() -> Explorer:
    from .positions import positions_explorer

    return positions_explorer()


def _decoding() -> Explorer:
    from .decoding import decoding_explorer

    return decoding_explorer()


def _backward() -> Explorer:
    from .backward import backward_explorer

    return backward_explorer()


def _depth() -> Explorer:
    from .depth import depth_explorer

    return depth_explorer()


def _pretrained() -> Explorer:
    from .trained import pretrained_explorer

    return pretrained_explorer()


EXPLORERS: dict[str, Callable[[], Explorer]] = {
    "sentence (01)": sentence_explorer,
    "scaling (02)": scaling_explorer,
    "worked (03)": worked_explorer,
    "heads (04)": heads_explorer,
    "masks (05)": mask_explorer,
    "patterns (06)": pattern_explorer,
    "efficiency (07)": efficiency_explorer,  # measures its curves once (about a second)
    "training (08)": _training,
    "examples (08)": _examples,
    "pretrained (08)": _pretrained,
    "positions (09)": _positions,
    "decoding (10)": _decoding,
    "backward (11)": _backward,
    "depth (12)": _depth,
}

__all__ = [
    "Explorer",
    "EXPLORERS",
    "scaling_explorer",
    "sentence_explorer",
    "worked_explorer",
    "heads_explorer",
    "mask_explorer",
    "pattern_explorer",
    "efficiency_explorer",
]
