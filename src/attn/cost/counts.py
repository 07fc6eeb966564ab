"""Shapes, parameters and multiply-adds of attention layers: is h heads as cheap as one?

Everything is counted for one sequence (batch size 1) of n tokens in self-attention, no mask.
A multiply-add (MAC) is one ``a * b + c``; a matrix product (m, k) @ (k, p) takes m k p of
them, and ``torch.utils.flop_counter`` reports it as 2 m k p FLOPs. Bias additions and the
softmax's exponentials are not multiply-adds; the softmax is counted separately by the
number of scores it normalises.

Shape legend: n tokens, E = d_model, H heads, D = E // H per-head size (d_k = d_v = D).
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import torch
from torch import Tensor, nn
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from .._checks import check_positive_int, check_rank, check_tensor, shape_str
from ..modules import MultiHeadAttention

__all__ = [
    "LayerCost",
    "attention_cost",
    "multi_head_cost",
    "single_head_cost",
    "CostRow",
    "compare_heads",
    "format_rows",
    "count_parameters",
    "count_matmul_macs",
    "valid_num_heads",
    "trace_multi_head",
]


@dataclass(frozen=True)
class LayerCost:
    """Parameters, multiply-adds and softmax size of one attention layer on n tokens.

    Attributes:
        n, d_model, num_heads, d_k, d_v: the layer's sizes (d_k, d_v per head).
        params_qkv: entries of W^Q, W^K, W^V (with biases if any).
        params_out: entries of W^O (with its bias); 0 for a layer without output projection.
        macs_qkv: X W^Q, X W^K, X W^V.
        macs_scores: Q_i K_i^T over all heads.
        macs_mix: weights_i V_i over all heads.
        macs_out: Concat(heads) W^O.
        softmax_entries: scores the softmax normalises = attention weights to store, H n^2.
    """

    n: int
    d_model: int
    num_heads: int
    d_k: int
    d_v: int
    params_qkv: int
    params_out: int
    macs_qkv: int
    macs_scores: int
    macs_mix: int
    macs_out: int
    softmax_entries: int

    @property
    def params(self) -> int:
        return self.params_qkv + self.params_out

    @property
    def macs(self) -> int:
        return self.macs_qkv + self.macs_scores + self.macs_mix + self.macs_out


def attention_cost(
    n: int,
    d_model: int,
    num_heads: int = 1,
    *,
    d_k: int | None = None,
    d_v: int | None = None,
    output_projection: bool = True,
    bias: bool = False,
) -> LayerCost:
    """Count a layer of ``num_heads`` heads, each with query/key size d_k and value size d_v.

    Args:
        n: tokens in the sequence.
        d_model: E, the size of each input vector (and of the output when projected).
        num_heads: H.
        d_k, d_v: per-head sizes; default E // H (then E must be a multiple of H).
        output_projection: whether Concat(heads) is multiplied by W^O (H d_v, E).
        bias: whether each projection has a bias vector.
    """
    for name, v in (("n", n), ("d_model", d_model), ("num_heads", num_heads)):
        check_positive_int(name, v)
    if d_k is None or d_v is None:
        if d_model % num_heads:
            raise ValueError(f"d_model: expected a multiple of num_heads={num_heads}, got {d_model}")
    d_k = d_model // num_heads if d_k is None else check_positive_int("d_k", d_k)
    d_v = d_model // num_heads if d_v is None else check_positive_int("d_v", d_v)
    H = num_heads
    qkv_out = H * (2 * d_k + d_v)  # output columns of W^Q, W^K, W^V together
    return LayerCost(
        n=n, d_model=d_model, num_heads=H, d_k=d_k, d_v=d_v,
        params_qkv=d_model * qkv_out + (qkv_out if bias else 0),
        params_out=(H * d_v * d_model + (d_model if bias else 0)) if output_projection else 0,
        macs_qkv=n * d_model * qkv_out,
        macs_scores=H * n * n * d_k,  # per head (n, d_k) @ (d_k, n)
        macs_mix=H * n * n * d_v,  # per head (n, n) @ (n, d_v)
        macs_out=n * H * d_v * d_model if output_projection else 0,
        softmax_entries=H * n * n,
    )


def multi_head_cost(n: int, d_model: int, num_heads: int, *, bias: bool = False) -> LayerCost:
    """``attn.MultiHeadAttention(d_model, num_heads)``: H heads of size E // H, then W^O."""
    return attention_cost(n, d_model, num_heads, bias=bias)


