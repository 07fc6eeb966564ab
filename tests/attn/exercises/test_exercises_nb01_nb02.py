"""The checkers of notebooks 01 and 02: right answers pass, typical mistakes get a hint, None
gets "Not yet", and no message gives the expected answer away."""
import math

import pytest
import torch

from attn.exercises import nb01, nb02
import attn
from attn.exercises._base import Feedback, SoftmaxCalled, softmax_switched_off
from attn.functional import scaled_dot_product_attention
from attn.lessons.rnn_vs_attention import gradient_profile, path_counts
from attn.lessons.handbuilt.sentence import toy_attention, toy_embeddings, toy_scores
from attn.lessons.scaling import D_K_GRID, scaling_stats

CHECKERS = [nb01.check_softmax_row, nb01.check_path_counts, nb01.check_reversed_output,
            nb01.check_rnn_decay_distance, nb02.check_shapes, nb02.check_attention_output,
            nb02.check_score_variance, nb02.check_half_gradient_d_k]


@pytest.mark.parametrize("checker", CHECKERS)
def test_none_is_not_yet(checker):
    fb = checker(None)
    assert isinstance(fb, Feedback) and not fb
    assert repr(fb).startswith("❌ Not yet.") and "Replace None" in fb.message


@pytest.mark.parametrize("checker", CHECKERS)
def test_wrong_type_is_explained(checker):
    fb = checker("a string")
    assert not fb and fb.message


# --- nb01 -------------------------------------------------------------------------------------

def _softmax_row(s):
    return torch.exp(s) / torch.exp(s).sum()


def test_softmax_row():
    assert nb01.check_softmax_row(_softmax_row)
    assert nb01.check_softmax_row(lambda s: (torch.exp(s - s.max()) / torch.exp(s - s.max()).sum()).tolist())
    assert "divide by their sum" in nb01.check_softmax_row(torch.exp).message
    assert "scores themselves" in nb01.check_softmax_row(lambda s: s).message
    assert "sum to 1" in nb01.check_softmax_row(lambda s: torch.exp(s) / 2).message
    assert "returns None" in nb01.check_softmax_row(lambda s: None).message
    assert "shape (6,)" in nb01.check_softmax_row(lambda s: torch.zeros(5)).message
    assert "raised ZeroDivisionError" in nb01.check_softmax_row(lambda s: 1 / 0).message


def test_softmax_row_result_instead_of_function_is_explained():
    fb = nb01.check_softmax_row(_softmax_row(toy_scores()[0]))
    assert not fb and "function itself" in fb.message


def test_softmax_row_hard_coded_for_one_row_fails():
    row = _softmax_row(toy_scores()[0])
    fb = nb01.check_softmax_row(lambda s: row)
    assert not fb and "not seen" in fb.message


@pytest.mark.parametrize("library", [
    lambda s: torch.softmax(s, dim=-1),
    lambda s: s.softmax(-1),
    lambda s: torch.nn.functional.softmax(s, dim=-1),
    lambda s: torch.special.softmax(s, dim=-1),
    lambda s: attn.masked_softmax(s[None, :])[0],
    lambda s: torch.exp(s) / torch.exp(s).sum() + 0 * torch.softmax(s, -1),
    lambda s: torch.log_softmax(s, -1).exp(),
    lambda s: s.log_softmax(-1).exp(),
    lambda s: torch.nn.functional.log_softmax(s, dim=-1).exp(),
    lambda s: torch.special.log_softmax(s, dim=-1).exp(),
], ids=["torch.softmax", "Tensor.softmax", "F.softmax", "torch.special.softmax",
        "attn.masked_softmax", "hidden in a sum", "torch.log_softmax", "Tensor.log_softmax",
        "F.log_softmax", "torch.special.log_softmax"])
def test_softmax_row_catches_a_library_softmax(library):
    """The exercise says "no torch.softmax": the checker must catch it, not trust it."""
    fb = nb01.check_softmax_row(library)
    assert not fb and "library softmax" in fb.message


