"""Reading a learner's Transformer block: build it, find its parts by what they are (never by
reading its source), and write known float64 weights into them.

``build_block`` builds ``cls(d_model, num_heads, d_ff, norm_first=..., [dropout=DROPOUT])``;
``find_parts`` finds the attention layer (a submodule that ``attn.exercises._layer_checker``
can read, as 05's checker does), two LayerNorms of d_model (``nn.LayerNorm`` or a module of
one's own with a gain and a bias) and the feed-forward's two Linears; ``write_weights`` gives
them known values and returns them as a ``BlockParams``; ``require_right_attention`` checks the
attention layer alone first. Each step raises ``Refused`` with the reply when the block cannot
be read.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..language import tr
from . import _layer_bugs, _layer_checker
from ._base import Hints, Refused
from ._block_bugs import ATTENTION, BLOCK_ARGS, SEED, BlockParams, cases

#: Passed as ``dropout=`` when the constructor takes one: eval mode must switch it off.
DROPOUT = 0.5
_E, _F = BLOCK_ARGS["d_model"], BLOCK_ARGS["d_ff"]


@dataclass
class _Norm:
    """A LayerNorm found in the block: nn.LayerNorm or a module with a gain and a bias of E."""

    path: str
    gain: Tensor | None
    bias: Tensor | None
    eps: float


@dataclass
class Parts:
    """What ``find_parts`` found in a learner's block: its attention layer (read as 05's checker
    reads one) and where it sits, its two norms, and the feed-forward's Linears (E -> F, F -> E)."""

    attention: _layer_checker.Learner
    attention_path: str
    norms: list[_Norm]
    linear1: nn.Linear
    linear2: nn.Linear


def build_block(cls: Any, norm_first: bool, both: bool, *, sizes: dict[str, int] | None = None,
                checker: str = "check_transformer_block") -> tuple[nn.Module, bool]:
    """``cls(d_model, num_heads, d_ff, norm_first=..., [dropout=DROPOUT])``: (the block,
    whether it took a dropout).

    Args:
        sizes: the positional arguments by name (default ``BLOCK_ARGS``); checker: the checker's
            name, which the message about a missing ``norm_first`` tells the learner to call.

    Raises:
        Refused: ``cls`` is not an nn.Module class, takes no norm_first when both placements
            are checked, or building it failed.
    """
    sizes = BLOCK_ARGS if sizes is None else sizes
    name = getattr(cls, "__name__", type(cls).__name__)
    args = ", ".join(map(str, sizes.values()))
    if isinstance(cls, nn.Module):
        raise Refused(tr("Pass the class itself, `{cls}`, not an instance of it: the checker "
                         "builds it with its own sizes.", cls=type(cls).__name__))
    if not inspect.isclass(cls) or not issubclass(cls, nn.Module):
        raise Refused(tr("cls: expected the class you wrote (an nn.Module subclass), got {kind}.",
                         kind=type(cls).__name__))
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, object] = {}
    if "norm_first" in params or takes_any:
        kwargs["norm_first"] = norm_first
    elif both:
        raise Refused(tr("{name} takes no `norm_first`: the checker builds {name}({args}, "
                         "norm_first=False) and norm_first=True. Give __init__ a keyword "
                         "argument norm_first, or check one placement: "
                         "{checker}({name}, norm_first=False).", name=name, args=args, checker=checker))
    took_dropout = "dropout" in params
    if took_dropout:
        kwargs["dropout"] = DROPOUT
    call = f"{name}({args}{''.join(f', {k}={v}' for k, v in kwargs.items())})"
    try:
        block = cls(*sizes.values(), **kwargs)
    except NotImplementedError:
        raise Refused(tr("{name}.__init__ is not written yet.", name=name))
    except Exception as err:  # the learner's code: any error becomes a hint
        raise Refused(tr("{call} raised {error} The checker builds {name}(d_model, num_heads, "
                         "d_ff, norm_first=...).", call=call, error=_layer_checker.describe_error(err),
                         name=name))
    return block.double().eval(), took_dropout


