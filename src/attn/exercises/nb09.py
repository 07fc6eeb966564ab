"""Checkers for notebook 09 (positions). Each returns a ``Feedback``; none reveals the answer.

1. ``check_sinusoidal``: a learner's ``sinusoidal(length, d_model)``.
2. ``check_rope``: a learner's ``rope(x)``, rotating the pairs of (L, E) rows by position.

Each checker runs the learner's function on a few sizes and compares it with
``attn.positions``; when they differ, it recognises the usual mistakes by computing what each
mistake would give.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..positions import apply_rope, frequencies, sinusoidal
from ..language import mark, tr
from ._base import Feedback, Refused, as_function, checker

__all__ = ["check_sinusoidal", "check_rope"]

_SIZES = ((6, 8), (11, 16), (1, 2))


def _call(fn: Callable[..., Any], *args: Any) -> Tensor:
    """The tensor the learner's function returns.

    Raises:
        Refused: the function is not written yet, raised, or returned something else.
    """
    try:
        out = fn(*args)
    except NotImplementedError:
        raise Refused(tr("Not implemented yet: replace the `raise NotImplementedError` line."))
    except Exception as err:  # the learner's code raised: say what, not where
        raise Refused(tr("Your function raised {error}: {message}",
                         error=type(err).__name__, message=err))
    if not isinstance(out, Tensor):
        raise Refused(tr("Return a torch.Tensor, got {kind}.", kind=type(out).__name__))
    return out


def _same(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=1e-6, rtol=0))


def _sinusoidal_mistakes(length: int, d: int) -> dict[str, Tensor]:
    p = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    i = torch.arange(d // 2, dtype=torch.float64)[None, :]  # (1, d/2)
    right = p / 10000 ** (2 * i / d)  # (L, d/2)

    def interleave(even: Tensor, odd: Tensor) -> Tensor:
        return torch.stack([even, odd], dim=-1).reshape(length, d)  # (L, d/2, 2) -> (L, d)

    return {
        mark("sin and cos are swapped: the even features (2i) hold the sine, the odd ones (2i+1) the "
             "cosine"):
            interleave(torch.cos(right), torch.sin(right)),
        mark("the exponent uses i where the formula has 2i: w_i = 10000^(-2i/d), with i counting pairs"):
            interleave(torch.sin(p / 10000 ** (i / d)), torch.cos(p / 10000 ** (i / d))),
        mark("the sines and cosines sit in two halves; the formula interleaves them (sin at 2i, cos at "
             "2i+1)"):
            torch.cat([torch.sin(right), torch.cos(right)], dim=-1),
        mark("positions start at 1; the first position is p = 0"):
            interleave(torch.sin((p + 1) / 10000 ** (2 * i / d)), torch.cos((p + 1) / 10000 ** (2 * i / d))),
        mark("the angle is multiplied by the frequency's inverse: p / 10000^(2i/d) divides p by it"):
            interleave(torch.sin(p * 10000 ** (2 * i / d)), torch.cos(p * 10000 ** (2 * i / d))),
    }


@checker
def check_sinusoidal(fn: Callable[[int, int], Tensor]) -> Feedback:
    """Exercise 1: ``fn(length, d_model)`` must equal ``attn.positions.sinusoidal``."""
    fn = as_function(fn)
    for length, d in _SIZES:
        got = _call(fn, length, d)
        if got.shape != (length, d):
            return Feedback(False, tr("For length={length}, d_model={d} the table should have shape "
                                      "({length}, {d}): one row per position; got {got}.",
                                      length=length, d=d, got=tuple(got.shape)))
        if _same(got, sinusoidal(length, d)):
            continue
        for hint, wrong in _sinusoidal_mistakes(length, d).items():
            if _same(got, wrong):
                return Feedback(False, tr("Close: {hint}.", hint=tr(hint)))
        return Feedback(False, tr("For length={length}, d_model={d} some entries differ from "
                                  "sin(p / 10000^(2i/d)) at feature 2i and cos(...) at 2i+1.",
                                  length=length, d=d))
    return Feedback(True, tr("Your codes match the Transformer's, at every size tried."))


def _rope_mistakes(x: Tensor) -> dict[str, Tensor]:
    L, E = x.shape[-2], x.shape[-1]
    pos = torch.arange(L, dtype=x.dtype)
    w = frequencies(E, dtype=x.dtype)
    angle = pos[:, None] * w[None, :]  # (L, E/2)
    a, b = x[..., 0::2], x[..., 1::2]
    halves_a, halves_b = x[..., : E // 2], x[..., E // 2:]
    rot_halves = torch.cat([halves_a * torch.cos(angle) - halves_b * torch.sin(angle),
                            halves_a * torch.sin(angle) + halves_b * torch.cos(angle)], dim=-1)
    backwards = torch.stack([a * torch.cos(angle) + b * torch.sin(angle),
                             -a * torch.sin(angle) + b * torch.cos(angle)], dim=-1).flatten(-2)
    w_wrong = frequencies(2 * E, dtype=x.dtype)[: E // 2]  # base^(-i/E) instead of base^(-2i/E)
    angle_w = pos[:, None] * w_wrong[None, :]
    wrong_freq = torch.stack([a * torch.cos(angle_w) - b * torch.sin(angle_w),
                              a * torch.sin(angle_w) + b * torch.cos(angle_w)], dim=-1).flatten(-2)
    return {
        mark("each pair turns the wrong way: (a, b) rotated by t is (a cos t - b sin t, a sin t + b cos t)"):
            backwards,
        mark("you paired feature i with feature i + E/2 (the 'two halves' layout of some libraries); this "
             "course pairs neighbours (2i, 2i+1)"): rot_halves,
        mark("positions start at 1; the first row is position 0 and is not rotated"):
            apply_rope(x, torch.arange(1, L + 1)),
        mark("the frequencies use i where the formula has 2i: w_i = base^(-2i/E)"): wrong_freq,
    }


@checker
def check_rope(fn: Callable[[Tensor], Tensor]) -> Feedback:
    """Exercise 2: ``fn(x)`` for x of shape (L, E) must equal ``attn.positions.apply_rope(x)``."""
    fn = as_function(fn)
    g = torch.Generator().manual_seed(9)
    for L, E in ((5, 4), (9, 8)):
        x = torch.randn(L, E, dtype=torch.float64, generator=g)
        x_before = x.clone()
        got = _call(fn, x)
        if not torch.equal(x, x_before):
            return Feedback(False, tr("Your function changed its input x in place; build a new tensor."))
        if got.shape != x.shape:
            return Feedback(False, tr("The output should have the input's shape {shape}, got {got}.",
                                      shape=tuple(x.shape), got=tuple(got.shape)))
        if _same(got, apply_rope(x)):
            continue
        for hint, wrong in _rope_mistakes(x).items():
            if _same(got, wrong):
                return Feedback(False, tr("Close: {hint}.", hint=tr(hint)))
        if torch.allclose(got.pow(2).sum(-1), x.pow(2).sum(-1), atol=1e-9):
            return Feedback(False, tr("Every row keeps its length, as a rotation should, but the angles "
                                      "differ from p * base^(-2i/E) for pair i at position p."))
        return Feedback(False, tr("A rotation keeps the length of every pair; yours changes it. Check "
                                  "the cos and sin terms of both new coordinates."))
    return Feedback(True, tr("Your rotation matches attn.positions.apply_rope."))
