"""Checkers for notebook 12 (the Transformer block).

Three checkers: ``check_transformer_block`` (the block itself), ``check_layer_norm`` (exercise 1:
LayerNorm written out) and ``check_block_parameters`` (exercise 2: what one block of the 2017
paper's base model holds); ``passes`` asks the first one quietly (no hint counted), for the
cell that trains a model of the learner's blocks.

``check_transformer_block(cls)`` takes the learner's **class**, builds it, finds its parts by
what they are (never by reading its source), writes known float64 weights into them, and
compares its output with ``nn.TransformerEncoderLayer(batch_first=True)`` holding the same
weights: both norm placements, no mask, a causal mask and a padding mask. When the two
disagree it runs the same weights through each classic bug of ``BUGS`` and names the one
that gives the learner's numbers; a ``Hints`` gives the symptom first, and the place to look
on a second try with the same mistake. It never shows the code of the fix.

Shape legend: B batch, L tokens, E = d_model, H heads, D = E // H, F = d_ff.
Masks given to the learner's block are bool with the course's meaning, True = may attend
(the chapter's ``mask == 0`` is blocked): (L, L) causal, (B, 1, 1, L) padding.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..masks import causal_mask, padding_mask, to_torch_mha_mask
from . import _layer_bugs, _layer_checker
from ..language import mark, tr
from ._base import Feedback, Hints, Refused, as_function, as_whole_number, checker, sentence_start, sentences

__all__ = ["BLOCK_ARGS", "DROPOUT", "BUGS", "check_transformer_block", "passes", "variant", "reset_hints",
           "LAYER_NORM_BUGS", "layer_norm_variant", "check_layer_norm", "BASE", "block_parameters",
           "check_block_parameters"]

#: The checker builds ``cls(d_model, num_heads, d_ff, norm_first=...)`` with these sizes
#: (d_ff is not 4 * d_model, so that a block that ignores its d_ff argument shows).
BLOCK_ARGS: dict[str, int] = {"d_model": 8, "num_heads": 2, "d_ff": 24}
#: Passed as ``dropout=`` when the constructor takes one: eval mode must switch it off.
DROPOUT = 0.5
BATCH, LENGTH = 2, 5
_E, _H, _F = BLOCK_ARGS["d_model"], BLOCK_ARGS["num_heads"], BLOCK_ARGS["d_ff"]
#: The attention layer inside the block, as ``attn.exercises.nb05.check_multi_head_attention``
#: sees one (its machinery, ``_layer_checker``, finds the projections).
_SPEC = _layer_bugs.Spec("MultiHeadAttention", (_E, _H), "d_model, n_heads", d_model=_E,
                     d_k=_E // _H, d_v=_E // _H, heads=_H)
_SEED = 1212
_ACTIVATIONS = ("relu", "gelu")

#: Each classic bug: (its symptom, where to look). Neither gives the code of the fix.
BUGS: dict[str, tuple[str, str]] = {
    "norm over the batch": (
        mark("your LayerNorm normalises over the batch: each feature is centred and scaled across "
             "the sequences of the batch, so that one sequence changes another's output. A "
             "LayerNorm normalises the d_model features of each token on its own."),
        mark("the dimension your norm takes the mean and the variance over")),
    "norm over the sequence": (
        mark("your LayerNorm normalises over the sequence: each feature is centred and scaled across "
             "the tokens of a sequence. A LayerNorm normalises the d_model features of each token "
             "on its own."),
        mark("the dimension your norm takes the mean and the variance over")),
    "unbiased variance": (
        mark("your LayerNorm uses another variance than nn.LayerNorm's: the unbiased one (dividing "
             "by d_model - 1, as .std() and .var() do by default), or eps added outside the square "
             "root. nn.LayerNorm divides by sqrt(var + eps), var over d_model numbers."),
        mark("the variance and the eps in your norm")),
    "norm placement swapped": (
        mark("your block computes the other placement of the norms: asked for norm_first={nf}, it "
             "gives {other}."),
        mark("which branch of forward runs for each value of norm_first, and what it stores")),
    "residual after the norm": (
        mark("in pre-LN your residual connection adds the sub-layer's output to the normalised x, "
             "not to x itself: the residual stream gets normalised at every block."),
        mark("what the residual connection adds the sub-layer's output to")),
    "no residual around the attention": (
        mark("your attention sub-layer has no residual connection: its output replaces x instead of "
             "being added to it."),
        mark("the line that applies the attention sub-layer")),
    "no residual around the feed-forward": (
        mark("your feed-forward sub-layer has no residual connection: its output replaces x instead "
             "of being added to it."),
        mark("the line that applies the feed-forward sub-layer")),
    "norm1 used twice": (
        mark("your feed-forward sub-layer uses the first LayerNorm again: each sub-layer has its own."),
        mark("which norm the second sub-layer uses")),
    "no activation": (
        mark("your feed-forward has no non-linearity between its two Linears: two Linears in a row "
             "are one linear map, and the block loses what the feed-forward adds."),
        mark("the step between the feed-forward's two Linears")),
    "activation after the second Linear": (
        mark("your activation comes after the feed-forward's second Linear: it belongs between the "
             "two, on the d_ff hidden units."),
        mark("the order of the steps in the feed-forward")),
    "mask not passed": (
        mark("your block's output is the one without the mask: forward does not pass `mask` on to "
             "the attention."),
        mark("the call to the attention layer inside forward")),
}
#: Not variants: what is seen by calling the block twice.
RANDOM_IN_EVAL = (
    mark("Your block gives a different output each time it is called on the same input in eval "
         "mode: a dropout still runs when the block is not training."),
    mark("each dropout in your block, and how it learns whether the block is training"))
NO_DROPOUT_IN_TRAINING = (
    mark("Your block takes dropout={p}, but in training mode it gives the same output twice: its "
         "dropout never runs."),
    mark("where forward calls the dropout layers made in __init__"))

#: The tiers of ``check_transformer_block``: a second try with the same mistake hears where to
#: look too.
BLOCK_HINTS = Hints()


def reset_hints() -> None:
    """Start the checkers' hints again from the first tier (the symptom alone)."""
    BLOCK_HINTS.reset()
    LAYER_NORM_HINTS.reset()