def test_softmax_switched_off_restores_the_library():
    with pytest.raises(SoftmaxCalled, match="reason"):
        with softmax_switched_off("reason"):
            torch.softmax(torch.zeros(3), dim=0)
    assert torch.allclose(torch.softmax(torch.zeros(2), dim=0), torch.tensor([0.5, 0.5]))
    assert torch.allclose(torch.zeros(2).softmax(0), torch.tensor([0.5, 0.5]))
    with pytest.raises(SoftmaxCalled, match="reason"):
        with softmax_switched_off("reason"):
            torch.log_softmax(torch.zeros(3), dim=0)
    assert torch.allclose(torch.zeros(2).log_softmax(0).exp(), torch.tensor([0.5, 0.5]))


def test_path_counts():
    c = path_counts(nb01.PATH_N)
    right = {"rnn_steps": c.rnn_steps, "attention_steps": c.attention_steps,
             "rnn_path": c.rnn_path, "attention_path": c.attention_path}
    assert nb01.check_path_counts(right)
    fb = nb01.check_path_counts({**right, "rnn_path": c.rnn_path + 7})
    assert not fb and "rnn_path" in fb.message and "attention_steps" not in fb.message
    assert str(c.rnn_path) not in fb.message
    assert "Missing keys" in nb01.check_path_counts({"rnn_steps": 1}).message


def _reversed_output(x):
    return toy_attention(x.flip(0))[0]


REVERSAL_SLIPS = [
    (lambda x: toy_attention(x)[0], "output for the original order", "the order of the words"),
    (lambda x: toy_attention(x.flip(0))[0].flip(0), "output for the original order", "the order of the words"),
    (lambda x: toy_attention(x.flip(1))[0], "features were reversed", "which dimension"),
    (lambda x: toy_attention(x.flip(0))[1], "the weights", "two return values"),
    (lambda x: toy_attention(toy_embeddings().flip(0))[0], "chapter's sentence only", "its argument"),
    (lambda x: toy_attention(x.flip(0))[0] * 2, "not toy_attention's output", "what it returns"),
]


def test_reversed_output_accepts_right_ones():
    nb01.REVERSED_OUTPUT_HINTS.reset()
    fb = nb01.check_reversed_output(_reversed_output)
    assert fb and "reversed the output" in fb.message
    # permutation equivariance: reversing the output of the original order is right too
    assert nb01.check_reversed_output(lambda x: toy_attention(x)[0].flip(0))


@pytest.mark.parametrize("fn, symptom, where", REVERSAL_SLIPS)
def test_reversed_output_names_each_slip_then_where_to_look(fn, symptom, where):
    nb01.REVERSED_OUTPUT_HINTS.reset()
    first = nb01.check_reversed_output(fn)
    assert not first and symptom in first.message and "Where to look" not in first.message, first.message
    second = nb01.check_reversed_output(fn)
    assert not second and symptom in second.message and where in second.message, second.message
    for fb in (first, second):
        assert "flip" not in fb.message, fb.message  # never the code


def test_reversed_output_input_errors():
    nb01.REVERSED_OUTPUT_HINTS.reset()
    assert "Pass the function itself" in nb01.check_reversed_output(_reversed_output(toy_embeddings())).message

    def todo(x):
        raise NotImplementedError

    assert "Not implemented yet" in nb01.check_reversed_output(todo).message
    assert "output only" in nb01.check_reversed_output(lambda x: toy_attention(x.flip(0))).message
    assert "ZeroDivisionError" in nb01.check_reversed_output(lambda x: 1 / 0).message


def test_rnn_decay_distance():
    p = gradient_profile()
    first = next(d for d, g in zip(p.distance, p.rnn) if g < 0.01 * p.rnn[0])
    assert nb01.check_rnn_decay_distance(first)
    assert "look further" in nb01.check_rnn_decay_distance(first - 1).message
    assert "first" in nb01.check_rnn_decay_distance(first + 1).message
    # whole numbers as every checker takes them (exercises._base.as_whole_number)
    assert nb01.check_rnn_decay_distance(float(first)) and nb01.check_rnn_decay_distance(torch.tensor(first))
    assert "whole number" in nb01.check_rnn_decay_distance(first + 0.5).message
    assert "whole number" in nb01.check_rnn_decay_distance(True).message


