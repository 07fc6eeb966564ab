"""Feedback for exercises: right or wrong plus a hint, never the answer itself.

Every sentence a checker returns is written in English inside ``tr`` (``attn.language``), at
the moment the checker runs, so that it speaks the notebook's language; a sentence kept in a
module-level table is ``mark``-ed there and ``tr``-ed where it is shown.

A checker reads top-down. Where an answer cannot be taken further (not numbers, the wrong
shape, not a function, a learner's function that raised), the step that finds out raises
``Refused`` with the reply; the ``@checker`` decorator returns that reply. So a checker asks
``arr = as_array("answer", answer, (4, 2))`` and goes on with ``arr``, never checking what
came back.
"""
from __future__ import annotations

import functools
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, ParamSpec
from unittest import mock

import numpy as np
import torch

from .._checks import to_numpy
from ..language import get_language, tr

__all__ = [
    "Feedback", "Refused", "checker", "Hints", "as_array", "as_whole_number", "as_function", "shape_or_none",
    "close", "SoftmaxCalled", "softmax_switched_off", "NormCalled", "norms_switched_off", "sentence_start",
    "sentence_inside", "clauses", "sentences",
]


@dataclass(frozen=True)
class Feedback:
    """What a checker returns. Shows as one line in a notebook."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __repr__(self) -> str:
        if self.correct:
            return tr("✅ Correct. {message}", message=self.message)
        return tr("❌ Not yet. {message}", message=self.message)

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.correct else "#cf222e"
        return f'<span style="color:{color}">{self!r}</span>'


class Hints:
    """Hints in tiers, as a tutor gives them: the first wrong try with a given mistake hears
    its **symptom** ("your weights are the transpose of the right ones"); a second try with the
    same mistake hears the symptom and **where to look** too. No tier gives the code.

    One ``Hints`` per checker, so that each exercise keeps its own count. ``reset()`` starts
    again (a test, or a learner who wants the first tier back). ``symptom`` and ``where`` come
    already in the learner's language (``tr`` at the call); a ``Hints`` keeps counts, no text.

    Example:
        >>> hints = Hints()
        >>> hints.wrong("transpose", "Your weights are the transpose of the right ones.",
        ...             where="the order of Q and K in the scores")
        ❌ Not yet. Your weights are the transpose of the right ones.
    """

    def __init__(self) -> None:
        self._tries: dict[str, int] = {}

    def wrong(self, mistake: str, symptom: str, *, where: str) -> Feedback:
        """A ``Feedback`` for one more try with ``mistake``: the symptom, then the place to look."""
        tries = self._tries[mistake] = self._tries.get(mistake, 0) + 1
        if tries == 1:
            return Feedback(False, symptom)
        return Feedback(False, tr("{symptom} Where to look: {where}.", symptom=symptom, where=where))

    def tries(self, mistake: str) -> int:
        """How many wrong tries with ``mistake`` this checker has seen."""
        return self._tries.get(mistake, 0)

    def reset(self) -> None:
        self._tries.clear()


class Refused(Exception):
    """An answer the checker cannot take further, and the reply that says why.

    Raised by ``as_array``, ``as_whole_number``, ``as_function`` and a checker's own steps;
    ``@checker`` turns it into the ``Feedback`` the checker returns. ``Refused(message)`` is
    ``Refused(Feedback(False, message))``; a ``Feedback`` of its own (say from ``Hints.wrong``)
    is kept as it is. A refusal is never a right answer.

    Example, a step of a checker:
        >>> if not (isinstance(got, tuple) and len(got) == 2):
        ...     raise Refused(tr("Return a pair (dQ, dK)."))
    """

    def __init__(self, reply: Feedback | str) -> None:
        feedback = reply if isinstance(reply, Feedback) else Feedback(False, reply)
        if feedback.correct:
            raise ValueError(f"reply: expected a Feedback that is not correct, got {feedback!r}")
        super().__init__(feedback.message)
        self.feedback = feedback


_P = ParamSpec("_P")


def checker(check: Callable[_P, Feedback]) -> Callable[_P, Feedback]:
    """Decorate a checker: a ``Refused`` raised anywhere inside it becomes the ``Feedback`` it
    returns; what it returns itself passes through unchanged. Any other exception is not a
    reply and propagates (a bad argument from the notebook, such as ``norm_first="yes"``)."""

    @functools.wraps(check)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> Feedback:
        try:
            return check(*args, **kwargs)
        except Refused as refused:
            return refused.feedback

    return checked


def as_array(name: str, answer: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """An answer (tensor, array, nested list, number) as a float array.

    ``name`` is how the messages call the answer, in the learner's language (a code name such
    as ``answer`` as it is, a description through ``tr``).

    Raises:
        Refused: the answer is not numbers, has another shape than ``shape``, or holds NaN.
    """
    try:
        arr = to_numpy(name, answer)  # the package's one conversion (attn._checks), float
    except TypeError:
        raise Refused(tr("{name} should be numbers (a tensor, an array or a nested list), "
                         "got {kind}.", name=name, kind=type(answer).__name__))
    if shape is not None and arr.shape != shape:
        raise Refused(tr("{name} should have shape {shape}, got {got}.",
                         name=name, shape=shape, got=tuple(arr.shape)))
    if np.isnan(arr).any():
        raise Refused(tr("{name} contains NaN: is a row fully masked, or a -inf left in?", name=name))
    return arr


def as_whole_number(name: str, answer: Any) -> int:
    """An answer that should be one whole number (an int, a float such as 4.0, a NumPy number or
    a one-element tensor) as an int. ``name`` as in ``as_array``.

    Raises:
        Refused: the answer is the placeholder, a bool, not one number, or not a whole one.
    """
    label = sentence_start(name)
    if answer is None or answer is ...:
        raise Refused(tr("Replace the placeholder with {name} (a whole number).", name=name))
    if isinstance(answer, bool):
        raise Refused(tr("{label} should be a whole number, got {answer!r}.", label=label, answer=answer))
    if hasattr(answer, "numel") and answer.numel() == 1:
        answer = answer.item()
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise Refused(tr("{label} should be one whole number, got {kind}.",
                         label=label, kind=type(answer).__name__))
    if not math.isfinite(value) or not value.is_integer():
        raise Refused(tr("{label} should be a whole number, got {value:g}.", label=label, value=value))
    return int(value)


def as_function(answer: Any, call: str | None = None, *, argument: str | None = None,
                why: str | None = None) -> Callable[..., Any]:
    """An answer that should be the learner's function itself, for the checker to run.

    Args:
        answer: what the learner passed.
        call: the function as the exercise writes it, e.g. ``"online_softmax(blocks)"``. Given,
            None hears "Replace None with your function online_softmax(blocks)." and anything
            else that cannot be called "answer should be a function online_softmax(blocks), got
            int."; not given, both hear "Pass your function itself, got int.".
        argument: for a checker that takes several functions, the name of this one
            ("split_heads: expected a function, got int.").
        why: for an exercise where passing the function's result is a likely slip: why the
            checker needs the function itself, in the learner's language ("runs it on more
            rows"). A tensor, an array, a list or a tuple then hears "Pass the function itself,
            softmax_row, not its result: the checker runs it on more rows.", and None hears to
            pass the function without calling it.

    Raises:
        Refused: the answer is not a function, with the reply that says what to pass.
    """
    if why is not None and call is None:
        raise TypeError("why: needs call, the function as the exercise writes it")
    kind = type(answer).__name__
    if call is not None and answer is None:
        if why is not None:
            raise Refused(tr("Replace None with {what}.", what=tr(
                "your function {call} (define it above, pass it without calling it)", call=call)))
        raise Refused(tr("Replace None with your function {call}.", call=call))
    if why is not None and isinstance(answer, (torch.Tensor, np.ndarray, list, tuple)):
        raise Refused(tr("Pass the function itself, {name}, not its result: the checker {why}.",
                         name=call.split("(")[0], why=why))
    if callable(answer):
        return answer
    if argument is not None:
        raise Refused(tr("{name}: expected a function, got {kind}.", name=argument, kind=kind))
    if call is not None:
        raise Refused(tr("answer should be a function {call}, got {kind}.", call=call, kind=kind))
    raise Refused(tr("Pass your function itself, got {kind}.", kind=kind))


def shape_or_none(value: Any) -> tuple[int, ...] | None:
    """``value`` as a shape, a tuple of ints (from a ``torch.Size``, a tuple or a list of ints),
    or None if it is not one: an answer's field, which its checker explains in its own words."""
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in value):
        return tuple(value)
    return None