# ---- the weights, and the block computed from them ---------------------------------------

@dataclass(frozen=True)
class BlockParams:
    """Known float64 weights for every part: attention by role (as ``_layer_checker`` keeps them),
    norms as (gain (E,), bias (E,), eps), Linears as (weight (out, in), bias or None)."""

    attn: _layer_bugs.Params
    norm1: tuple[Tensor, Tensor, float]
    norm2: tuple[Tensor, Tensor, float]
    linear1: tuple[Tensor, Tensor | None]
    linear2: tuple[Tensor, Tensor | None]

    def swapped_norms(self) -> "BlockParams":
        return replace(self, norm1=self.norm2, norm2=self.norm1)


def _norm(x: Tensor, gain: Tensor, bias: Tensor, eps: float, bug: str | None) -> Tensor:
    """LayerNorm of x (B, L, E) over the features, or over the dim a bug uses."""
    if bug not in ("norm over the batch", "norm over the sequence", "unbiased variance"):
        return F.layer_norm(x, (x.shape[-1],), gain, bias, eps)
    dim = {"norm over the batch": 0, "norm over the sequence": 1}.get(bug, -1)
    centred = x - x.mean(dim, keepdim=True)
    unbiased = bug == "unbiased variance"
    return centred / torch.sqrt(x.var(dim, unbiased=unbiased, keepdim=True) + eps) * gain + bias


def _unbiased_std_norms(x: Tensor, gain: Tensor, bias: Tensor, eps: float) -> list[Tensor]:
    """The other LayerNorms of ``unbiased variance``: eps added to the (unbiased or biased) std."""
    centred = x - x.mean(-1, keepdim=True)
    return [centred / (x.std(-1, unbiased=u, keepdim=True) + eps) * gain + bias for u in (True, False)]


