"""A learner's own attention layer, written in notebook 05, used where the package's layer goes.

Notebook 05's learner writes ``MultiHeadAttention(d_model, n_heads)`` in one of the forms its
checker, ``attn.exercises.nb05.check_multi_head_attention``, accepts: ``forward(x, mask=None)``
as the chapter writes it or ``forward(q, k, v, mask=None)`` as the article does, returning
``(output, weights)`` or the output alone. ``call_style`` reads from forward's signature which
form a layer has, and ``call_arguments`` and ``split_output`` call it and read what it gives
back: the checker calls a learner's layer through them, and so do the models.

The package's models (``attn.lessons.trained.tiny``, ``attn.lessons.trained.seq2seq``) call attention the
package's way, ``layer(x)``, ``layer(x, causal=True)`` or ``layer(x, memory)`` for
cross-attention, and read ``(output, weights or None)``. ``LearnerAttention`` lets a learner's
layer be called that way; ``make_attention(attention, d_model, num_heads)`` builds the
package's layer or wraps a learner's.

Cross-attention through a layer that takes one sequence (``forward(x, mask)``): the layer
attends over the queries' tokens followed by the memory's, ``[X; M]``, under a mask that lets
every row see the memory's columns only. Each projection acts on each token alone, so the
rows of X get the queries X W^Q, the memory gets the keys M W^K and values M W^V, and the
first L rows of the output, and the (L, S) corner of the weights, are exactly the
cross-attention's. (The memory's own rows are computed and dropped.)

``find_projections`` reads how a layer names its projections (the chapter's ``W_q``..., the
article's ``q_linear``..., Raschka's ``W_query``..., or one fused ``qkv``), from its attributes:
the checker writes known weights into them, and the models read a layer's heads through them.

Masks follow the chapter and the package at once: bool, ``mask == 0`` (False) is blocked,
True = may attend.

Shape legend: B batch, L queries, S keys and values (the memory), E = d_model, H heads.
"""
from __future__ import annotations

import inspect

import torch
from torch import Tensor, nn

from .._checks import shape_str
from ..language import mark
from ..masks import causal_mask
from ..modules import MultiHeadAttention

__all__ = ["call_style", "call_arguments", "split_output", "LearnerAttention", "make_attention",
           "NAMINGS", "FUSED_NAMES", "OUT_NAMES", "find_projections", "attribute_set"]

#: Projection names, by role (query, key, value, output): the chapter's, the article's and
#: Raschka's (LLMs-from-scratch, chapter 3).
NAMINGS: dict[str, dict[str, str]] = {
    mark("the chapter's names"): {"q": "W_q", "k": "W_k", "v": "W_v", "o": "W_o"},
    mark("the article's names"): {"q": "q_linear", "k": "k_linear", "v": "v_linear", "o": "out_linear"},
    mark("Raschka's names"): {"q": "W_query", "k": "W_key", "v": "W_value", "o": "out_proj"},
}
#: Names of one fused projection that makes q, k and v side by side (in that order).
FUSED_NAMES: tuple[str, ...] = ("qkv", "W_qkv", "qkv_proj")
#: The naming of a layer with one fused projection.
FUSED = mark("a fused qkv projection")
#: Names accepted for the output projection, whatever the names of q, k, v.
OUT_NAMES: tuple[str, ...] = ("W_o", "out_linear", "out_proj")


def find_projections(module: nn.Module) -> tuple[str, dict[str, str]] | None:
    """How ``module`` names its query, key and value projections, read from its attributes
    (never by running it): (the naming, role -> attribute name).

    The naming is the first of ``NAMINGS`` with a projection that is set (not None or ``...``,
    as a skeleton leaves it), else the first with such an attribute at all: its roles "q", "k"
    and "v". Else one fused projection of ``FUSED_NAMES``: (``FUSED``, {"qkv": its name}).
    None if the layer has neither.
    """
    naming = next((n for test in (attribute_set, hasattr) for n, names in NAMINGS.items()
                   if any(test(module, names[r]) for r in "qkv")), None)
    if naming is not None:
        return naming, {r: NAMINGS[naming][r] for r in "qkv"}
    fused = next((n for n in FUSED_NAMES if hasattr(module, n)), None)
    return None if fused is None else (FUSED, {"qkv": fused})


