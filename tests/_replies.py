"""What a checker's reply must be, in the language a test runs in.

A test of the checkers that takes the ``language`` fixture (tests/conftest.py) runs twice: in
English, then in Chinese. It asks a checker through ``reply(check, answer)``, which checks the
reply in the current language: its verdict first ("✅ Correct." or "❌ Not yet.", "✅ 正确。" or
"❌ 还不对。"), every sentence found in the catalogue, and, in Chinese, Chinese words, with no
English word of three letters or more but the names of code. A test asks whether a reply says
its symptom with ``says(reply, "an English fragment")``: in English, the fragment itself; in
Chinese, the translation of a sentence of the catalogue that holds the fragment.

The catalogue is the compiled one: after changing a sentence, run
``python -m tools.catalogue --fill ...`` (docs/translating.md) before these tests.
"""
from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable

from attn.exercises import Feedback
from attn.language import get_language, message_fields, missing_messages, translation
from tools.catalogue import POT, read

#: How a reply starts, in each language: (right, wrong).
VERDICTS = {"en": ("✅ Correct. ", "❌ Not yet. "), "zh": ("✅ 正确。", "❌ 还不对。")}
CHINESE = re.compile(r"[\u4e00-\u9fff]")
#: Names of code that a Chinese reply may hold, besides the names of what the checker was given
#: (the learner's classes and functions, the types of the answers).
CODE_WORDS = {
    "answer", "forward", "mask", "weight", "weights", "output", "keys", "values", "length",
    "class", "assert", "bool", "dtype", "softmax", "dropout", "eval", "cls", "attn",
    "qkv", "scores", "package", "autograd", "sin", "cos", "exp", "eps", "var", "scale", "strength",
    "gain", "bias", "LayerNorm", "BatchNorm", "RMSNorm", "LLaMA", "Linear", "Transformer",
    "MultiHeadAttention", "OnlineSoftmax", "SoftmaxCalled", "ValueError", "RuntimeError", "KeyError",
    "ZeroDivisionError", "PyTorch", "Python", "Raschka", "ReLU", "GELU", "SDPA", "RNN",
    "True", "False", "None", "NaN", "inf",
    "GiB", "MiB", "Unscaled", "Errs",  # the last two: the attention layers inside test blocks
    "str", "int", "float", "list", "tuple", "dict", "function", "NoneType",
    "diagonal", "vertical", "block", "stripe", "stripes", "flat", "nan", "uniform", "zeros",
}
#: What PyTorch says of the classic errors in a layer (each has its hint,
#: ``attn.exercises._layer_checker.ERROR_HINTS``), and a learner's exception with no message: the
#: learner's layers of tests/test_exercises_nb05.py and nb12.py raise them, and a reply quotes them.
TORCH_ERRORS = ("view size is not compatible with input tensor's size and stride",
                "batch1 must be a 3D tensor", "shape '[2, 5, 3]' is invalid for input of size 80",
                "mat1 and mat2 shapes cannot be multiplied (10x8 and 4x8)",
                "The size of tensor a (5) must match the size of tensor b (2) at non-singleton dimension 3",
                "expected scalar type Double but found Float", "")
#: What follows an exception's name is the learner's or PyTorch's words, in English, up to the
#: reply's next word in Chinese ("RuntimeError: view size is not compatible ... Use .reshape(...)
#: instead. 转置之后...").
QUOTED_ERRORS = re.compile(r"\b[A-Z]\w*(?:Error|Exception)[:：] ?[^\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]*")
#: The learner's own words quoted without an exception's name: the messages of the right guards
#: of notebook 05 (tests/test_exercises_nb05.py), which a reply quotes to say why they are right.
LEARNER_WORDS = ("d_model: expected a multiple of num_heads=5, got 12", "num_heads=5 does not divide d_model=12")
#: Code that may hold words: a call with plain arguments, a shape legend or tuple in ASCII brackets.
CODE_SPANS = re.compile(r"`[^`]*`|'[^'\n]*'|\"[^\"\n]*\"|[\w.]*\([^()\u3000-\uffef]*\)")


def reply(check: Callable[..., Feedback], *args: object, **kwargs: object) -> Feedback:
    """``check(*args, **kwargs)`` in the current language, its reply checked before it is
    returned: a ``Feedback`` whose verdict comes first, every sentence of it found in the
    catalogue and, in Chinese, in Chinese: no English word of three letters or more but the
    names of code and of what the checker was given (``english_words``)."""
    before = missing_messages()
    fb = check(*args, **kwargs)
    assert isinstance(fb, Feedback), f"{check.__name__} returned {type(fb).__name__}, not a Feedback"
    shown = repr(fb)
    code = get_language()
    assert not missing_messages() - before, f"not in the {code} catalogue: {missing_messages() - before}"
    right, wrong = VERDICTS[code]
    assert shown.startswith(right if fb.correct else wrong), shown
    if code == "zh":
        assert CHINESE.search(fb.message), shown
        unexplained = english_words(shown, _names(*args, *kwargs.values()))
        assert not unexplained, (unexplained, shown)
    return fb


