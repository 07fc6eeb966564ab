"""Checking a learner's attention layer by what it does, never by reading its source.

The checker builds the learner's class, finds its projections by name, writes known float64
weights into them, runs it on random inputs (no mask, a causal mask, a padding mask) and
compares with the package's layer holding the same weights. When the two disagree, it runs
the same weights through each classic bug of ``BUGS`` and names the one that gives the
learner's numbers.

Shape legend: B batch, L tokens, E = d_model, H heads, D = E // H (d_k of a head),
d_k / d_v the sizes of one head's queries/keys and values.
Masks given to the learner's layer are bool with the chapter's meaning, ``mask == 0`` (False)
is blocked, which is also this package's True = may attend.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import scaled_dot_product_attention
from ..masks import causal_mask, padding_mask
from ..modules import MultiHeadAttention
from ._base import Feedback

#: Projection names, by role (query, key, value, output): the chapter's and the article's.
NAMINGS: dict[str, dict[str, str]] = {
    "the chapter's names": {"q": "W_q", "k": "W_k", "v": "W_v", "o": "W_o"},
    "the article's names": {"q": "q_linear", "k": "k_linear", "v": "v_linear", "o": "out_linear"},
}
BATCH, LENGTH = 2, 5
TOLERANCE = 1e-10  # float64: different but correct orders of operations differ by ~1e-15
_SEED = 1234

#: Each classic bug, with the hint that names it. The hint says what the layer does, and
#: where to look; it never gives the code of the fix.
BUGS: dict[str, str] = {
    "no scaling": "your scores are not scaled at all: compare the softmax's input with the "
                  "formula.",
    "scaled by d_k": "your scores are divided by d_k itself: look again at what the formula "
                     "divides by.",
    "scaled by d_model": "your scores are divided by d_model: the scale belongs to the length of "
                         "the vectors in each dot product, and it is not d_model itself.",
    "scaled by sqrt(d_model)": "your scores are divided by √d_model: each dot product runs over "
                               "the d_k numbers of one head's query and key, not over d_model.",
    "softmax over the queries": "your softmax runs over the queries: each column of your weights "
                                "sums to 1, where each query's row should.",
    "softmax over the heads": "your softmax runs over the heads: for each query, the weights "
                              "should sum to 1 over the keys of its own head.",
    "softmax over the batch": "your softmax runs over the batch dimension: the sequences of a "
                              "batch must not share their weights.",
    "key projection used for the queries": "your queries are made with the key projection "
                                           "(so the scores are symmetric, and the query "
                                           "projection is never used).",
    "heads split without a transpose": "your heads are split with a single view to (B, H, L, d): "
                                       "the shape is right, but each head gets numbers from "
                                       "several tokens instead of d features of every token.",
    "heads merged without a transpose": "your heads are merged with a view straight from "
                                        "(B, H, L, d): the shape is right, but each output row "
                                        "mixes several tokens of one head instead of all heads "
                                        "of one token.",
    "mask flipped": "your mask works the wrong way round: your layer blocks the positions the "
                    "mask allows. In the chapter's convention mask == 0 (False) is blocked.",
    "mask ignored": "your output with a mask is the output without one: forward does not use "
                    "`mask`.",
    "no output projection": "your output skips the output projection: the concatenated heads "
                            "come out as they are.",
}

ERROR_HINTS = (  # (words in the error message, what they usually mean)
    (("view size is not compatible",), "After a transpose the tensor is no longer contiguous in "
                                       "memory, so .view cannot merge its dimensions (step 3)."),
    (("must be a 3D tensor",), "torch.bmm takes 3-D tensors only, and with heads the tensors "
                               "are 4-D: use @ (torch.matmul)."),
    (("is invalid for input of size",), "A .view or .reshape asks for sizes whose product is not "
                                        "the number of elements of the tensor."),
    (("cannot be multiplied",), "A matrix product got operands whose inner sizes differ: print "
                                "the shapes on the way."),
    (("must match the size of tensor",), "Two tensors do not broadcast: print the shapes on the "
                                         "way (the masks come as (L, L) and (B, 1, [1,] L))."),
    (("expected scalar type", "dtype"), "The checker runs your layer in float64: make new tensors "
                                        "with x's dtype, or use Python numbers."),
)


@dataclass(frozen=True)
class Spec:
    """What is being checked: a single head (heads=None) or a multi-head layer."""

    name: str  # "SelfAttention" or "MultiHeadAttention", for messages
    args: tuple[int, ...]  # the constructor's arguments
    arg_names: str  # "d_model, d_k, d_v"
    d_model: int
    d_k: int  # per head
    d_v: int  # per head
    heads: int | None

    @property
    def roles(self) -> tuple[str, ...]:
        return ("q", "k", "v") if self.heads is None else ("q", "k", "v", "o")

    def shapes(self) -> dict[str, tuple[int, int]]:
        """(out_features, in_features) of each projection."""
        if self.heads is None:
            return {"q": (self.d_k, self.d_model), "k": (self.d_k, self.d_model),
                    "v": (self.d_v, self.d_model)}
        E = self.d_model
        return {role: (E, E) for role in self.roles}

    def output_shape(self) -> tuple[int, ...]:
        return (BATCH, LENGTH, self.d_v if self.heads is None else self.d_model)

    def weights_shape(self) -> tuple[int, ...]:
        if self.heads is None:
            return (BATCH, LENGTH, LENGTH)
        return (BATCH, self.heads, LENGTH, LENGTH)

    def masks(self) -> list[tuple[str, Tensor | None]]:
        """The three cases: no mask, a causal mask (L, L), a padding mask that broadcasts to the
        scores, (B, 1, L) or (B, 1, 1, L). No query is left without a key."""
        pad = padding_mask([LENGTH, LENGTH - 2], max_len=LENGTH)  # (B, 1, 1, L), True = may attend
        if self.heads is None:
            pad = pad[:, 0]  # (B, 1, 1, L) -> (B, 1, L)
        return [("no mask", None), ("a causal mask", causal_mask(LENGTH)), ("a padding mask", pad)]

    def bugs(self) -> tuple[str, ...]:
        single = ("no scaling", "scaled by d_k", "scaled by d_model", "scaled by sqrt(d_model)",
                  "softmax over the queries", "softmax over the batch",
                  "key projection used for the queries", "mask flipped", "mask ignored")
        if self.heads is None:
            return single
        return single + ("softmax over the heads", "heads split without a transpose",
                         "heads merged without a transpose", "no output projection")


Params = dict[str, tuple[Tensor, Tensor | None]]  # role -> (weight, bias or None)


def variant(x: Tensor, params: Params, mask: Tensor | None, spec: Spec, bug: str | None,
            fill: float = float("-inf")) -> Tensor:
    """The chapter's layer, with at most one classic bug, on ``x`` (B, L, E). Returns the output.

    ``bug=None`` is the correct layer (a test checks it against the package's). ``fill`` is
    what blocked scores get: the chapter's -inf or the article's -1e9.
    """
    if bug is not None and bug not in BUGS:
        raise ValueError(f"bug: expected None or one of {sorted(BUGS)}, got {bug!r}")
    B, L, E = x.shape
    q = F.linear(x, *params["k" if bug == "key projection used for the queries" else "q"])
    k = F.linear(x, *params["k"])
    v = F.linear(x, *params["v"])  # (B, L, d_k), (B, L, d_k), (B, L, d_v) or all (B, L, E)
    H = spec.heads
    if H is not None:
        D = E // H
        if bug == "heads split without a transpose":
            q, k, v = (t.reshape(B, H, L, D) for t in (q, k, v))  # (B, L, E) -> (B, H, L, D) wrongly
        else:
            q, k, v = (t.reshape(B, L, H, D).transpose(1, 2) for t in (q, k, v))  # (B, L, E) -> (B, H, L, D)
    scale = {"no scaling": 1.0, "scaled by d_k": spec.d_k, "scaled by d_model": spec.d_model,
             "scaled by sqrt(d_model)": math.sqrt(spec.d_model)}.get(bug, math.sqrt(spec.d_k))
    scores = q @ k.transpose(-2, -1) / scale  # (..., L, d) @ (..., d, L) -> (..., L, L)
    if mask is not None and bug != "mask ignored":
        blocked = mask if bug == "mask flipped" else ~mask
        scores = scores.masked_fill(blocked, fill)
    dim = {"softmax over the queries": -2, "softmax over the heads": 1,
           "softmax over the batch": 0}.get(bug, -1)
    out = torch.softmax(scores, dim=dim) @ v  # (..., L, L) @ (..., L, d) -> (..., L, d)
    if H is None:
        return out  # (B, L, d_v)
    if bug == "heads merged without a transpose":
        out = out.reshape(B, L, E)  # (B, H, L, D) -> (B, L, E) wrongly
    else:
        out = out.transpose(1, 2).reshape(B, L, E)  # (B, H, L, D) -> (B, L, H, D) -> (B, L, E)
    return out if bug == "no output projection" else F.linear(out, *params["o"])


def reference(x: Tensor, params: Params, mask: Tensor | None, spec: Spec) -> tuple[Tensor, Tensor]:
    """The package's layer with ``params``: output and weights (per head)."""
    if spec.heads is None:
        q, k, v = (F.linear(x, *params[role]) for role in "qkv")  # (B, L, d_k), (B, L, d_k), (B, L, d_v)
        return scaled_dot_product_attention(q, k, v, mask)
    with torch.random.fork_rng(devices=[]):  # its init (overwritten below) must not move the RNG
        layer = MultiHeadAttention(spec.d_model, spec.heads, bias=True).to(x.dtype)
    with torch.no_grad():
        for role, lin in zip("qkvo", (layer.W_q, layer.W_k, layer.W_v, layer.W_o)):
            weight, bias = params[role]
            lin.weight.copy_(weight)
            lin.bias.copy_(torch.zeros_like(lin.bias) if bias is None else bias)
        return layer(x, mask=mask)


# ---- the learner's class ----------------------------------------------------------------

@dataclass
class Learner:
    """A built learner layer and how to call it."""

    module: nn.Module
    naming: str
    params: Params
    article_call: bool  # forward(q, k, v, mask) rather than forward(x, mask)
    mask_param: str | int | None  # keyword name, positional index, or None (no mask argument)


def build(cls: object, spec: Spec) -> nn.Module | Feedback:
    """``cls(*spec.args)``, or a Feedback saying why it could not be built."""
    call = f"{getattr(cls, '__name__', spec.name)}({', '.join(map(str, spec.args))})"
    if isinstance(cls, nn.Module):
        return Feedback(False, f"Pass the class itself, `{type(cls).__name__}`, not an instance of "
                               f"it: the checker builds {type(cls).__name__}({spec.arg_names}) with "
                               "its own sizes.")
    if not inspect.isclass(cls):
        return Feedback(False, f"cls: expected a class (the nn.Module subclass you wrote), got "
                               f"{type(cls).__name__} {cls!r:.60}.")
    if not issubclass(cls, nn.Module):
        return Feedback(False, f"{cls.__name__} should subclass nn.Module (class {cls.__name__}"
                               "(nn.Module): ...).")
    with torch.random.fork_rng(devices=[]):  # the layer's init must not move the learner's RNG
        try:
            module = cls(*spec.args)
        except NotImplementedError:
            return Feedback(False, f"{cls.__name__}.__init__ is not written yet.")
        except Exception as err:  # the learner's code: any error becomes a hint
            return Feedback(False, f"{call} raised {describe_error(err)} The checker builds "
                                   f"{cls.__name__}({spec.arg_names}).")
    return module


def inspect_layer(module: nn.Module, spec: Spec) -> Learner | Feedback:
    """Find the projections by name, write known float64 weights into them, find the mask
    argument. Uses the module's attributes and forward's signature, not its source."""
    name = type(module).__name__
    naming = next((n for n, names in NAMINGS.items()
                   if any(hasattr(module, names[r]) for r in "qkv")), None)
    if naming is None:
        found = [n for n, _ in module.named_children()] or "none"
        return Feedback(False, f"{name} has no projections named W_q, W_k, W_v (the chapter) or "
                               f"q_linear, k_linear, v_linear (the article); its submodules: {found}.")
    names = NAMINGS[naming]
    gen = torch.Generator().manual_seed(_SEED)
    module.double().eval()
    params: Params = {}
    for role in spec.roles:
        attr = names[role]
        lin = getattr(module, attr, None)
        if lin is None or lin is Ellipsis:
            if role == "o":
                return Feedback(False, f"{name} has no output projection `{attr}`: multi-head "
                                       "attention ends with one, after the heads are concatenated.")
            return Feedback(False, f"{name}.{attr} is not set yet: create it in __init__.")
        weight = getattr(lin, "weight", None)
        if not isinstance(weight, Tensor):
            return Feedback(False, f"{name}.{attr} should be an nn.Linear, got {type(lin).__name__}.")
        out_f, in_f = spec.shapes()[role]
        if tuple(weight.shape) != (out_f, in_f):
            return Feedback(False, f"{name}.{attr} should take {in_f} features to {out_f}: its "
                                   f"weight should have shape ({out_f}, {in_f}), got "
                                   f"{tuple(weight.shape)}.")
        bias = getattr(lin, "bias", None)
        new_w = torch.randn(out_f, in_f, generator=gen, dtype=torch.float64) / math.sqrt(in_f)
        new_b = None if bias is None else 0.3 * torch.randn(out_f, generator=gen, dtype=torch.float64)
        with torch.no_grad():
            weight.copy_(new_w)
            if bias is not None:
                bias.copy_(new_b)
        params[role] = (new_w, new_b)
    article_call, mask_param = _call_style(module)
    return Learner(module, naming, params, article_call, mask_param)


def _call_style(module: nn.Module) -> tuple[bool, str | int | None]:
    """From forward's signature: (takes q, k, v?, where the mask goes)."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return False, 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in kinds]
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return False, 1
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    article = len(required) >= 3
    if any(p.name == "mask" and p.kind != inspect.Parameter.POSITIONAL_ONLY for p in params):
        return article, "mask"
    index = 3 if article else 1
    return article, index if len(positional) > index else None


def run(learner: Learner, x: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor | None] | str:
    """Call the learner's layer: (output, weights or None), or a message saying what went wrong."""
    args: list[object] = [x, x, x] if learner.article_call else [x]
    kwargs: dict[str, object] = {}
    if isinstance(learner.mask_param, str):
        kwargs[learner.mask_param] = mask
    elif isinstance(learner.mask_param, int):
        args.append(mask)
    elif mask is not None:
        return "forward takes no mask argument: give it one, forward(x, mask=None)."
    try:
        with torch.no_grad():
            result = learner.module(*args, **kwargs)
    except NotImplementedError:
        return "forward is not written yet."
    except Exception as err:  # the learner's code: any error becomes a hint
        return f"forward raised {describe_error(err)}"
    if isinstance(result, Tensor):
        return result, None
    if (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], Tensor)
            and (result[1] is None or isinstance(result[1], Tensor))):
        return result[0], result[1]
    return (f"forward should return the output, or (output, weights), got "
            f"{type(result).__name__}.")


