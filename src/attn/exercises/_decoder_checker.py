"""The checker of notebook 12's decoder block, ``check_decoder_block``: the learner's block against
``nn.TransformerDecoderLayer(batch_first=True)`` holding the same weights.

A decoder block has three sub-layers, each with a residual connection and a LayerNorm: masked
(causal) self-attention over the target, cross-attention whose queries come from the decoder
and whose keys and values come from the encoder's output (the memory), and the feed-forward
network. The learner's parts are read by the names the notebook's skeleton gives them
(``self_attn``, ``cross_attn``, ``linear1``, ``linear2``, ``norm1``, ``norm2``, ``norm3``); the
attention layers may be ``attn.MultiHeadAttention`` or the learner's own (their projections
found as 05's checker finds them, ``attn.exercises._layer_checker``). Known float64 weights go
into them and into PyTorch's layer, and the two are compared in eval mode, case by case; when
they differ, ``variant`` (the block written out, with one classic slip of ``BUGS``) names the
slip that gives the learner's numbers, and ``DECODER_HINTS`` says where to look on a second try.

Shape legend: B batch, L target tokens, S source tokens (the memory), E = d_model, H heads,
F = d_ff. Masks given to the learner's block are bool, True = may attend: the memory's padding
mask (B, 1, 1, S); the causal mask of the self-attention is the block's own to make.
"""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import scaled_dot_product_attention
from ..language import mark, tr
from ..masks import causal_mask, padding_mask, to_torch_mha_mask
from . import _layer_bugs, _layer_checker
from ._base import Feedback, Hints, Refused, checker, sentences
from ._block_bugs import ATTENTION, BLOCK_ARGS, SEED
from ._block_checker import RANDOM_IN_EVAL
from ._block_parts import DROPOUT, _attention_problem, _gain_and_bias, build_block

__all__ = ["DECODER_ARGS", "DECODER_PARTS", "DECODER_BUGS", "DECODER_HINTS", "decoder_cases", "decoder_variant",
           "decoder_reference", "check_decoder_block"]

#: The checker builds ``cls(d_model, num_heads, d_ff, norm_first=...)`` with these sizes (the encoder block's).
DECODER_ARGS = dict(BLOCK_ARGS)
_E, _H, _F = DECODER_ARGS["d_model"], DECODER_ARGS["num_heads"], DECODER_ARGS["d_ff"]
BATCH, TARGET = 2, 5
#: The attributes the skeleton names, each with what it must be.
DECODER_PARTS = ("self_attn", "cross_attn", "linear1", "linear2", "norm1", "norm2", "norm3")
#: The cross-attention's weights are the self-attention's times this (both are written from one
#: seed): a block that uses one attention layer for the other does not pass.
_CROSS_SCALE = 1.5

#: Each classic slip: (its symptom, where to look). Neither gives the code of the fix.
DECODER_BUGS: dict[str, tuple[str, str]] = {
    "no causal mask": (
        mark("your self-attention has no causal mask: each target position reads the positions after it, "
             "the tokens a decoder has not generated yet."),
        mark("the call to self_attn: the mask or the flag that hides the future")),
    "keys and values from the decoder": (
        mark("your cross-attention takes its keys and values from the decoder, not from the memory: it "
             "is a second self-attention, and the encoder's output never reaches the block."),
        mark("the three inputs of the call to cross_attn: queries, then keys and values")),
    "queries from the memory": (
        mark("your cross-attention takes its queries from the memory and its keys and values from the "
             "decoder: the roles are swapped. Each target position asks (queries) and the source "
             "answers (keys, values)."),
        mark("the order of the inputs of the call to cross_attn")),
    "memory mask applied as causal": (
        mark("your cross-attention applies a causal mask: target position i reads only source "
             "positions up to i. The whole source is known before the decoder starts; its only mask is "
             "the memory's padding."),
        mark("the mask of the call to cross_attn")),
    "memory mask not passed": (
        mark("your block's output is the one without the memory's padding mask: forward does not pass "
             "`memory_mask` on to the cross-attention, which then reads the padding."),
        mark("where memory_mask goes inside forward")),
    "no residual around the self-attention": (
        mark("your self-attention sub-layer has no residual connection: its output replaces x instead "
             "of being added to it."),
        mark("the line that applies the self-attention sub-layer")),
    "no residual around the cross-attention": (
        mark("your cross-attention sub-layer has no residual connection: its output replaces x instead "
             "of being added to it."),
        mark("the line that applies the cross-attention sub-layer")),
    "no residual around the feed-forward": (
        mark("your feed-forward sub-layer has no residual connection: its output replaces x instead "
             "of being added to it."),
        mark("the line that applies the feed-forward sub-layer")),
    "norm placement swapped": (
        mark("your block computes the other placement of the norms: asked for norm_first={nf}, it "
             "gives {other}."),
        mark("which branch of forward runs for each value of norm_first")),
    "memory normalised": (
        mark("in pre-LN your cross-attention normalises the memory too: only the decoder's stream goes "
             "through norm2; the memory comes from the encoder as it is."),
        mark("what the call to cross_attn gets as keys and values")),
}

