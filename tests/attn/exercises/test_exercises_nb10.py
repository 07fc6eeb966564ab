"""Checkers of notebook 10: the right answers pass, each classic mistake gets its own hint."""
import math

import torch

from attn.exercises import nb10


def test_cache_bytes():
    n = 2 * nb10.LAYERS * nb10.BATCH * nb10.TOKENS * nb10.D_MODEL
    assert nb10.check_cache_bytes(2 * n)
    assert nb10.check_cache_bytes(torch.tensor(2 * n))
    assert "half" in nb10.check_cache_bytes(n).message
    assert "2 bytes a number, not 4" in nb10.check_cache_bytes(4 * n).message
    assert "every layer" in nb10.check_cache_bytes(2 * 2 * nb10.BATCH * nb10.TOKENS * nb10.D_MODEL).message
    assert "Replace the placeholder" in nb10.check_cache_bytes(None).message
    assert "whole number" in nb10.check_cache_bytes("big").message
    assert not nb10.check_cache_bytes(2 * n + 1)


def right(x_new, keys, values, W_q, W_k, W_v):
    keys = torch.cat([keys, x_new @ W_k])
    values = torch.cat([values, x_new @ W_v])
    q = x_new @ W_q
    w = torch.softmax(q @ keys.T / math.sqrt(q.shape[-1]), dim=-1)
    return w @ values, keys, values


def test_cached_step_accepts_a_right_one():
    nb10.CACHED_STEP_HINTS.reset()
    assert nb10.check_cached_step(right)


def test_cached_step_names_each_mistake():
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
        first = nb10.check_cached_step(fn)
        assert not first and symptom in first.message and "Where to look" not in first.message, first.message
        second = nb10.check_cached_step(fn)
        assert not second and symptom in second.message and where in second.message, second.message
        assert "append first" not in second.message.lower()
    cases = {no_append: "should hold 1 positions",
             pair: "Return three things", todo: "Not implemented yet",
             (lambda *a: 1 / 0): "raised ZeroDivisionError", 3: "Pass your function"}
    for fn, hint in cases.items():
        fb = nb10.check_cached_step(fn)
        assert not fb and hint in fb.message, fb.message
