"""The checkers' common ground, ``attn.exercises._base``: a step that cannot take an answer
further raises ``Refused`` with the reply, and ``@checker`` returns that reply.

``as_array``, ``as_whole_number`` and ``as_function`` refuse with the very words the checkers
said when they returned a value or a ``Feedback``, in both languages: the stored outputs of the
notebooks hold those words.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from attn.exercises import (Feedback, nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb10,
                            nb11, nb12)
from attn.exercises._base import Refused, as_array, as_function, as_whole_number, checker, shape_or_none
from attn.language import language, tr

from _replies import reply, says

EXERCISES = Path(__file__).resolve().parents[3] / "src" / "attn" / "exercises"
MODULES = (nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb10, nb11, nb12)
#: Every public checker of every notebook, as ``tools.assignments`` finds them, by its notebook's name.
CHECKERS = {f"{m.__name__.rsplit('.', 1)[1]}.{name}": getattr(m, name)
            for m in MODULES for name in m.__all__ if name.startswith("check_")}


# ---- Refused and @checker ------------------------------------------------------------------

def test_checker_passes_what_the_check_returns_through_unchanged():
    right, wrong = Feedback(True, "right"), Feedback(False, "wrong")

    @checker
    def check(answer):
        return right if answer else wrong

    assert check(1) is right and check(0) is wrong


def test_checker_returns_the_reply_a_refusal_carries():
    reply = Feedback(False, "not numbers")

    @checker
    def check(answer):
        raise Refused(reply)

    fb = check(None)
    assert fb is reply and not fb.correct


def test_a_refusal_in_a_helper_ends_the_check_there():
    steps = []

    def helper():
        steps.append("helper")
        raise Refused("no")

    @checker
    def check(answer):
        helper()
        steps.append("after the helper")
        return Feedback(True, "right")

    assert check(1) == Feedback(False, "no")
    assert steps == ["helper"]


def test_refused_takes_a_message_or_a_wrong_feedback_never_a_right_one():
    assert Refused("why").feedback == Feedback(False, "why")
    assert Refused(Feedback(False, "why")).feedback == Feedback(False, "why")
    assert str(Refused("why")) == "why"
    with pytest.raises(ValueError, match="reply: expected a Feedback that is not correct"):
        Refused(Feedback(True, "right"))


def test_checker_lets_every_other_exception_through():
    """A bad call from the notebook (not an answer) is an error, not a reply."""
    @checker
    def check(answer, *, norm_first=None):
        raise TypeError("norm_first: expected None, True or False, got str 'yes'")

    with pytest.raises(TypeError, match="norm_first: expected None, True or False"):
        check(1, norm_first="yes")
    with pytest.raises(TypeError, match="norm_first: expected None, True or False"):
        nb12.check_transformer_block(nb12.BASE, norm_first="yes")


def test_checker_keeps_the_name_the_docstring_and_the_signature():
    """tools.assignments finds checkers by name; help() in a notebook shows their docstring."""
    for check in CHECKERS.values():
        assert check.__name__.startswith("check_") and check.__doc__, check
    assert list(inspect.signature(nb05.check_self_attention).parameters) == ["cls", "masks"]


@pytest.mark.parametrize("check", CHECKERS.values(), ids=CHECKERS.keys())
def test_every_checker_answers_a_junk_answer_with_a_reply_never_an_exception(check):
    """Each junk answer is refused somewhere inside (a conversion, ``as_function``, a build):
    a checker without ``@checker`` would raise ``Refused`` at the learner instead."""
    params = inspect.signature(check).parameters.values()
    arity = sum(p.default is p.empty for p in params if p.kind == p.POSITIONAL_OR_KEYWORD)
    for junk in (None, object(), "text", 3, torch.zeros(2, 3)):
        fb = check(*[junk] * arity)
        assert isinstance(fb, Feedback), (junk, fb)
        assert not fb.correct and fb.message, (junk, fb)


#: The checkers of 01 and 02, whose placeholder is None: they say to replace it, in both languages.
NONE_PLACEHOLDER = [nb01.check_softmax_row, nb01.check_path_counts, nb01.check_reversed_output,
                    nb01.check_rnn_decay_distance, nb02.check_shapes, nb02.check_attention_output,
                    nb02.check_score_variance, nb02.check_half_gradient_d_k]


@pytest.mark.parametrize("checker", NONE_PLACEHOLDER, ids=lambda c: c.__name__)
def test_none_is_not_yet_and_a_string_is_explained(checker, language):
    fb = reply(checker, None)
    assert isinstance(fb, Feedback) and not fb and says(fb, "Replace None"), fb
    fb = reply(checker, "a string")
    assert not fb and fb.message, fb


def test_no_checker_asks_whether_a_step_returned_a_feedback():
    """The union protocol is gone: a step refuses instead of returning a ``Feedback`` for the
    checker to pass on, so no module of attn.exercises tests a value for being one."""
    asks = re.compile(r"isinstance\([^()]*,\s*Feedback\)")
    found = [f"{p.name}: {line.strip()}" for p in sorted(EXERCISES.glob("*.py")) if p.name != "_base.py"
             for line in p.read_text(encoding="utf-8").splitlines() if asks.search(line)]
    assert found == []


# ---- as_array and as_whole_number: the same replies as before ------------------------------

@pytest.mark.parametrize("answer, message", [
    ("abc", "answer should be numbers (a tensor, an array or a nested list), got str."),
    ({"a": 1}, "answer should be numbers (a tensor, an array or a nested list), got dict."),
    (torch.zeros(2, 4), "answer should have shape (4, 2), got (2, 4)."),
    ([[float("nan"), 0.0]] * 4, "answer contains NaN: is a row fully masked, or a -inf left in?"),
])
def test_as_array_refuses_with_the_reply_the_checker_returns(answer, message):
    with pytest.raises(Refused) as refused:
        as_array("answer", answer, (4, 2))
    assert refused.value.feedback == Feedback(False, message)
    assert nb02.check_attention_output(answer) == refused.value.feedback


def test_as_array_gives_numbers_back_as_a_float_array():
    arr = as_array("answer", torch.ones(4, 2, requires_grad=True), (4, 2))
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float64 and (arr == 1).all()
    assert as_array("answer", [[1, 2]], (1, 2)).tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("answer, message", [
    (None, "Replace the placeholder with answer (a whole number)."),
    (..., "Replace the placeholder with answer (a whole number)."),
    (True, "Answer should be a whole number, got True."),
    ("many", "Answer should be one whole number, got str."),
    ([1, 2], "Answer should be one whole number, got list."),
    (2.5, "Answer should be a whole number, got 2.5."),
    (float("inf"), "Answer should be a whole number, got inf."),
])
def test_as_whole_number_refuses_with_the_reply_the_checker_returns(answer, message):
    with pytest.raises(Refused) as refused:
        as_whole_number("answer", answer)
    assert refused.value.feedback == Feedback(False, message)
    if answer is not None:  # the checker says "Replace None with a number of bytes." itself
        assert nb07.check_weights_bytes(answer) == refused.value.feedback


def test_as_whole_number_takes_every_form_of_a_whole_number():
    for answer in (4, 4.0, np.int64(4), np.float32(4.0), torch.tensor(4), torch.tensor([4.0])):
        got = as_whole_number("answer", answer)
        assert got == 4 and type(got) is int, answer


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_refusal_speaks_the_notebooks_language(lang):
    with language(lang):
        fb = nb02.check_half_gradient_d_k(2.5)
        with pytest.raises(Refused) as refused:
            as_whole_number("answer", 2.5)
    assert fb == refused.value.feedback
    assert bool(re.search(r"[\u4e00-\u9fff]", fb.message)) == (lang == "zh"), fb.message


# ---- as_function: the twelve openings, word for word ---------------------------------------

def _softmax_row_why() -> str:
    return tr("runs it on more rows, with torch.softmax switched off")


#: (answer, as_function's arguments, the reply in English, in Chinese): each reply is the one
#: the checkers wrote out in full before ``as_function`` (their msgids in the old catalogue; the
#: Chinese without the stray space the catalogue had before "你的函数").
OPENINGS = [
    (None, dict(call="softmax_row(s)", why=_softmax_row_why),
     "Replace None with your function softmax_row(s) (define it above, pass it without calling it).",
     "请把 None 换成你的函数 softmax_row(s)（在上面定义，传入函数本身，不要调用它）。"),
    (torch.zeros(4), dict(call="softmax_row(s)", why=_softmax_row_why),
     "Pass the function itself, softmax_row, not its result: the checker runs it on more rows, with "
     "torch.softmax switched off.",
     "请传入函数本身 softmax_row，而不是它的结果：检查器会在关掉 torch.softmax 的情况下，"
     "用更多行来运行它。"),
    ([0.1, 0.9], dict(call="reversed_output(x)",
                      why=lambda: tr("runs it on sentences of other lengths too")),
     "Pass the function itself, reversed_output, not its result: the checker runs it on sentences of "
     "other lengths too.",
     "请传入函数本身 reversed_output，而不是它的结果：检查器还会在其他长度的句子上运行它。"),
    ("f", dict(call="softmax_row(s)", why=_softmax_row_why),
     "answer should be a function softmax_row(s), got str.",
     "answer 应当是函数 softmax_row(s)，实际得到 str。"),
    (None, dict(call="online_softmax(blocks)"),
     "Replace None with your function online_softmax(blocks).",
     "请把 None 换成你的函数 online_softmax(blocks)。"),
    ([1.0], dict(call="head_queries(weight, x, i, num_heads)"),  # no why: a list is not "its result"
     "answer should be a function head_queries(weight, x, i, num_heads), got list.",
     "answer 应当是函数 head_queries(weight, x, i, num_heads)，实际得到 list。"),
    (None, dict(), "Pass your function itself, got NoneType.", "请传入你的函数本身，实际得到 NoneType。"),
    (torch.zeros(2), dict(), "Pass your function itself, got Tensor.",
     "请传入你的函数本身，实际得到 Tensor。"),
    (3, dict(argument="split_heads"), "split_heads: expected a function, got int.",
     "split_heads：应传入一个函数，实际得到 int。"),
]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("answer, kwargs, english, chinese", OPENINGS, ids=[
    "None, with why", "a result", "a list, with why", "not a function, with why", "None, with call",
    "a list, with call", "None", "a tensor", "argument"])
def test_as_function_refuses_with_the_words_each_checker_wrote_out(lang, answer, kwargs, english, chinese):
    with language(lang):
        args = {k: (v() if k == "why" else v) for k, v in kwargs.items()}
        with pytest.raises(Refused) as refused:
            as_function(answer, **args)
    assert refused.value.feedback == Feedback(False, english if lang == "en" else chinese)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("check, answer, index", [
    (nb01.check_softmax_row, None, 0), (nb01.check_softmax_row, torch.zeros(4), 1),
    (nb01.check_softmax_row, "f", 3), (nb01.check_reversed_output, [0.1, 0.9], 2),
    (nb07.check_online_softmax, None, 4), (nb04.check_head_queries, [1.0], 5),
    (nb09.check_rope, None, 6), (nb12.check_layer_norm, torch.zeros(2), 7),
])
def test_each_checker_opens_with_its_as_function_reply(lang, check, answer, index):
    english, chinese = OPENINGS[index][2:]
    with language(lang):
        assert check(answer) == Feedback(False, english if lang == "en" else chinese)


def test_as_function_gives_the_function_itself_back():
    def softmax_row(s):
        return s

    assert as_function(softmax_row, "softmax_row(s)", why="runs it") is softmax_row
    assert as_function(nb05.ArticleAsPrinted) is nb05.ArticleAsPrinted  # a class can be called too
    with pytest.raises(TypeError, match="why: needs call"):
        as_function(softmax_row, why="runs it")


def test_split_merge_names_the_function_that_is_not_one():
    fb = nb05.check_split_merge(lambda x, h: x, "merge")
    assert fb == Feedback(False, "merge_heads: expected a function, got str.")


def test_a_function_that_raises_is_refused_with_its_error():
    """The learner's exception becomes the reply (nb04's ``_call``), and the check stops there."""
    def layer_macs(n, d_model, num_heads, d_k):
        raise ZeroDivisionError("division by zero")

    fb = nb04.check_layer_macs(layer_macs)
    assert fb == Feedback(False, "Your function raised ZeroDivisionError: division by zero")


def test_shape_or_none_reads_a_shape_and_nothing_else():
    """The two shape questions of notebook 05 (the silent case, the weights' shapes) read an
    answer's shapes through it, and explain a None in their own words."""
    assert shape_or_none(torch.Size([2, 3])) == (2, 3)
    assert shape_or_none([2, 3]) == shape_or_none((2, 3)) == (2, 3)
    for not_a_shape in ((2, 3.0), (True, 3), "2, 3", 6, None):
        assert shape_or_none(not_a_shape) is None, not_a_shape
    fb = nb05.check_weight_shapes({"averaged": (3, 7, 7), "per_head": "3, 4, 7, 7"})
    assert fb == Feedback(False, 'answer["per_head"] should be a tuple of ints, got \'3, 4, 7, 7\'.')
