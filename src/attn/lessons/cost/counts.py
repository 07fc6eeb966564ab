"""What attention costs, counted exactly: parameters, multiply-adds and the attention weights.

A multiply-add (MAC) is one ``a * b + c``; a matrix product (m, k) @ (k, p) takes m k p of
them (2 m k p floating-point operations, FLOPs). Bias additions and the softmax's
exponentials are not multiply-adds; the softmax is counted by the number of scores it
normalises, which is also the number of weights to store.

``attention_cost`` counts from the sizes alone; ``count_ops`` counts the torch calls a piece
of code really makes, from the shapes of its tensors, so that the two can be compared.

Shape legend: L queries, S keys (L = S = n in self-attention), E = d_model, H heads,
d_k, d_v the per-head sizes (E // H by default), B sequences in a batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ..._checks import check_bool, check_positive_int, check_rank, check_tensor, shape_str
from ..._text import ljust, rjust, width
from ...language import mark, tr
from ...modules import MultiHeadAttention

__all__ = [
    "AttentionCost",
    "attention_cost",
    "multi_head_cost",
    "single_head_cost",
    "CostRow",
    "compare_heads",
    "format_rows",
    "count_parameters",
    "OpCount",
    "count_ops",
    "valid_num_heads",
    "trace_multi_head",
]


# --- counted from the sizes -------------------------------------------------------------------

@dataclass(frozen=True)
class AttentionCost:
    """Parameters, multiply-adds and weights of one attention layer on B sequences.

    Attributes:
        L, S, d_model, num_heads, d_k, d_v, batch, itemsize: the sizes counted for.
        params_qkv: entries of W^Q, W^K, W^V (with biases if any).
        params_out: entries of W^O (with its bias); 0 for a layer without output projection.
        macs_qkv: X W^Q (L rows), X W^K and X W^V (S rows each), for every sequence.
        macs_scores: Q K^T, every head of every sequence: B H L S d_k.
        macs_mix: weights V, every head of every sequence: B H L S d_v.
        macs_out: Concat(heads) W^O.
        softmax_entries: scores the softmax normalises = weights to store, B H L S.
        score_bytes: those weights' bytes at ``itemsize`` bytes per entry.
    """

    L: int
    S: int
    d_model: int
    num_heads: int
    d_k: int
    d_v: int
    batch: int
    itemsize: int
    params_qkv: int
    params_out: int
    macs_qkv: int
    macs_scores: int
    macs_mix: int
    macs_out: int
    softmax_entries: int
    score_bytes: int

    @property
    def params(self) -> int:
        return self.params_qkv + self.params_out

    @property
    def macs(self) -> int:
        """Every multiply-add of the layer: projections, Q K^T, weights V and W^O."""
        return self.macs_qkv + self.macs_scores + self.macs_mix + self.macs_out

    @property
    def macs_attention(self) -> int:
        """Q K^T and weights V: the multiply-adds that grow with L S (B H L S (d_k + d_v))."""
        return self.macs_scores + self.macs_mix


def attention_cost(
    L: int,
    d_model: int,
    num_heads: int = 1,
    *,
    S: int | None = None,
    d_k: int | None = None,
    d_v: int | None = None,
    batch: int = 1,
    output_projection: bool = True,
    bias: bool = False,
    itemsize: int = 4,
) -> AttentionCost:
    """Count a layer of ``num_heads`` heads on ``batch`` sequences of L queries and S keys.

    Args:
        L: queries per sequence; S: keys per sequence (default L: self-attention).
        d_model: E, the size of each input vector (and of the output when projected).
        num_heads: H.
        d_k, d_v: per-head sizes; default E // H (then E must be a multiple of H).
        batch: B, the number of sequences.
        output_projection: whether Concat(heads) is multiplied by W^O (H d_v, E).
        bias: whether each projection has a bias vector.
        itemsize: bytes per weight (4 for float32, 2 for float16/bfloat16, 8 for float64).

    Returns:
        An ``AttentionCost``.
    """
    for name, v in (("L", L), ("d_model", d_model), ("num_heads", num_heads), ("batch", batch),
                    ("itemsize", itemsize)):
        check_positive_int(name, v)
    S = L if S is None else check_positive_int("S", S)
    check_bool("output_projection", output_projection)
    check_bool("bias", bias)
    if (d_k is None or d_v is None) and d_model % num_heads:
        raise ValueError(f"d_model: expected a multiple of num_heads={num_heads}, got {d_model}")
    d_k = d_model // num_heads if d_k is None else check_positive_int("d_k", d_k)
    d_v = d_model // num_heads if d_v is None else check_positive_int("d_v", d_v)
    B, H = batch, num_heads
    qkv_out = H * (2 * d_k + d_v)  # output columns of W^Q, W^K, W^V together
    entries = B * H * L * S
    return AttentionCost(
        L=L, S=S, d_model=d_model, num_heads=H, d_k=d_k, d_v=d_v, batch=B, itemsize=itemsize,
        params_qkv=d_model * qkv_out + (qkv_out if bias else 0),
        params_out=(H * d_v * d_model + (d_model if bias else 0)) if output_projection else 0,
        macs_qkv=B * d_model * H * (L * d_k + S * (d_k + d_v)),  # queries from L rows, keys and values from S
        macs_scores=entries * d_k,  # per head (L, d_k) @ (d_k, S)
        macs_mix=entries * d_v,  # per head (L, S) @ (S, d_v)
        macs_out=B * L * H * d_v * d_model if output_projection else 0,
        softmax_entries=entries,
        score_bytes=entries * itemsize,
    )


def multi_head_cost(n: int, d_model: int, num_heads: int, *, bias: bool = False) -> AttentionCost:
    """``attn.MultiHeadAttention(d_model, num_heads)`` on one sequence of n tokens: H heads of
    size E // H, then W^O."""
    return attention_cost(n, d_model, num_heads, bias=bias)


