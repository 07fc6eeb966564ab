"""Checkers of notebook 06. A test that takes ``language`` runs in English and in Chinese, and
hears each reply in both (tests/_replies.py)."""
import functools
import math

import torch

from attn.examples import SENTENCE_PHRASES
from attn.exercises import nb06
from attn.lessons.handbuilt import heads as P
from attn.lessons.pattern_scores import pattern_profile

from _replies import reply, says


# ---- notebook 06 -------------------------------------------------------------------------

@functools.cache
def mystery_kinds() -> tuple[str, ...]:
    """The pattern of each of the mystery maps, as the pattern scores of notebook 06 tell them."""
    maps = nb06.mystery_maps()
    profiles = [pattern_profile(m, SENTENCE_PHRASES) for m in maps]
    kinds = []
    for m, p in zip(maps, profiles):
        if p.top_key_weight > 0.5:
            kinds.append("vertical")
        elif torch.allclose(m[1], m[2]):  # identical rows inside a phrase
            kinds.append("block")
        else:
            kinds.append("diagonal")
    return tuple(kinds)


def test_mystery_maps_are_one_of_each_pattern():
    maps = nb06.mystery_maps()
    assert maps.shape == (3, 6, 6)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 6, dtype=torch.float64))
    assert sorted(mystery_kinds()) == ["block", "diagonal", "vertical"]


def test_pattern_names(language):
    kinds = list(mystery_kinds())
    assert reply(nb06.check_pattern_names, kinds).correct
    wrong = kinds[1:] + kinds[:1]
    fb = reply(nb06.check_pattern_names, wrong)
    assert not fb.correct and says(fb, "{right} of 3 right", right=0)
    assert not reply(nb06.check_pattern_names, None).correct
    fb = reply(nb06.check_pattern_names, ["diagonal", "stripe", "block"])
    assert not fb.correct and says(fb, "Each name should be one of")


def test_vertical_qk_checker_measures_the_pattern(language):
    check = nb06.check_vertical_qk
    q, k = P.vertical_qk(6, 8, strength=1.0, key=0)
    assert reply(check, (q, k)).correct
    assert reply(check, (q.tolist(), k.numpy())).correct
    weak_q, weak_k = P.vertical_qk(6, 8, strength=0.1, key=0)
    fb = reply(check, (weak_q, weak_k))
    assert not fb.correct and says(fb, "{short} of {n} queries give key 0 less", short=6, n=6)
    wrong_key = P.vertical_qk(6, 8, strength=1.0, key=3)
    assert not reply(check, wrong_key).correct
    assert not reply(check, (torch.zeros(6, 4), torch.zeros(6, 4))).correct
    for bad, hint in [(None, "a pair (Q, K)"), ((q, None), "a pair (Q, K)"),
                      ((q[:5], k), "should have shape ({n}, d_k)"),
                      ((q, k[:, :4]), "need the same d_k"), ((q, "x"), "should be numbers"),
                      ((q, torch.full((6, 8), float("inf"))), "should hold finite numbers")]:
        fb = reply(check, bad)
        assert not fb.correct and says(fb, hint), (bad, fb.message)


def test_diagonal_weight(language):
    s = nb06.DIAGONAL_SETUP
    score = s["strength"] * math.sqrt(s["d_k"])
    right = math.exp(score) / (math.exp(score) + s["n"] - 1)
    check = nb06.check_diagonal_weight
    assert reply(check, right).correct
    assert reply(check, torch.tensor(round(right, 3))).correct
    fb = reply(check, 1 / s["n"])
    assert not fb.correct and says(fb, "That is a flat row")
    raw = s["strength"] * s["d_k"]
    fb = reply(check, math.exp(raw) / (math.exp(raw) + s["n"] - 1))
    assert not fb.correct and says(fb, "without the division by √d_k")
    fb = reply(check, 0.9)
    assert not fb.correct and f"{right:.3f}" not in fb.message
    assert not reply(check, None).correct
    assert not reply(check, [0.1, 0.2]).correct