def sentence_start(text: str) -> str:
    """``text`` as the first words of a sentence: capitalised in English; as it is in Chinese,
    which has no capitals (and where a code name such as ``answer`` keeps its case)."""
    return text[:1].upper() + text[1:] if get_language() == "en" else text


def sentence_inside(text: str) -> str:
    """A sentence ``text`` continued after a colon: its first letter lowered in English; as it
    is in Chinese."""
    return text[:1].lower() + text[1:] if get_language() == "en" else text


#: How each language runs on: (between clauses, between whole sentences).
_SEPARATORS: dict[str, tuple[str, str]] = {"en": ("; ", " "), "zh": ("；", "")}


def clauses(parts: list[str]) -> str:
    """Clauses of one sentence, one after another: "a; b" in English, "a；b" in Chinese."""
    return _SEPARATORS[get_language()][0].join(parts)


def sentences(parts: list[str]) -> str:
    """Whole sentences, one after another: a space between them in English, none in Chinese."""
    return _SEPARATORS[get_language()][1].join(parts)


def close(answer: np.ndarray, expected: np.ndarray, atol: float) -> bool:
    """Same shape and the same numbers to ``atol`` (a slip's output may have another shape)."""
    return answer.shape == expected.shape and bool(np.allclose(answer, expected, atol=atol, rtol=0))