def attribute_set(module: nn.Module, attr: str) -> bool:
    """Whether ``module.attr`` is there and neither None nor ``...`` (a skeleton's blanks)."""
    return getattr(module, attr, None) not in (None, Ellipsis)

MaskPlace = str | int | None  # a keyword's name, a positional index, or None (no mask argument)


def call_style(module: nn.Module) -> tuple[bool, MaskPlace]:
    """How ``module.forward`` takes its inputs, read from its signature (never its source).

    Returns:
        (takes_qkv, mask_place): whether forward takes q, k, v (three required positional
        arguments, as the article's ``forward(q, k, v, mask=None)``) rather than one x; and
        where the mask goes: the keyword ``"mask"``, a positional index (1 after x, 3 after
        q, k, v), or None when forward takes no mask.
    """
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return False, 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in kinds]
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return False, 1
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    takes_qkv = len(required) >= 3
    if any(p.name == "mask" and p.kind != inspect.Parameter.POSITIONAL_ONLY for p in params):
        return takes_qkv, "mask"
    index = 3 if takes_qkv else 1
    return takes_qkv, index if len(positional) > index else None


def call_arguments(takes_qkv: bool, mask_place: MaskPlace, x: Tensor, memory: Tensor,
                   mask: Tensor | None) -> tuple[list[object], dict[str, object]] | None:
    """The (args, kwargs) of one call: ``(x, mask)`` or ``(x, memory, memory, mask)``.

    Returns None when a mask is given and forward takes none.
    """
    args: list[object] = [x, memory, memory] if takes_qkv else [x]
    kwargs: dict[str, object] = {}
    if isinstance(mask_place, str):
        kwargs[mask_place] = mask
    elif isinstance(mask_place, int):
        args.append(mask)
    elif mask is not None:
        return None
    return args, kwargs


def split_output(result: object) -> tuple[Tensor, Tensor | None] | None:
    """What a layer returned, as (output, weights or None): a tensor alone is the output.
    None when it is neither a tensor nor a pair (tensor, tensor or None)."""
    if isinstance(result, Tensor):
        return result, None
    if (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], Tensor)
            and (result[1] is None or isinstance(result[1], Tensor))):
        return result[0], result[1]
    return None


