"""Step 6 of notebook 05: the article's layer as it prints it, the silent case it computes
when ``num_heads`` does not divide ``d_model``, and the guard that stops it.

``ArticleAsPrinted`` is the article's multi-head layer, run by the notebook on ``SILENT_CASE`` (no
error: two ``-1``s absorb the mismatch); ``check_silent_case`` asks what it gives for
``PREDICTION_CASE``, other sizes where it runs silently too, which the notebook never runs, and
``check_head_split_guard`` checks the learner's class for the guard: a ValueError naming both
values, raised before any weight is made, for every size that does not split, and none for the
sizes that do (``GUARD_SIZES``). Its tiers of hints are ``HEAD_SPLIT_GUARD_HINTS``.
"""
from __future__ import annotations

import math
from typing import Any
from unittest import mock

import torch
from torch import Tensor, nn

from ..language import tr
from . import _layer_checker
from ._base import Feedback, Hints, checker, shape_or_none

#: Step 6: the article's layer with these sizes, on x of shape (batch, length, d_model), as the
#: notebook runs it.
SILENT_CASE: dict[str, int] = {"batch": 2, "length": 5, "d_model": 12, "num_heads": 5}
#: Step 6's exercise: sizes where the layer runs silently too (6 x 14 numbers fill whole pieces of
#: 4 x 3), predicted without running it: what the notebook prints for ``SILENT_CASE`` is no answer here.
PREDICTION_CASE: dict[str, int] = {"batch": 2, "length": 6, "d_model": 14, "num_heads": 4}
#: The tiers of ``check_head_split_guard`` (``attn.exercises.nb05.reset_hints`` starts them again).
HEAD_SPLIT_GUARD_HINTS = Hints()


class ArticleAsPrinted(nn.Module):
    """The article's multi-head layer as it prints it: biased projections, separate q, k, v,
    blocked scores filled with -1e9, the output only, and **no check** that ``num_heads``
    divides ``d_model``. One addition: the last weights are kept in ``attn_weights``, so that
    a notebook can show their shape.

    Shape legend: B batch, L tokens, E = d_model, H = num_heads, D = head_dim = E // H, and
    L' = L * E / (H * D), which is L only when H * D = E.
    """

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads  # no check: 12 // 5 is 2, and 5 * 2 != 12
        self.q_linear = nn.Linear(d_model, d_model)
        self.k_linear = nn.Linear(d_model, d_model)
        self.v_linear = nn.Linear(d_model, d_model)
        self.out_linear = nn.Linear(d_model, d_model)
        self.attn_weights: Tensor | None = None

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
        """q, k, v (B, L, E); mask broadcastable to (B, H, L', L'), mask == 0 blocked
        -> output (B, L, E)."""
        B = q.size(0)
        H, D = self.num_heads, self.head_dim
        q = self.q_linear(q).view(B, -1, H, D).transpose(1, 2)  # (B, L, E) -> (B, L', H, D) -> (B, H, L', D)
        k = self.k_linear(k).view(B, -1, H, D).transpose(1, 2)  # (B, L, E) -> (B, H, L', D)
        v = self.v_linear(v).view(B, -1, H, D).transpose(1, 2)  # (B, L, E) -> (B, H, L', D)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, L', L')
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        weights = torch.softmax(scores, dim=-1)  # (B, H, L', L')
        self.attn_weights = weights
        out = (weights @ v).transpose(1, 2).contiguous()  # (B, H, L', D) -> (B, L', H, D)
        return self.out_linear(out.view(B, -1, self.d_model))  # (B, L', H, D) -> (B, L, E)


def _silent_case_shapes() -> dict[str, Any]:
    s = PREDICTION_CASE
    with torch.random.fork_rng(devices=[]):  # the layer's init must not move the learner's RNG
        layer = ArticleAsPrinted(s["d_model"], s["num_heads"])
        x = torch.zeros(s["batch"], s["length"], s["d_model"])
        with torch.no_grad():
            out = layer(x, x, x)
    return {"head_dim": layer.head_dim, "weights": tuple(layer.attn_weights.shape),
            "output": tuple(out.shape)}


