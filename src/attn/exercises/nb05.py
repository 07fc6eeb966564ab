"""Checkers for notebook 05 (building attention in PyTorch, step by step).

The guided build: ``check_self_attention`` (steps 1-2), ``check_split_merge`` (step 3),
``check_multi_head_attention`` (steps 4-5), ``check_silent_case`` and
``check_head_split_guard`` (step 6). The layer checkers take the learner's **class**, build it,
write known weights into it and compare what it computes with the package's layer
(``attn.exercises._layer_checker`` does the work, by behaviour only). Then PyTorch's own layer:
``check_weight_shapes``, ``check_mha_causal_mask``, and ``check_fully_masked_row``.

This module holds steps 1 to 5 and is the notebook's door: step 6 lives in
``attn.exercises._article_layer``, PyTorch's layer in ``attn.exercises._torch_attention``, and
their names are imported here, so that the notebook asks ``nb05.check_silent_case(...)``.

Each checker returns a ``Feedback`` (right or wrong, with a hint) and never states the expected
answer. The layer checkers, the guard's and the causal mask's give hints in tiers (``Hints``):
the symptom on a first wrong try, the symptom and where to look on a second try with the same
mistake; ``reset_hints()`` starts again. Masks given to a learner's layer follow the chapter:
``mask == 0`` is blocked (for a bool mask: False is blocked, this package's True = may attend).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from . import _layer_bugs, _layer_checker
from ..language import tr
from ._article_layer import (GUARD_SIZES, HEAD_SPLIT_GUARD_HINTS, PREDICTION_CASE, SILENT_CASE,
                             ArticleAsPrinted, check_head_split_guard, check_silent_case)
from ._base import Feedback, Hints, Refused, as_function, checker
from ._torch_attention import (MASK_LENGTH, MHA_CAUSAL_MASK_HINTS, OUTCOMES, SHAPES_SETUP,
                               check_fully_masked_row, check_mha_causal_mask, check_weight_shapes)

__all__ = [
    "SELF_ATTENTION_ARGS",
    "MULTI_HEAD_ARGS",
    "SPLIT_SETUP",
    "SILENT_CASE",
    "PREDICTION_CASE",
    "MASK_LENGTH",
    "SHAPES_SETUP",
    "OUTCOMES",
    "GUARD_SIZES",
    "ArticleAsPrinted",
    "check_self_attention",
    "check_split_merge",
    "check_multi_head_attention",
    "check_silent_case",
    "check_head_split_guard",
    "check_mha_causal_mask",
    "check_weight_shapes",
    "check_fully_masked_row",
    "reset_hints",
    "SELF_ATTENTION_HINTS",
    "MULTI_HEAD_HINTS",
    "HEAD_SPLIT_GUARD_HINTS",
    "MHA_CAUSAL_MASK_HINTS",
]

#: Steps 1-2 build SelfAttention(d_model, d_k, d_v) with these sizes (all different, so that a
#: mix-up shows).
SELF_ATTENTION_ARGS: dict[str, int] = {"d_model": 6, "d_k": 4, "d_v": 3}
#: Steps 4-5 build MultiHeadAttention(d_model, n_heads) with these sizes (d_k = 4 per head).
MULTI_HEAD_ARGS: dict[str, int] = {"d_model": 8, "n_heads": 2}
#: Step 3 splits a (batch, length, d_model) tensor into n_heads heads.
SPLIT_SETUP: dict[str, int] = {"batch": 2, "length": 3, "d_model": 8, "n_heads": 2}

_SELF = _layer_bugs.Spec("SelfAttention", tuple(SELF_ATTENTION_ARGS.values()), "d_model, d_k, d_v",
                         d_model=SELF_ATTENTION_ARGS["d_model"], d_k=SELF_ATTENTION_ARGS["d_k"],
                         d_v=SELF_ATTENTION_ARGS["d_v"], heads=None)
_E, _H = MULTI_HEAD_ARGS["d_model"], MULTI_HEAD_ARGS["n_heads"]
_MULTI = _layer_bugs.Spec("MultiHeadAttention", (_E, _H), "d_model, n_heads", d_model=_E,
                          d_k=_E // _H, d_v=_E // _H, heads=_H)

#: One ``Hints`` per checker (a second try with the same mistake hears where to look too):
#: ``check_self_attention``'s and ``check_multi_head_attention``'s here, ``check_head_split_guard``'s
#: and ``check_mha_causal_mask``'s beside theirs. ``reset_hints()`` starts them all again.
SELF_ATTENTION_HINTS = Hints()
MULTI_HEAD_HINTS = Hints()


def reset_hints() -> None:
    """Start every checker's hints of this notebook again from the first tier (the symptom)."""
    for hints in (SELF_ATTENTION_HINTS, MULTI_HEAD_HINTS, HEAD_SPLIT_GUARD_HINTS,
                  MHA_CAUSAL_MASK_HINTS):
        hints.reset()