#: The tiers of ``check_decoder_block`` (``attn.exercises.nb12.reset_hints`` starts them again).
DECODER_HINTS = Hints()

Params = dict[str, Any]  # "self", "cross": _layer_bugs.Params; "norm1".."norm3": (gain, bias, eps); "linear1", "linear2": (W, b)


def decoder_cases() -> list[tuple[str, int, Tensor | None]]:
    """(name, S, the memory's padding mask or None): a source as long as the target first, where
    every slip but the padding's shows and each gives numbers of the right shape; then a longer
    source; then a padded one."""
    S = TARGET + 2
    return [(mark("a source as long as the target"), TARGET, None),
            (mark("a longer source"), S, None),
            (mark("a longer source with a padding mask"), S, padding_mask([S, S - 3], max_len=S))]  # (B, 1, 1, S)


def _attend(queries: Tensor, keys_values: Tensor, p: _layer_bugs.Params, mask: Tensor | None) -> Tensor:
    """Multi-head attention with the weights ``p``: queries (B, L, E), keys and values (B, S, E)."""
    B, L, E = queries.shape
    S, D = keys_values.shape[1], E // _H
    q = F.linear(queries, *p["q"]).reshape(B, L, _H, D).transpose(1, 2)  # (B, L, E) -> (B, H, L, D)
    k = F.linear(keys_values, *p["k"]).reshape(B, S, _H, D).transpose(1, 2)  # (B, S, E) -> (B, H, S, D)
    v = F.linear(keys_values, *p["v"]).reshape(B, S, _H, D).transpose(1, 2)  # (B, S, E) -> (B, H, S, D)
    out, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, H, L, D)
    return F.linear(out.transpose(1, 2).reshape(B, L, E), *p["o"])  # (B, H, L, D) -> (B, L, E)


def decoder_variant(x: Tensor, memory: Tensor, params: Params, memory_mask: Tensor | None, *,
                    norm_first: bool, bug: str | None = None) -> Tensor:
    """The decoder block with at most one slip of ``DECODER_BUGS``: x (B, L, E), memory (B, S, E)
    -> (B, L, E). ``bug=None`` equals ``nn.TransformerDecoderLayer`` in eval mode (a test checks it)."""
    if bug is not None and bug not in DECODER_BUGS:
        raise ValueError(f"bug: expected None or one of {sorted(DECODER_BUGS)}, got {bug!r}")
    if bug == "norm placement swapped":
        return decoder_variant(x, memory, params, memory_mask, norm_first=not norm_first)
    L, S = x.shape[1], memory.shape[1]

    def norm(t: Tensor, which: str) -> Tensor:
        gain, bias, eps = params[which]
        return F.layer_norm(t, (t.shape[-1],), gain, bias, eps)

    def sa(h: Tensor) -> Tensor:
        return _attend(h, h, params["self"], None if bug == "no causal mask" else causal_mask(L))

    def ca(h: Tensor) -> Tensor:
        mask = None if bug == "memory mask not passed" else memory_mask
        if bug == "memory mask applied as causal":
            mask = causal_mask(L, S)  # (L, S)
        if bug == "keys and values from the decoder":
            return _attend(h, h, params["cross"], None)
        if bug == "queries from the memory":
            return _attend(memory, h, params["cross"], None)
        source = norm(memory, "norm2") if bug == "memory normalised" else memory
        return _attend(h, source, params["cross"], mask)

    def ff(h: Tensor) -> Tensor:
        return F.linear(torch.relu(F.linear(h, *params["linear1"])), *params["linear2"])

    keep = {part: 0.0 if bug == f"no residual around the {part}" else 1.0
            for part in ("self-attention", "cross-attention", "feed-forward")}
    if norm_first:
        x = keep["self-attention"] * x + sa(norm(x, "norm1"))
        x = keep["cross-attention"] * x + ca(norm(x, "norm2"))
        return keep["feed-forward"] * x + ff(norm(x, "norm3"))
    x = norm(keep["self-attention"] * x + sa(x), "norm1")
    x = norm(keep["cross-attention"] * x + ca(x), "norm2")
    return norm(keep["feed-forward"] * x + ff(x), "norm3")