@checker
def check_silent_case(answer: Any) -> Feedback:
    """Step 6: answer = {"head_dim": int, "weights": shape, "output": shape}, predicted for
    ``ArticleAsPrinted(d_model, num_heads)`` of ``PREDICTION_CASE`` on x (batch, length, d_model)."""
    keys = ("head_dim", "weights", "output")
    if not isinstance(answer, dict) or set(answer) != set(keys):
        return Feedback(False, tr('Set `answer` to a dict {"head_dim": ..., "weights": (...), '
                                  '"output": (...)}: an int and two shapes.'))
    head_dim = answer["head_dim"]
    if isinstance(head_dim, bool) or not isinstance(head_dim, int):
        return Feedback(False, tr('answer["head_dim"] should be an int, got {value!r}: the article '
                                  'computes it with //.', value=head_dim))
    shapes = {k: shape_or_none(answer[k]) for k in ("weights", "output")}
    for k, shape in shapes.items():
        if shape is None:
            return Feedback(False, tr('answer["{key}"] should be a tuple of ints, got {value!r}: the '
                                      'layer runs, it raises nothing.', key=k, value=answer[k]))
    expected = _silent_case_shapes()
    s = PREDICTION_CASE
    B, L, E, H = s["batch"], s["length"], s["d_model"], s["num_heads"]
    shown = SILENT_CASE  # the sizes the notebook runs, and prints the shapes of
    shown_d = shown["d_model"] // shown["num_heads"]
    pieces = shown["length"] * shown["d_model"] // (shown["num_heads"] * shown_d)  # what the -1 became
    if (head_dim, shapes["weights"], shapes["output"]) == (
            shown_d, (shown["batch"], shown["num_heads"], pieces, pieces),
            (shown["batch"], shown["length"], shown["d_model"])):
        return Feedback(False, tr("Those are the shapes the notebook printed for d_model = {E0} and {H0} heads. "
                                  "These sizes are other ones: work them out the same way.",
                                  E0=shown["d_model"], H0=shown["num_heads"]))
    if head_dim != expected["head_dim"]:
        return Feedback(False, tr("head_dim = d_model // num_heads: integer division rounds down."))
    if shapes["weights"] == (B, H, L, L):
        return Feedback(False, tr("That is the shape when num_heads × head_dim = d_model. Here it is "
                                  "not: count what the -1 of view(batch, -1, num_heads, head_dim) "
                                  "becomes when the tensor holds length × d_model numbers per sequence."))
    if shapes["weights"] != expected["weights"]:
        return Feedback(False, tr("The weights are (batch, heads, L', L'), where L' is what the -1 of "
                                  "the split's view becomes."))
    if shapes["output"] != expected["output"]:
        return Feedback(False, tr("The merge's view(batch, -1, d_model) has a -1 too: what does it "
                                  "give back?"))
    return Feedback(True, tr("No error at this length: the two -1s absorb the mismatch, and the output "
                             "has the right shape, yet every head attends over pieces that straddle the "
                             "real tokens."))


#: Sizes the guard is tried on, besides ``SILENT_CASE``'s: (d_model, num_heads) pairs whose
#: heads split d_model evenly (it must build) and pairs whose heads do not (it must refuse).
GUARD_SIZES: dict[str, tuple[tuple[int, int], ...]] = {
    "even": ((12, 3), (12, 4), (8, 2), (6, 6)),
    "uneven": ((10, 4), (9, 2), (7, 3)),
}


def _build_counting(cls: type, d_model: int, num_heads: int) -> tuple[BaseException | None, int]:
    """Build ``cls(d_model, num_heads)``: (the exception it raised or None, how many parameters
    were registered before it returned or raised). Counts through ``nn.Module.register_parameter``,
    which every ``nn.Linear`` and every ``nn.Parameter`` assigned to a module goes through."""
    made: list[str] = []
    register = nn.Module.register_parameter

    def counting(module: nn.Module, name: str, param: nn.Parameter | None) -> None:
        if param is not None:
            made.append(name)
        register(module, name, param)

    with torch.random.fork_rng(devices=[]), mock.patch.object(nn.Module, "register_parameter",
                                                              counting):
        try:
            cls(d_model, num_heads)
        except Exception as err:  # the learner's code: the caller explains it
            return err, len(made)
    return None, len(made)


