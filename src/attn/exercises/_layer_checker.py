"""Checking a learner's attention layer by what it does, never by reading its source.

The checker builds the learner's class, finds its projections by name, writes known float64
weights into them, runs it on random inputs (no mask, a causal mask, a padding mask) and
compares with the package's layer holding the same weights. When the two disagree, it runs
the same weights through each classic bug (``attn.exercises._layer_bugs``) and names the one
that gives the learner's numbers (a layer that raises is run once more on as many tokens as a
head's query has numbers, where a product Q @ K runs), or says that its weights are right and
its weighted sum is not; a ``Hints`` gives the symptom first, and the place to look on a second
try with the same mistake.

Accepted as correct: the chapter's, the article's and Raschka's names (``W_q``,
``q_linear``, ``W_query`` and their siblings), a fused ``qkv`` projection (q, k, v side by
side, in that order), raw matrices used as ``x @ W`` (the course's Q = X W^Q, so the matrix
is (in, out)), and a layer that computes some steps (say the softmax) in float32: its output
agrees to float32 round-off (``ROUND_OFF``), and every classic bug is far from that.
How a layer of any of these forms is called (``forward(x, mask)`` or ``forward(q, k, v,
mask)``, the output alone or with the weights) is read by ``attn.lessons.learner_layer``, through
which the models of ``attn.lessons.trained`` train a learner's layer too.

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
from torch import Tensor, nn

from ..language import mark, tr
from ..lessons.learner_layer import (NAMINGS, OUT_NAMES, attribute_set, call_arguments, call_style,
                                     find_projections, split_output)
from ._base import Feedback, Hints, Refused, checker, sentence_inside, sentences
from ._layer_bugs import BATCH, BUGS, LENGTH, ROUND_OFF, Params, Spec, diagnose, reference, same

_SEED = 1234

#: Not a classic bug (``_layer_bugs.variant``): an output that changes from one call to the next in eval mode.
RANDOM_IN_EVAL = (
    mark("Your layer gives a different output each time it is called on the same input in eval "
         "mode: something random runs even when the layer is not training."),
    mark("the dropout: does that step know whether the layer is training?"))

#: Not a classic bug either: the layer returns the right weights, and an output that is not them times V.
RIGHT_WEIGHTS_WRONG_SUM = (
    mark("Your weights are right (they are the reference's), but your output is not those weights "
         "times the values: the step after the softmax goes wrong."),
    mark("the weighted sum: each output row adds up the rows of V, each times its weight"))

ERROR_HINTS = (  # (words in the error message, what they usually mean)
    (("view size is not compatible",), mark("After a transpose the tensor is no longer contiguous in "
                                            "memory, so .view cannot merge its dimensions (step 3).")),
    (("must be a 3D tensor",), mark("torch.bmm takes 3-D tensors only, and with heads the tensors "
                                    "are 4-D: use @ (torch.matmul).")),
    (("is invalid for input of size",), mark("A .view or .reshape asks for sizes whose product is not "
                                             "the number of elements of the tensor.")),
    (("cannot be multiplied",), mark("A matrix product got operands whose inner sizes differ: print "
                                     "the shapes on the way.")),
    (("must match the size of tensor",), mark("Two tensors do not broadcast: print the shapes on the "
                                              "way (the masks come as (L, L) and (B, 1, [1,] L)).")),
    (("expected scalar type", "dtype"), mark("The checker runs your layer in float64: make new tensors "
                                             "with x's dtype, or use Python numbers.")),
)


# ---- the learner's class ----------------------------------------------------------------

@dataclass
class Learner:
    """A built learner layer and how to call it."""

    module: nn.Module
    naming: str
    params: Params
    article_call: bool  # forward(q, k, v, mask) rather than forward(x, mask)
    mask_param: str | int | None  # keyword name, positional index, or None (no mask argument)
    matrices: str | None = None  # "x @ W" or "x @ W.T" for raw matrices, None for nn.Linear
    square_matrices: bool = False  # raw (E, E) matrices, whose orientation the shape cannot tell


def build(cls: object, spec: Spec) -> nn.Module:
    """``cls(*spec.args)``.

    Raises:
        Refused: ``cls`` is not an nn.Module class, or building it failed; the reply says why.
    """
    call = f"{getattr(cls, '__name__', spec.name)}({', '.join(map(str, spec.args))})"
    if isinstance(cls, nn.Module):
        raise Refused(tr("Pass the class itself, `{cls}`, not an instance of it: the checker "
                         "builds {cls}({args}) with its own sizes.",
                         cls=type(cls).__name__, args=spec.arg_names))
    if not inspect.isclass(cls):
        raise Refused(tr("cls: expected a class (the nn.Module subclass you wrote), got "
                         "{kind} {value!r:.60}.", kind=type(cls).__name__, value=cls))
    if not issubclass(cls, nn.Module):
        raise Refused(tr("{name} should subclass nn.Module (class {name}(nn.Module): ...).",
                         name=cls.__name__))
    with torch.random.fork_rng(devices=[]):  # the layer's init must not move the learner's RNG
        try:
            module = cls(*spec.args)
        except NotImplementedError:
            raise Refused(tr("{name}.__init__ is not written yet.", name=cls.__name__))
        except Exception as err:  # the learner's code: any error becomes a hint
            raise Refused(tr("{call} raised {error} The checker builds {name}({args}).",
                             call=call, error=describe_error(err), name=cls.__name__,
                             args=spec.arg_names))
    return module


def _slots(module: nn.Module, spec: Spec) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    """(naming, [(attribute, roles it makes)]): one attribute per role, or one fused ``qkv``
    for the three roles q, k, v, then the output projection if the spec has one.

    Raises:
        Refused: no projections of a known naming.
    """
    name = type(module).__name__
    found = find_projections(module)
    if found is None:
        children = [n for n, _ in module.named_children()] or tr("none")
        raise Refused(tr("{name} has no projections named W_q, W_k, W_v (the chapter), "
                         "q_linear, k_linear, v_linear (the article), W_query, W_key, "
                         "W_value (Raschka) or one fused qkv; its submodules: {found}.",
                         name=name, found=children))
    naming, roles = found
    slots = [(attr, tuple(role)) for role, attr in roles.items()]  # "qkv" -> ("q", "k", "v")
    if "o" in spec.roles:
        own = NAMINGS.get(naming, {}).get("o", OUT_NAMES[0])
        out = own if attribute_set(module, own) else next((n for n in OUT_NAMES if attribute_set(module, n)),
                                                    own)
        slots.append((out, ("o",)))
    return naming, slots


def inspect_layer(module: nn.Module, spec: Spec, *, flip_square: bool = False) -> Learner:
    """Find the projections by name, write known float64 weights into them, find the mask
    argument. Uses the module's attributes and forward's signature, not its source.

    A raw matrix (an ``nn.Parameter``, not an ``nn.Linear``) is read as the course writes it,
    Q = X W^Q with W^Q of shape (in, out); of shape (out, in) it is read as x @ W.T. A square
    one could be either: ``flip_square=True`` reads it the other way (x @ W.T).

    Raises:
        Refused: a projection is missing, not a Linear or a matrix, or of the wrong shape.
    """
    name = type(module).__name__
    naming, slots = _slots(module, spec)
    gen = torch.Generator().manual_seed(_SEED)
    module.double().eval()
    sizes = spec.shapes()  # role -> (out_features, in_features)
    params: Params = {}
    matrices: str | None = None
    square = False
    for attr, roles in slots:
        lin = getattr(module, attr, None)
        if lin is None or lin is Ellipsis:
            if roles == ("o",):
                raise Refused(tr("{name} has no output projection `{attr}`: multi-head "
                                 "attention ends with one, after the heads are concatenated.",
                                 name=name, attr=attr))
            raise Refused(tr("{name}.{attr} is not set yet: create it in __init__.",
                             name=name, attr=attr))
        out_f = sum(sizes[r][0] for r in roles)
        in_f = sizes[roles[0]][1]
        what = tr("q, k and v side by side") if len(roles) == 3 else ""
        if isinstance(lin, Tensor):  # a raw matrix
            weight, bias = lin, None
            if tuple(weight.shape) == (in_f, out_f):
                transposed = in_f == out_f and flip_square
                square = square or in_f == out_f
            elif tuple(weight.shape) == (out_f, in_f):
                transposed = True
            else:
                legend = tr("in, out: {what}", what=what) if what else tr("in, out")
                raise Refused(tr("{name}.{attr} is a matrix used as x @ W, so it should have "
                                 "shape ({in_f}, {out_f}) ({legend}), got {got}.",
                                 name=name, attr=attr, in_f=in_f, out_f=out_f,
                                 legend=legend, got=tuple(weight.shape)))
            matrices = "x @ W.T" if transposed else "x @ W"
        else:
            weight = getattr(lin, "weight", None)
            if not isinstance(weight, Tensor):
                raise Refused(tr("{name}.{attr} should be an nn.Linear (or a matrix, an "
                                 "nn.Parameter), got {kind}.",
                                 name=name, attr=attr, kind=type(lin).__name__))
            if tuple(weight.shape) != (out_f, in_f):
                fields = dict(name=name, attr=attr, in_f=in_f, out_f=out_f, got=tuple(weight.shape))
                if what:
                    raise Refused(tr("{name}.{attr} should take {in_f} features to {out_f} "
                                     "({what}): its weight should have shape ({out_f}, "
                                     "{in_f}), got {got}.", what=what, **fields))
                raise Refused(tr("{name}.{attr} should take {in_f} features to {out_f}: its "
                                 "weight should have shape ({out_f}, {in_f}), got {got}.",
                                 **fields))
            bias = getattr(lin, "bias", None)
            transposed = False
        new = {r: torch.randn(*sizes[r], generator=gen, dtype=torch.float64) / math.sqrt(in_f)
               for r in roles}  # role -> (out, in)
        new_b = None if bias is None else {
            r: 0.3 * torch.randn(sizes[r][0], generator=gen, dtype=torch.float64) for r in roles}
        stacked = torch.cat([new[r] for r in roles])  # (out_f, in_f), q, k, v in that order
        as_x_at_w = isinstance(lin, Tensor) and not transposed  # x @ W keeps W as (in, out)
        with torch.no_grad():
            weight.copy_(stacked.T if as_x_at_w else stacked)
            if bias is not None:
                bias.copy_(torch.cat([new_b[r] for r in roles]))
        for r in roles:
            params[r] = (new[r], None if new_b is None else new_b[r])
    article_call, mask_param = call_style(module)
    return Learner(module, naming, params, article_call, mask_param, matrices, square)


def run(learner: Learner, x: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor | None] | str:
    """Call the learner's layer: (output, weights or None), or a message (in the learner's
    language) saying what went wrong."""
    call = call_arguments(learner.article_call, learner.mask_param, x, x, mask)
    if call is None:
        return tr("forward takes no mask argument: give it one, forward(x, mask=None).")
    args, kwargs = call
    try:
        with torch.no_grad():
            result = learner.module(*args, **kwargs)
    except NotImplementedError:
        return tr("forward is not written yet.")
    except Exception as err:  # the learner's code: any error becomes a hint
        return tr("forward raised {error}", error=describe_error(err))
    output = split_output(result)
    if output is None:
        return tr("forward should return the output, or (output, weights), got {kind}.",
                  kind=type(result).__name__)
    return output


@checker
def check_layer(cls: object, spec: Spec, *, masks: bool = True, hints: Hints | None = None) -> Feedback:
    """Build, inspect, run and compare, case by case; the first difference is explained.

    Args:
        cls: the learner's class.
        spec: what is checked (sizes, single head or multi-head).
        masks: False checks only the case without a mask.
        hints: the checker's own ``Hints``, which counts the tries per mistake (a fresh one if
            None: every message is then the first tier).

    Returns:
        A ``Feedback``; the learner's RNG is left as it was (dropout included).
    """
    hints = Hints() if hints is None else hints
    with torch.random.fork_rng(devices=[]):  # a learner's dropout must not move the RNG
        return _check_layer(cls, spec, masks, hints)


def _check_layer(cls: object, spec: Spec, masks: bool, hints: Hints) -> Feedback:
    module = build(cls, spec)
    learner = inspect_layer(module, spec)
    gen = torch.Generator().manual_seed(_SEED + 1)
    x = torch.randn(BATCH, LENGTH, spec.d_model, generator=gen, dtype=torch.float64)
    cases = spec.masks() if masks else spec.masks()[:1]
    returns_weights, exact = True, True
    for case, mask in cases:
        shown = tr(case)  # the case's name, as the learner reads it
        result = run(learner, x, mask)
        if isinstance(result, str):
            bug = _square_bug(learner, spec)
            if bug is not None:
                symptom, where = BUGS[bug]
                return hints.wrong(bug, tr("With {case}: {symptom}", case=shown,
                                           symptom=sentence_inside(tr(symptom))), where=tr(where))
            return Feedback(False, tr("With {case}: {problem}", case=shown, problem=result))
        out, weights = result
        if tuple(out.shape) != spec.output_shape():
            return Feedback(False, tr("With {case}: the output should have shape {shape} (B, L, {size}), "
                                      "got {got}. Print the shapes after each step to see where it goes "
                                      "wrong.", case=shown, shape=spec.output_shape(),
                                      size="d_v" if spec.heads is None else "d_model", got=tuple(out.shape)))
        again = run(learner, x, mask)
        if isinstance(again, str) or not same(again[0], out.double()):
            return hints.wrong("random in eval", tr(RANDOM_IN_EVAL[0]), where=tr(RANDOM_IN_EVAL[1]))
        expected_out, expected_weights = reference(x, learner.params, mask, spec)
        if (case == cases[0][0] and learner.square_matrices
                and not same(out, expected_out, ROUND_OFF)):
            flipped = _read_matrices_transposed(module, spec, x, mask)
            if flipped is not None:
                learner, out, weights, expected_out, expected_weights = flipped
        if not same(out, expected_out, ROUND_OFF):
            bug = diagnose(learner.params, spec, x, mask, out)
            if bug is not None:
                symptom, where = BUGS[bug]
                return hints.wrong(bug, tr("With {case}: {symptom}", case=shown,
                                           symptom=sentence_inside(tr(symptom))),
                                   where=tr(where))
            if (weights is not None and tuple(weights.shape) == spec.weights_shape()
                    and same(weights, expected_weights, ROUND_OFF)):
                return hints.wrong("weighted sum", tr("With {case}: {symptom}", case=shown,
                                                      symptom=sentence_inside(tr(RIGHT_WEIGHTS_WRONG_SUM[0]))),
                                   where=tr(RIGHT_WEIGHTS_WRONG_SUM[1]))
            nan = [tr("It contains NaN.")] if bool(out.isnan().any()) else []
            if mask is None:
                return hints.wrong(
                    "unknown", sentences([tr("With no mask: your output differs from the chapter's "
                                             "attention, and not by one of the classic bugs this "
                                             "checker knows."), *nan,
                                          tr("More than one step may be wrong.")]),
                    where=tr("each step on its own, on a tiny input: the scores, the scaled scores, "
                             "the weights (each row sums to 1) and the output, against the formula"))
            return hints.wrong(
                "unknown mask", sentences([tr("Without a mask your output is right; with {case} it is "
                                              "not.", case=shown), *nan,
                                           tr("Check how forward applies the mask (mask == 0 is blocked).")]),
                where=tr("the line that applies the mask, and which of the scores' dimensions each "
                         "of the mask's dimensions meets"))
        exact = exact and same(out, expected_out)
        if weights is None:
            returns_weights = False
            continue
        if tuple(weights.shape) != spec.weights_shape():
            legend = "(B, L, L)" if spec.heads is None else tr("(B, H, L, L), one map per head")
            return Feedback(False, tr("With {case}: your output is right, but the weights should have "
                                      "shape {shape} {legend}, got {got}. Print the shape of the weights "
                                      "you return.", case=shown, shape=spec.weights_shape(),
                                      legend=legend, got=tuple(weights.shape)))
        if not same(weights, expected_weights, ROUND_OFF):
            return hints.wrong(
                "weights", tr("With {case}: your output is right, but the weights you return are "
                              "not the attention weights (after the softmax).", case=shown),
                where=tr("which tensor forward returns beside the output"))
    return Feedback(True, _verdict(type(module).__name__, learner, returns_weights, exact, masks))


def _square_bug(learner: Learner, spec: Spec) -> str | None:
    """For a layer that raised: the classic bug that runs only where L = d_k (``Spec.square_bugs``)
    and gives what the layer gives on such an input, or None."""
    x = spec.square_input()  # (B, d_k, E)
    result = run(learner, x, None)
    if isinstance(result, str):
        return None
    return diagnose(learner.params, spec, x, None, result[0], spec.square_bugs())


def _verdict(name: str, learner: Learner, returns_weights: bool, exact: bool, masks: bool) -> str:
    """What a right layer hears: the forms the checker found, and how closely it matches."""
    bound = f"{ROUND_OFF:.0e}".replace("e-0", "e-")  # 1e-5
    return tr("{name} ({naming}{form}, {bias}, {style}, returns {gives}) matches the reference "
              "{precision} {what}.",
              name=name,
              naming=tr(learner.naming),
              form=tr(", matrices used as {matrices}", matrices=learner.matrices) if learner.matrices else "",
              bias=(tr("with biases") if any(b is not None for _, b in learner.params.values())
                    else tr("no biases")),
              style="forward(q, k, v, mask)" if learner.article_call else "forward(x, mask)",
              gives=tr("output and weights") if returns_weights else tr("the output"),
              precision=(tr("in float64") if exact else
                         tr("to float32 round-off (below {bound}: some step runs in float32)", bound=bound)),
              what=(tr("with no mask, a causal mask and a padding mask") if masks
                    else tr("without a mask (masks come next)")))


def _read_matrices_transposed(module: nn.Module, spec: Spec, x: Tensor, mask: Tensor | None
                              ) -> tuple[Learner, Tensor, Tensor | None, Tensor, Tensor] | None:
    """For square raw matrices: if reading them as x @ W.T makes the first case right, the
    learner (re-inspected that way), its output and weights, and the reference's; else None
    (and the matrices are written back as x @ W)."""
    flipped = inspect_layer(module, spec, flip_square=True)  # the shapes passed once: no refusal
    result = run(flipped, x, mask)
    if not isinstance(result, str):
        expected_out, expected_weights = reference(x, flipped.params, mask, spec)
        if same(result[0], expected_out, ROUND_OFF):
            return flipped, result[0], result[1], expected_out, expected_weights
    inspect_layer(module, spec)  # back to x @ W, the course's reading
    return None


def describe_error(err: BaseException) -> str:
    """'TypeError: first line of the message.' and, for a known message, what it usually means."""
    lines = str(err).strip().splitlines()
    text = lines[0].rstrip(".") if lines else tr("(no message)")
    hint = next((tr(h) for keys, h in ERROR_HINTS if any(k in str(err) for k in keys)), "")
    return f"{type(err).__name__}: {text}. {hint}".rstrip()
