"""The checkers of notebook 02: right answers pass, typical mistakes get a hint, None gets
"Not yet", and no message gives the expected answer away. A test that takes ``language``
runs in English and in Chinese, and hears each reply in both (tests/_replies.py)."""
import math

import torch

from attn.exercises import nb01, nb02
from attn.lessons.handbuilt.sentence import toy_attention
from attn.lessons.scaling import D_K_GRID, scaling_stats

from _replies import reply, says


def test_shapes(language):
    s = nb02.SHAPE_SIZES
    n, d_k, d_v = s["n"], s["d_k"], s["d_v"]
    right = {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_v), "scores": (n, n), "weights": (n, n),
             "output": (n, d_v)}
    assert reply(nb02.check_shapes, right)
    assert reply(nb02.check_shapes, {k: torch.Size(v) for k, v in right.items()})
    fb = reply(nb02.check_shapes, {**right, "V": (n, d_k)})
    assert not fb and says(fb, "{key}: {hint}", key="V") and not says(fb, "{key}: {hint}", key="Q")
    fb = reply(nb02.check_shapes, {k: (1, 1) for k in right})
    assert not fb and all(says(fb, "{key}: {hint}", key=k) for k in right)
    assert says(reply(nb02.check_shapes, {"Q": (n, d_k)}), "Missing keys")
    assert says(reply(nb02.check_shapes, 3), "answer should be a dict")


def _io():
    t = nb02.exercise_inputs()
    return t["X"] @ t["W_Q"], t["X"] @ t["W_K"], t["X"] @ t["W_V"]


def test_attention_output(language):
    q, k, v = _io()
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    check = nb02.check_attention_output
    assert reply(check, ref)
    assert says(reply(check, torch.softmax(q @ k.T, -1) @ v), "divide the scores by sqrt(d_k)")
    wrong_dim = torch.softmax(q @ k.T / math.sqrt(3), dim=0) @ v
    assert says(reply(check, wrong_dim), "went down the columns")
    assert says(reply(check, torch.zeros(2, 4)), "shape {shape}", shape=(4, 2))
    fb = reply(check, torch.zeros(4, 2))
    assert not fb and says(fb, "softmax each row, multiply by V")


def test_answers_become_numbers_through_one_conversion(language):
    """exercises._base.as_array converts with attn._checks.to_numpy: a tensor that needs grad is
    read, anything that is not numbers is explained, never raised."""
    for bad in ("abc", [[1.0, 2.0], [3.0]], {"a": 1}):
        fb = reply(nb02.check_attention_output, bad)
        assert not fb and says(fb, "should be numbers"), bad
    got = torch.zeros(4, 2, requires_grad=True)
    assert not says(reply(nb02.check_attention_output, got), "should be numbers")


def test_exercise_inputs_are_fresh_and_fixed():
    a, b = nb02.exercise_inputs(), nb02.exercise_inputs()
    assert all(torch.equal(a[k], b[k]) for k in a)
    a["X"].zero_()
    assert nb02.exercise_inputs()["X"].abs().sum() > 0


def test_score_variance(language):
    g = torch.Generator().manual_seed(0)
    d = nb02.VARIANCE_SETUP["d_k"]
    q, k = (2 * torch.rand(20000, d, generator=g, dtype=torch.float64) - 1 for _ in range(2))  # uniform on [-1, 1]
    s = (q * k).sum(-1)
    check = nb02.check_score_variance
    assert reply(check, (s.var().item(), (s / math.sqrt(d)).var().item()))  # measured
    assert reply(check, (d / 9, 1 / 9))  # worked out
    assert says(reply(check, (d, 1.0)), "section 5's result")  # N(0, 1)'s (d_k, 1)
    assert says(reply(check, (d * 7 / 144, 7 / 144)), "[0, 1]")  # torch.rand alone
    assert says(reply(check, (d / 3, 1 / 3)), "variance of one times")
    assert says(reply(check, (s.std().item(), 1 / 9)), "looks like a standard deviation")
    assert says(reply(check, (s.var().item(), (s / d).var().item())), "divide each score by sqrt(d_k)")


def test_half_gradient_d_k(language):
    def first(n_keys):
        return next(d for d in D_K_GRID if scaling_stats(d, n_keys=n_keys).grad_norm_raw
                    < 0.5 * scaling_stats(d, n_keys=n_keys).grad_norm_scaled)

    answer, table = first(nb02.HALVING_KEYS), first(16)
    assert table < answer  # the table's answer (16 keys, printed in 02) is not the exercise's
    i = D_K_GRID.index(answer)
    check = nb02.check_half_gradient_d_k
    assert reply(check, answer)
    assert says(reply(check, table), "That is where it halves with {table} keys per query", table=16)
    assert says(reply(check, D_K_GRID[i - 2]), "go further up the grid")
    assert says(reply(check, D_K_GRID[i + 1]), "find the first one")
    assert says(reply(check, 100), "should be one of D_K_GRID")
    assert reply(check, float(answer))
    assert says(reply(check, 2.0), "go further up the grid")  # 2.0 is d_k = 2, in the grid
    assert says(reply(check, [64]), "should be one whole number")


def test_reversed_output_right_on_the_chapters_sentence_only_gets_a_hint_not_a_traceback(language):
    """On a 4-word sentence the weights (4, 4) and the output (4, F) differ in shape: the slip
    is compared with each, never broadcast against it."""
    nb01.REVERSED_OUTPUT_HINTS.reset()
    fb = reply(nb01.check_reversed_output, lambda x: toy_attention(x.flip(0) if len(x) == 6 else x)[0])
    assert not fb and says(fb, "a sentence of {words} words it had not seen", words=4), fb.message
    assert says(fb, "On {sentence}, your output is the output for the original order")
