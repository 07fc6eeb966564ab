"""What the three scoring functions cost, counted on the code that runs them.

``attn.lessons.cost.counts.count_ops`` runs each of ``attn.scoring``'s functions and adds up, from the
shapes of the real tensors, the matrix-product FLOPs, the element-wise operations and the
largest tensor produced on the way. Nothing is timed: counts are exact and the same on every
machine.

Shape legend: L queries, S keys, E = query size = key size, Hd the additive hidden size.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..._checks import check_positive_int
from ...language import tr
from ...scoring import AdditiveAttention, dot_product_scores, scaled_dot_product_scores
from .counts import count_ops

__all__ = ["ScoringCost", "scoring_costs"]


@dataclass(frozen=True)
class ScoringCost:
    """The work of one scoring function for L queries and S keys (``name`` in the language that
    was current when ``scoring_costs`` counted it)."""

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
        ``count_ops`` on ``attn.scoring``'s code, named in the current language
        (``attn.language``).
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
        (tr("additive"), lambda: additive.scores(q, k)),
        (tr("dot product"), lambda: dot_product_scores(q, k)),
        (tr("scaled dot product"), lambda: scaled_dot_product_scores(q, k)),
    )
    rows = []
    for name, fn in forms:
        c = count_ops(fn)
        rows.append(ScoringCost(name, L, S, c.matmul_flops, c.elementwise_ops, c.largest_tensor))
    return rows