def variant(x: Tensor, params: BlockParams, mask: Tensor | None, *, norm_first: bool,
            activation: str, bug: str | None = None, std_form: int | None = None) -> Tensor:
    """The block with at most one classic bug of ``BUGS`` on ``x`` (B, L, E) -> (B, L, E).

    ``bug=None`` is the correct block, equal to ``nn.TransformerEncoderLayer`` in eval mode (a
    test checks it). ``std_form`` 0 or 1 picks the forms of "unbiased variance" that add eps
    to the standard deviation (the Annotated Transformer's LayerNorm is form 0).
    """
    if bug is not None and bug not in BUGS:
        raise ValueError(f"bug: expected None or one of {sorted(BUGS)}, got {bug!r}")
    if bug == "norm placement swapped":
        return variant(x, params, mask, norm_first=not norm_first, activation=activation)

    def norm(t: Tensor, which: tuple[Tensor, Tensor, float]) -> Tensor:
        if bug == "unbiased variance" and std_form is not None:
            return _unbiased_std_norms(t, *which)[std_form]
        return _norm(t, *which, bug)

    def sa(t: Tensor) -> Tensor:
        return _layer_bugs.variant(t, params.attn, None if bug == "mask not passed" else mask, _SPEC, None)

    def ff(t: Tensor) -> Tensor:
        act = {"relu": torch.relu, "gelu": F.gelu}[activation]
        if bug == "no activation":
            act = lambda h: h  # noqa: E731
        if bug == "activation after the second Linear":
            return act(F.linear(F.linear(t, *params.linear1), *params.linear2))
        hidden = act(F.linear(t, *params.linear1))  # (B, L, E) -> (B, L, F)
        return F.linear(hidden, *params.linear2)  # (B, L, F) -> (B, L, E)

    norm2 = params.norm1 if bug == "norm1 used twice" else params.norm2
    keep_sa = 0.0 if bug == "no residual around the attention" else 1.0
    keep_ff = 0.0 if bug == "no residual around the feed-forward" else 1.0
    if norm_first:
        h = norm(x, params.norm1)
        x = keep_sa * (h if bug == "residual after the norm" else x) + sa(h)
        h = norm(x, norm2)
        return keep_ff * (h if bug == "residual after the norm" else x) + ff(h)
    x = norm(keep_sa * x + sa(x), params.norm1)
    return norm(keep_ff * x + ff(x), norm2)


def bugs_for(norm_first: bool, masked: bool) -> list[str]:
    """The bugs that can show in this case."""
    return [b for b in BUGS if (norm_first or b != "residual after the norm")
            and (masked or b != "mask not passed")]


def torch_reference(x: Tensor, params: BlockParams, mask_kwargs: dict[str, Tensor], *,
                    norm_first: bool, activation: str) -> Tensor:
    """``nn.TransformerEncoderLayer(batch_first=True)`` in eval mode with ``params``
    (a missing bias is a zero one), on x (B, L, E) with torch's masks (True = blocked)."""
    with torch.random.fork_rng(devices=[]):  # its init (overwritten below) must not move the RNG
        layer = nn.TransformerEncoderLayer(_E, _H, _F, dropout=0.0, activation=activation,
                                           batch_first=True, norm_first=norm_first,
                                           dtype=torch.float64).eval()
    a = params.attn
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([a[r][0] for r in "qkv"]))  # (3E, E): q, k, v
        layer.self_attn.in_proj_bias.copy_(torch.cat([_bias(a[r]) for r in "qkv"]))
        layer.self_attn.out_proj.weight.copy_(a["o"][0])
        layer.self_attn.out_proj.bias.copy_(_bias(a["o"]))
        for lin, (w, b) in ((layer.linear1, params.linear1), (layer.linear2, params.linear2)):
            lin.weight.copy_(w)
            lin.bias.copy_(_bias((w, b)))
        for ln, (g, b, eps) in ((layer.norm1, params.norm1), (layer.norm2, params.norm2)):
            ln.weight.copy_(g)
            ln.bias.copy_(b)
            ln.eps = eps
        return layer(x, **mask_kwargs)


def _bias(weight_and_bias: tuple[Tensor, Tensor | None]) -> Tensor:
    w, b = weight_and_bias
    return torch.zeros(w.shape[0], dtype=w.dtype) if b is None else b


