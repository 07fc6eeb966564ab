"""The checkers of notebook 01: right answers pass, typical mistakes get a hint, None gets
"Not yet", and no message gives the expected answer away. A test that takes ``language``
runs in English and in Chinese, and hears each reply in both (tests/_replies.py)."""
import pytest
import torch

from attn.exercises import nb01
import attn
from attn.exercises._base import SoftmaxCalled, softmax_switched_off
from attn.lessons.rnn_vs_attention import gradient_profile, path_counts
from attn.lessons.handbuilt.sentence import toy_attention, toy_embeddings, toy_scores

from _replies import reply, says


def _softmax_row(s):
    return torch.exp(s) / torch.exp(s).sum()


def test_softmax_row(language):
    check = nb01.check_softmax_row
    assert reply(check, _softmax_row)
    assert reply(check, lambda s: (torch.exp(s - s.max()) / torch.exp(s - s.max()).sum()).tolist())
    assert says(reply(check, torch.exp), "divide by their sum")
    assert says(reply(check, lambda s: s), "scores themselves")
    assert says(reply(check, lambda s: torch.exp(s) / 2), "weights must sum to 1")
    assert says(reply(check, lambda s: None), "returns None")
    assert says(reply(check, lambda s: torch.zeros(5)), "shape {shape}", shape=(6,))
    assert says(reply(check, lambda s: 1 / 0), "raised {error}", error="ZeroDivisionError")


def test_softmax_row_result_instead_of_function_is_explained(language):
    fb = reply(nb01.check_softmax_row, _softmax_row(toy_scores()[0]))
    assert not fb and says(fb, "Pass the function itself")


def test_softmax_row_hard_coded_for_one_row_fails(language):
    row = _softmax_row(toy_scores()[0])
    fb = reply(nb01.check_softmax_row, lambda s: row)
    assert not fb and says(fb, "a row it had not seen")


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
def test_softmax_row_catches_a_library_softmax(library, language):
    """The exercise says "no torch.softmax": the checker must catch it, not trust it."""
    fb = reply(nb01.check_softmax_row, library)
    assert not fb and says(fb, "calls a library softmax")


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


def test_path_counts(language):
    c = path_counts(nb01.PATH_N)
    right = {"rnn_steps": c.rnn_steps, "attention_steps": c.attention_steps,
             "rnn_path": c.rnn_path, "attention_path": c.attention_path}
    assert reply(nb01.check_path_counts, right)
    fb = reply(nb01.check_path_counts, {**right, "rnn_path": c.rnn_path + 7})
    assert not fb and "rnn_path" in fb.message and "attention_steps" not in fb.message
    assert str(c.rnn_path) not in fb.message
    fb = reply(nb01.check_path_counts, {k: v + 1 for k, v in right.items()})
    assert not fb and all(says(fb, "{key}: {hint}", key=k) for k in right)
    assert says(reply(nb01.check_path_counts, {"rnn_steps": 1}), "Missing keys")


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


def test_reversed_output_accepts_right_ones(language):
    nb01.REVERSED_OUTPUT_HINTS.reset()
    fb = reply(nb01.check_reversed_output, _reversed_output)
    assert fb and says(fb, "reversing the input only reversed the output")
    # permutation equivariance: reversing the output of the original order is right too
    assert reply(nb01.check_reversed_output, lambda x: toy_attention(x)[0].flip(0))


@pytest.mark.parametrize("fn, symptom, where", REVERSAL_SLIPS)
def test_reversed_output_names_each_slip_then_where_to_look(fn, symptom, where, language):
    nb01.REVERSED_OUTPUT_HINTS.reset()
    first = reply(nb01.check_reversed_output, fn)
    assert not first and says(first, symptom) and not says(first, "Where to look"), first.message
    second = reply(nb01.check_reversed_output, fn)
    assert not second and second.message.startswith(first.message), second.message
    assert says(second, "Where to look") and says(second, where), second.message
    for fb in (first, second):
        assert "flip" not in fb.message, fb.message  # never the code


def test_reversed_output_input_errors(language):
    nb01.REVERSED_OUTPUT_HINTS.reset()
    check = nb01.check_reversed_output
    assert says(reply(check, _reversed_output(toy_embeddings())), "Pass the function itself")

    def todo(x):
        raise NotImplementedError

    assert says(reply(check, todo), "Not implemented yet")
    assert says(reply(check, lambda x: toy_attention(x.flip(0))), "return the output only")
    fb = reply(check, lambda x: 1 / 0)
    assert says(fb, "raised {error}") and "ZeroDivisionError" in fb.message
    weights_elsewhere = reply(check, lambda x: toy_attention(x.flip(0))[0 if len(x) == 6 else 1])
    assert not weights_elsewhere and says(weights_elsewhere, "an (L, L) matrix, the weights")


def test_rnn_decay_distance(language):
    p = gradient_profile()
    first = next(d for d, g in zip(p.distance, p.rnn) if g < 0.01 * p.rnn[0])
    check = nb01.check_rnn_decay_distance
    assert reply(check, first)
    assert says(reply(check, first - 1), "look further")
    assert says(reply(check, first + 1), "find the *first* such distance")
    # whole numbers as every checker takes them (exercises._base.as_whole_number)
    assert reply(check, float(first)) and reply(check, torch.tensor(first))
    assert says(reply(check, first + 0.5), "should be a whole number")
    assert says(reply(check, True), "should be a whole number")