def single_head_cost(n: int, d_model: int, *, output_projection: bool = False) -> LayerCost:
    """One full-size head, d_k = d_v = d_model: the chapter's ``SelfAttention(E, E, E)``
    (no W^O) by default, or with an output projection (= multi-head with H = 1)."""
    return attention_cost(n, d_model, 1, d_k=d_model, d_v=d_model,
                          output_projection=output_projection)


@dataclass(frozen=True)
class CostRow:
    """One quantity for the layers being compared."""

    quantity: str
    values: tuple[int, ...]

    @property
    def equal(self) -> bool:
        return len(set(self.values)) == 1


_QUANTITIES: tuple[tuple[str, Callable[[LayerCost], int]], ...] = (
    ("params W^Q,W^K,W^V", lambda c: c.params_qkv),
    ("params W^O", lambda c: c.params_out),
    ("params total", lambda c: c.params),
    ("MACs X W (Q, K, V)", lambda c: c.macs_qkv),
    ("MACs Q K^T", lambda c: c.macs_scores),
    ("MACs weights V", lambda c: c.macs_mix),
    ("MACs concat W^O", lambda c: c.macs_out),
    ("MACs total", lambda c: c.macs),
    ("softmax entries", lambda c: c.softmax_entries),
)


def compare_heads(n: int, d_model: int, num_heads: int) -> tuple[tuple[str, ...], list[CostRow]]:
    """Compare H heads of size E // H with one full-size head, with and without W^O.

    Returns:
        (column names, rows): columns are the chapter's single head without W^O, one
        full-size head with W^O, and H heads with W^O.
    """
    layers = (
        ("1 head, no W^O", single_head_cost(n, d_model)),
        ("1 head + W^O", single_head_cost(n, d_model, output_projection=True)),
        (f"{num_heads} heads + W^O", multi_head_cost(n, d_model, num_heads)),
    )
    names = tuple(name for name, _ in layers)
    rows = [CostRow(q, tuple(f(c) for _, c in layers)) for q, f in _QUANTITIES]
    return names, rows


def format_rows(names: tuple[str, ...], rows: list[CostRow]) -> str:
    """A fixed-width text table of ``compare_heads``' result."""
    w0 = max(len(r.quantity) for r in rows) + 2
    widths = [max(len(nm), *(len(f"{r.values[i]:,}") for r in rows)) + 2 for i, nm in enumerate(names)]
    lines = ["".ljust(w0) + "".join(nm.rjust(w) for nm, w in zip(names, widths))]
    for r in rows:
        lines.append(r.quantity.ljust(w0) + "".join(f"{v:,}".rjust(w) for v, w in zip(r.values, widths)))
    return "\n".join(lines)