# ---- the learner's block: build it, find its parts ---------------------------------------

@dataclass
class _Norm:
    """A LayerNorm found in the block: nn.LayerNorm or a module with a gain and a bias of E."""

    path: str
    gain: Tensor | None
    bias: Tensor | None
    eps: float


@dataclass
class _Parts:
    attention: _layer_checker.Learner
    attention_path: str
    norms: list[_Norm]
    linear1: nn.Linear
    linear2: nn.Linear


def _build(cls: Any, norm_first: bool, both: bool) -> tuple[nn.Module, bool]:
    """``cls(d_model, num_heads, d_ff, norm_first=..., [dropout=DROPOUT])``: (the block,
    whether it took a dropout).

    Raises:
        Refused: ``cls`` is not an nn.Module class, takes no norm_first when both placements
            are checked, or building it failed.
    """
    name = getattr(cls, "__name__", type(cls).__name__)
    args = ", ".join(map(str, BLOCK_ARGS.values()))
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
                         "check_transformer_block({name}, norm_first=False).", name=name, args=args))
    took_dropout = "dropout" in params
    if took_dropout:
        kwargs["dropout"] = DROPOUT
    call = f"{name}({args}{''.join(f', {k}={v}' for k, v in kwargs.items())})"
    try:
        block = cls(*BLOCK_ARGS.values(), **kwargs)
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
            return path, _layer_checker.inspect_layer(sub, _SPEC)
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


def _find_parts(block: nn.Module, hints: Hints) -> _Parts:
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
    return _Parts(learner, att_path, norms, by_shape[(_F, _E)][1], by_shape[(_E, _F)][1])


def _gain_and_bias(module: nn.Module) -> tuple[Tensor, Tensor]:
    """A hand-written LayerNorm's gain and bias, by their usual names, else in their order."""
    named = dict(module.named_parameters(recurse=False))
    gain = next((named[n] for n in ("weight", "gamma", "a_2", "gain", "g", "scale", "alpha")
                 if n in named), None)
    bias = next((named[n] for n in ("bias", "beta", "b_2", "shift", "b") if n in named), None)
    if gain is None or bias is None or gain is bias:
        gain, bias = list(named.values())
    return gain, bias


def _write_weights(parts: _Parts) -> BlockParams:
    """Known float64 values into the norms and Linears (the attention has its own already)."""
    gen = torch.Generator().manual_seed(_SEED)

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


def cases() -> list[tuple[str, Tensor | None, dict[str, Tensor]]]:
    """(name, the package's mask, torch's keyword arguments): no query is left without a key."""
    pad = padding_mask([LENGTH, LENGTH - 2], max_len=LENGTH)  # (B, 1, 1, L)
    causal = causal_mask(LENGTH)  # (L, L)
    return [(mark("no mask"), None, {}),
            (mark("a causal mask"), causal, {"src_mask": to_torch_mha_mask(causal)}),
            (mark("a padding mask"), pad, {"src_key_padding_mask": to_torch_mha_mask(pad[:, 0, 0])})]  # (B, L)


def _runner(block: nn.Module) -> _layer_checker.Learner:
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
        expected = _layer_bugs.reference(x, learner.params, mask, _SPEC)[0]  # the package's layer
        if not _layer_bugs.same(result[0], expected, _layer_bugs.ROUND_OFF):
            return tr("with {case}: its output is not the chapter's multi-head attention.", case=tr(case))
    return None


def _check_attention(parts: _Parts, block_name: str, x: Tensor) -> None:
    """The block's attention layer alone must be multi-head attention.

    Raises:
        Refused: it is not; the reply sends the learner to 05's checker.
    """
    learner = parts.attention
    problem = _attention_problem(learner, x)
    if problem is not None and learner.square_matrices:  # raw (E, E) matrices: maybe x @ W.T
        flipped = _layer_checker.inspect_layer(learner.module, _SPEC, flip_square=True)  # shapes passed once
        if _attention_problem(flipped, x) is None:
            parts.attention = flipped
            return
        _layer_checker.inspect_layer(learner.module, _SPEC)  # back to x @ W, the course's reading
    if problem is None:
        return
    raise Refused(tr("{block}.{path} ({kind}), your attention layer, alone {problem} Check it "
                     "with attn.exercises.nb05.check_multi_head_attention first.",
                     block=block_name, path=parts.attention_path,
                     kind=type(learner.module).__name__, problem=problem))