class LearnerAttention(nn.Module):
    """A learner's multi-head layer, called as the package's ``MultiHeadAttention`` is.

    Args:
        layer: the learner's layer, built as ``cls(d_model, num_heads)``: ``forward(x, mask)``
            or ``forward(q, k, v, mask)``, returning (output, weights) or the output only.
        d_model: E.
        num_heads: H.
    """

    def __init__(self, layer: nn.Module, d_model: int, num_heads: int) -> None:
        super().__init__()
        if not isinstance(layer, nn.Module):
            raise TypeError(f"layer: expected an nn.Module, got {type(layer).__name__}")
        self.layer = layer
        self.d_model, self.num_heads = d_model, num_heads
        self.takes_qkv, self.mask_place = call_style(layer)

    def forward(self, x: Tensor, memory: Tensor | None = None, *, mask: Tensor | None = None,
                causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Self-attention of ``x`` (memory None), or cross-attention from ``x`` to ``memory``.

        Args:
            x: (B, L, E), the queries' tokens.
            memory: (B, S, E), the keys' and values' tokens; None for self-attention.
            mask: bool, broadcastable to (B, H, L, S); True = may attend.
            causal: query i sees keys 0..i only (combined with ``mask``).

        Returns:
            output: (B, L, E)
            weights: (B, H, L, S), or None if the layer returns its output only.
        """
        L = x.shape[1]
        S = L if memory is None else memory.shape[1]
        if causal:
            seen = causal_mask(L, S, device=x.device)  # (L, S): query i sees keys 0..i
            mask = seen if mask is None else mask & seen
        if memory is None:
            return self.attend(x, x, mask)
        if self.takes_qkv:
            return self.attend(x, memory, mask)
        return self.attend_joined(x, memory, mask)

    def attend(self, x: Tensor, memory: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """One call of the learner's layer, its output checked: (B, L, E), (B, H, L, S) or None."""
        call = call_arguments(self.takes_qkv, self.mask_place, x, memory, mask)
        if call is None:
            raise ValueError(f"attention: {type(self.layer).__name__}.forward takes no mask, and this "
                             "model needs one (causal, or cross-attention): forward(x, mask=None)")
        args, kwargs = call
        result = split_output(self.layer(*args, **kwargs))
        if result is None:
            raise TypeError(f"attention: {type(self.layer).__name__}.forward should return the output, "
                            "or (output, weights)")
        out, weights = result
        (B, L, E), S = x.shape, memory.shape[1]
        if tuple(out.shape) != (B, L, E):
            raise ValueError(f"attention: {type(self.layer).__name__} should give an output of shape "
                             f"(B, L, E) = {(B, L, E)}, got {shape_str(out)}")
        if weights is not None and tuple(weights.shape) != (B, self.num_heads, L, S):
            raise ValueError(f"attention: {type(self.layer).__name__} should give weights of shape "
                             f"(B, H, L, S) = {(B, self.num_heads, L, S)}, got {shape_str(weights)}")
        return out, weights

    def attend_joined(self, x: Tensor, memory: Tensor, mask: Tensor | None
                      ) -> tuple[Tensor, Tensor | None]:
        """Cross-attention through a layer that takes one sequence: self-attention over
        [x; memory], every row seeing the memory's columns only (see the module's docstring)."""
        L, S = x.shape[1], memory.shape[1]
        joined = torch.cat([x, memory], dim=1)  # (B, L + S, E): the queries' tokens, then the memory's
        sees_memory = torch.ones(L, S, dtype=torch.bool, device=x.device)  # (L, S)
        if mask is not None:
            sees_memory = torch.broadcast_to(mask, (*mask.shape[:-2], L, S))  # (..., L, S)
        batch = sees_memory.shape[:-2]
        rows = torch.cat([sees_memory, sees_memory.new_ones(*batch, S, S)], dim=-2)  # (..., L + S, S)
        joined_mask = torch.cat([rows.new_zeros(*batch, L + S, L), rows], dim=-1)  # (..., L + S, L + S)
        out, weights = self.attend(joined, joined, joined_mask)  # (B, L + S, E), (B, H, L + S, L + S)
        return out[:, :L], None if weights is None else weights[..., :L, L:]  # (B, L, E), (B, H, L, S)


def make_attention(attention: type[nn.Module], d_model: int, num_heads: int) -> nn.Module:
    """``attention(d_model, num_heads)``, called the package's way.

    Args:
        attention: ``attn.MultiHeadAttention`` (built as it is), or any class that passes
            ``attn.exercises.nb05.check_multi_head_attention`` (wrapped in
            ``LearnerAttention``).
        d_model, num_heads: E and H.

    Returns:
        A module called as ``layer(x)``, ``layer(x, causal=True)`` or ``layer(x, memory)``,
        returning (output (B, L, E), weights (B, H, L, S) or None).
    """
    if isinstance(attention, nn.Module):
        raise TypeError(f"attention: expected a class, got an instance of {type(attention).__name__}: "
                        "pass the class itself, the model builds it as attention(d_model, num_heads)")
    if not (inspect.isclass(attention) and issubclass(attention, nn.Module)):
        raise TypeError(f"attention: expected an nn.Module class such as attn.MultiHeadAttention, "
                        f"got {type(attention).__name__} {attention!r:.60}")
    if attention is MultiHeadAttention:
        return MultiHeadAttention(d_model, num_heads)
    return LearnerAttention(attention(d_model, num_heads), d_model, num_heads)
