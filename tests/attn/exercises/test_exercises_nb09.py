"""Checkers of notebook 09: every correct way passes, every classic mistake gets its own hint.
A test that takes ``language`` runs in English and in Chinese, and hears each reply in both
(tests/_replies.py)."""
import math

import torch

from attn.exercises import nb09

from _replies import reply, says


def sinusoidal_loops(length, d_model):
    pe = torch.zeros(length, d_model)
    for p in range(length):
        for i in range(d_model // 2):
            pe[p, 2 * i] = math.sin(p / 10000 ** (2 * i / d_model))
            pe[p, 2 * i + 1] = math.cos(p / 10000 ** (2 * i / d_model))
    return pe


def sinusoidal_vectorised(length, d_model):
    p = torch.arange(length).float()[:, None]
    div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(p * div)
    pe[:, 1::2] = torch.cos(p * div)
    return pe


def test_sinusoidal_accepts_correct_ones(language):
    assert reply(nb09.check_sinusoidal, sinusoidal_loops)
    assert reply(nb09.check_sinusoidal, sinusoidal_vectorised)


def test_sinusoidal_names_each_mistake(language):
    def swapped(length, d):
        pe = sinusoidal_vectorised(length, d)
        return pe[:, [j + 1 if j % 2 == 0 else j - 1 for j in range(d)]]

    def exponent_i(length, d):
        pe = torch.zeros(length, d)
        for p in range(length):
            for i in range(d // 2):
                pe[p, 2 * i] = math.sin(p / 10000 ** (i / d))
                pe[p, 2 * i + 1] = math.cos(p / 10000 ** (i / d))
        return pe

    def halves(length, d):
        pe = sinusoidal_vectorised(length, d)
        return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)

    def from_one(length, d):
        return sinusoidal_vectorised(length + 1, d)[1:]

    def inverse(length, d):
        pe = torch.zeros(length, d, dtype=torch.float64)
        for p in range(length):
            for i in range(d // 2):
                pe[p, 2 * i] = math.sin(p * 10000 ** (2 * i / d))
                pe[p, 2 * i + 1] = math.cos(p * 10000 ** (2 * i / d))
        return pe

    def doubled(length, d):
        return 2 * sinusoidal_vectorised(length, d)

    cases = {swapped: "sin and cos are swapped", exponent_i: "uses i where the formula has 2i",
             halves: "two halves", from_one: "positions start at 1", inverse: "inverse",
             doubled: "some entries differ from"}
    for fn, hint in cases.items():
        fb = reply(nb09.check_sinusoidal, fn)
        assert not fb and says(fb, hint), (fn.__name__, fb.message)


def test_sinusoidal_checker_input_errors(language):
    check = nb09.check_sinusoidal
    assert says(reply(check, 3), "Pass your function")

    def todo(length, d):
        raise NotImplementedError

    assert says(reply(check, todo), "Not implemented yet")
    assert says(reply(check, lambda L, d: torch.zeros(d, L)), "the table should have shape")
    assert says(reply(check, lambda L, d: [[0.0]]), "Return a torch.Tensor")
    assert says(reply(check, lambda L, d: 1 / 0), "raised {error}", error="ZeroDivisionError")


def rope_loops(x):
    out = x.clone()
    L, E = x.shape
    for p in range(L):
        for i in range(E // 2):
            t = p * 10000 ** (-2 * i / E)
            a, b = x[p, 2 * i].item(), x[p, 2 * i + 1].item()
            out[p, 2 * i] = a * math.cos(t) - b * math.sin(t)
            out[p, 2 * i + 1] = a * math.sin(t) + b * math.cos(t)
    return out


def rope_complex(x):
    L, E = x.shape
    z = torch.view_as_complex(x.reshape(L, E // 2, 2).contiguous())
    w = 10000 ** (-torch.arange(0, E, 2, dtype=x.dtype) / E)
    turn = torch.polar(torch.ones(L, E // 2, dtype=x.dtype), torch.arange(L, dtype=x.dtype)[:, None] * w)
    return torch.view_as_real(z * turn).reshape(L, E)


def test_rope_accepts_correct_ones(language):
    assert reply(nb09.check_rope, rope_loops)
    assert reply(nb09.check_rope, rope_complex)


def test_rope_names_each_mistake(language):
    def backwards(x):
        return _rotate(x, sign=-1)

    def halves(x):
        L, E = x.shape
        inter = torch.stack([x[:, : E // 2], x[:, E // 2:]], dim=-1).reshape(L, E)
        r = rope_loops(inter).reshape(L, E // 2, 2)
        return torch.cat([r[..., 0], r[..., 1]], dim=1)

    def from_one(x):
        return _rotate(x, start=1)

    def freq_i(x):
        return _rotate(x, exponent=1)

    def in_place(x):
        x[:] = rope_loops(x)
        return x

    def scales(x):
        return 2 * rope_loops(x)

    def half_turn(x):
        return _rotate(x, sign=0.5)

    def first_row(x):
        return x[:1]

    cases = {backwards: "the wrong way", halves: "i + E/2", from_one: "positions start at 1",
             freq_i: "use i where the formula has 2i", in_place: "in place", scales: "changes it",
             half_turn: "the angles differ", first_row: "should have the input's shape"}
    for fn, hint in cases.items():
        fb = reply(nb09.check_rope, fn)
        assert not fb and says(fb, hint), (fn.__name__, fb.message)
    assert says(reply(nb09.check_rope, 3), "Pass your function")


def _rotate(x, sign=1, start=0, exponent=2):
    out = x.clone()
    L, E = x.shape
    for p in range(L):
        for i in range(E // 2):
            t = sign * (p + start) * 10000 ** (-exponent * i / E)
            a, b = x[p, 2 * i].item(), x[p, 2 * i + 1].item()
            out[p, 2 * i] = a * math.cos(t) - b * math.sin(t)
            out[p, 2 * i + 1] = a * math.sin(t) + b * math.cos(t)
    return out