def single_head_cost(n: int, d_model: int, *, output_projection: bool = False) -> AttentionCost:
    """One full-size head, d_k = d_v = d_model, on n tokens: the chapter's
    ``SelfAttention(E, E, E)`` (no W^O) by default, or with an output projection (= multi-head
    with H = 1)."""
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


_QUANTITIES: tuple[tuple[str, Callable[[AttentionCost], int]], ...] = (
    (mark("params W^Q,W^K,W^V"), lambda c: c.params_qkv),
    (mark("params W^O"), lambda c: c.params_out),
    (mark("params total"), lambda c: c.params),
    (mark("MACs X W (Q, K, V)"), lambda c: c.macs_qkv),
    (mark("MACs Q K^T"), lambda c: c.macs_scores),
    (mark("MACs weights V"), lambda c: c.macs_mix),
    (mark("MACs concat W^O"), lambda c: c.macs_out),
    (mark("MACs total"), lambda c: c.macs),
    (mark("softmax entries"), lambda c: c.softmax_entries),
)


def compare_heads(n: int, d_model: int, num_heads: int) -> tuple[tuple[str, ...], list[CostRow]]:
    """Compare H heads of size E // H with one full-size head, with and without W^O.

    Returns:
        (column names, rows): columns are the chapter's single head without W^O, one
        full-size head with W^O, and H heads with W^O. Names and quantities are in the
        current language (``attn.language``).
    """
    layers = (
        (tr("1 head, no W^O"), single_head_cost(n, d_model)),
        (tr("1 head + W^O"), single_head_cost(n, d_model, output_projection=True)),
        (tr("{num_heads} heads + W^O", num_heads=num_heads), multi_head_cost(n, d_model, num_heads)),
    )
    names = tuple(name for name, _ in layers)
    rows = [CostRow(tr(q), tuple(f(c) for _, c in layers)) for q, f in _QUANTITIES]
    return names, rows


def format_rows(names: tuple[str, ...], rows: list[CostRow]) -> str:
    """A fixed-width text table of ``compare_heads``' result (aligned for Chinese names too)."""
    w0 = max(width(r.quantity) for r in rows) + 2
    widths = [max(width(nm), *(len(f"{r.values[i]:,}") for r in rows)) + 2 for i, nm in enumerate(names)]
    lines = ["".ljust(w0) + "".join(rjust(nm, w) for nm, w in zip(names, widths))]
    for r in rows:
        lines.append(ljust(r.quantity, w0) + "".join(f"{v:,}".rjust(w) for v, w in zip(r.values, widths)))
    return "\n".join(lines)