@checker
def check_self_attention(cls: Any, *, masks: bool = True) -> Feedback:
    """Steps 1-2: the learner's single-head class, built as ``cls(d_model, d_k, d_v)``.

    The projections are found by the chapter's names (``W_q, W_k, W_v``), the article's
    (``q_linear, k_linear, v_linear``) or Raschka's (``W_query, W_key, W_value``), or as one
    fused ``qkv`` (q, k, v side by side); each is an ``nn.Linear``, with or without bias, or a
    raw matrix used as ``x @ W`` (shape (in, out)). forward is ``forward(x, mask=None)`` or
    ``forward(q, k, v, mask=None)`` and returns ``(output, weights)`` or the output alone.
    With the same float64 weights as the package's single head, the output (B, L, d_v) and
    weights (B, L, L) must agree (to float32 round-off) with no mask, a causal mask (L, L) and
    a padding mask (B, 1, L); ``mask == 0`` is blocked. A wrong layer hears its symptom, and on
    a second try with the same mistake where to look.

    Args:
        cls: the class (not an instance).
        masks: False checks only the case without a mask (step 1, before masks are taught).
    """
    return _layer_checker.check_layer(cls, _SELF, masks=masks, hints=SELF_ATTENTION_HINTS)


@checker
def check_multi_head_attention(cls: Any) -> Feedback:
    """Steps 4-5: the learner's multi-head class, built as ``cls(d_model, n_heads)``.

    As ``check_self_attention``, with the output projection (``W_o``, ``out_linear`` or
    ``out_proj``) too.
    Output (B, L, d_model), weights per head (B, H, L, L); the masks are (L, L) and
    (B, 1, 1, L), ``mask == 0`` blocked.
    """
    return _layer_checker.check_layer(cls, _MULTI, hints=MULTI_HEAD_HINTS)


# ---- step 3: splitting into heads and merging back ---------------------------------------

def _split_input() -> Tensor:
    s = SPLIT_SETUP
    n = s["batch"] * s["length"] * s["d_model"]
    return torch.arange(n, dtype=torch.float64).reshape(s["batch"], s["length"], s["d_model"])


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args), the learner's function.

    Raises:
        Refused: it is not written yet, or raised; the reply names the function and its error.
    """
    name = getattr(fn, "__name__", None)
    try:
        return fn(*args)
    except NotImplementedError:
        if name is None:
            raise Refused(tr("it is not written yet."))
        raise Refused(tr("{name} is not written yet.", name=name))
    except Exception as err:  # the learner's code: any error becomes a hint
        error = _layer_checker.describe_error(err)
        if name is None:
            raise Refused(tr("it raised {error}", error=error))
        raise Refused(tr("{name} raised {error}", name=name, error=error))


@checker
def check_split_merge(split_heads: Any, merge_heads: Any) -> Feedback:
    """Step 3: ``split_heads(x, n_heads)`` takes (B, L, E) to (B, H, L, D) and
    ``merge_heads(x)`` takes (B, H, L, D) back to (B, L, E), for ``SPLIT_SETUP``."""
    split_heads = as_function(split_heads, argument="split_heads")
    merge_heads = as_function(merge_heads, argument="merge_heads")
    s = SPLIT_SETUP
    B, L, E, H = s["batch"], s["length"], s["d_model"], s["n_heads"]
    D = E // H
    x = _split_input()  # (B, L, E): the numbers 0, 1, 2, ... in order
    heads = _call(split_heads, x, H)
    if not isinstance(heads, Tensor) or tuple(heads.shape) != (B, H, L, D):
        got = tuple(heads.shape) if isinstance(heads, Tensor) else type(heads).__name__
        return Feedback(False, tr("split_heads should give shape (B, H, L, D) = {shape}, got {got}.",
                                  shape=(B, H, L, D), got=got))
    expected = x.view(B, L, H, D).transpose(1, 2)  # (B, L, E) -> (B, L, H, D) -> (B, H, L, D)
    if not torch.equal(heads.double(), expected):
        if torch.equal(heads.double(), x.view(B, H, L, D)):
            return Feedback(False, tr("split_heads: {symptom}",
                                      symptom=tr(_layer_bugs.BUGS["heads split without a transpose"][0])))
        return Feedback(False, tr("split_heads: the shape is right, not the numbers: head h of token l "
                                  "should hold D consecutive features of token l."))
    merged = _call(merge_heads, expected.contiguous())  # as attention's output: contiguous
    if not isinstance(merged, Tensor) or tuple(merged.shape) != (B, L, E):
        got = tuple(merged.shape) if isinstance(merged, Tensor) else type(merged).__name__
        return Feedback(False, tr("merge_heads should give shape (B, L, E) = {shape}, got {got}.",
                                  shape=(B, L, E), got=got))
    if not torch.equal(merged.double(), x):
        if torch.equal(merged.double(), expected.reshape(B, L, E)):
            return Feedback(False, tr("merge_heads: {symptom}",
                                      symptom=tr(_layer_bugs.BUGS["heads merged without a transpose"][0])))
        return Feedback(False, tr("merge_heads: the shape is right, not the numbers: merging the split "
                                  "should give back x exactly."))
    return Feedback(True, tr("Each head gets D features of every token, and merging puts every "
                             "token's heads side by side again: merge_heads(split_heads(x)) is x."))
