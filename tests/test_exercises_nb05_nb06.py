import math

import pytest
import torch
from torch import nn

from attn.handbuilt import heads as P
from attn.exercises import nb05, nb06
from attn.masks import causal_mask


# ---- notebook 05 -------------------------------------------------------------------------

def test_mha_causal_mask_right_answer_behaves_like_causal_in_torch():
    L = nb05.MASK_LENGTH
    answer = torch.ones(L, L, dtype=torch.bool).triu(1)
    assert nb05.check_mha_causal_mask(answer).correct
    # the accepted answer really makes nn.MultiheadAttention causal
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, L, 8)
    _, w = mha(x, x, x, attn_mask=answer)
    assert torch.all(w[0].triu(1) == 0) and torch.all(w[0].diagonal() > 0)


@pytest.mark.parametrize("answer, hint", [
    (None, "bool tensor"),
    ([[True]], "torch.Tensor"),
    (torch.zeros(5, 5), "dtype torch.bool"),
    (torch.zeros(4, 4, dtype=torch.bool), "shape (5, 5)"),
    (causal_mask(5), "True = may attend"),
    (torch.ones(5, 5, dtype=torch.bool).triu(0), "diagonal"),
    (torch.ones(5, 5, dtype=torch.bool).tril(-1), "blocks the past"),
    (torch.eye(5, dtype=torch.bool), "row by row"),
])
def test_mha_causal_mask_wrong_answers_get_a_hint(answer, hint):
    fb = nb05.check_mha_causal_mask(answer)
    assert not fb.correct and hint in fb.message
    assert "triu" not in fb.message and "tril" not in fb.message


def test_weight_shapes():
    s = nb05.SHAPES_SETUP
    B, L, H = s["batch"], s["length"], s["num_heads"]
    right = {"averaged": (B, L, L), "per_head": torch.Size([B, H, L, L])}
    assert nb05.check_weight_shapes(right).correct
    fb = nb05.check_weight_shapes({"averaged": (B, H, L, L), "per_head": (B, H, L, L)})
    assert not fb.correct and "heads dimension" in fb.message
    fb = nb05.check_weight_shapes({"averaged": (L, B, L), "per_head": (B, H, L, L)})
    assert not fb.correct and "batch" in fb.message
    fb = nb05.check_weight_shapes({"averaged": (B, L, L), "per_head": (B, L, H, L)})
    assert not fb.correct and "per-head" in fb.message
    for bad in (None, {"averaged": (B, L, L)}, {"averaged": "BLL", "per_head": (1,)}):
        fb = nb05.check_weight_shapes(bad)
        assert not fb.correct and str((B, L, L)) not in fb.message


def test_weight_shapes_leave_the_global_rng_alone():
    torch.manual_seed(5)
    a = torch.rand(3)
    torch.manual_seed(5)
    nb05.check_weight_shapes({"averaged": (1,), "per_head": (1,)})
    assert torch.equal(torch.rand(3), a)


def test_fully_masked_row():
    right = {"-inf": "nan", "-1e9": "uniform", "package": "zeros"}
    assert nb05.check_fully_masked_row(right).correct
    assert nb05.check_fully_masked_row({k: v.upper() for k, v in right.items()}).correct
    fb = nb05.check_fully_masked_row({"-inf": "zeros", "-1e9": "uniform", "package": "nan"})
    assert not fb.correct and fb.message.startswith("2 of 3")
    assert not nb05.check_fully_masked_row(None).correct
    assert not nb05.check_fully_masked_row({"-inf": "nan", "-1e9": "flat", "package": "zeros"}).correct


# ---- notebook 06 -------------------------------------------------------------------------

def test_mystery_maps_are_one_of_each_pattern():
    maps = nb06.mystery_maps()
    assert maps.shape == (3, 6, 6)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 6, dtype=torch.float64))
    profiles = [P.pattern_profile(m, P.SENTENCE_PHRASES) for m in maps]
    kinds = []
    for m, p in zip(maps, profiles):
        if p.top_key_weight > 0.5:
            kinds.append("vertical")
        elif torch.allclose(m[1], m[2]):  # identical rows inside a phrase
            kinds.append("block")
        else:
            kinds.append("diagonal")
    assert sorted(kinds) == ["block", "diagonal", "vertical"]
    assert nb06.check_pattern_names(kinds).correct
    wrong = kinds[1:] + kinds[:1]
    fb = nb06.check_pattern_names(wrong)
    assert not fb.correct and fb.message.startswith("0 of 3")
    assert not nb06.check_pattern_names(None).correct
    assert not nb06.check_pattern_names(["diagonal", "stripe", "block"]).correct


def test_vertical_qk_checker_measures_the_pattern():
    q, k = P.vertical_qk(6, 8, strength=1.0, key=0)
    assert nb06.check_vertical_qk((q, k)).correct
    assert nb06.check_vertical_qk((q.tolist(), k.numpy())).correct
    weak_q, weak_k = P.vertical_qk(6, 8, strength=0.1, key=0)
    fb = nb06.check_vertical_qk((weak_q, weak_k))
    assert not fb.correct and "6 of 6" in fb.message
    wrong_key = P.vertical_qk(6, 8, strength=1.0, key=3)
    assert not nb06.check_vertical_qk(wrong_key).correct
    assert not nb06.check_vertical_qk((torch.zeros(6, 4), torch.zeros(6, 4))).correct
    for bad, hint in [(None, "pair"), ((q, None), "pair"), ((q[:5], k), "shape (6, d_k)"),
                      ((q, k[:, :4]), "same d_k"), ((q, "x"), "numbers")]:
        fb = nb06.check_vertical_qk(bad)
        assert not fb.correct and hint in fb.message


def test_diagonal_weight():
    s = nb06.DIAGONAL_SETUP
    score = s["strength"] * math.sqrt(s["d_k"])
    right = math.exp(score) / (math.exp(score) + s["n"] - 1)
    assert nb06.check_diagonal_weight(right).correct
    assert nb06.check_diagonal_weight(torch.tensor(round(right, 3))).correct
    fb = nb06.check_diagonal_weight(1 / s["n"])
    assert not fb.correct and "flat" in fb.message
    raw = s["strength"] * s["d_k"]
    fb = nb06.check_diagonal_weight(math.exp(raw) / (math.exp(raw) + s["n"] - 1))
    assert not fb.correct and "√d_k" in fb.message
    fb = nb06.check_diagonal_weight(0.9)
    assert not fb.correct and f"{right:.3f}" not in fb.message
    assert not nb06.check_diagonal_weight(None).correct
    assert not nb06.check_diagonal_weight([0.1, 0.2]).correct