def _find_attention(block: nn.Module) -> tuple[str, _layer_checker.Learner]:
    """The first submodule whose projections ``_layer_checker`` finds (W_q..., q_linear..., qkv).

    Raises:
        Refused: no submodule is an attention layer the checker can read.
    """
    name = type(block).__name__
    for path, sub in block.named_modules():
        if sub is block or isinstance(sub, (nn.Linear, nn.LayerNorm, nn.Dropout)):
            continue
        try:
            return path, _layer_checker.inspect_layer(sub, ATTENTION)
        except Refused:
            continue  # not this submodule
    torch_mha = next((p for p, m in block.named_modules() if isinstance(m, nn.MultiheadAttention)), None)
    if torch_mha is not None:
        raise Refused(tr("{name}.{path} is PyTorch's nn.MultiheadAttention: build the block "
                         "around your own attention layer from 05 (or attn.MultiHeadAttention), "
                         "so that it is your layer that runs.", name=name, path=torch_mha))
    raise Refused(tr("{name} has no attention layer the checker can find: make one submodule "
                     "your MultiHeadAttention from 05 (or attn.MultiHeadAttention), built with "
                     "d_model and num_heads, e.g. self.self_attn = ...", name=name))


def find_parts(block: nn.Module, hints: Hints) -> Parts:
    """The block's attention layer, its two norms and its feed-forward's two Linears.

    Raises:
        Refused: a part is missing or of the wrong kind (a BatchNorm is a mistake of ``hints``).
    """
    name = type(block).__name__
    att_path, learner = _find_attention(block)
    inside = {id(m) for m in learner.module.modules()}  # the attention and its projections
    norms: list[_Norm] = []
    linears: list[tuple[str, nn.Linear]] = []
    for path, sub in block.named_modules():
        if sub is block or id(sub) in inside:
            continue
        if isinstance(sub, (nn.BatchNorm1d, nn.BatchNorm2d)):
            raise Refused(hints.wrong(
                "batch norm", tr("{name}.{path} is a BatchNorm: it normalises each feature across the "
                                 "batch, so that one sequence changes another's output (and in eval mode "
                                 "it uses averages kept from training). A LayerNorm normalises the "
                                 "d_model features of each token on its own.", name=name, path=path),
                where=tr("the kind of norm your block makes in __init__")))
        if isinstance(sub, nn.LayerNorm):
            if tuple(sub.normalized_shape) != (_E,):
                raise Refused(tr("{name}.{path} is nn.LayerNorm({shape}): it normalises over the "
                                 "last {dims} dims together. A Transformer block normalises the "
                                 "d_model features of each token on its own: the norm's shape is "
                                 "d_model alone.", name=name, path=path,
                                 shape=tuple(sub.normalized_shape), dims=len(sub.normalized_shape)))
            norms.append(_Norm(path, sub.weight, sub.bias, float(sub.eps)))
        elif isinstance(sub, nn.Linear):
            linears.append((path, sub))
        else:
            own = [p for p in sub.parameters(recurse=False)]
            if len(own) == 2 and all(tuple(p.shape) == (_E,) for p in own):  # a LayerNorm of one's own
                gain, bias = _gain_and_bias(sub)
                norms.append(_Norm(path, gain, bias, float(getattr(sub, "eps", 1e-5))))
    if len(norms) != 2:
        got = ", ".join(n.path for n in norms) or tr("none")
        raise Refused(tr("{name} should have two LayerNorms of d_model={E} features (one per "
                         "sub-layer: nn.LayerNorm(d_model), or your own module with a gain and a "
                         "bias of d_model numbers each); found {count}: {got}.",
                         name=name, E=_E, count=len(norms), got=got))
    by_shape = {tuple(lin.weight.shape): (path, lin) for path, lin in linears}
    first, second = (_F, _E) in by_shape, (_E, _F) in by_shape  # (out, in) of each Linear
    if not (first and second):
        got = ", ".join(f"{p} ({lin.in_features} -> {lin.out_features})" for p, lin in linears) or tr("none")
        if not first and not second:
            lacks = tr("the first Linear ({E} -> {F}) and the second Linear ({F} -> {E})", E=_E, F=_F)
        elif not first:
            lacks = tr("the first Linear ({E} -> {F})", E=_E, F=_F)
        else:
            lacks = tr("the second Linear ({F} -> {E})", E=_E, F=_F)
        raise Refused(tr("{name}'s feed-forward should be nn.Linear(d_model, d_ff), then "
                         "nn.Linear(d_ff, d_model); built with d_ff={F}, it lacks {lacks}. "
                         "Linears found outside the attention: {got}.",
                         name=name, F=_F, lacks=lacks, got=got))
    return Parts(learner, att_path, norms, by_shape[(_F, _E)][1], by_shape[(_E, _F)][1])


