"""A Transformer block computed from known weights: PyTorch's layer, and the chapter's block with
each classic bug.

``torch_reference`` is ``nn.TransformerEncoderLayer(batch_first=True)`` holding the weights of
a ``BlockParams``; ``variant`` is the same block written out step by step, with at most one bug
of ``BUGS`` (``bug=None`` equals the reference, a test checks it). When a learner's block
disagrees with the reference, its checker (``attn.exercises._block_checker``) runs the same
weights through each bug that can show (``bugs_for``) and names the one that gives the
learner's numbers; ``BUGS`` holds what the learner hears of it: the symptom, and where to look.

Shape legend: B batch, L tokens, E = d_model, H heads, D = E // H, F = d_ff.
Masks are bool with the course's meaning, True = may attend (the chapter's ``mask == 0`` is
blocked): (L, L) causal, (B, 1, 1, L) padding; ``cases`` gives each with torch's form beside it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..language import mark
from ..masks import causal_mask, padding_mask, to_torch_mha_mask
from . import _layer_bugs

#: The checker builds ``cls(d_model, num_heads, d_ff, norm_first=...)`` with these sizes
#: (d_ff is not 4 * d_model, so that a block that ignores its d_ff argument shows).
BLOCK_ARGS: dict[str, int] = {"d_model": 8, "num_heads": 2, "d_ff": 24}
BATCH, LENGTH = 2, 5
_E, _H, _F = BLOCK_ARGS["d_model"], BLOCK_ARGS["num_heads"], BLOCK_ARGS["d_ff"]
#: The attention layer inside the block, as ``attn.exercises.nb05.check_multi_head_attention``
#: sees one (its machinery, ``_layer_checker``, finds the projections).
ATTENTION = _layer_bugs.Spec("MultiHeadAttention", (_E, _H), "d_model, n_heads", d_model=_E,
                             d_k=_E // _H, d_v=_E // _H, heads=_H)
#: The seed of every known weight and input of notebook 12's checkers.
SEED = 1212

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
        return _layer_bugs.variant(t, params.attn, None if bug == "mask not passed" else mask, ATTENTION, None)

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


def cases() -> list[tuple[str, Tensor | None, dict[str, Tensor]]]:
    """(name, the package's mask, torch's keyword arguments): no query is left without a key."""
    pad = padding_mask([LENGTH, LENGTH - 2], max_len=LENGTH)  # (B, 1, 1, L)
    causal = causal_mask(LENGTH)  # (L, L)
    return [(mark("no mask"), None, {}),
            (mark("a causal mask"), causal, {"src_mask": to_torch_mha_mask(causal)}),
            (mark("a padding mask"), pad, {"src_key_padding_mask": to_torch_mha_mask(pad[:, 0, 0])})]  # (B, L)