# ---- the checker ---------------------------------------------------------------------------

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
    twice in training mode must not.

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
        torch.manual_seed(_SEED)
        return _compare(cls, norm_first, hints)


def _compare(cls: Any, only: bool | None, hints: Hints) -> Feedback:
    """Build the block for each placement, find its parts, write known weights and compare it
    with PyTorch's layer, case by case; the first difference is explained (``_diagnose``)."""
    placements = (False, True) if only is None else (only,)
    gen = torch.Generator().manual_seed(_SEED + 1)
    x = torch.randn(BATCH, LENGTH, _E, generator=gen, dtype=torch.float64)
    config: tuple[str, bool] | None = None  # (activation, norms swapped), fixed by the first case
    exact, dropout_seen = True, None
    for nf in placements:
        block, took_dropout = _build(cls, nf, both=only is None)
        name = type(block).__name__
        parts = _find_parts(block, hints)
        _check_attention(parts, name, x)
        params = _write_weights(parts)
        runner = _runner(block)
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


# ---- exercise 1: LayerNorm written out -----------------------------------------------------

#: Each classic slip of a hand-written LayerNorm: (symptom, where to look). The three that the
#: block's checker knows too speak as they do there.
LAYER_NORM_BUGS: dict[str, tuple[str, str]] = {
    "norm over the batch": BUGS["norm over the batch"],
    "norm over the sequence": BUGS["norm over the sequence"],
    "norm over the sequence and the features": (
        mark("your LayerNorm takes one mean and one variance over each whole sequence (its tokens and "
             "their features together), as nn.LayerNorm((L, d_model)) would: a token's output then "
             "depends on the other tokens. A LayerNorm normalises the d_model features of each token "
             "on its own."),
        mark("the dimension your norm takes the mean and the variance over")),
    "unbiased variance": BUGS["unbiased variance"],
    "unbiased std plus eps": BUGS["unbiased variance"],  # the Annotated Transformer's LayerNorm
    "eps outside the square root": (
        mark("your LayerNorm adds eps to the standard deviation, after the square root: nn.LayerNorm "
             "divides by sqrt(var + eps). The two differ most where the variance is small."),
        mark("where eps goes in the denominator")),
    "no eps": (
        mark("your LayerNorm leaves eps out: with a large eps (the checker tries eps = 0.5) its output "
             "is far from nn.LayerNorm's, and a token whose features are all equal would give NaN."),
        mark("the denominator, and the argument eps")),
    "not centred": (
        mark("your LayerNorm does not subtract the mean: it divides each token by its root mean square. "
             "That is RMSNorm (used by LLaMA), not the LayerNorm of the 2017 paper."),
        mark("the first step, before the variance")),
    "gain and bias left out": (
        mark("your LayerNorm returns the normalised x without the gain and the bias: each token comes "
             "out with mean 0 and variance 1, and the model could not learn another scale."),
        mark("the last step, after the division")),
    "gain and bias swapped": (
        mark("your LayerNorm multiplies by the bias and adds the gain: the two are swapped."),
        mark("which of gain and bias multiplies and which is added")),
}

#: The tiers of ``check_layer_norm`` (reset by ``reset_hints``).
LAYER_NORM_HINTS = Hints()
#: (B, L, E) of the checker's inputs, and its two eps: a large one first, which shows where eps
#: goes (every slip is far from the right output there), then the usual one.
_LN_SHAPE, _LN_EPS = (2, 5, 8), (0.5, 1e-5)