def _gain_and_bias(module: nn.Module) -> tuple[Tensor, Tensor]:
    """A hand-written LayerNorm's gain and bias, by their usual names, else in their order."""
    named = dict(module.named_parameters(recurse=False))
    gain = next((named[n] for n in ("weight", "gamma", "a_2", "gain", "g", "scale", "alpha")
                 if n in named), None)
    bias = next((named[n] for n in ("bias", "beta", "b_2", "shift", "b") if n in named), None)
    if gain is None or bias is None or gain is bias:
        gain, bias = list(named.values())
    return gain, bias


def write_weights(parts: Parts) -> BlockParams:
    """Known float64 values into the norms and Linears (the attention has its own already)."""
    gen = torch.Generator().manual_seed(SEED)

    def randn(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    norms = []
    with torch.no_grad():
        for n in parts.norms:
            gain, bias = 1 + 0.3 * randn(_E), 0.3 * randn(_E)
            if n.gain is None:
                gain = torch.ones(_E, dtype=torch.float64)
            else:
                n.gain.copy_(gain)
            if n.bias is None:
                bias = torch.zeros(_E, dtype=torch.float64)
            else:
                n.bias.copy_(bias)
            norms.append((gain, bias, n.eps))
        linears = []
        for lin in (parts.linear1, parts.linear2):
            w = randn(lin.out_features, lin.in_features) / math.sqrt(lin.in_features)
            lin.weight.copy_(w)
            b = None
            if lin.bias is not None:
                b = 0.3 * randn(lin.out_features)
                lin.bias.copy_(b)
            linears.append((w, b))
    return BlockParams(parts.attention.params, norms[0], norms[1], linears[0], linears[1])


def block_runner(block: nn.Module) -> _layer_checker.Learner:
    """How to call the block: ``forward(x, mask)``, the mask by keyword if it is named so."""
    try:
        params = inspect.signature(block.forward).parameters
    except (TypeError, ValueError):
        params = {}
    positional = [p for p in params.values() if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                           inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    mask_param: str | int | None = "mask" if "mask" in params else (1 if len(positional) > 1 else None)
    return _layer_checker.Learner(block, "", {}, False, mask_param)


def _attention_problem(learner: _layer_checker.Learner, x: Tensor) -> str | None:
    """What is wrong with the attention layer alone, case by case (in the learner's language),
    or None if nothing is."""
    for case, mask, _ in cases():
        result = _layer_checker.run(learner, x, mask)
        if isinstance(result, str):
            return tr("with {case}: {problem}", case=tr(case), problem=result)
        expected = _layer_bugs.reference(x, learner.params, mask, ATTENTION)[0]  # the package's layer
        if not _layer_bugs.same(result[0], expected, _layer_bugs.ROUND_OFF):
            return tr("with {case}: its output is not the chapter's multi-head attention.", case=tr(case))
    return None


def require_right_attention(parts: Parts, block_name: str, x: Tensor) -> None:
    """The block's attention layer alone must be multi-head attention.

    Raises:
        Refused: it is not; the reply sends the learner to 05's checker.
    """
    learner = parts.attention
    problem = _attention_problem(learner, x)
    if problem is not None and learner.square_matrices:  # raw (E, E) matrices: maybe x @ W.T
        flipped = _layer_checker.inspect_layer(learner.module, ATTENTION, flip_square=True)  # shapes passed once
        if _attention_problem(flipped, x) is None:
            parts.attention = flipped
            return
        _layer_checker.inspect_layer(learner.module, ATTENTION)  # back to x @ W, the course's reading
    if problem is None:
        return
    raise Refused(tr("{block}.{path} ({kind}), your attention layer, alone {problem} Check it "
                     "with attn.exercises.nb05.check_multi_head_attention first.",
                     block=block_name, path=parts.attention_path,
                     kind=type(learner.module).__name__, problem=problem))
