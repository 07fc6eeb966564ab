"""Counting the work of the three scoring functions (attn.lessons.cost.scoring_costs)."""
import pytest

from attn.lessons.cost.scoring_costs import scoring_costs


@pytest.mark.parametrize("L, S, E, Hd", [(3, 5, 4, 7), (16, 16, 64, 64), (8, 32, 16, 8)])
def test_costs_match_the_shapes(L, S, E, Hd):
    additive, dot, scaled = scoring_costs(L, S, E, Hd)
    assert (additive.name, dot.name, scaled.name) == ("additive", "dot product", "scaled dot product")
    # additive: W1 q and W2 k, then v^T over every (i, j) pair; add + tanh on (L, S, Hd)
    assert additive.matmul_flops == 2 * L * E * Hd + 2 * S * E * Hd + 2 * L * S * Hd
    assert additive.elementwise_ops == 2 * L * S * Hd
    assert additive.largest_tensor == L * S * Hd
    assert dot.matmul_flops == 2 * L * S * E and dot.elementwise_ops == 0
    assert scaled.matmul_flops == dot.matmul_flops and scaled.elementwise_ops == L * S
    assert dot.largest_tensor == scaled.largest_tensor == L * S
    assert additive.total_ops > scaled.total_ops >= dot.total_ops


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"L": 0, "S": 2, "dim": 2}, ValueError, "L: expected a positive int"),
    ({"L": 2, "S": 2, "dim": 2, "hidden": 0}, ValueError, "hidden"),
    ({"L": 2, "S": 2.0, "dim": 2}, TypeError, "S: expected a positive int"),
])
def test_bad_sizes(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        scoring_costs(**kwargs)
