"""PyTorch's own attention layer, as notebook 05 meets it: ``nn.MultiheadAttention``'s causal mask
(``check_mha_causal_mask``: bool with True = blocked, or a float mask added to the scores),
the shapes of the weights it returns (``check_weight_shapes``), and what the weights of a query
whose every key is blocked become under each fill (``check_fully_masked_row``).

The causal mask's checker gives hints in tiers (``MHA_CAUSAL_MASK_HINTS``).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..functional import masked_softmax, softmax_with_fill
from ..masks import causal_mask, to_torch_mha_mask
from ..language import mark, tr
from ._base import Feedback, Hints, checker, sentences, shape_or_none

#: The nn.MultiheadAttention exercise asks for a causal mask over this many tokens.
MASK_LENGTH = 5
#: A float mask entry at or below this blocks its key: -inf, or a fill like the article's -1e9
#: (exp(-1e9 + a score) is exactly 0 in float32 and float64).
BLOCKING_FILL = -1e9
#: The weight-shapes exercise's layer and input: nn.MultiheadAttention(embed_dim, num_heads,
#: batch_first=True) applied to x of shape (batch, length, embed_dim) as self-attention.
SHAPES_SETUP: dict[str, int] = {"batch": 3, "length": 7, "embed_dim": 64, "num_heads": 4}
#: Step 5's vocabulary for what a fully masked row becomes.
OUTCOMES: tuple[str, ...] = ("nan", "uniform", "zeros")
#: The tiers of ``check_mha_causal_mask`` (``attn.exercises.nb05.reset_hints`` starts them again).
MHA_CAUSAL_MASK_HINTS = Hints()


@checker
def check_mha_causal_mask(answer: Any) -> Feedback:
    """A causal mask over ``MASK_LENGTH`` tokens, as ``nn.MultiheadAttention``'s ``attn_mask``
    takes it: bool with True = blocked, or float, *added* to the scores, with 0 where a key is
    allowed and -inf where it is blocked (as ``nn.Transformer.generate_square_subsequent_mask``
    makes it). A second try with the same mistake hears where to look too."""
    hints = MHA_CAUSAL_MASK_HINTS
    L = MASK_LENGTH
    if answer is None:
        return Feedback(False, tr("Set `answer` to a ({L}, {L}) bool tensor for nn.MultiheadAttention's "
                                  "attn_mask (there, True means blocked).", L=L))
    if not isinstance(answer, torch.Tensor):
        return Feedback(False, tr("`answer` should be a torch.Tensor, got {kind}.", kind=type(answer).__name__))
    if answer.dtype != torch.bool and not answer.dtype.is_floating_point:
        return Feedback(False, tr("`answer` should have dtype torch.bool (True = blocked), got {dtype}. "
                                  "(A float mask works too: it is added to the scores, 0 where allowed "
                                  "and -inf where blocked.)", dtype=answer.dtype))
    if tuple(answer.shape) != (L, L):
        return Feedback(False, tr("`answer` should have shape ({L}, {L}) (queries, keys), got {got}.",
                                  L=L, got=tuple(answer.shape)))
    is_float = answer.dtype.is_floating_point
    if is_float:
        values = set(answer.unique().tolist())
        if values <= {0.0, 1.0}:
            return hints.wrong(
                "float 1/0", tr("A float attn_mask is *added* to the scores, not read as allowed or "
                                "blocked: a mask of 0s and 1s only shifts some scores by 1, and blocks "
                                "nothing."),
                where=tr("what a float attn_mask must hold where a key is blocked (or use a bool "
                         "mask, True = blocked)"))
        if not all(v == 0.0 or v <= BLOCKING_FILL for v in values):
            return hints.wrong(
                "float values", tr("A float attn_mask is *added* to the scores: it blocks a key where it "
                                   "holds -inf (or a number as far down as -1e9, whose exp is 0), and leaves "
                                   "it alone where it holds 0. Yours holds other values too: {others}.",
                                   others=sorted(v for v in values if not (v == 0.0 or v <= BLOCKING_FILL))),
                where=tr("the values of your mask: 0 for allowed, -inf for blocked"))
        blocked = answer <= BLOCKING_FILL  # what the float mask blocks, as a bool mask (-inf included)
    else:
        blocked = answer
    allowed = causal_mask(L)  # this package: True = may attend
    expected = to_torch_mha_mask(allowed)
    if torch.equal(blocked, expected):
        if is_float and bool(torch.isinf(answer).any()):
            return Feedback(True, tr("Future keys (above the diagonal) get -inf added to their "
                                     "scores, the rest 0: every query may see itself and the past. "
                                     "It is the mask nn.Transformer.generate_square_subsequent_mask "
                                     "makes, and it gives the same attention as the bool one."))
        if is_float:  # -1e9, as the article fills: exp(-1e9 + a score) is exactly 0, and every row keeps a key
            return Feedback(True, tr("Future keys (above the diagonal) get {fill} added to their scores, the "
                                     "rest 0: every query may see itself and the past. As section 5 showed, "
                                     "exp of a score lowered by 1e9 is exactly 0, even in float64, so it gives "
                                     "the same attention as -inf, which nn.Transformer."
                                     "generate_square_subsequent_mask puts there.",
                                     fill=f"{float(answer.min()):g}".replace("e+0", "e").replace("e+", "e")))
        return Feedback(True, tr("Future keys (above the diagonal) are True = blocked; every query may "
                                 "see itself and the past."))
    if torch.equal(blocked, allowed):
        if is_float:
            return hints.wrong("flipped", tr("Your -inf entries are where a query may attend: "
                                             "added to the scores, -inf blocks."),
                               where=tr("which keys a query must not see"))
        return hints.wrong("flipped", tr("This is the convention of attn and of SDPA (True = may "
                                         "attend). nn.MultiheadAttention reads True as *blocked*."),
                           where=tr("which of the two bool values blocks"))
    if torch.equal(blocked, ~torch.ones(L, L, dtype=torch.bool).tril(-1)):
        return hints.wrong("diagonal", tr("A query may always attend to itself: the diagonal must be "
                                          "allowed."), where=tr("the diagonal of your mask"))
    if torch.equal(blocked, torch.ones(L, L, dtype=torch.bool).tril(-1)):
        return hints.wrong("past", tr("This blocks the past and lets each query see the future."),
                           where=tr("which side of the diagonal is blocked"))
    return hints.wrong("other", tr("Go row by row: query i may see keys 0..i, and must not see i+1 "
                                   "and later."), where=tr("one row at a time, query i"))


def _expected_shapes() -> dict[str, tuple[int, ...]]:
    s = SHAPES_SETUP
    with torch.random.fork_rng(devices=[]):  # the layer's init must not move the learner's RNG
        mha = nn.MultiheadAttention(s["embed_dim"], s["num_heads"], batch_first=True)
        x = torch.zeros(s["batch"], s["length"], s["embed_dim"])
        with torch.no_grad():
            _, averaged = mha(x, x, x)
            _, per_head = mha(x, x, x, need_weights=True, average_attn_weights=False)
    return {"averaged": tuple(averaged.shape), "per_head": tuple(per_head.shape)}


@checker
def check_weight_shapes(answer: Any) -> Feedback:
    """answer = {"averaged": shape, "per_head": shape}: the shapes of the weights that
    ``nn.MultiheadAttention`` returns for ``SHAPES_SETUP`` by default and with
    ``average_attn_weights=False``."""
    if not isinstance(answer, dict) or set(answer) != {"averaged", "per_head"}:
        return Feedback(False, tr('Set `answer` to a dict {"averaged": (...), "per_head": (...)} of two '
                                  'shapes (tuples of ints).'))
    got = {name: shape_or_none(answer[name]) for name in ("averaged", "per_head")}
    for name, shape in got.items():
        if shape is None:
            return Feedback(False, tr('answer["{key}"] should be a tuple of ints, got {value!r}.',
                                      key=name, value=answer[name]))
    expected = _expected_shapes()
    if got == expected:
        return Feedback(True, tr("By default the heads are averaged into one map per batch item; "
                                 "average_attn_weights=False keeps one map per head."))
    if got["averaged"] == expected["per_head"]:
        return Feedback(False, tr("Your averaged shape still has a heads dimension: the default "
                                  "(average_attn_weights=True) takes the mean over the heads."))
    if got["averaged"] != expected["averaged"]:
        return Feedback(False, tr("The averaged weights have one (L, S) map per batch item; with "
                                  "batch_first=True the batch comes first."))
    return Feedback(False, tr("The per-head weights have one (L, S) map per batch item and per head, "
                              "heads before the two sequence dimensions."))


def _outcome(row: torch.Tensor) -> str:
    if row.isnan().any():
        return "nan"
    if torch.all(row == 0):
        return "zeros"
    if torch.allclose(row, torch.full_like(row, 1 / row.numel())):
        return "uniform"
    return "other"


@checker
def check_fully_masked_row(answer: Any) -> Feedback:
    """answer = {"-inf": ..., "-1e9": ..., "package": ...}, each one of ``OUTCOMES``: what the
    weights of a query whose every key is blocked become under each fill."""
    fills = ("-inf", "-1e9", "package")
    if not isinstance(answer, dict) or set(answer) != set(fills):
        return Feedback(False, tr('Set `answer` to a dict with the keys "-inf", "-1e9" and "package", '
                                  'each one of {outcomes}.', outcomes=OUTCOMES))
    for fill in fills:
        if not isinstance(answer[fill], str) or answer[fill].strip().lower() not in OUTCOMES:
            return Feedback(False, tr('answer["{key}"] should be one of {outcomes}, got {value!r}.',
                                      key=fill, outcomes=OUTCOMES, value=answer[fill]))
    scores = torch.tensor([[0.3, -1.2, 2.0, 0.5]], dtype=torch.float64)  # (1, 4)
    mask = torch.zeros(1, 4, dtype=torch.bool)  # every key blocked
    expected = {
        "-inf": _outcome(softmax_with_fill(scores, mask, float("-inf"))[0]),
        "-1e9": _outcome(softmax_with_fill(scores, mask, -1e9)[0]),
        "package": _outcome(masked_softmax(scores, mask)[0]),
    }
    wrong = [f for f in fills if answer[f].strip().lower() != expected[f]]
    if not wrong:
        return Feedback(True, tr("Only the package's choice leaves such a row harmless: it reads nothing."))
    hints = {
        "-inf": mark("-inf: every entry is exp(-inf) = 0, and softmax divides by their sum."),
        "-1e9": mark("-1e9: every score of the row is the same number; what does softmax do with "
                     "equal scores?"),
        "package": mark("package: read the docstring of attn.masked_softmax."),
    }
    return Feedback(False, sentences([tr("{wrong} of 3 not right yet.", wrong=len(wrong)),
                                      *(tr(hints[f]) for f in wrong)]))