def count_parameters(module: nn.Module) -> int:
    """Entries in all of a module's parameters (what ``sum(p.numel() ...)`` gives)."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module: expected an nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters())


# --- counted on the code that runs ---------------------------------------------------------------

_MATMULS = {"linear", "matmul", "__matmul__", "mm", "bmm"}
_POINTWISE = {"add", "__add__", "__radd__", "sub", "__sub__", "__rsub__", "mul", "__mul__",
              "__rmul__", "div", "__truediv__", "__rtruediv__", "__rdiv__", "tanh", "exp", "neg",
              "__neg__"}


@dataclass
class OpCount:
    """What ``count_ops`` saw.

    Attributes:
        matmul_flops: 2 x (output elements) x (inner size) of every matrix product, summed.
        matmul_flops_by_op: the same, per torch function ("linear", "__matmul__", ...).
        elementwise_ops: one per output element of every element-wise operation.
        largest_tensor: elements of the biggest tensor produced on the way.
        calls: one (function name, output shape) entry per counted call, in order.
    """

    matmul_flops: int = 0
    matmul_flops_by_op: dict[str, int] = field(default_factory=dict)
    elementwise_ops: int = 0
    largest_tensor: int = 0
    calls: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)

    @property
    def macs(self) -> int:
        """Multiply-adds of the matrix products: ``matmul_flops // 2``."""
        return self.matmul_flops // 2


def _matmul_flops(name: str, args: tuple, out: Tensor) -> int:
    if name == "scaled_dot_product_attention":  # Q K^T and weights V in one call
        q, k, v = args[:3]
        return 2 * out[..., :1].numel() * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    inner = args[0].shape[-1]  # K in (..., M, K) x (K, N), or in_features of linear
    return 2 * out.numel() * inner


class _Counter(TorchFunctionMode):
    """Sees every torch function a piece of code calls (a public ``TorchFunctionMode``): the
    call runs as usual, then its output's shape is counted."""

    def __init__(self) -> None:
        super().__init__()
        self.count = OpCount()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        matmul = name in _MATMULS or name == "scaled_dot_product_attention"
        if isinstance(out, Tensor) and (matmul or name in _POINTWISE):
            c = self.count
            if matmul:
                flops = _matmul_flops(name, args, out)
                c.matmul_flops += flops
                c.matmul_flops_by_op[name] = c.matmul_flops_by_op.get(name, 0) + flops
            else:
                c.elementwise_ops += out.numel()
            c.largest_tensor = max(c.largest_tensor, out.numel())
            c.calls.append((name, tuple(out.shape)))
        return out


def count_ops(fn: Callable[[], object]) -> OpCount:
    """Run ``fn()`` (no arguments; e.g. ``lambda: layer(x)``) without gradients and count the
    torch work it does, from the shapes of the real tensors:

    * matrix products (``linear``, ``matmul``, ``@``, ``mm``, ``bmm`` and PyTorch's fused
      ``scaled_dot_product_attention``): 2 x (output elements) x (inner size) FLOPs, one
      multiply and one add per term;
    * element-wise operations (add, subtract, multiply, divide, tanh, exp, negate): one per
      output element;
    * the largest tensor produced on the way (what the computation must hold in memory).

    Nothing is timed: counts are exact and the same on every machine.

    Returns:
        An ``OpCount``.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable with no arguments, got {type(fn).__name__}")
    counter = _Counter()
    with torch.no_grad(), counter:
        fn()
    return counter.count


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
        output = concat W^O (B, n, E). The last equals ``mha(x)[0]``. The steps' names that are
        words are English, marked for the catalogue (the formulas are the same in every
        language): a table shows ``attn.language.tr(step)``, padded by display width
        (``attn._text.ljust``), since a Chinese name is wider than its length.
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
        ("X", x), ("Q = X W^Q", q), ("K = X W^K", k), ("V = X W^V", v),  # formulas: the same in every language
        (mark("Q split into heads"), mha.split_heads(q)), (mark("K split into heads"), mha.split_heads(k)),
        (mark("V split into heads"), mha.split_heads(v)),  # (B, n, E) -> (B, H, n, D)
        (mark("weights per head"), weights),
        (mark("head outputs"), mha.split_heads(concat)),  # (B, n, E) -> (B, H, n, D): concat, undone
        (mark("concat(heads)"), concat), (mark("concat W^O"), output),
    ]