def decoder_reference(x: Tensor, memory: Tensor, params: Params, memory_mask: Tensor | None, *,
                      norm_first: bool) -> Tensor:
    """``nn.TransformerDecoderLayer(batch_first=True)`` in eval mode holding ``params``, with the
    causal mask on its self-attention (a missing bias is a zero one)."""
    with torch.random.fork_rng(devices=[]):  # its init (overwritten below) must not move the RNG
        layer = nn.TransformerDecoderLayer(_E, _H, _F, dropout=0.0, batch_first=True, norm_first=norm_first,
                                           dtype=torch.float64).eval()
    with torch.no_grad():
        for mha, p in ((layer.self_attn, params["self"]), (layer.multihead_attn, params["cross"])):
            mha.in_proj_weight.copy_(torch.cat([p[r][0] for r in "qkv"]))  # (3E, E): q, k, v
            mha.in_proj_bias.copy_(torch.cat([_bias(p[r]) for r in "qkv"]))
            mha.out_proj.weight.copy_(p["o"][0])
            mha.out_proj.bias.copy_(_bias(p["o"]))
        for name in ("linear1", "linear2"):
            w, b = params[name]
            getattr(layer, name).weight.copy_(w)
            getattr(layer, name).bias.copy_(_bias((w, b)))
        for name in ("norm1", "norm2", "norm3"):
            gain, bias, eps = params[name]
            ln = getattr(layer, name)
            ln.weight.copy_(gain)
            ln.bias.copy_(bias)
            ln.eps = eps
        padding = None if memory_mask is None else to_torch_mha_mask(memory_mask[:, 0, 0])  # (B, S), True = blocked
        return layer(x, memory, tgt_mask=to_torch_mha_mask(causal_mask(x.shape[1])),
                     memory_key_padding_mask=padding)


def _bias(weight_and_bias: tuple[Tensor, Tensor | None]) -> Tensor:
    w, b = weight_and_bias
    return torch.zeros(w.shape[0], dtype=w.dtype) if b is None else b


# ---- the learner's block ---------------------------------------------------------------------

def _build(cls: Any, norm_first: bool, both: bool) -> nn.Module:
    """``cls(d_model, num_heads, d_ff, norm_first=..., [dropout=DROPOUT])`` in float64, eval mode
    (``_block_parts.build_block`` with the decoder's sizes)."""
    block, _ = build_block(cls, norm_first, both, sizes=DECODER_ARGS, checker="check_decoder_block")
    return block


