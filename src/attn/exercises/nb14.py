"""Checkers for notebook 14 (multi-head attention as today's models run it).

``check_grouped_query_attention``: the learner's ``grouped_query_attention(q, k, v, mask=None)``,
their notebook-05 attention with fewer heads of keys and values than of queries (GQA), for
H query heads q (B, H, L, D) and H_kv heads of keys and values k, v (B, H_kv, S, D): query head
h reads key/value head h // (H / H_kv). It returns the output (B, H, L, D), or (output,
weights (B, H, L, S)). Masks are bool, True = may attend, broadcastable to (B, H, L, S).

The checker runs it on seeded float64 inputs and compares with the package's attention on the
keys and values repeated for their groups (``attn.functional.repeat_kv``). Any correct way
passes (``repeat_interleave``, ``expand`` then ``reshape``, a grouped view of the queries,
``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``); each classic slip
is recognised by computing what it gives and gets its symptom, then on a second try where to
look (``GQA_HINTS``): keys or values repeated in the wrong order (``repeat`` or ``tile``, so
that heads read another group's keys), a mask over the queries instead of the keys, a padding
mask broadcast over the key/value groups instead of the batch, and a group count that does
not divide (the function must raise a ValueError naming ``num_kv_heads``).

Shape legend: B batch, H query heads, H_kv key/value heads, G = H / H_kv, L queries, S keys,
D head size.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..functional import repeat_kv, scaled_dot_product_attention
from ..language import mark, tr
from ..lessons.learner_layer import split_output
from ..masks import causal_mask, padding_mask
from ._base import Feedback, Hints, Refused, as_function, checker, sentence_inside
from ._layer_checker import describe_error

__all__ = ["GQA_SETUP", "GQA_HINTS", "SLIPS", "check_grouped_query_attention"]

#: The sizes the checker tries: B = H_kv = 2, so that a padding mask broadcast over the
#: key/value groups runs (and can be named) instead of raising.
GQA_SETUP: dict[str, int] = {"batch": 2, "heads": 4, "kv_heads": 2, "length": 5, "head_dim": 3}
#: Query heads and key/value heads that do not divide: the function must refuse them.
NOT_DIVIDING = (6, 4)
ROUND_OFF = 1e-6  # float64 computed any correct way agrees to ~1e-15; every slip differs by > 1e-2
#: The tiers of ``check_grouped_query_attention`` (``GQA_HINTS.reset()`` starts again).
GQA_HINTS = Hints()

#: Each slip: (its symptom, where to look). Neither gives the code of the fix.
SLIPS: dict[str, tuple[str, str]] = {
    "keys tiled": (
        mark("Your keys are repeated in the wrong order: query head h reads key head h % H_kv, as "
             "`repeat` or `tile` lay them out, so the heads of one group do not share their keys. Query "
             "heads 0 and 1 should both read key head 0, heads 2 and 3 key head 1."),
        mark("the order in which the key heads are repeated for their groups")),
    "values tiled": (
        mark("Your keys are shared by the right heads, but your values are repeated in the wrong order "
             "(as `repeat` or `tile` lay them out): query head h averages the values of head h % H_kv."),
        mark("the order in which the value heads are repeated, next to the keys'")),
    "keys and values tiled": (
        mark("Your keys and values are repeated in the wrong order: query head h reads key/value head "
             "h % H_kv, as `repeat` or `tile` lay them out, so the heads of one group do not share their "
             "keys and values. Query heads 0 and 1 should both read head 0, heads 2 and 3 head 1."),
        mark("the order in which the key and value heads are repeated for their groups")),
    "mask over the queries": (
        mark("Your mask is lined up with the scores' rows (queries) instead of their columns (keys): "
             "a padding mask blocks the padded queries and lets every query read the padding keys."),
        mark("how the mask's last two dimensions line up with the scores' (queries, keys)")),
    "mask over the groups": (
        mark("Your padding mask meets the key/value groups instead of the sequences: sequence b's padding "
             "is applied to group b of every sequence. A (B, 1, 1, S) mask against grouped scores of shape "
             "(B, H_kv, G, L, S) broadcasts that way."),
        mark("the shape of the mask where it meets the grouped scores, dimension by dimension")),
    "not refused": (
        mark("With {H} query heads and {H_kv} key/value heads, which do not divide, your function "
             "returned a result: it should refuse them."),
        mark("the first lines of your function: raise a ValueError whose message names num_kv_heads")),
    "not named": (
        mark("With {H} query heads and {H_kv} key/value heads your function raises a ValueError, but its "
             "message does not name num_kv_heads: the learner who sees it should know which number to fix."),
        mark("the message of your ValueError")),
    "raised inside": (
        mark("With {H} query heads and {H_kv} key/value heads your function fails inside the computation "
             "({error}): check that the key/value heads divide the query heads before computing."),
        mark("the first lines of your function: raise a ValueError whose message names num_kv_heads")),
}


def _inputs(H: int, H_kv: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """Seeded float64 q (B, H, L, D), k and v (B, H_kv, L, D)."""
    s = GQA_SETUP
    g = torch.Generator().manual_seed(seed)
    B, L, D = s["batch"], s["length"], s["head_dim"]
    return tuple(torch.randn(B, n, L, D, generator=g, dtype=torch.float64) for n in (H, H_kv, H_kv))


def _cases() -> list[tuple[str, int, int, Tensor | None]]:
    """(case, H, H_kv, mask): the main setting with each kind of mask, then MQA and MHA."""
    s = GQA_SETUP
    B, H, H_kv, L = s["batch"], s["heads"], s["kv_heads"], s["length"]
    per_head = torch.rand(B, H, L, L, generator=torch.Generator().manual_seed(3)) > 0.5  # (B, H, L, S)
    per_head[..., 0] = True  # every query sees at least one key
    padding = padding_mask([L, L - 2], L)  # (B, 1, 1, S)
    return [(mark("no mask"), H, H_kv, None), (mark("a causal mask"), H, H_kv, causal_mask(L)),
            (mark("a padding mask"), H, H_kv, padding), (mark("a mask per head"), H, H_kv, per_head),
            (mark("one key/value head and a padding mask"), H, 1, padding),
            (mark("as many key/value heads as query heads"), H, H, causal_mask(L))]


def _attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, keys: str = "interleave",
            values: str = "interleave") -> Tensor:
    """The output (B, H, L, D) with the key and value heads repeated ``"interleave"`` (head h
    reads h // G: right) or ``"tile"`` (head h reads h % H_kv: the slip)."""
    G = q.shape[1] // k.shape[1]
    k = repeat_kv(k, G) if keys == "interleave" else k.repeat(1, G, 1, 1)  # (B, H, S, D)
    v = repeat_kv(v, G) if values == "interleave" else v.repeat(1, G, 1, 1)
    return scaled_dot_product_attention(q, k, v, mask)[0]


def _over_the_groups(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
    """The grouped form, scores (B, H_kv, G, L, S), with the mask broadcast as it comes: a
    (B, 1, 1, S) mask meets the groups' dimension."""
    B, H, L, D = q.shape
    H_kv = k.shape[1]
    qg = q.view(B, H_kv, H // H_kv, L, D)  # (B, H_kv, G, L, D): consecutive heads share a group
    out, _ = scaled_dot_product_attention(qg, k[:, :, None], v[:, :, None], mask)  # (B, H_kv, G, L, D)
    return out.reshape(B, H, L, D)


def _slips(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> dict[str, Callable[[], Tensor]]:
    transposed = None if mask is None else mask.transpose(-2, -1)
    return {
        "keys and values tiled": lambda: _attend(q, k, v, mask, keys="tile", values="tile"),
        "keys tiled": lambda: _attend(q, k, v, mask, keys="tile"),
        "values tiled": lambda: _attend(q, k, v, mask, values="tile"),
        "mask over the queries": lambda: _attend(q, k, v, transposed),
        "mask over the groups": lambda: _over_the_groups(q, k, v, mask),
    }


def _run(fn: Callable[..., Any], args: tuple[Tensor, ...], case: str) -> tuple[Tensor, Tensor | None]:
    """The learner's (output, weights or None) on ``args``.

    Raises:
        Refused: not written yet, raised, or returned something else than a tensor or a pair.
    """
    try:
        result = fn(*(a.clone() for a in args))
    except NotImplementedError:
        raise Refused(tr("Not implemented yet: replace the `raise NotImplementedError` line."))
    except Exception as err:  # the learner's code: any error becomes a reply
        raise Refused(tr("With {case}: your function raised {error}", case=tr(case), error=describe_error(err)))
    got = split_output(result)
    if got is None:
        raise Refused(tr("Return the output (B, H, L, D), or the pair (output, weights)."))
    return got


def _shape(name: str, t: Tensor, shape: tuple[int, ...], case: str) -> Tensor:
    if tuple(t.shape) != shape:
        raise Refused(tr("With {case}: {name} should have shape {shape}, got {got}.",
                         case=tr(case), name=name, shape=shape, got=tuple(t.shape)))
    return t.detach().double()


def _close(a: Tensor, b: Tensor) -> bool:
    return bool((a - b).abs().max() <= ROUND_OFF)


def _check_refusal(fn: Callable[..., Any]) -> Feedback | None:
    """None if the learner's function refuses heads that do not divide with a ValueError naming
    num_kv_heads; else the slip's reply."""
    H, H_kv = NOT_DIVIDING
    try:
        fn(*_inputs(H, H_kv, seed=7))
    except ValueError as err:
        if "num_kv_heads" in str(err):
            return None
        mistake, error = "not named", ""
    except Exception as err:  # a torch error from inside: no check before computing
        lines = str(err).strip().splitlines()
        mistake, error = "raised inside", f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    else:
        mistake, error = "not refused", ""
    symptom, where = SLIPS[mistake]
    return GQA_HINTS.wrong(mistake, tr(symptom, H=H, H_kv=H_kv, error=error), where=tr(where))


@checker
def check_grouped_query_attention(fn: Any) -> Feedback:
    """The learner's ``grouped_query_attention(q, k, v, mask=None)`` against the package's, on
    the cases of ``_cases()`` (4 query heads sharing 2 key/value heads with no mask, a causal
    mask, a padding mask and a mask per head; 1 key/value head; 4), then 6 query heads with 4
    key/value heads, which it must refuse (ValueError naming ``num_kv_heads``).

    The output must agree to ``ROUND_OFF``, and the weights too if it returns them. A slip of
    ``SLIPS`` hears its symptom, then on a second try where to look; never the code.
    """
    fn = as_function(fn, "grouped_query_attention(q, k, v, mask=None)")
    s = GQA_SETUP
    gave_weights = True
    for i, (case, H, H_kv, mask) in enumerate(_cases()):
        q, k, v = _inputs(H, H_kv, seed=i)
        args = (q, k, v) if mask is None else (q, k, v, mask)
        out, weights = _run(fn, args, case)
        B, L, D = s["batch"], s["length"], s["head_dim"]
        out = _shape(tr("the output"), out, (B, H, L, D), case)
        want, want_weights = scaled_dot_product_attention(q, repeat_kv(k, H // H_kv), repeat_kv(v, H // H_kv), mask)
        if weights is None:
            gave_weights = False
        elif not _close(_shape(tr("the weights"), weights, (B, H, L, L), case), want_weights):
            if _close(out, want):
                return GQA_HINTS.wrong("weights", tr("With {case}: your output is right, but your weights are not "
                                                     "those it was made with.", case=tr(case)),
                                       where=tr("the weights your function returns"))
        if _close(out, want):
            continue
        for mistake, slip in _slips(q, k, v, mask).items():
            try:
                wrong = slip()
            except (RuntimeError, ValueError):  # this slip cannot run on these shapes
                continue
            if wrong.shape == out.shape and _close(out, wrong):
                symptom, where = SLIPS[mistake]
                return GQA_HINTS.wrong(mistake, tr("With {case}: {symptom}", case=tr(case),
                                                   symptom=sentence_inside(tr(symptom))), where=tr(where))
        return GQA_HINTS.wrong("other", tr("With {case}: your output differs from grouped-query attention's, "
                                           "and not by one of the slips this checker knows.", case=tr(case)),
                               where=tr("each query head against the key/value head of its group: head h "
                                        "reads head h // (H / H_kv)"))
    refusal = _check_refusal(fn)
    if refusal is not None:
        return refusal
    what = (tr("Your output and weights agree") if gave_weights else
            tr("Your output agrees (your function returns no weights, so none were compared)"))
    return Feedback(True, tr("{what} with grouped-query attention's for 4 query heads sharing 2 key/value "
                             "heads, with no mask, a causal mask, a padding mask and a mask per head, and "
                             "sharing 1 and 4; and your function refuses 6 query heads with 4 key/value heads "
                             "with a ValueError that names num_kv_heads.", what=what))
