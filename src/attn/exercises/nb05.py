"""Checkers for notebook 05 (building attention in PyTorch, step by step).

The guided build: ``check_self_attention`` (steps 1-2), ``check_split_merge`` (step 3),
``check_multi_head_attention`` (steps 4-5), ``check_silent_case`` and
``check_head_split_guard`` (step 6). The layer checkers take the learner's **class**, build it,
write known weights into it and compare what it computes with the package's layer
(``attn.exercises._layer_checker`` does the work, by behaviour only). Then PyTorch's own layer:
``check_weight_shapes``, ``check_mha_causal_mask``, and ``check_fully_masked_row``.

Each checker returns a ``Feedback`` (right or wrong, with a hint) and never states the expected
answer. The layer checkers, the guard's and the causal mask's give hints in tiers (``Hints``):
the symptom on a first wrong try, the symptom and where to look on a second try with the same
mistake; ``reset_hints()`` starts again. Masks given to a learner's layer follow the chapter: ``mask == 0`` is blocked (for a
bool mask: False is blocked, this package's True = may attend).
"""
from __future__ import annotations

import math
from typing import Any, Callable
from unittest import mock

import torch
from torch import Tensor, nn

from ..functional import masked_softmax, softmax_with_fill
from ..masks import causal_mask, to_torch_mha_mask
from . import _layer_bugs, _layer_checker
from ..language import mark, tr
from ._base import Feedback, Hints, Refused, as_function, checker, sentences

__all__ = [
    "SELF_ATTENTION_ARGS",
    "MULTI_HEAD_ARGS",
    "SPLIT_SETUP",
    "SILENT_CASE",
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
#: Step 6: the article's layer with these sizes, on x of shape (batch, length, d_model).
SILENT_CASE: dict[str, int] = {"batch": 2, "length": 5, "d_model": 12, "num_heads": 5}

_SELF = _layer_bugs.Spec("SelfAttention", tuple(SELF_ATTENTION_ARGS.values()), "d_model, d_k, d_v",
                     d_model=SELF_ATTENTION_ARGS["d_model"], d_k=SELF_ATTENTION_ARGS["d_k"],
                     d_v=SELF_ATTENTION_ARGS["d_v"], heads=None)
_E, _H = MULTI_HEAD_ARGS["d_model"], MULTI_HEAD_ARGS["n_heads"]
_MULTI = _layer_bugs.Spec("MultiHeadAttention", (_E, _H), "d_model, n_heads", d_model=_E,
                      d_k=_E // _H, d_v=_E // _H, heads=_H)

#: One ``Hints`` per checker (a second try with the same mistake hears where to look too):
#: ``check_self_attention``'s, ``check_multi_head_attention``'s, ``check_head_split_guard``'s
#: and ``check_mha_causal_mask``'s. ``reset_hints()`` starts them all again.
SELF_ATTENTION_HINTS = Hints()
MULTI_HEAD_HINTS = Hints()
HEAD_SPLIT_GUARD_HINTS = Hints()
MHA_CAUSAL_MASK_HINTS = Hints()


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


# ---- step 6: the article's silent case ---------------------------------------------------

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
    s = SILENT_CASE
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
    ``ArticleAsPrinted(d_model, num_heads)`` of ``SILENT_CASE`` on x (batch, length, d_model)."""
    keys = ("head_dim", "weights", "output")
    if not isinstance(answer, dict) or set(answer) != set(keys):
        return Feedback(False, tr('Set `answer` to a dict {"head_dim": ..., "weights": (...), '
                                  '"output": (...)}: an int and two shapes.'))
    head_dim = answer["head_dim"]
    if isinstance(head_dim, bool) or not isinstance(head_dim, int):
        return Feedback(False, tr('answer["head_dim"] should be an int, got {value!r}: the article '
                                  'computes it with //.', value=head_dim))
    shapes = {k: _as_shape(answer[k]) for k in ("weights", "output")}
    for k, shape in shapes.items():
        if shape is None:
            return Feedback(False, tr('answer["{key}"] should be a tuple of ints, got {value!r}: the '
                                      'layer runs, it raises nothing.', key=k, value=answer[k]))
    expected = _silent_case_shapes()
    s = SILENT_CASE
    B, L, E, H = s["batch"], s["length"], s["d_model"], s["num_heads"]
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


# ---- PyTorch's own layer -----------------------------------------------------------------

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


def _as_shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in value):
        return tuple(value)
    return None


@checker
def check_weight_shapes(answer: Any) -> Feedback:
    """answer = {"averaged": shape, "per_head": shape}: the shapes of the weights that
    ``nn.MultiheadAttention`` returns for ``SHAPES_SETUP`` by default and with
    ``average_attn_weights=False``."""
    if not isinstance(answer, dict) or set(answer) != {"averaged", "per_head"}:
        return Feedback(False, tr('Set `answer` to a dict {"averaged": (...), "per_head": (...)} of two '
                                  'shapes (tuples of ints).'))
    got = {name: _as_shape(answer[name]) for name in ("averaged", "per_head")}
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
