"""Checkers of notebook 10: the right answers pass, each classic mistake gets its own hint.
A test that takes ``language`` runs in English and in Chinese, and hears each reply in both
(tests/_replies.py)."""
import math

import torch

from attn.exercises import nb10

from _replies import reply, says


def test_cache_bytes(language):
    n = 2 * nb10.LAYERS * nb10.BATCH * nb10.TOKENS * nb10.D_MODEL
    check = nb10.check_cache_bytes
    assert reply(check, 2 * n)
    assert reply(check, torch.tensor(2 * n))
    assert says(reply(check, n), "That is half")
    assert says(reply(check, 4 * n), "2 bytes a number, not 4")
    assert says(reply(check, 2 * 2 * nb10.BATCH * nb10.TOKENS * nb10.D_MODEL), "Multiply over every layer")
    assert says(reply(check, None), "Replace the placeholder")
    assert says(reply(check, "big"), "whole number")
    assert not reply(check, 2 * n + 1)


def right(x_new, keys, values, W_q, W_k, W_v):
    keys = torch.cat([keys, x_new @ W_k])
    values = torch.cat([values, x_new @ W_v])
    q = x_new @ W_q
    w = torch.softmax(q @ keys.T / math.sqrt(q.shape[-1]), dim=-1)
    return w @ values, keys, values


def test_cached_step_accepts_a_right_one(language):
    nb10.CACHED_STEP_HINTS.reset()
    assert reply(nb10.check_cached_step, right)


def test_cached_step_names_each_mistake(language):
    def before(x_new, keys, values, W_q, W_k, W_v):
        q = x_new @ W_q
        w = torch.softmax(q @ keys.T / math.sqrt(q.shape[-1]), dim=-1)
        return w @ values, torch.cat([keys, x_new @ W_k]), torch.cat([values, x_new @ W_v])

    def unscaled(x_new, keys, values, W_q, W_k, W_v):
        keys, values = torch.cat([keys, x_new @ W_k]), torch.cat([values, x_new @ W_v])
        return torch.softmax(x_new @ W_q @ keys.T, -1) @ values, keys, values

    def by_dk(x_new, keys, values, W_q, W_k, W_v):
        keys, values = torch.cat([keys, x_new @ W_k]), torch.cat([values, x_new @ W_v])
        return torch.softmax(x_new @ W_q @ keys.T / keys.shape[1], -1) @ values, keys, values

    def keys_as_values(x_new, keys, values, W_q, W_k, W_v):
        keys, values = torch.cat([keys, x_new @ W_k]), torch.cat([values, x_new @ W_v])
        return torch.softmax(x_new @ W_q @ keys.T / math.sqrt(keys.shape[1]), -1) @ keys, keys, values

    def no_append(x_new, keys, values, W_q, W_k, W_v):
        out, _, _ = right(x_new, keys, values, W_q, W_k, W_v)
        return out, keys, values

    def pair(x_new, keys, values, W_q, W_k, W_v):
        return right(x_new, keys, values, W_q, W_k, W_v)[:2]

    def todo(*args):
        raise NotImplementedError

    slips = [(before, "leaves out the new position itself", "what the cache holds"),
             (unscaled, "sqrt(d_k) times too large", "divided by"),
             (by_dk, "sqrt(d_k) times too small", "divided by"),
             (keys_as_values, "weighted sums of the keys", "which cache"),
             (lambda *a: (torch.zeros(1, 4, dtype=torch.float64), torch.cat([a[1], a[0] @ a[4]]),
                          torch.cat([a[2], a[0] @ a[5]])), "not by one of the usual slips", "row t")]
    for fn, symptom, where in slips:
        nb10.CACHED_STEP_HINTS.reset()
        first = reply(nb10.check_cached_step, fn)
        assert not first and says(first, symptom) and not says(first, "Where to look"), first.message
        second = reply(nb10.check_cached_step, fn)
        assert not second and second.message.startswith(first.message), second.message
        assert says(second, "Where to look") and says(second, where), second.message
        assert "append first" not in second.message.lower()

    def one_row(*args):
        out, keys, values = right(*args)
        return out[0], keys, values

    cases = {no_append: "the caches should hold {held} positions",
             pair: "Return three things", todo: "Not implemented yet",
             (lambda *a: 1 / 0): "your function raised {error}", 3: "Pass your function",
             one_row: "The output of one step is (1, E)",
             (lambda *a: (1.0, 2.0, 3.0)): "should all be tensors"}
    for fn, hint in cases.items():
        fb = reply(nb10.check_cached_step, fn)
        assert not fb and says(fb, hint), fb.message
    assert says(reply(nb10.check_cached_step, no_append), "the caches should hold {held} positions", held=1)
    fb = reply(nb10.check_cached_step, lambda *a: 1 / 0)
    assert says(fb, "your function raised {error}", error="ZeroDivisionError"), fb.message
