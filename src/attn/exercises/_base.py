"""Feedback for exercises: right or wrong plus a hint, never the answer itself."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Feedback", "as_array", "close"]


@dataclass(frozen=True)
class Feedback:
    """What a checker returns. Shows as one line in a notebook."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __repr__(self) -> str:
        return ("✅ Correct. " if self.correct else "❌ Not yet. ") + self.message

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.correct else "#cf222e"
        return f'<span style="color:{color}">{self!r}</span>'


def as_array(name: str, answer: Any, shape: tuple[int, ...] | None = None) -> np.ndarray | Feedback:
    """Turn an answer (tensor, array, nested list, number) into a float array, or explain why not."""
    try:
        arr = answer.detach().cpu().numpy() if hasattr(answer, "detach") else np.asarray(answer)
        arr = arr.astype(float)
    except (TypeError, ValueError):
        return Feedback(False, f"{name} should be numbers (a tensor, an array or a nested list), "
                               f"got {type(answer).__name__}.")
    if shape is not None and arr.shape != shape:
        return Feedback(False, f"{name} should have shape {shape}, got {tuple(arr.shape)}.")
    if np.isnan(arr).any():
        return Feedback(False, f"{name} contains NaN: is a row fully masked, or a -inf left in?")
    return arr


def close(answer: np.ndarray, expected: np.ndarray, atol: float) -> bool:
    return bool(np.allclose(answer, expected, atol=atol, rtol=0))
