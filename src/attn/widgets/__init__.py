"""Explorers: builders that return a widget (not displayed) driven by pure functions.

Each builder returns an ``Explorer`` (an ``ipywidgets.VBox``) with ``.controls`` (name ->
widget), ``.image`` (the picture), ``.readout`` (the numbers) and ``.state`` (the last
result of the pure function behind it). ``EXPLORERS`` lists every explorer of the course as
a no-argument builder (the benchmarks and tests walk it). A notebook imports its explorer
from the explorer's module (``from attn.widgets.splitting import splitting_explorer``);
importing ``attn.widgets`` imports none of them: each entry of ``EXPLORERS`` imports its
module when it is called (``_when_built``).

Every control needs a ``description``: it is the control's name for a screen reader as well
as its label (``Explorer`` refuses a control without one); ``Explorer.value_text`` says what a
slider announces ("d_k = 16"). See ``_base`` for how the page gets them.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

from ._base import Explorer


def _when_built(module: str, builder: str, data: Callable[[], object] | None = None) -> Callable[[], Explorer]:
    """A no-argument builder of ``attn.widgets.<module>.<builder>``, which imports that module
    only when it is called; ``data``, if given, loads what the explorer is built from (08's
    trained models), also only then, and is passed as its one argument."""

    def build() -> Explorer:
        make = getattr(import_module(f"{__name__}.{module}"), builder)
        return make() if data is None else make(data())

    build.__name__ = build.__qualname__ = builder
    return build


def _training_runs() -> dict:
    """08's shipped training runs, task -> ``TrainRun``."""
    from ..lessons.trained.tasks import TASKS
    from ..lessons.trained.tiny import load_run

    return {task: load_run(task) for task in TASKS}


def _trained_models() -> dict:
    """08's shipped trained models, task -> ``TinyTransformer``."""
    from ..lessons.trained.tasks import TASKS
    from ..lessons.trained.tiny import load_trained

    return {task: load_trained(task) for task in TASKS}


EXPLORERS: dict[str, Callable[[], Explorer]] = {
    "sentence (01)": _when_built("sentence", "sentence_explorer"),
    "scaling (02)": _when_built("scaling", "scaling_explorer"),
    "worked (03)": _when_built("worked", "worked_explorer"),
    "splitting (04)": _when_built("splitting", "splitting_explorer"),
    "masks (05)": _when_built("masks", "mask_explorer"),
    "patterns (06)": _when_built("patterns", "pattern_explorer"),
    "efficiency (07)": _when_built("efficiency", "efficiency_explorer"),  # measures its curves once (about a second)
    "training (08)": _when_built("trained", "training_explorer", _training_runs),
    "examples (08)": _when_built("trained", "example_explorer", _trained_models),
    "pretrained (08)": _when_built("trained", "pretrained_explorer"),
    "positions (09)": _when_built("positions", "positions_explorer"),
    "decoding (10)": _when_built("decoding", "decoding_explorer"),
    "backward (11)": _when_built("backward", "backward_explorer"),
    "depth (12)": _when_built("depth", "depth_explorer"),
    "language model (13)": _when_built("language_model", "language_model_explorer"),
    "modern attention (14)": _when_built("modern_attention", "modern_attention_explorer"),
}

__all__ = ["Explorer", "EXPLORERS"]