# --- nb02 -------------------------------------------------------------------------------------

def test_shapes():
    s = nb02.SHAPE_SIZES
    n, d_k, d_v = s["n"], s["d_k"], s["d_v"]
    right = {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_v), "scores": (n, n), "weights": (n, n),
             "output": (n, d_v)}
    assert nb02.check_shapes(right)
    assert nb02.check_shapes({k: torch.Size(v) for k, v in right.items()})
    fb = nb02.check_shapes({**right, "V": (n, d_k)})
    assert not fb and "V:" in fb.message and "Q:" not in fb.message


def _io():
    t = nb02.exercise_inputs()
    return t["X"] @ t["W_Q"], t["X"] @ t["W_K"], t["X"] @ t["W_V"]


def test_attention_output():
    q, k, v = _io()
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert nb02.check_attention_output(ref)
    assert "sqrt(d_k)" in nb02.check_attention_output(torch.softmax(q @ k.T, -1) @ v).message
    wrong_dim = torch.softmax(q @ k.T / math.sqrt(3), dim=0) @ v
    assert "columns" in nb02.check_attention_output(wrong_dim).message
    assert "shape (4, 2)" in nb02.check_attention_output(torch.zeros(2, 4)).message


def test_answers_become_numbers_through_one_conversion():
    """exercises._base.as_array converts with attn._checks.to_numpy: a tensor that needs grad is
    read, anything that is not numbers is explained, never raised."""
    for bad in ("abc", [[1.0, 2.0], [3.0]], {"a": 1}):
        fb = nb02.check_attention_output(bad)
        assert not fb and "should be numbers" in fb.message, bad
    got = torch.zeros(4, 2, requires_grad=True)
    assert "should be numbers" not in nb02.check_attention_output(got).message


def test_exercise_inputs_are_fresh_and_fixed():
    a, b = nb02.exercise_inputs(), nb02.exercise_inputs()
    assert all(torch.equal(a[k], b[k]) for k in a)
    a["X"].zero_()
    assert nb02.exercise_inputs()["X"].abs().sum() > 0


def test_score_variance():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(20000, 256, generator=g), torch.randn(20000, 256, generator=g)
    s = (q * k).sum(-1)
    assert nb02.check_score_variance((s.var().item(), (s / 16).var().item()))
    assert "standard deviation" in nb02.check_score_variance((s.std().item(), 1.0)).message
    assert "sqrt(d_k)" in nb02.check_score_variance((s.var().item(), (s / 256).var().item())).message


def test_half_gradient_d_k():
    first = next(d for d in D_K_GRID
                 if scaling_stats(d).grad_norm_raw < 0.5 * scaling_stats(d).grad_norm_scaled)
    i = D_K_GRID.index(first)
    assert nb02.check_half_gradient_d_k(first)
    assert "go further" in nb02.check_half_gradient_d_k(D_K_GRID[i - 1]).message
    assert "first one" in nb02.check_half_gradient_d_k(D_K_GRID[i + 1]).message
    assert "D_K_GRID" in nb02.check_half_gradient_d_k(100).message
    assert nb02.check_half_gradient_d_k(float(first))
    assert "whole number" in nb02.check_half_gradient_d_k([64]).message


def test_reversed_output_right_on_the_chapters_sentence_only_gets_a_hint_not_a_traceback():
    """On a 4-word sentence the weights (4, 4) and the output (4, F) differ in shape: the slip
    is compared with each, never broadcast against it."""
    nb01.REVERSED_OUTPUT_HINTS.reset()
    fb = nb01.check_reversed_output(lambda x: toy_attention(x.flip(0) if len(x) == 6 else x)[0])
    assert not fb and "On a sentence of 4 words it had not seen" in fb.message, fb.message
    assert "output for the original order" in fb.message
