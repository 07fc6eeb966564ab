"""What the three scoring functions cost, counted on the code that runs them.

``count_ops`` runs a function under a ``torch.overrides.TorchFunctionMode`` that sees every
torch call it makes and adds up, from the shapes of the real tensors:

* matrix-product FLOPs (``linear``, ``matmul``, ``@``): 2 x (output elements) x (inner size),
  one multiply and one add per term;
* element-wise operations (add, subtract, multiply, divide, tanh, exp): one per output element;
* the largest tensor produced on the way (what the computation must hold in memory).

Nothing is timed: counts are exact and the same on every machine.

Shape legend: L queries, S keys, E = query size = key size, Hd the additive hidden size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from .._checks import check_positive_int
from ..scoring import AdditiveAttention, dot_product_scores, scaled_dot_product_scores

__all__ = ["OpCount", "count_ops", "ScoringCost", "scoring_costs"]

_MATMULS = {"linear", "matmul", "__matmul__", "mm", "bmm"}
_POINTWISE = {"add", "__add__", "__radd__", "sub", "__sub__", "__rsub__", "mul", "__mul__",
              "__rmul__", "div", "__truediv__", "__rtruediv__", "tanh", "exp", "neg", "__neg__"}


@dataclass
class OpCount:
    """What ``count_ops`` saw: totals, and one (name, output shape) entry per counted call."""

    matmul_flops: int = 0
    elementwise_ops: int = 0
    largest_tensor: int = 0
    calls: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)


class _Counter(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = OpCount()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if isinstance(out, Tensor) and (name in _MATMULS or name in _POINTWISE):
            c = self.count
            if name in _MATMULS:
                inner = args[0].shape[-1]  # K in (..., M, K) x (K, N), or in_features of linear
                c.matmul_flops += 2 * out.numel() * inner
            else:
                c.elementwise_ops += out.numel()
            c.largest_tensor = max(c.largest_tensor, out.numel())
            c.calls.append((name, tuple(out.shape)))
        return out


def count_ops(fn: Callable[[], object]) -> OpCount:
    """Run ``fn()`` (no arguments) and count the torch work it does (see the module doc)."""
    counter = _Counter()
    with torch.no_grad(), counter:
        fn()
    return counter.count


@dataclass(frozen=True)
class ScoringCost:
    """The work of one scoring function for L queries and S keys."""

    name: str
    L: int
    S: int
    matmul_flops: int
    elementwise_ops: int
    largest_tensor: int  # elements of the biggest tensor built on the way

    @property
    def total_ops(self) -> int:
        return self.matmul_flops + self.elementwise_ops


def scoring_costs(L: int, S: int, dim: int, hidden: int | None = None, *,
                  seed: int = 0) -> list[ScoringCost]:
    """Score L queries against S keys, all of size ``dim``, with each of the three forms.

    Args:
        L, S: numbers of queries and keys.
        dim: E, the query and key size.
        hidden: Hd, the additive form's hidden size (default: ``dim``).
        seed: seeds the random inputs and the additive weights (the counts do not depend on it).

    Returns:
        [additive, dot product, scaled dot product], each a ``ScoringCost`` counted by
        ``count_ops`` on ``attn.scoring``'s code.
    """
    for name, v in (("L", L), ("S", S), ("dim", dim)):
        check_positive_int(name, v)
    hidden = dim if hidden is None else check_positive_int("hidden", hidden)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(L, dim, generator=g)  # (L, E)
    k = torch.randn(S, dim, generator=g)  # (S, E)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        additive = AdditiveAttention(dim, dim, hidden)
    forms = (
        ("additive", lambda: additive.scores(q, k)),
        ("dot product", lambda: dot_product_scores(q, k)),
        ("scaled dot product", lambda: scaled_dot_product_scores(q, k)),
    )
    rows = []
    for name, fn in forms:
        c = count_ops(fn)
        rows.append(ScoringCost(name, L, S, c.matmul_flops, c.elementwise_ops, c.largest_tensor))
    return rows