def layer_norm_variant(x: Tensor, gain: Tensor, bias: Tensor, eps: float, bug: str | None = None) -> Tensor:
    """LayerNorm of x (B, L, E) over its last dim with at most one slip of ``LAYER_NORM_BUGS``;
    ``bug=None`` is ``F.layer_norm`` (a test checks it)."""
    if bug is not None and bug not in LAYER_NORM_BUGS:
        raise ValueError(f"bug: expected None or one of {sorted(LAYER_NORM_BUGS)}, got {bug!r}")
    dims = {"norm over the batch": (0,), "norm over the sequence": (1,),
            "norm over the sequence and the features": (1, 2)}.get(bug, (-1,))
    mean = torch.zeros_like(x) if bug == "not centred" else x.mean(dims, keepdim=True)
    centred = x - mean
    unbiased = bug in ("unbiased variance", "unbiased std plus eps")
    var = (centred ** 2).sum(dims, keepdim=True) / (math.prod(x.shape[d] for d in dims) - unbiased)
    if bug in ("eps outside the square root", "unbiased std plus eps"):
        normed = centred / (var.sqrt() + eps)
    else:
        normed = centred / torch.sqrt(var + (0.0 if bug == "no eps" else eps))
    if bug == "gain and bias left out":
        return normed
    if bug == "gain and bias swapped":
        return normed * bias + gain
    return normed * gain + bias


def _ln_inputs() -> list[tuple[Tensor, Tensor, Tensor, float]]:
    """(x, gain, bias, eps) of each try: tokens with their own mean and scale, then a large eps."""
    gen = torch.Generator().manual_seed(_SEED + 2)
    B, L, E = _LN_SHAPE
    x = 3 * torch.randn(B, L, 1, generator=gen, dtype=torch.float64) + torch.randn(
        B, L, E, generator=gen, dtype=torch.float64) * (0.5 + torch.rand(B, L, 1, generator=gen, dtype=torch.float64))
    gain = 1 + 0.3 * torch.randn(E, generator=gen, dtype=torch.float64)
    bias = 0.3 * torch.randn(E, generator=gen, dtype=torch.float64)
    return [(x, gain, bias, eps) for eps in _LN_EPS]


@checker
def check_layer_norm(fn: Any) -> Feedback:
    """Exercise 1: ``fn(x, gain, bias, eps)`` must be ``nn.LayerNorm``'s computation on x (B, L,
    E) with the gain (E,) and the bias (E,): over the last dim, the biased variance, eps inside
    the square root.

    Run on seeded float64 tokens (each with its own mean and scale), with a large eps = 0.5 and
    with eps = 1e-5, and compared with ``F.layer_norm``; each slip of ``LAYER_NORM_BUGS`` is
    recognised by computing what it gives, and gets its symptom, then on the next try with it
    where to look too (``LAYER_NORM_HINTS``); never the code. The inputs must come back unchanged.
    """
    fn = as_function(fn)
    for x, gain, bias, eps in _ln_inputs():
        kept = [t.clone() for t in (x, gain, bias)]
        try:
            got = fn(x, gain, bias, eps)
        except NotImplementedError:
            return Feedback(False, tr("Not implemented yet: replace the `raise NotImplementedError` line."))
        except Exception as err:  # the learner's code: any error becomes a hint
            return Feedback(False, tr("Your function raised {error}", error=_layer_checker.describe_error(err)))
        if not all(torch.equal(a, b) for a, b in zip(kept, (x, gain, bias))):
            return Feedback(False, tr("Your function changed its inputs in place (x, gain or bias): compute "
                                      "new tensors instead, the caller still needs x."))
        if not isinstance(got, Tensor):
            return Feedback(False, tr("Return a torch.Tensor, got {kind}.", kind=type(got).__name__))
        if tuple(got.shape) != tuple(x.shape):
            return Feedback(False, tr("The output has the shape of x {shape}, got {got}.",
                                      shape=tuple(x.shape), got=tuple(got.shape)))
        want = F.layer_norm(x, (x.shape[-1],), gain, bias, eps)
        if _layer_bugs.same(got, want):
            continue
        for bug, (symptom, where) in LAYER_NORM_BUGS.items():
            if _layer_bugs.same(got, layer_norm_variant(x, gain, bias, eps, bug), _layer_bugs.ROUND_OFF):
                return LAYER_NORM_HINTS.wrong(bug, sentence_start(tr(symptom)), where=tr(where))
        nan = [tr("It contains NaN.")] if bool(got.isnan().any()) else []
        return LAYER_NORM_HINTS.wrong(
            "other", sentences([tr("With eps = {eps:g}, your output differs from nn.LayerNorm's, and not by "
                                   "one of the usual slips.", eps=eps), *nan]),
            where=tr("each step against the formula: the mean and the variance over the last dim, the "
                     "division by sqrt(var + eps), then the gain and the bias"))
    return Feedback(True, tr("Your LayerNorm equals nn.LayerNorm's on every token, with a large eps ({large:g}) "
                             "and with the usual one: each token is centred and scaled over its own {E} "
                             "features.", large=_LN_EPS[0], E=_LN_SHAPE[-1]))


