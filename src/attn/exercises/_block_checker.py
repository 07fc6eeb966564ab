"""The checker of notebook 12's Transformer block, ``check_transformer_block``, and ``passes``,
which asks it quietly (no hint counted) for the cell that trains a model of the learner's blocks.

``check_transformer_block(cls)`` takes the learner's **class**, builds it and finds its parts
(``attn.exercises._block_parts``), writes known float64 weights into them, and compares its
output with ``nn.TransformerEncoderLayer(batch_first=True)`` holding the same weights
(``attn.exercises._block_bugs``): both norm placements, no mask, a causal mask and a padding
mask. When the two disagree it runs the same weights through each classic bug of ``BUGS`` and
names the one that gives the learner's numbers; ``BLOCK_HINTS`` gives the symptom first, and
the place to look on a second try with the same mistake. It never shows the code of the fix.

Shape legend: B batch, L tokens, E = d_model, H heads, D = E // H, F = d_ff.
Masks given to the learner's block are bool with the course's meaning, True = may attend
(the chapter's ``mask == 0`` is blocked): (L, L) causal, (B, 1, 1, L) padding.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..language import mark, tr
from . import _layer_bugs, _layer_checker
from ._base import Feedback, Hints, Refused, checker, sentences
from ._block_bugs import (BATCH, BLOCK_ARGS, BUGS, LENGTH, SEED, BlockParams, bugs_for, cases,
                          torch_reference, variant)
from ._block_parts import (DROPOUT, Parts, block_runner, build_block, find_parts, require_right_attention,
                           write_weights)

_E = BLOCK_ARGS["d_model"]
_ACTIVATIONS = ("relu", "gelu")

#: Not variants: what is seen by calling the block twice.
RANDOM_IN_EVAL = (
    mark("Your block gives a different output each time it is called on the same input in eval "
         "mode: a dropout still runs when the block is not training."),
    mark("each dropout in your block, and how it learns whether the block is training"))
NO_DROPOUT_IN_TRAINING = (
    mark("Your block takes dropout={p}, but in training mode it gives the same output twice: its "
         "dropout never runs."),
    mark("where forward calls the dropout layers made in __init__"))
DROPOUT_NOT_RESCALED = (
    mark("Your block's dropout zeroes numbers in training but does not scale up the ones it keeps by "
         "1 / (1 - p): averaged over many calls in training mode, its sub-layers give {share:.0%} of what "
         "they give in eval mode, where nn.Dropout keeps the average (with p = {p}). The model then "
         "meets larger numbers in use than it learned on."),
    mark("what your dropout does to the numbers it keeps"))
#: How many calls in training mode average the dropout out (``_kept_share_in_training``).
_DROPOUT_CALLS = 64

#: The tiers of ``check_transformer_block`` (``attn.exercises.nb12.reset_hints`` starts them again):
#: a second try with the same mistake hears where to look too.
BLOCK_HINTS = Hints()


@checker
def check_transformer_block(cls: Any, *, norm_first: bool | None = None) -> Feedback:
    """The learner's Transformer block against ``nn.TransformerEncoderLayer(batch_first=True)``.

    The contract: ``cls(d_model, num_heads, d_ff, norm_first=...)`` (sizes ``BLOCK_ARGS``;
    ``dropout=DROPOUT`` too when ``__init__`` takes a ``dropout``), ``forward(x, mask=None)``
    returning the output (B, L, d_model) (or a pair whose first item it is). The checker
    finds, by what they are, the attention layer (a submodule that
    ``attn.exercises.nb05.check_multi_head_attention`` would accept, or
    ``attn.MultiHeadAttention``), two LayerNorms of d_model (``nn.LayerNorm`` or a module of
    one's own with a gain and a bias; in the order of ``__init__`` or the other), and the
    feed-forward's ``nn.Linear(d_model, d_ff)`` and ``nn.Linear(d_ff, d_model)``, writes known
    float64 weights into them, and compares in eval mode with no mask, a causal mask (L, L)
    and a padding mask (B, 1, 1, L) (True = may attend). The activation may be ReLU or GELU.
    Calling the block twice in eval mode must give the same output; with a dropout argument,
    twice in training mode must not, and (pre-LN) its dropout must keep the average: scale the
    numbers it keeps by 1 / (1 - p), as ``nn.Dropout`` does.

    Args:
        cls: the class (not an instance).
        norm_first: None checks both placements (the class must take ``norm_first``); True
            (pre-LN) or False (post-LN) checks that one only.

    Returns:
        A ``Feedback``; the learner's RNG is left as it was.
    """
    return _check_block(cls, norm_first, BLOCK_HINTS)


def passes(cls: Any, *, norm_first: bool | None = None) -> bool:
    """Whether ``check_transformer_block(cls, norm_first=norm_first)`` says correct, asked
    quietly: the learner's tiers of hints are left as they were (for the cell that builds a
    model of the learner's blocks when they pass, and of ``attn.TransformerBlock`` when not)."""
    try:
        return _check_block(cls, norm_first, Hints()).correct
    except Refused:
        return False


def _check_block(cls: Any, norm_first: bool | None, hints: Hints) -> Feedback:
    """``check_transformer_block``, its mistakes counted in ``hints``.

    Raises:
        Refused: the block cannot be built or read, or a case goes wrong.
        TypeError: ``norm_first`` is not None, True or False (the notebook's call, not the answer).
    """
    if norm_first is not None and not isinstance(norm_first, bool):
        raise TypeError(f"norm_first: expected None, True or False, got {type(norm_first).__name__} "
                        f"{norm_first!r}")
    with torch.random.fork_rng(devices=[]):  # the block's init and dropout must not move the RNG
        torch.manual_seed(SEED)
        return _compare(cls, norm_first, hints)


def _compare(cls: Any, only: bool | None, hints: Hints) -> Feedback:
    """Build the block for each placement, find its parts, write known weights and compare it
    with PyTorch's layer, case by case; the first difference is explained (``_diagnose``)."""
    placements = (False, True) if only is None else (only,)
    gen = torch.Generator().manual_seed(SEED + 1)
    x = torch.randn(BATCH, LENGTH, _E, generator=gen, dtype=torch.float64)
    config: tuple[str, bool] | None = None  # (activation, norms swapped), fixed by the first case
    exact, dropout_seen = True, None
    for nf in placements:
        block, took_dropout = build_block(cls, nf, both=only is None)
        name = type(block).__name__
        parts = find_parts(block, hints)
        require_right_attention(parts, name, x)
        params = write_weights(parts)
        runner = block_runner(block)
        for case, mask, torch_kwargs in cases():
            result = _layer_checker.run(runner, x, mask)
            if isinstance(result, str):
                return Feedback(False, tr("With norm_first={nf} and {case}: {problem}",
                                          nf=nf, case=tr(case), problem=result))
            out = result[0]
            if tuple(out.shape) != (BATCH, LENGTH, _E):
                return Feedback(False, tr("With norm_first={nf} and {case}: the output should have shape "
                                          "{shape} (B, L, d_model), the shape of x, got {got}.",
                                          nf=nf, case=tr(case), shape=(BATCH, LENGTH, _E),
                                          got=tuple(out.shape)))
            again = _layer_checker.run(runner, x, mask)
            if isinstance(again, str) or not _layer_bugs.same(again[0], out.double()):
                return hints.wrong("random in eval", tr(RANDOM_IN_EVAL[0]), where=tr(RANDOM_IN_EVAL[1]))
            configs = [config] if config is not None else [
                (act, swap) for act in _ACTIVATIONS for swap in (False, True)]
            match = None
            for act, swap in configs:
                p = params.swapped_norms() if swap else params
                expected = torch_reference(x, p, torch_kwargs, norm_first=nf, activation=act)
                if _layer_bugs.same(out, expected, _layer_bugs.ROUND_OFF):
                    match = (act, swap)
                    exact = exact and _layer_bugs.same(out, expected)
                    break
            if match is None:
                return _diagnose(out, x, params, mask, nf, case, configs, hints)
            config = match
        if took_dropout and dropout_seen is None:
            dropout_seen = _dropout_runs_in_training(block, parts.attention.module, runner, x)
            if not dropout_seen:
                symptom = tr(NO_DROPOUT_IN_TRAINING[0], p=DROPOUT)
                return hints.wrong("no dropout in training", symptom,
                                   where=tr(NO_DROPOUT_IN_TRAINING[1]))
        if took_dropout and dropout_seen and nf:
            share = _kept_share_in_training(block, parts, runner, x)
            if share is not None and share < 1 - DROPOUT / 2:  # (1 - p) when not rescaled, 1 when rescaled
                symptom = tr(DROPOUT_NOT_RESCALED[0], share=share, p=DROPOUT)
                return hints.wrong("dropout not rescaled", symptom, where=tr(DROPOUT_NOT_RESCALED[1]))
    act = {"relu": "ReLU", "gelu": "GELU"}[config[0]]
    which = tr("norm_first=False and True") if only is None else f"norm_first={only}"
    bound = f"{_layer_bugs.ROUND_OFF:.0e}".replace("e-0", "e-")
    precision = tr("in float64") if exact else tr("to float32 round-off (below {bound})", bound=bound)
    dropout = (tr("Its dropout is off in eval mode and on in training.") if dropout_seen
               else tr("Called twice in eval mode, it gives the same output."))
    return Feedback(True, sentences([
        tr("{name} ({act}) matches nn.TransformerEncoderLayer with the same weights {precision}, with "
           "{which}, with no mask, a causal mask and a padding mask.",
           name=name, act=act, precision=precision, which=which),
        dropout]))


def _dropout_runs_in_training(block: nn.Module, attention: nn.Module, runner: _layer_checker.Learner,
                              x: Tensor) -> bool:
    """Whether the block's own dropout runs in training mode: two calls in training mode differ,
    with its attention layer in eval mode (a dropout inside the attention layer, such as
    ``attn.MultiHeadAttention(dropout=p)``'s on the weights, is not the block's)."""
    block.train()
    attention.eval()
    try:
        first, second = _layer_checker.run(runner, x, None), _layer_checker.run(runner, x, None)
    finally:
        block.eval()
    if isinstance(first, str) or isinstance(second, str):
        return True  # an error in training mode is not a missing dropout; eval mode worked
    return not _layer_bugs.same(first[0], second[0])


def _kept_share_in_training(block: nn.Module, parts: Parts, runner: _layer_checker.Learner,
                            x: Tensor) -> float | None:
    """For a pre-LN block: how much of its eval-mode change to x its output keeps in training
    mode, on average over ``_DROPOUT_CALLS`` calls: about 1 when its dropouts scale the numbers
    they keep by 1 / (1 - p), about 1 - p when they do not. None if it cannot be measured.

    With the weight of the feed-forward's second Linear set to zero (its bias kept), the pre-LN
    block gives x + drop(sa(norm1(x))) + drop(bias): a sum of what the dropouts give, whose
    average over calls is the eval output when each dropout keeps the average. The weight is
    put back afterwards; the attention layer stays in eval mode (its own dropout on the
    weights is not the block's).
    """
    weight = parts.linear2.weight
    kept = weight.detach().clone()
    with torch.no_grad():
        weight.zero_()
    try:
        in_eval = _layer_checker.run(runner, x, None)
        block.train()
        parts.attention.module.eval()
        in_training = [_layer_checker.run(runner, x, None) for _ in range(_DROPOUT_CALLS)]
    finally:
        block.eval()
        with torch.no_grad():
            weight.copy_(kept)
    if isinstance(in_eval, str) or any(isinstance(r, str) for r in in_training):
        return None
    change = in_eval[0].double() - x  # (B, L, E): what the two sub-layers add in eval mode
    mean = torch.stack([r[0].double() for r in in_training]).mean(0) - x  # (B, L, E), on average in training
    size = float((change * change).sum())
    return None if size == 0 else float((mean * change).sum()) / size


def _diagnose(out: Tensor, x: Tensor, params: BlockParams, mask: Tensor | None, nf: bool,
              case: str, configs: list[tuple[str, bool]], hints: Hints) -> Feedback:
    """Name the classic bug that gives ``out``, or say that none does (a mistake of ``hints``)."""
    for bug in bugs_for(nf, mask is not None):
        forms = (None, 0, 1) if bug == "unbiased variance" else (None,)
        for (act, swap), form in ((c, f) for c in configs for f in forms):
            p = params.swapped_norms() if swap else params
            got = variant(x, p, mask, norm_first=nf, activation=act, bug=bug, std_form=form)
            if _layer_bugs.same(out, got, _layer_bugs.ROUND_OFF):
                symptom, where = BUGS[bug]
                other = tr("pre-LN, x + sa(norm1(x))") if not nf else tr("post-LN, norm1(x + sa(x))")
                return hints.wrong(bug, tr("With norm_first={nf} and {case}: {problem}", nf=nf,
                                           case=tr(case), problem=tr(symptom, nf=nf, other=other)),
                                   where=tr(where))
    nan = [tr("It contains NaN.")] if bool(out.isnan().any()) else []
    if mask is not None:
        return hints.wrong(
            "unknown mask", sentences([tr("With norm_first={nf} and {case}: without a mask your block is "
                                          "right, with one it is not.", nf=nf, case=tr(case)), *nan]),
            where=tr("how forward hands the mask to the attention, unchanged"))
    return hints.wrong(
        "unknown", sentences([tr("With norm_first={nf} and {case}: your block's output differs from "
                                 "nn.TransformerEncoderLayer's, and not by one of the classic bugs this "
                                 "checker knows.", nf=nf, case=tr(case)), *nan,
                              tr("More than one step may be wrong.")]),
        where=tr("each step on its own against the formulas: the norms, the attention sub-layer with "
                 "its residual, the feed-forward with its residual"))
