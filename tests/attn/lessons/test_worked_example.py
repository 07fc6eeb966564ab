"""attn.lessons.worked_example: the worked example step by step, sanity checks, scenarios."""
import math

import numpy as np
import pytest
import torch

from attn import scaled_dot_product_attention
from attn.examples import worked_example_inputs
from attn.lessons.worked_example import (
            ROUNDING_ATOL,
            SCALES,
            explain_row_product,
            format_scenarios,
            printed,
            row_softmax,
            sanity_checks,
            scenarios,
            worked_steps,
)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n, d_model, d_k, d_v", [(3, 4, 2, 2), (5, 8, 3, 4), (1, 2, 1, 1)])
def test_steps_match_reference_attention(n, d_model, d_k, d_v, seed):
    X, W_Q, W_K = rand(n, d_model, seed=seed), rand(d_model, d_k, seed=seed + 10), rand(d_model, d_k, seed=seed + 20)
    W_V = rand(d_model, d_v, seed=seed + 30)
    s = worked_steps(X, W_Q, W_K, W_V)
    out, w = scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)
    torch.testing.assert_close(s["weights"], w, atol=1e-12, rtol=0)
    torch.testing.assert_close(s["output"], out, atol=1e-12, rtol=0)
    ref = torch.nn.functional.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)
    torch.testing.assert_close(s["output"], ref, atol=1e-12, rtol=0)
    assert s["scaled"].shape == (n, n) and s["output"].shape == (n, d_v)


@pytest.mark.parametrize("scale, factor", [("1/sqrt(d_k)", 1 / math.sqrt(2)), ("1/d_k", 0.5), ("none", 1.0)])
def test_scale_choices(scale, factor):
    s = worked_steps(scale=scale)
    assert s["scale"].item() == pytest.approx(factor)
    torch.testing.assert_close(s["scaled"], s["QK^T"] * factor)
    assert set(SCALES) == {"1/sqrt(d_k)", "1/d_k", "none"}


@pytest.mark.parametrize("seed", [0, 1])
def test_row_softmax_equals_torch(seed):
    x = rand(4, 5, seed=seed) * 30  # large scores: the max shift must keep it finite
    torch.testing.assert_close(row_softmax(x), torch.softmax(x, -1), atol=1e-12, rtol=0)


def test_chapter_inputs_give_known_steps():
    s = worked_steps()
    ex = worked_example_inputs()
    torch.testing.assert_close(s["Q"], ex["X"] @ ex["W_Q"])
    torch.testing.assert_close(s["K^T"], (ex["X"] @ ex["W_K"]).T)
    torch.testing.assert_close(s["weights"].sum(-1), torch.ones(3, dtype=torch.float64))


def test_printed_weights_do_not_sum_to_one_and_output_col0_impossible():
    w, V, out = printed("weights"), printed("V"), printed("output")
    sums = w.sum(-1)
    assert abs(sums[0] - 0.90) < 1e-9 and abs(sums[1] - 0.85) < 1e-9
    assert torch.all(V[:, 0] == 1)  # so any valid weights give output[:, 0] == 1
    rep = sanity_checks(w, V, out, atol=3 * ROUNDING_ATOL)
    assert not rep.ok
    assert list(np.nonzero(~rep.rows_sum_to_one)[0]) == [0, 1]
    assert not rep.inside[0, 0] and not rep.inside[1, 0] and rep.inside[2, 0]
    right = worked_steps()
    good = sanity_checks(right["weights"], right["V"], right["output"])
    assert good.ok and np.allclose(right["output"][:, 0].numpy(), 1.0)
    assert "do not sum to 1" in str(rep) and "all 1" in str(good)


def test_scenarios():
    sc = scenarios()
    fixed, right = sc["softmax fixed"], sc["right"]
    torch.testing.assert_close(fixed["Q"], printed("Q"))
    torch.testing.assert_close(fixed["QK^T"], printed("QK^T"))
    np.testing.assert_allclose(fixed["scaled"].numpy(), printed("scaled").numpy(), atol=ROUNDING_ATOL)
    torch.testing.assert_close(fixed["weights"].sum(-1), torch.ones(3, dtype=torch.float64))
    torch.testing.assert_close(fixed["output"][:, 0], torch.ones(3, dtype=torch.float64))
    assert not torch.allclose(fixed["output"], right["output"])  # Q row 2 still matters
    torch.testing.assert_close(fixed["output"][0], right["output"][0])  # row 1 does not use Q row 2


def test_explain_row_product():
    ex = worked_example_inputs()
    text = explain_row_product(ex["X"], ex["W_Q"], 1, names=("X", "W_Q"))
    assert text.splitlines()[-1] == "X[1] @ W_Q = [0, 1]"
    assert "col 1: 0*0 + 1*1 + 0*1 + 1*0 = 1" in text
    with pytest.raises(ValueError, match=r"row: expected an int in 0..2, got 3"):
        explain_row_product(ex["X"], ex["W_Q"], 3)
    with pytest.raises(ValueError, match="W"):
        explain_row_product(ex["X"], ex["W_Q"].T, 0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="scale"):
        worked_steps(scale="sqrt")
    with pytest.raises(ValueError, match="W_Q"):
        worked_steps(W_Q=torch.zeros(3, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="X"):
        worked_steps(X=torch.zeros(3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="overrides"):
        worked_steps(overrides={"Z": torch.zeros(1, 1)})
    with pytest.raises(ValueError, match="overrides"):
        worked_steps(overrides={"Q": torch.zeros(2, 2, dtype=torch.float64)})
    with pytest.raises(ValueError, match="step: expected one of"):
        printed("nope")
    with pytest.raises(ValueError, match=r"X: expected 2 dims \(rows, cols\)"):
        worked_steps(X=torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="weights/V/output"):
        sanity_checks(np.ones((3, 3)), np.ones((2, 2)), np.ones((3, 2)))


def test_format_scenarios():
    sc = scenarios()
    text = format_scenarios(sc, "output")
    lines = text.splitlines()
    assert lines[0] == "output" and lines[1].split() == ["printed", "softmax", "fixed", "right"]
    assert lines[2].count("[") == 3 and "0.90" in lines[2] and "1.44" in lines[2]
    with pytest.raises(ValueError, match="step"):
        format_scenarios(sc, "nope")