# ---- exercise 2: what one block holds ----------------------------------------------------

#: The 2017 paper's base model: the sizes of each of its blocks.
BASE: dict[str, int] = {"d_model": 512, "num_heads": 8, "d_ff": 2048}


def block_parameters(d_model: int, d_ff: int) -> dict[str, int]:
    """The parameters of one block (biases everywhere, as ``nn.TransformerEncoderLayer``), by part."""
    E, Fd = d_model, d_ff
    return {"attention": 4 * (E * E + E), "feed-forward": E * Fd + Fd + Fd * E + E, "norms": 2 * 2 * E}


@checker
def check_block_parameters(answer: Any) -> Feedback:
    """Exercise 2: how many numbers one block of the base model (``BASE``) learns, with a bias
    in every Linear and a gain and a bias in each LayerNorm (``attn.TransformerBlock`` and
    ``nn.TransformerEncoderLayer`` count the same). The usual miscounts are named."""
    answer = as_whole_number(tr("a number of parameters"), answer)
    E, Fd = BASE["d_model"], BASE["d_ff"]
    parts = block_parameters(E, Fd)
    total = sum(parts.values())
    if answer == total:
        return Feedback(True, tr("{total:,} numbers: the feed-forward holds {ff:,} of them ({share:.0%}), "
                                 "the attention {att:,}, the two LayerNorms {norms:,}.", total=total,
                                 ff=parts["feed-forward"], share=parts["feed-forward"] / total,
                                 att=parts["attention"], norms=parts["norms"]))
    attention_biases, norms, ffn_biases = 4 * E, parts["norms"], Fd + E
    known = [  # (a miscount, what it leaves out or adds)
        (total - attention_biases - ffn_biases - norms,
         mark("That counts the weight matrices alone: every Linear has a bias too, and each LayerNorm a "
              "gain and a bias.")),
        (total - attention_biases - ffn_biases,
         mark("That leaves out the biases of the Linears (four in the attention, two in the feed-forward).")),
        (total - attention_biases,
         mark("That is {short:,} short: 4 x {E}, the biases of the attention's four projections, or the two "
              "LayerNorms' gains and biases (also 4 x {E}).")),
        (total - ffn_biases, mark("That leaves out the feed-forward's two biases ({F} + {E} numbers).")),
        (total - norms // 2, mark("That counts one LayerNorm's gain and bias, or each norm's gain alone: a "
                                  "block has two LayerNorms, each with a gain and a bias of {E} numbers.")),
        (total - E * E - E, mark("That leaves out the attention's output projection W_o ({E} x {E} and its "
                                 "bias).")),
        (parts["attention"], mark("That is the attention alone: the feed-forward and the norms are part of "
                                  "the block too.")),
        (parts["feed-forward"], mark("That is the feed-forward alone: the attention and the norms are part "
                                     "of the block too.")),
    ]
    for count, message in known:
        if answer == count:
            return Feedback(False, tr(message, short=total - count, E=E, F=Fd))
    return Feedback(False, tr("Not that. Count each part: the attention's four projections ({E} -> {E}, with "
                              "biases), the feed-forward's two Linears ({E} -> {F} -> {E}, with biases), and "
                              "two LayerNorms of {E} features.", E=E, F=Fd))
