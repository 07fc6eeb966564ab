"""Checkers of notebook 06."""
import math

import torch

from attn.examples import SENTENCE_PHRASES
from attn.exercises import nb06
from attn.lessons.handbuilt import heads as P
from attn.lessons.pattern_scores import pattern_profile


# ---- notebook 06 -------------------------------------------------------------------------

def test_mystery_maps_are_one_of_each_pattern():
    maps = nb06.mystery_maps()
    assert maps.shape == (3, 6, 6)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 6, dtype=torch.float64))
    profiles = [pattern_profile(m, SENTENCE_PHRASES) for m in maps]
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