def says(feedback: Feedback | str, fragment: str, /, **fields: object) -> bool:
    """Whether a reply (or its message) says ``fragment``, a piece of English of one or more of
    the catalogue's sentences, in the current language.

    In English the reply holds the fragment itself; in another language, the translation of
    one of the sentences that hold it. The ``{fields}`` of the fragment and of the translation
    stand for the values given in ``fields``, or for any text. A fragment may start with a
    small letter where its sentence starts with a capital (a sentence continued after a colon).

    Raises:
        ValueError: ``fragment`` is in no sentence of the catalogue (a piece of a value filled
            in, such as a learner's exception, or a sentence since changed), or ``fields``
            names a field the fragment does not have.
    """
    text = feedback.message if isinstance(feedback, Feedback) else feedback
    unknown = set(fields) - message_fields(fragment)
    if unknown:
        raise ValueError(f"fields: expected fields of the fragment {fragment!r}, got {sorted(unknown)}")
    capitalised = fragment[:1].upper() + fragment[1:]
    holders = [s for s in catalogue_sentences() if fragment in s or s.startswith(capitalised)]
    if not holders:
        raise ValueError(f"fragment: expected a piece of a sentence of the catalogue, got {fragment!r}")
    if get_language() == "en":
        return re.search(_pattern(fragment, fields), text, re.DOTALL) is not None
    return any(re.search(_pattern(translation(s), fields), text, re.DOTALL) for s in holders)


@functools.cache
def catalogue_sentences() -> tuple[str, ...]:
    """The English sentences of the catalogue (its template, src/attn/locale/attn.pot)."""
    return tuple(sorted(m.id for m in read(POT) if m.id))


def _pattern(template: str, fields: dict[str, object]) -> str:
    """A regular expression for ``template`` as ``tr`` fills it: its text as it is, each field
    the value given (formatted as the field says) or any text."""
    if not message_fields(template):  # shown as it is, braces and all
        return re.escape(template)
    parts = []
    for text, name, spec, conversion in string.Formatter().parse(template):
        parts.append(re.escape(text))
        if name is None:
            continue
        if name in fields:
            value = fields[name]
            shown = repr(value) if conversion == "r" else str(value) if conversion == "s" else value
            parts.append(re.escape(format(shown, spec)))
        else:
            parts.append(".*?")
    return "".join(parts)


def english_words(text: str, names: set[str] = frozenset()) -> list[str]:
    """The English words (3+ letters) of ``text`` that are neither code nor one of ``names``."""
    for said in LEARNER_WORDS:
        text = text.replace(said, " ")
    text = CODE_SPANS.sub(" ", QUOTED_ERRORS.sub(" ", text))
    words = []
    for token in re.findall(r"[^\s\u3000-\u303f\u4e00-\u9fff\uff00-\uffef\u201c\u201d]+", text):
        bare = _unwrapped(token.strip(",;:!?"))
        if re.search(r"[_.()\[\]=@/^*0-9<>{}|\\+\-√·×]", bare):
            continue  # code: d_model, nn.Linear, sqrt(d_k), W^Q, float32, -inf ...
        words += [w for w in re.findall(r"[A-Za-z]{3,}", bare) if w not in CODE_WORDS | names]
    return words


def _unwrapped(token: str) -> str:
    """A token without the prose around it: an unmatched bracket, a sentence's last full stop
    ("(the" -> "the", "exps." -> "exps"; ".sum()" and "f(x)" stay as they are)."""
    for left, right in ("()", "[]"):
        if token.startswith(left) and right not in token:
            token = token[1:]
        if token.endswith(right) and left not in token:
            token = token[:-1]
    if token.endswith(".") and token.count(".") == 1:
        token = token[:-1]
    return token


def _names(*values: object) -> set[str]:
    """The names of what a checker was given: classes, functions and the types of values."""
    return {getattr(v, "__name__", type(v).__name__) for v in values} | {type(v).__name__ for v in values}


def no_leak(fb: Feedback, *values: float) -> None:
    """No reply gives the answer away: none of ``values`` is written in it (as 0.00, 0.000 or a
    whole number), except the few that any sentence may hold (1.00, 0.00, 1, 2)."""
    for v in values:
        for text in (f"{v:.2f}", f"{v:.3f}", f"{v:,}" if float(v).is_integer() else "\0"):
            if text not in ("1.00", "0.00", "1", "2"):
                assert text not in fb.message, (text, fb.message)
