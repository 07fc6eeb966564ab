"""Checkers for notebook 05 (attention in PyTorch: modules, nn.MultiheadAttention, masks).

Each checker returns a ``Feedback`` (right or wrong, with a hint) and never states the
expected answer. The expected values are computed here by running the real thing
(``attn.causal_mask``, ``torch.nn.MultiheadAttention``, the three softmax fills).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..functional import masked_softmax, softmax_with_fill
from ..masks import causal_mask, to_torch_mha_mask
from ._base import Feedback

__all__ = [
    "MASK_LENGTH",
    "SHAPES_SETUP",
    "OUTCOMES",
    "check_mha_causal_mask",
    "check_weight_shapes",
    "check_fully_masked_row",
]

#: Exercise 1 asks for a causal mask over this many tokens.
MASK_LENGTH = 5
#: Exercise 2's layer and input: nn.MultiheadAttention(embed_dim, num_heads,
#: batch_first=True) applied to x of shape (batch, length, embed_dim) as self-attention.
SHAPES_SETUP: dict[str, int] = {"batch": 3, "length": 7, "embed_dim": 64, "num_heads": 4}
#: Exercise 3's vocabulary for what a fully masked row becomes.
OUTCOMES: tuple[str, ...] = ("nan", "uniform", "zeros")


def check_mha_causal_mask(answer: Any) -> Feedback:
    """A causal mask over ``MASK_LENGTH`` tokens in ``nn.MultiheadAttention``'s convention
    (bool, True = blocked), as its ``attn_mask`` takes it."""
    L = MASK_LENGTH
    if answer is None:
        return Feedback(False, f"Set `answer` to a ({L}, {L}) bool tensor for nn.MultiheadAttention's "
                               "attn_mask (there, True means blocked).")
    if not isinstance(answer, torch.Tensor):
        return Feedback(False, f"`answer` should be a torch.Tensor, got {type(answer).__name__}.")
    if answer.dtype != torch.bool:
        return Feedback(False, f"`answer` should have dtype torch.bool, got {answer.dtype}: a float "
                               "attn_mask is *added* to the scores, which is a different thing.")
    if tuple(answer.shape) != (L, L):
        return Feedback(False, f"`answer` should have shape ({L}, {L}) (queries, keys), "
                               f"got {tuple(answer.shape)}.")
    allowed = causal_mask(L)  # this package: True = may attend
    expected = to_torch_mha_mask(allowed)
    if torch.equal(answer, expected):
        return Feedback(True, "Future keys (above the diagonal) are True = blocked; every query may "
                              "see itself and the past.")
    if torch.equal(answer, allowed):
        return Feedback(False, "This is the convention of attn and of SDPA (True = may attend). "
                               "nn.MultiheadAttention reads True as *blocked*.")
    if torch.equal(answer, ~torch.ones(L, L, dtype=torch.bool).tril(-1)):
        return Feedback(False, "A query may always attend to itself: the diagonal must be allowed.")
    if torch.equal(answer, torch.ones(L, L, dtype=torch.bool).tril(-1)):
        return Feedback(False, "This blocks the past and lets each query see the future.")
    return Feedback(False, "Go row by row: query i may see keys 0..i, and must not see i+1 and later.")


def _expected_shapes() -> dict[str, tuple[int, ...]]:
    s = SHAPES_SETUP
    with torch.random.fork_rng(devices=[]):  # the layer's init must not move the learner's RNG
        mha = nn.MultiheadAttention(s["embed_dim"], s["num_heads"], batch_first=True)
        x = torch.zeros(s["batch"], s["length"], s["embed_dim"])
        with torch.no_grad():
            _, averaged = mha(x, x, x)
            _, per_head = mha(x, x, x, need_weights=True, average_attn_weights=False)
    return {"averaged": tuple(averaged.shape), "per_head": tuple(per_head.shape)}


def _as_shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in value):
        return tuple(value)
    return None


def check_weight_shapes(answer: Any) -> Feedback:
    """answer = {"averaged": shape, "per_head": shape}: the shapes of the weights that
    ``nn.MultiheadAttention`` returns for ``SHAPES_SETUP`` by default and with
    ``average_attn_weights=False``."""
    if not isinstance(answer, dict) or set(answer) != {"averaged", "per_head"}:
        return Feedback(False, 'Set `answer` to a dict {"averaged": (...), "per_head": (...)} of two '
                               "shapes (tuples of ints).")
    got = {name: _as_shape(answer[name]) for name in ("averaged", "per_head")}
    for name, shape in got.items():
        if shape is None:
            return Feedback(False, f'answer["{name}"] should be a tuple of ints, got {answer[name]!r}.')
    expected = _expected_shapes()
    if got == expected:
        return Feedback(True, "By default the heads are averaged into one map per batch item; "
                              "average_attn_weights=False keeps one map per head.")
    if got["averaged"] == expected["per_head"]:
        return Feedback(False, "Your averaged shape still has a heads dimension: the default "
                               "(average_attn_weights=True) takes the mean over the heads.")
    if got["averaged"] != expected["averaged"]:
        return Feedback(False, "The averaged weights have one (L, S) map per batch item; with "
                               "batch_first=True the batch comes first.")
    return Feedback(False, "The per-head weights have one (L, S) map per batch item and per head, "
                           "heads before the two sequence dimensions.")


def _outcome(row: torch.Tensor) -> str:
    if row.isnan().any():
        return "nan"
    if torch.all(row == 0):
        return "zeros"
    if torch.allclose(row, torch.full_like(row, 1 / row.numel())):
        return "uniform"
    return "other"


def check_fully_masked_row(answer: Any) -> Feedback:
    """answer = {"-inf": ..., "-1e9": ..., "package": ...}, each one of ``OUTCOMES``: what the
    weights of a query whose every key is blocked become under each fill."""
    fills = ("-inf", "-1e9", "package")
    if not isinstance(answer, dict) or set(answer) != set(fills):
        return Feedback(False, 'Set `answer` to a dict with the keys "-inf", "-1e9" and "package", '
                               f"each one of {OUTCOMES}.")
    for fill in fills:
        if not isinstance(answer[fill], str) or answer[fill].strip().lower() not in OUTCOMES:
            return Feedback(False, f'answer["{fill}"] should be one of {OUTCOMES}, '
                                   f"got {answer[fill]!r}.")
    scores = torch.tensor([[0.3, -1.2, 2.0, 0.5]], dtype=torch.float64)  # (1, 4)
    mask = torch.zeros(1, 4, dtype=torch.bool)  # every key blocked
    expected = {
        "-inf": _outcome(softmax_with_fill(scores, mask, float("-inf"))[0]),
        "-1e9": _outcome(softmax_with_fill(scores, mask, -1e9)[0]),
        "package": _outcome(masked_softmax(scores, mask)[0]),
    }
    wrong = [f for f in fills if answer[f].strip().lower() != expected[f]]
    if not wrong:
        return Feedback(True, "Only the package's choice leaves such a row harmless: it reads nothing.")
    hints = {
        "-inf": "-inf: every entry is exp(-inf) = 0, and softmax divides by their sum.",
        "-1e9": "-1e9: every score of the row is the same number; what does softmax do with "
                "equal scores?",
        "package": "package: read the docstring of attn.masked_softmax.",
    }
    return Feedback(False, f"{len(wrong)} of 3 not right yet. " + " ".join(hints[f] for f in wrong))