def _switched_off(targets: list[tuple[object, str]], refusal: type[RuntimeError], reason: str) -> Iterator[None]:
    """Run the block with each ``(owner, name)`` of ``targets`` raising ``refusal(reason)``;
    everything is put back afterwards, whatever happens inside."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise refusal(reason)

    patches = [mock.patch.object(owner, name, refuse) for owner, name in targets]
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in patches:
            p.stop()


class SoftmaxCalled(RuntimeError):
    """Raised by ``softmax_switched_off`` when the learner's code calls a library softmax."""


@contextmanager
def softmax_switched_off(reason: str) -> Iterator[None]:
    """Run a learner's function with every library softmax switched off.

    ``softmax`` and ``log_softmax`` of ``torch``, ``torch.Tensor``, ``torch.nn.functional``
    and ``torch.special``, and ``torch.nn.functional.gumbel_softmax``, raise
    ``SoftmaxCalled(reason)`` inside the block (so does every function of the package that
    calls them, such as ``attn.masked_softmax``), which lets an exercise that says "no
    softmax" check it instead of trusting it (``torch.log_softmax(s, -1).exp()`` is a softmax).
    """
    owners = (torch, torch.Tensor, torch.nn.functional, torch.special)
    targets = [(owner, name) for owner in owners for name in ("softmax", "log_softmax")]
    targets.append((torch.nn.functional, "gumbel_softmax"))
    yield from _switched_off(targets, SoftmaxCalled, reason)


class NormCalled(RuntimeError):
    """Raised by ``norms_switched_off`` when the learner's code calls a library norm."""


#: The norms that compute a LayerNorm when called the right way: ``F.group_norm`` with one group
#: of a token's features, ``F.instance_norm`` and ``F.batch_norm`` (in training) on the tokens
#: turned into channels.
_NORMS = ("layer_norm", "group_norm", "instance_norm", "batch_norm")


@contextmanager
def norms_switched_off(reason: str) -> Iterator[None]:
    """Run a learner's function with every library norm switched off.

    ``layer_norm``, ``group_norm``, ``instance_norm`` and ``batch_norm`` of ``torch`` and of
    ``torch.nn.functional``, and torch's ``native_`` forms of the layer, group and batch norms,
    raise ``NormCalled(reason)`` inside the block; so do the modules that call them
    (``nn.LayerNorm``, ``nn.GroupNorm``, ``nn.InstanceNorm1d``, ``nn.BatchNorm1d`` ...) and a
    name imported before the block (``from torch.nn.functional import layer_norm``), whose
    function calls torch's. An exercise that says "write LayerNorm out" checks it this way, as
    ``softmax_switched_off`` does for the softmax.
    """
    targets = [(owner, name) for owner in (torch, torch.nn.functional) for name in _NORMS]
    targets += [(torch, f"native_{name}") for name in ("layer_norm", "group_norm", "batch_norm")]
    yield from _switched_off(targets, NormCalled, reason)