def same(got: Tensor, expected: Tensor) -> bool:
    return (tuple(got.shape) == tuple(expected.shape)
            and bool(torch.allclose(got.double(), expected, atol=TOLERANCE, rtol=0, equal_nan=True)))


def diagnose(learner: Learner, spec: Spec, x: Tensor, mask: Tensor | None, got: Tensor) -> str | None:
    """The classic bug whose output is ``got``, or None. Fully blocked rows (a flipped mask
    makes some) give NaN under -inf and uniform weights under -1e9: both fills are tried."""
    for bug in spec.bugs():
        for fill in (float("-inf"), -1e9):
            if same(got, variant(x, learner.params, mask, spec, bug, fill)):
                return bug
    return None


def check_layer(cls: object, spec: Spec, *, masks: bool = True) -> Feedback:
    """Build, inspect, run and compare, case by case; the first difference is explained."""
    module = build(cls, spec)
    if isinstance(module, Feedback):
        return module
    learner = inspect_layer(module, spec)
    if isinstance(learner, Feedback):
        return learner
    name = type(module).__name__
    gen = torch.Generator().manual_seed(_SEED + 1)
    x = torch.randn(BATCH, LENGTH, spec.d_model, generator=gen, dtype=torch.float64)
    cases = spec.masks() if masks else spec.masks()[:1]
    returns_weights = True
    for case, mask in cases:
        result = run(learner, x, mask)
        if isinstance(result, str):
            return Feedback(False, f"With {case}: {result}")
        out, weights = result
        expected_out, expected_weights = reference(x, learner.params, mask, spec)
        if tuple(out.shape) != spec.output_shape():
            return Feedback(False, f"With {case}: the output should have shape {spec.output_shape()} "
                                   f"(B, L, {'d_v' if spec.heads is None else 'd_model'}), got "
                                   f"{tuple(out.shape)}.")
        if not same(out, expected_out):
            bug = diagnose(learner, spec, x, mask, out)
            if bug is not None:
                return Feedback(False, f"With {case}: {BUGS[bug]}")
            nan = " It contains NaN." if bool(out.isnan().any()) else ""
            if mask is None:
                return Feedback(False, f"With no mask: your output differs from the chapter's "
                                       f"attention, and not by one of the classic bugs this checker "
                                       f"knows.{nan} More than one step may be wrong: try each step "
                                       "on a tiny input and print the shapes.")
            return Feedback(False, f"Without a mask your output is right; with {case} it is not."
                                   f"{nan} Check how forward applies the mask (mask == 0 is blocked).")
        if weights is None:
            returns_weights = False
            continue
        if tuple(weights.shape) != spec.weights_shape():
            legend = "(B, L, L)" if spec.heads is None else "(B, H, L, L), one map per head"
            return Feedback(False, f"With {case}: your output is right, but the weights should have "
                                   f"shape {spec.weights_shape()} {legend}, got "
                                   f"{tuple(weights.shape)}.")
        if not same(weights, expected_weights):
            return Feedback(False, f"With {case}: your output is right, but the weights you return "
                                   "are not the attention weights (after the softmax).")
    style = "forward(q, k, v, mask)" if learner.article_call else "forward(x, mask)"
    bias = "with biases" if any(b is not None for _, b in learner.params.values()) else "no biases"
    gives = "output and weights" if returns_weights else "the output"
    what = ("with no mask, a causal mask and a padding mask" if masks
            else "without a mask (masks come next)")
    return Feedback(True, f"{name} ({learner.naming}, {bias}, {style}, returns {gives}) matches "
                          f"the reference in float64 {what}.")


def describe_error(err: BaseException) -> str:
    """'TypeError: first line of the message.' and, for a known message, what it usually means."""
    lines = str(err).strip().splitlines()
    text = lines[0].rstrip(".") if lines else "(no message)"
    hint = next((h for keys, h in ERROR_HINTS if any(k in str(err) for k in keys)), "")
    return f"{type(err).__name__}: {text}. {hint}".rstrip()