def count_parameters(module: nn.Module) -> int:
    """Entries in all of a module's parameters (what ``sum(p.numel() ...)`` gives)."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module: expected an nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters())


@contextmanager
def _eager_flop_dispatch() -> Iterator[None]:
    """Let ``FlopCounterMode`` count without importing ``torch._dynamo`` (seconds).

    The counter's ``__torch_dispatch__`` is wrapped in ``torch._disable_dynamo``, which on its
    first call imports ``torch._dynamo`` to build ``torch._dynamo.disable(fn)``. That wrapper
    only matters while dynamo is compiling; if ``torch._dynamo`` is not even imported nothing
    can be compiling, so for the duration of the block the wrapper's cache slot is pointed at
    the function itself (the counting is unchanged), then cleared again. If torch changes
    these internals, or dynamo is already loaded, this does nothing."""
    fn = getattr(getattr(getattr(flop_counter, "_FlopCounterMode", None), "__torch_dispatch__", None),
                 "__wrapped__", None)
    if fn is None or "torch._dynamo" in sys.modules or getattr(fn, "__dynamo_disable", None) is not None:
        yield
        return
    setattr(fn, "__dynamo_disable", fn)
    try:
        yield
    finally:
        if getattr(fn, "__dynamo_disable", None) is fn:
            delattr(fn, "__dynamo_disable")


def count_matmul_macs(fn: Callable[..., object], *args: object) -> dict[str, int]:
    """Run ``fn(*args)`` under ``torch.utils.flop_counter.FlopCounterMode``; MACs = FLOPs / 2.

    Returns:
        operator name (e.g. "aten.mm", "aten.bmm") -> multiply-adds, plus "total".
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable (a module or function), got {type(fn).__name__}")
    with torch.no_grad(), _eager_flop_dispatch(), FlopCounterMode(display=False) as counter:
        fn(*args)
    counts = {str(op): int(f) // 2 for op, f in counter.get_flop_counts().get("Global", {}).items()}
    counts["total"] = int(counter.get_total_flops()) // 2
    return counts


def valid_num_heads(d_model: int, *, max_heads: int | None = None) -> tuple[int, ...]:
    """Head counts H that split d_model evenly (the divisors of d_model), up to ``max_heads``."""
    check_positive_int("d_model", d_model)
    if max_heads is not None:
        check_positive_int("max_heads", max_heads)
    top = d_model if max_heads is None else min(d_model, max_heads)
    return tuple(h for h in range(1, top + 1) if d_model % h == 0)


def trace_multi_head(mha: MultiHeadAttention, x: Tensor) -> list[tuple[str, Tensor]]:
    """Run ``mha(x)`` once and keep every intermediate tensor of its forward pass.

    Forward hooks on the four projections record what goes into and comes out of them, so
    the steps are the module's own (``project``, per-head attention, ``combine``), not a
    second copy of them.

    Args:
        mha: an ``attn.MultiHeadAttention``.
        x: (B, n, E) inputs (self-attention, no mask).

    Returns:
        [(step, tensor)] in order: X (B, n, E); Q, K, V = X W (B, n, E); their heads
        (B, H, n, D); weights (B, H, n, n); heads out (B, H, n, D); concat (B, n, E);
        output = concat W^O (B, n, E). The last equals ``mha(x)[0]``.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha: expected attn.MultiHeadAttention, got {type(mha).__name__}")
    check_tensor("x", x)
    check_rank("x", x, 3, "(B, n, E)")
    if x.shape[-1] != mha.d_model:
        raise ValueError(f"x: expected last dim E={mha.d_model}, got shape {shape_str(x)}")
    seen: dict[str, tuple[Tensor, Tensor]] = {}  # projection name -> (its input, its output)

    def keep(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
            seen[name] = (inputs[0], output)
        return hook

    handles = [getattr(mha, name).register_forward_hook(keep(name)) for name in ("W_q", "W_k", "W_v", "W_o")]
    try:
        output, weights = mha(x)  # (B, n, E), (B, H, n, n)
    finally:
        for handle in handles:
            handle.remove()
    q, k, v = seen["W_q"][1], seen["W_k"][1], seen["W_v"][1]  # (B, n, E) each
    concat = seen["W_o"][0]  # (B, n, E), what W^O received
    return [
        ("X", x), ("Q = X W^Q", q), ("K = X W^K", k), ("V = X W^V", v),
        ("Q split into heads", mha.split_heads(q)), ("K split into heads", mha.split_heads(k)),
        ("V split into heads", mha.split_heads(v)),  # (B, n, E) -> (B, H, n, D)
        ("weights per head", weights),
        ("head outputs", mha.split_heads(concat)),  # (B, n, E) -> (B, H, n, D): concat, undone
        ("concat(heads)", concat), ("concat W^O", output),
    ]