def _write_weights(block: nn.Module, x: Tensor) -> Params:
    """Known float64 weights into the parts the skeleton names; they are returned as ``Params``.

    Raises:
        Refused: a part is missing, of the wrong kind or size, or an attention layer alone is
            not multi-head attention.
    """
    name = type(block).__name__
    for part in DECODER_PARTS:
        if getattr(block, part, None) is None:
            raise Refused(tr("{name}.{part} is not set yet: create it in __init__.", name=name, part=part))
    params: Params = {}
    for role, part in (("self", "self_attn"), ("cross", "cross_attn")):
        learner = _layer_checker.inspect_layer(getattr(block, part), ATTENTION)  # writes known weights
        problem = _attention_problem(learner, x)
        if problem is not None:
            raise Refused(tr("{block}.{path} ({kind}), your attention layer, alone {problem} Check it "
                             "with attn.exercises.nb05.check_multi_head_attention first.", block=name,
                             path=part, kind=type(learner.module).__name__, problem=problem))
        params[role] = learner.params
    if block.cross_attn is block.self_attn:
        raise Refused(tr("{name}.cross_attn is the same layer as {name}.self_attn: the two attentions of a "
                         "decoder block learn weights of their own.", name=name))
    with torch.no_grad():  # the cross-attention's weights: the self-attention's, scaled
        for p in block.cross_attn.parameters():
            p.mul_(_CROSS_SCALE)
    params["cross"] = {r: (w * _CROSS_SCALE, None if b is None else b * _CROSS_SCALE)
                       for r, (w, b) in params["cross"].items()}
    gen = torch.Generator().manual_seed(SEED)
    for part, (out_f, in_f) in (("linear1", (_F, _E)), ("linear2", (_E, _F))):
        lin = getattr(block, part)
        if not isinstance(lin, nn.Linear) or tuple(lin.weight.shape) != (out_f, in_f):
            raise Refused(tr("{name}.{part} should be nn.Linear({in_f}, {out_f}).", name=name, part=part,
                             in_f=in_f, out_f=out_f))
        w = torch.randn(out_f, in_f, generator=gen, dtype=torch.float64) / math.sqrt(in_f)
        b = None if lin.bias is None else 0.3 * torch.randn(out_f, generator=gen, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(w)
            if b is not None:
                lin.bias.copy_(b)
        params[part] = (w, b)
    for part in ("norm1", "norm2", "norm3"):
        norm = getattr(block, part)
        own = list(norm.parameters(recurse=False))
        if not (len(own) == 2 and all(tuple(p.shape) == (_E,) for p in own)):
            raise Refused(tr("{name}.{part} should be nn.LayerNorm(d_model) (or your own LayerNorm with a "
                             "gain and a bias of d_model numbers each).", name=name, part=part))
        gain_p, bias_p = _gain_and_bias(norm)
        gain = 1 + 0.3 * torch.randn(_E, generator=gen, dtype=torch.float64)
        bias = 0.3 * torch.randn(_E, generator=gen, dtype=torch.float64)
        with torch.no_grad():
            gain_p.copy_(gain)
            bias_p.copy_(bias)
        params[part] = (gain, bias, float(getattr(norm, "eps", 1e-5)))
    return params


def _run(block: nn.Module, x: Tensor, memory: Tensor, memory_mask: Tensor | None) -> Tensor | str:
    """The block's output, or what went wrong (in the learner's language)."""
    kwargs = {} if memory_mask is None else {"memory_mask": memory_mask}
    try:
        with torch.no_grad():
            result = block(x, memory, **kwargs)
    except NotImplementedError:
        return tr("forward is not written yet.")
    except Exception as err:  # the learner's code: any error becomes a hint
        return tr("forward raised {error}", error=_layer_checker.describe_error(err))
    out = result[0] if isinstance(result, (tuple, list)) and result else result
    if not isinstance(out, Tensor):
        return tr("forward should return the output, or (output, weights), got {kind}.", kind=type(result).__name__)
    return out


@checker
def check_decoder_block(cls: Any, *, norm_first: bool | None = None) -> Feedback:
    """The learner's decoder block against ``nn.TransformerDecoderLayer(batch_first=True)``.

    The contract: ``cls(d_model, num_heads, d_ff, norm_first=...)`` (sizes ``DECODER_ARGS``;
    ``dropout=DROPOUT`` too when ``__init__`` takes one) with the parts ``DECODER_PARTS``, and
    ``forward(x, memory, memory_mask=None)``: x the target (B, L, d_model), memory the encoder's
    output (B, S, d_model), memory_mask the source's padding (B, 1, 1, S), True = may attend;
    the causal mask of the self-attention is the block's own. Compared in eval mode with the
    cases of ``decoder_cases``; called twice, it must give the same output.

    Args:
        cls: the class (not an instance).
        norm_first: None checks both placements; True (pre-LN) or False (post-LN) that one only.

    Returns:
        A ``Feedback``; the learner's RNG is left as it was.
    """
    if norm_first is not None and not isinstance(norm_first, bool):
        raise TypeError(f"norm_first: expected None, True or False, got {type(norm_first).__name__} "
                        f"{norm_first!r}")
    with torch.random.fork_rng(devices=[]):  # the block's init must not move the learner's RNG
        torch.manual_seed(SEED)
        return _compare(cls, norm_first)


def _compare(cls: Any, only: bool | None) -> Feedback:
    gen = torch.Generator().manual_seed(SEED + 2)
    x = torch.randn(BATCH, TARGET, _E, generator=gen, dtype=torch.float64)  # (B, L, E)
    memories = {S: torch.randn(BATCH, S, _E, generator=gen, dtype=torch.float64)  # (B, S, E)
                for S in sorted({S for _, S, _ in decoder_cases()})}
    for nf in (False, True) if only is None else (only,):
        block = _build(cls, nf, both=only is None)
        params = _write_weights(block, x)
        for case, S, memory_mask in decoder_cases():
            memory = memories[S]
            out = _run(block, x, memory, memory_mask)
            if isinstance(out, str):
                return Feedback(False, tr("With norm_first={nf} and {case}: {problem}", nf=nf, case=tr(case),
                                          problem=out))
            again = _run(block, x, memory, memory_mask)
            if isinstance(again, str) or not _layer_bugs.same(again, out.double()):
                return DECODER_HINTS.wrong("random in eval", tr(RANDOM_IN_EVAL[0]), where=tr(RANDOM_IN_EVAL[1]))
            expected = decoder_reference(x, memory, params, memory_mask, norm_first=nf)
            if not _layer_bugs.same(out, expected, _layer_bugs.ROUND_OFF):
                return _diagnose(out, x, memory, params, memory_mask, nf, case)
    which = tr("norm_first=False and True") if only is None else f"norm_first={only}"
    return Feedback(True, sentences([
        tr("{name} matches nn.TransformerDecoderLayer with the same weights, with {which}: masked "
           "self-attention, cross-attention over the memory (as long as the target, longer, padded) and the "
           "feed-forward, each with its residual connection and its LayerNorm.", name=cls.__name__,
           which=which)]))


def _diagnose(out: Tensor, x: Tensor, memory: Tensor, params: Params, memory_mask: Tensor | None, nf: bool,
              case: str) -> Feedback:
    """Name the slip of ``DECODER_BUGS`` that gives ``out``, or say that none does."""
    for bug in DECODER_BUGS:
        if (bug == "memory mask not passed" and memory_mask is None) or (bug == "memory normalised" and not nf):
            continue
        try:
            got = decoder_variant(x, memory, params, memory_mask, norm_first=nf, bug=bug)
        except RuntimeError:  # a slip that cannot run on this case (a swapped role with a padding mask)
            continue
        if _layer_bugs.same(out, got, _layer_bugs.ROUND_OFF):
            symptom, where = DECODER_BUGS[bug]
            other = tr("pre-LN, x + sa(norm1(x))") if not nf else tr("post-LN, norm1(x + sa(x))")
            return DECODER_HINTS.wrong(bug, tr("With norm_first={nf} and {case}: {problem}", nf=nf, case=tr(case),
                                               problem=tr(symptom, nf=nf, other=other)), where=tr(where))
    return DECODER_HINTS.wrong(
        "unknown", sentences([tr("With norm_first={nf} and {case}: your block's output differs from "
                                 "nn.TransformerDecoderLayer's, and not by one of the classic slips this checker "
                                 "knows.", nf=nf, case=tr(case)), tr("More than one step may be wrong.")]),
        where=tr("each sub-layer on its own against the formulas: the masked self-attention, the "
                 "cross-attention (queries from the decoder, keys and values from the memory), the "
                 "feed-forward, each with its residual and its norm"))