@checker
def check_head_split_guard(cls: Any) -> Feedback:
    """Step 6: ``cls(d_model, num_heads)`` must raise a ValueError, naming both values, whenever
    num_heads does not divide d_model (``SILENT_CASE``, then the other sizes of ``GUARD_SIZES``),
    before any parameter is made; and build when it does divide.

    Args:
        cls: the class (not an instance), built as ``cls(d_model, num_heads)``.

    Returns:
        A ``Feedback``; a second try with the same mistake hears where to look too.
    """
    hints = HEAD_SPLIT_GUARD_HINTS
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        return Feedback(False, tr("cls: expected the class you wrote (an nn.Module subclass), got {kind}.",
                                  kind=type(cls).__name__))
    name = cls.__name__
    for E, good in GUARD_SIZES["even"]:
        err, _ = _build_counting(cls, E, good)
        if isinstance(err, NotImplementedError):
            return Feedback(False, tr("{name}.__init__ is not written yet.", name=name))
        if err is not None:
            return hints.wrong("too strict", tr("{name}({E}, {H}) raised {error} {H} heads split {E} "
                                                "evenly, so it should build.",
                                                name=name, E=E, H=good, error=_layer_checker.describe_error(err)),
                               where=tr("the condition of your check"))
    uneven = ((SILENT_CASE["d_model"], SILENT_CASE["num_heads"]),) + GUARD_SIZES["uneven"]
    for E, H in uneven:
        err, made = _build_counting(cls, E, H)
        if err is None:
            if (E, H) == uneven[0]:
                return hints.wrong(
                    "no check", tr("{name}({E}, {H}) still builds without complaint.", name=name, E=E, H=H),
                    where=tr("__init__, before any weight is made: check that the heads split "
                             "d_model evenly"))
            return hints.wrong(
                "hard-coded", tr("{name}({E}, {H}) builds without complaint, though {H} heads do not "
                                 "split {E} evenly: your check stops the sizes of the text, not every "
                                 "size that does not fit.", name=name, E=E, H=H),
                where=tr("the condition of your check: what must hold for any d_model and num_heads"))
        if isinstance(err, AssertionError):
            return hints.wrong(
                "assert", tr("A bare assert says nothing about what went wrong, and `python -O` "
                             "removes it: raise a ValueError with a message instead."),
                where=tr("the statement that stops the construction"))
        if isinstance(err, NotImplementedError):
            return Feedback(False, tr("{name}.__init__ is not written yet.", name=name))
        if not isinstance(err, ValueError):
            return hints.wrong("not a ValueError", tr("It raises {error} A value that does not fit is a "
                                                      "ValueError.", error=_layer_checker.describe_error(err)),
                               where=tr("the type of the exception you raise"))
        if made:
            symptom = (tr("{name}({E}, {H}) raises a ValueError, but only after {made} parameter was "
                          "made: the check runs after the weights, and should stop the construction "
                          "before any weight is made.", name=name, E=E, H=H, made=made) if made == 1 else
                       tr("{name}({E}, {H}) raises a ValueError, but only after {made} parameters were "
                          "made: the check runs after the weights, and should stop the construction "
                          "before any weight is made.", name=name, E=E, H=H, made=made))
            return hints.wrong(
                "after the weights", symptom,
                where=tr("the order of the lines in __init__: where your check stands relative "
                         "to the line that makes the projections"))
        message = str(err)
        if str(E) not in message or str(H) not in message:
            return hints.wrong(
                "message", tr("{name}({E}, {H}) raises a ValueError, but its message should say what was "
                              "expected and what was given: name d_model and num_heads with their "
                              "values. It says: {message!r}", name=name, E=E, H=H, message=message),
                where=tr("the text of your ValueError"))
    E, H = uneven[0]
    err, _ = _build_counting(cls, E, H)
    return Feedback(True, tr("{name}({E}, {H}) now stops at once, before any weight is made, and says "
                             "why: {error} (also tried on {uneven} other sizes that do not split, and "
                             "{even} that do).", name=name, E=E, H=H, error=err,
                             uneven=len(GUARD_SIZES["uneven"]), even=len(GUARD_SIZES["even"])))
