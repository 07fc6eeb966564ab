"""Every checker of every notebook speaks Chinese when the language is "zh": the verdict, each
named mistake and both tiers of its hint. For each module, each checker is run with a right
answer and with wrong ones (the buggy answers of the English tests, imported from them), and
each reply must contain Chinese, ask the catalogue for no sentence it lacks, and hold no
English word of three letters or more but the names of code.

The catalogue is the compiled one: after changing a sentence, run
``python -m tools.catalogue --fill ...`` (docs/translating.md) before these tests.
"""
from __future__ import annotations

import functools
import json
import math
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import test_exercises_nb01_nb02 as t0102
import test_exercises_nb03_nb04 as t0304
import test_exercises_nb05 as t05
import test_exercises_nb07 as t07
import test_exercises_nb09 as t09
import test_exercises_nb10 as t10
import test_exercises_nb11 as t11
import test_exercises_nb12 as t12
from attn import exercises
from attn.blockwise import causal_blocks
from attn.lessons.cost.counts import multi_head_cost
from attn.exercises import (Feedback, _layer_bugs, nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08,
                            nb09, nb10, nb11, nb12)
from attn.lessons.handbuilt import heads as handbuilt_heads
from attn.lessons.handbuilt.sentence import toy_attention, toy_embeddings, toy_scores
from attn.language import get_language, language, missing_messages
from attn.lessons.rnn_vs_attention import gradient_profile, path_counts
from attn.lessons.scaling import D_K_GRID, scaling_stats
from attn.lessons.trained.tasks import TASKS
from attn.lessons.worked_example import printed, worked_steps

CHINESE = re.compile(r"[\u4e00-\u9fff]")
#: Names of code that a Chinese reply may hold, besides the names of what the checker was given
#: (the learner's classes and functions, the types of the answers).
CODE_WORDS = {
    "answer", "forward", "mask", "weight", "weights", "output", "keys", "values", "length",
    "class", "assert", "bool", "dtype", "softmax", "dropout", "eval", "cls", "attn",
    "qkv", "scores", "package", "autograd", "sin", "cos", "exp", "eps", "var", "scale", "strength",
    "LayerNorm", "BatchNorm", "Linear", "Transformer", "MultiHeadAttention", "OnlineSoftmax",
    "SoftmaxCalled", "ValueError", "RuntimeError", "KeyError", "ZeroDivisionError", "PyTorch",
    "Python", "Raschka", "ReLU", "GELU", "SDPA", "RNN", "True", "False", "None", "NaN", "inf",
    "GiB", "MiB", "Unscaled", "Errs",  # the last two: the attention layers inside test blocks
    "str", "int", "float", "list", "tuple", "dict", "function", "NoneType",
    "diagonal", "vertical", "block", "stripe", "stripes", "flat", "nan", "uniform", "zeros",
}
#: What PyTorch says of the classic errors in a layer (each has its hint, ``_layer_checker.ERROR_HINTS``).
TORCH_ERRORS = ("view size is not compatible with input tensor's size and stride",
                "batch1 must be a 3D tensor", "shape '[2, 5, 3]' is invalid for input of size 80",
                "mat1 and mat2 shapes cannot be multiplied (10x8 and 4x8)",
                "The size of tensor a (5) must match the size of tensor b (2) at non-singleton dimension 3",
                "expected scalar type Double but found Float", "")
#: What a learner's own code says, in English: Python's, PyTorch's or the learner's exceptions.
LEARNER_ERRORS = ("division by zero", "d_model: expected a multiple of num_heads=5, got 12",
                  *filter(None, TORCH_ERRORS))
#: Code that may hold words: a call with plain arguments, a shape legend or tuple in ASCII brackets.
CODE_SPANS = re.compile(r"`[^`]*`|'[^'\n]*'|\"[^\"\n]*\"|[\w.]*\([^()\u3000-\uffef]*\)")


def english_words(text: str, names: set[str] = frozenset()) -> list[str]:
    """The English words (3+ letters) of ``text`` that are neither code nor one of ``names``."""
    for said in LEARNER_ERRORS:
        text = text.replace(said, " ")
    text = CODE_SPANS.sub(" ", text)
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


def zh(check, *args, **kwargs) -> Feedback:
    """``check(*args, **kwargs)`` in Chinese; the reply is checked before it is returned."""
    before = missing_messages()
    with language("zh"):
        fb = check(*args, **kwargs)
        shown = repr(fb)
    assert isinstance(fb, Feedback)
    assert not missing_messages() - before, f"not in the catalogue: {missing_messages() - before}"
    assert CHINESE.search(fb.message), shown
    assert shown.startswith("✅ 正确。" if fb.correct else "❌ 还不对。"), shown
    unexplained = english_words(shown, _names(*args))
    assert not unexplained, (unexplained, shown)
    return fb


def zh_twice(check, *args, reset=None, **kwargs) -> tuple[Feedback, Feedback]:
    """The same wrong answer twice, in Chinese: the symptom, then the place to look too."""
    if reset is not None:
        reset()
    first, second = zh(check, *args, **kwargs), zh(check, *args, **kwargs)
    assert not first.correct and not second.correct
    return first, second


def where_told(first: Feedback, second: Feedback) -> bool:
    """The second tier is the first one with "where to look" added, in Chinese."""
    return second.message.startswith(first.message) and "该看哪里：" in second.message


# ---- the helper itself ---------------------------------------------------------------------

def test_english_words_finds_prose_and_spares_code():
    assert english_words("你的 softmax 沿 dim=-1，nn.Linear(d_model, d_ff) 与 `x` 对了：.sum()") == []
    assert english_words("MyHead 的 forward(x, mask) 与 (out, in)", {"MyHead"}) == []
    assert english_words("Your scores are not scaled") == ["Your", "are", "not", "scaled"]
    assert english_words("请检查（the chapter）与 that.") == ["the", "chapter", "that"]


def test_the_language_comes_back_and_no_text_is_kept_from_chinese():
    """Tables hold English (marked, not translated at import); a reply is made when asked for."""
    assert get_language() == "en"
    cls = t05.HEAD_BUGS[0][1]
    nb05.reset_hints()
    chinese = zh(nb05.check_self_attention, cls)
    nb05.reset_hints()
    english = nb05.check_self_attention(cls)
    assert get_language() == "en" and not CHINESE.search(english.message)
    assert repr(english).startswith("❌ Not yet. With no mask: your scores are not scaled")
    assert chinese.message != english.message
    assert _layer_bugs.BUGS["no scaling"][0].startswith("Your scores are not scaled")
    assert nb12.BUGS["no activation"][0].startswith("your feed-forward has no non-linearity")


#: Imports the checkers with Chinese chosen first, as a Chinese notebook does, then prints the
#: replies to answers that show the module-level tables (the layer bugs and names, the error
#: hints, the block's bugs), in English, then in Chinese, and the sentences the catalogue lacked.
IMPORTED_IN_CHINESE = """
import json, sys
sys.path.insert(0, "tests/attn/exercises")
from attn.language import missing_messages, set_language
set_language("zh")
import test_exercises_nb05 as t05, test_exercises_nb12 as t12
from attn.exercises import nb05, nb12

class Errs(t05.ChapterMHA):
    def forward(self, x, mask=None):
        raise RuntimeError("view size is not compatible with input tensor's size and stride")

class NeverDrops(t12.Block):
    def sa(self, x, mask):
        return self.attention(x, mask)[0]

    def feed_forward(self, x):
        return self.ff[3](self.ff[1](self.ff[0](x)))

def replies():
    return [nb05.check_self_attention(t05.HEAD_BUGS[0][1]).message,
            nb05.check_multi_head_attention(t05.RaschkaMHA).message,
            nb05.check_multi_head_attention(Errs).message,
            nb05.check_multi_head_attention(t05.DropoutEverywhereMHA).message,
            nb05.check_split_merge(t05.split_ok, lambda x: x.reshape(x.shape[0], x.shape[2], -1)).message,
            nb12.check_transformer_block(t12.BUGGY["no activation"][0]).message,
            nb12.check_transformer_block(t12.BUGGY["dropout in eval"][0]).message,
            nb12.check_transformer_block(NeverDrops).message]

set_language("en")
english = replies()
set_language("zh")
chinese = replies()
print(json.dumps([english, chinese, sorted(missing_messages())]))
"""


def test_tables_are_translated_where_shown_not_at_import():
    """A table translated at import would hold Chinese here: English replies would show it, and
    the Chinese ones would ask the catalogue for sentences it does not have."""
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", IMPORTED_IN_CHINESE], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    english, chinese, missing = json.loads(out.splitlines()[-1])
    assert not [m for m in english if CHINESE.search(m)]
    names = {"Errs", "NeverDrops", "RaschkaMHA"}
    assert all(CHINESE.search(m) and not english_words(m, names) for m in chinese), chinese
    assert missing == []


# ---- notebook 01 ---------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    t0102._softmax_row, torch.exp, lambda s: s, lambda s: torch.exp(s) / 2, lambda s: None,
    lambda s: torch.zeros(5), lambda s: torch.softmax(s, -1), lambda s: 1 / 0,
    lambda s: t0102._softmax_row(toy_scores()[0]), t0102._softmax_row(toy_scores()[0]), None, "a string",
], ids=["right", "exp", "scores", "half", "none-returned", "shape", "library", "raises",
        "one-row-only", "result", "None", "str"])
def test_nb01_softmax_row(answer):
    zh(nb01.check_softmax_row, answer)


def test_nb01_path_counts():
    c = path_counts(nb01.PATH_N)
    right = {"rnn_steps": c.rnn_steps, "attention_steps": c.attention_steps,
             "rnn_path": c.rnn_path, "attention_path": c.attention_path}
    assert zh(nb01.check_path_counts, right).correct
    wrong = {k: v + 1 for k, v in right.items()}
    for answer in (wrong, {"rnn_steps": 1}, None, "a string"):
        assert not zh(nb01.check_path_counts, answer).correct


@pytest.mark.parametrize("fn, symptom, where", t0102.REVERSAL_SLIPS)
def test_nb01_reversed_output_each_slip_in_both_tiers(fn, symptom, where):
    first, second = zh_twice(nb01.check_reversed_output, fn, reset=nb01.REVERSED_OUTPUT_HINTS.reset)
    assert where_told(first, second)


def test_nb01_reversed_output_right_and_input_errors():
    def todo(x):
        raise NotImplementedError

    assert zh(nb01.check_reversed_output, t0102._reversed_output).correct
    for answer in (todo, lambda x: toy_attention(x.flip(0)), t0102._reversed_output(toy_embeddings()),
                   lambda x: toy_attention(x.flip(0))[0 if len(x) == 6 else 1],
                   lambda x: toy_attention(x.flip(0) if len(x) == 6 else x)[0], None, 3):
        assert not zh(nb01.check_reversed_output, answer).correct


def test_nb01_rnn_decay_distance():
    p = gradient_profile()
    first = next(d for d, g in zip(p.distance, p.rnn) if g < 0.01 * p.rnn[0])
    assert zh(nb01.check_rnn_decay_distance, first).correct
    for answer in (first - 1, first + 1, first + 0.5, None):
        assert not zh(nb01.check_rnn_decay_distance, answer).correct


# ---- notebook 02 ---------------------------------------------------------------------------

def test_nb02_shapes():
    s = nb02.SHAPE_SIZES
    n, d_k, d_v = s["n"], s["d_k"], s["d_v"]
    right = {"Q": (n, d_k), "K": (n, d_k), "V": (n, d_v), "scores": (n, n), "weights": (n, n),
             "output": (n, d_v)}
    assert zh(nb02.check_shapes, right).correct
    for answer in ({k: (1, 1) for k in right}, {"Q": (n, d_k)}, None, 3):
        assert not zh(nb02.check_shapes, answer).correct


def test_nb02_attention_output():
    q, k, v = t0102._io()
    assert zh(nb02.check_attention_output, torch.nn.functional.scaled_dot_product_attention(q, k, v)).correct
    for answer in (torch.softmax(q @ k.T, -1) @ v, torch.softmax(q @ k.T / math.sqrt(3), dim=0) @ v,
                   torch.zeros(4, 2), torch.zeros(2, 4), "abc", None):
        assert not zh(nb02.check_attention_output, answer).correct


def test_nb02_score_variance_and_half_gradient():
    assert zh(nb02.check_score_variance, (256.0, 1.0)).correct
    for answer in ((16.0, 1.0), (100.0, 1.0), (256.0, 1 / 16), None):
        assert not zh(nb02.check_score_variance, answer).correct
    first = next(d for d in D_K_GRID
                 if scaling_stats(d).grad_norm_raw < 0.5 * scaling_stats(d).grad_norm_scaled)
    i = D_K_GRID.index(first)
    assert zh(nb02.check_half_gradient_d_k, first).correct
    for answer in (D_K_GRID[i - 1], D_K_GRID[i + 1], 100, 2.0, None):
        assert not zh(nb02.check_half_gradient_d_k, answer).correct


# ---- notebook 03 ---------------------------------------------------------------------------

STEPS = worked_steps()


@pytest.mark.parametrize("check, answers", [
    (nb03.check_q_row, [STEPS["Q"][1], printed("Q")[1].tolist(), STEPS["K"][1].tolist(), [3, 3],
                        [0, 1, 0], "zero one", None]),
    (nb03.check_softmax_row, [STEPS["weights"][1], printed("weights")[1].tolist(),
                              torch.softmax(printed("scaled")[1], -1).tolist(),
                              torch.softmax(STEPS["QK^T"][1], -1).tolist(), [0.5, 0.5, 0.5],
                              [0.2, 0.3, 0.5], [[0.5, 0.5]], None]),
    (nb03.check_output_row, [STEPS["output"][1], printed("output")[1].tolist(), [0.9, 0.56],
                             worked_steps(overrides={"Q": printed("Q")})["output"][1].tolist(),
                             [1.0, 1.0], [float("nan"), 1], None]),
], ids=["q_row", "softmax_row", "output_row"])
def test_nb03(check, answers):
    right, *wrong = answers
    assert zh(check, right).correct
    for answer in wrong:
        assert not zh(check, answer).correct


# ---- notebook 04 ---------------------------------------------------------------------------

def test_nb04_head_queries():
    assert zh(nb04.check_head_queries, t0304._head_queries).correct
    for answer in (
        lambda w, x, i, h: x @ w[:, i * (w.shape[0] // h):(i + 1) * (w.shape[0] // h)],
        lambda w, x, i, h: x @ w[(i + 1) * (w.shape[0] // h):(i + 2) * (w.shape[0] // h)].T,
        lambda w, x, i, h: (x @ w.T).reshape(x.shape[0], h, x.shape[1], -1)[:, i],
        lambda w, x, i, h: x @ w.T, lambda w, x, i, h: (x @ w.T).tolist(),
        lambda w, x, i, h: 2 * t0304._head_queries(w, x, i, h), lambda w, x, i, h: 1 / 0,
        None, "a string",
    ):
        assert not zh(nb04.check_head_queries, answer).correct


@pytest.mark.parametrize("count, symptom, where", t0304.PARAM_SLIPS)
def test_nb04_param_count_each_slip_in_both_tiers(count, symptom, where):
    first, second = zh_twice(nb04.check_param_count, t0304._param_counts(count),
                             reset=nb04.PARAM_COUNT_HINTS.reset)
    assert where_told(first, second)


def test_nb04_param_count_right_and_input_errors():
    heads = nb04.PARAMS_QUESTION["heads"]
    right = t0304._param_counts(lambda layer: sum(p.numel() for p in layer.parameters()))
    assert zh(nb04.check_param_count, right).correct
    one_off = {h: c + (h == heads[1]) for h, c in right.items()}
    for answer in (None, 37248, {heads[0]: 1}, {h: "many" for h in heads}, {h: 2.5 for h in heads}, one_off):
        assert not zh(nb04.check_param_count, answer).correct


def test_nb04_layer_macs():
    assert zh(nb04.check_layer_macs, t0304._layer_macs).correct
    E2 = lambda n, E: n * E * E  # noqa: E731
    for answer in (lambda n, E, h: 3 * E2(n, E) + 2 * n * n * E, lambda n, E, h: 4 * E2(n, E) + n * n * E,
                   lambda n, E, h: h * 4 * E2(n, E) + 2 * n * n * E,
                   lambda n, E, h: 4 * E2(n, E) + h * 2 * n * n * E, lambda n, E, h: 4 * E2(n, E),
                   lambda n, E, h: t0304._layer_macs(n, E, h) + 1, lambda n, E, h: 2.5,
                   lambda n, E, h: [1 / 0], None, 42):
        assert not zh(nb04.check_layer_macs, answer).correct


@pytest.mark.parametrize("count, symptom, where", t0304.SOFTMAX_SLIPS)
def test_nb04_softmax_entries_each_slip_in_both_tiers(count, symptom, where):
    first, second = zh_twice(nb04.check_softmax_entries, t0304._softmax_answer(count),
                             reset=nb04.SOFTMAX_ENTRIES_HINTS.reset)
    assert where_told(first, second)


def test_nb04_softmax_entries_right_swapped_and_input_errors():
    q = nb04.SOFTMAX_QUESTION
    many = multi_head_cost(q["n"], q["d_model"], q["num_heads"]).softmax_entries
    one = multi_head_cost(q["n"], q["d_model"], 1).softmax_entries
    assert zh(nb04.check_softmax_entries, (many, one)).correct
    for answer in ((one, many), None, 5, ("a", 1), (1, "b")):
        assert not zh(nb04.check_softmax_entries, answer).correct


# ---- notebook 05 (and the layer machinery, _layer_bugs and _layer_checker) -------------------

@pytest.fixture
def fresh_nb05_hints():
    nb05.reset_hints()
    yield
    nb05.reset_hints()


@pytest.mark.parametrize("check, cls", [(nb05.check_self_attention, c) for c in t05.CORRECT_HEADS]
                         + [(nb05.check_multi_head_attention, c) for c in t05.CORRECT_MHAS],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_nb05_every_correct_layer_hears_its_verdict(check, cls):
    assert zh(check, cls).correct


def test_nb05_step_one_verdict():
    assert zh(nb05.check_self_attention, t05.ChapterHead, masks=False).correct


@pytest.mark.parametrize("check, bug, cls",
                         [(nb05.check_self_attention, b, c) for b, c in t05.HEAD_BUGS]
                         + [(nb05.check_multi_head_attention, b, c) for b, c in t05.MHA_BUGS],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_nb05_every_classic_bug_in_both_tiers(check, bug, cls, fresh_nb05_hints):
    first, second = zh_twice(check, cls)
    assert where_told(first, second)


def failing(message: str) -> type:
    """A learner's multi-head layer whose forward fails with PyTorch's ``message``."""
    def forward(self, x, mask=None):
        raise RuntimeError(message)

    return type("Errs", (t05.ChapterMHA,), {"forward": forward})


Errs = failing(TORCH_ERRORS[0])


@pytest.mark.parametrize("message", TORCH_ERRORS)
def test_nb05_each_torch_error_is_explained(message):
    assert not zh(nb05.check_multi_head_attention, failing(message)).correct


class MaskFilledWithZero(t05.ChapterHead):
    """Blocked scores set to 0, not -inf: right without a mask, wrong with one, no classic bug."""

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = Q @ K.transpose(1, 2) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, 0.0)
        weights = scores.softmax(-1)
        return weights @ V, weights


class InitNotWritten(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        raise NotImplementedError


class ReluForQueries(t05.ChapterHead):
    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.W_q = nn.ReLU()


class FusedMatrix(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.qkv = nn.Parameter(torch.zeros(5, 5))


@pytest.mark.parametrize("check, cls", [
    (nb05.check_self_attention, c) for c in (
        t05.ChapterHead(6, 4, 3), None, t05.NotAModule, t05.InitFails, t05.Skeleton,
        t05.SkeletonForward, t05.TransposedShapes, t05.NoMaskArgument, t05.ReturnsDict,
        t05.OtherNames, t05.DropoutHead, t05.WholeLayerInFloat16, MaskFilledWithZero,
        InitNotWritten, ReluForQueries, FusedMatrix)
] + [(nb05.check_multi_head_attention, c) for c in (
    Errs, t05.DropoutEverywhereMHA, t05.mha_with(scale=lambda self: 1.0, softmax_dim=lambda self: -2))],
    ids=lambda v: getattr(v, "__name__", type(v).__name__))
def test_nb05_what_the_layer_checkers_cannot_run_or_name(check, cls, fresh_nb05_hints):
    first, second = zh_twice(check, cls)
    assert second.message.startswith(first.message)


def test_nb05_wrong_shapes_weights_and_projections(fresh_nb05_hints):
    class WrongOutputShape(t05.ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out[:, :, :4], weights

    class Averaged(t05.ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out, weights.mean(dim=1)

    class ScoresAsWeights(t05.ChapterMHA):
        def forward(self, x, mask=None):
            out, weights = super().forward(x, mask)
            return out, weights.log()

    class NoWo(t05.ChapterMHA):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            del self.W_o

    class BadMatrix(nn.Module):
        def __init__(self, d_model, d_k, d_v):
            super().__init__()
            self.W_q, self.W_k = nn.Parameter(torch.zeros(5, 5)), nn.Parameter(torch.zeros(6, 4))
            self.W_v = nn.Parameter(torch.zeros(6, 3))

    class BadFused(nn.Module):
        def __init__(self, d_model, d_k, d_v):
            super().__init__()
            self.qkv = nn.Linear(d_model, 3 * d_k)

    for cls in (WrongOutputShape, Averaged, ScoresAsWeights, NoWo):
        assert not zh(nb05.check_multi_head_attention, cls).correct
    for cls in (BadMatrix, BadFused):
        assert not zh(nb05.check_self_attention, cls).correct


def test_nb05_split_merge():
    def todo(x, n_heads):
        raise NotImplementedError

    assert zh(nb05.check_split_merge, t05.split_ok, t05.merge_ok).correct
    for split, merge in [
        (lambda x, h: x.view(x.shape[0], h, x.shape[1], -1), t05.merge_ok),
        (t05.split_ok, lambda x: x.reshape(x.shape[0], x.shape[2], -1)),
        (t05.split_ok, lambda x: x.transpose(1, 2)),
        (lambda x, h: x, t05.merge_ok),
        (lambda x, h: x.view(x.shape[0], x.shape[1], h, -1).transpose(1, 2).flip(-1), t05.merge_ok),
        (t05.split_ok, lambda x: x.transpose(1, 2).flip(-1).reshape(x.shape[0], x.shape[2], -1)),
        (None, t05.merge_ok), (todo, t05.merge_ok), (lambda x, h: 1 / 0, t05.merge_ok),
        (functools.partial(todo), t05.merge_ok), (functools.partial(lambda x, h: 1 / 0), t05.merge_ok),
    ]:
        assert not zh(nb05.check_split_merge, split, merge).correct


def test_nb05_silent_case():
    right = {"head_dim": 2, "weights": (2, 5, 6, 6), "output": torch.Size([2, 5, 12])}
    assert zh(nb05.check_silent_case, right).correct
    for wrong in ({**right, "head_dim": 3}, {**right, "weights": (2, 5, 5, 5)},
                  {**right, "weights": (2, 6, 5, 5)}, {**right, "output": (2, 6, 12)},
                  {**right, "output": "error"}, {**right, "head_dim": 2.4}, None):
        assert not zh(nb05.check_silent_case, wrong).correct


def test_nb05_head_split_guard(fresh_nb05_hints):
    class Asserted(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            assert d_model % num_heads == 0
            super().__init__(d_model, num_heads)

    class Silent(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            if d_model % num_heads:
                raise ValueError("bad sizes")
            super().__init__(d_model, num_heads)

    class TooStrict(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            if num_heads != 1:
                raise ValueError(f"d_model={d_model}, num_heads={num_heads}")
            super().__init__(d_model, num_heads)

    class WrongType(nb05.ArticleAsPrinted):
        def __init__(self, d_model, num_heads):
            if d_model % num_heads:
                raise RuntimeError(f"{d_model} {num_heads}")
            super().__init__(d_model, num_heads)

    assert zh(nb05.check_head_split_guard, t05.Guarded).correct
    for cls in (nb05.ArticleAsPrinted, Asserted, Silent, TooStrict, WrongType, t05.HardCoded,
                t05.HardCodedMessage, t05.CheckedAfterTheWeights, t05.CheckedAfterOneMatrix):
        first, second = zh_twice(nb05.check_head_split_guard, cls)
        assert where_told(first, second)
    assert not zh(nb05.check_head_split_guard, print).correct


def test_nb05_pytorchs_own_layer(fresh_nb05_hints):
    L = nb05.MASK_LENGTH
    assert zh(nb05.check_mha_causal_mask, torch.ones(L, L, dtype=torch.bool).triu(1)).correct
    assert zh(nb05.check_mha_causal_mask, nn.Transformer.generate_square_subsequent_mask(L)).correct
    assert zh(nb05.check_mha_causal_mask,
              torch.zeros(L, L).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), -1e9)).correct
    for answer in (torch.zeros(5, 5).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), -100.0),
                   torch.ones(5, 5).tril(), torch.zeros(5, 5).masked_fill(
                       torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")),
                   torch.ones(5, 5, dtype=torch.bool).tril(), torch.ones(5, 5, dtype=torch.bool).triu(0),
                   torch.ones(5, 5, dtype=torch.bool).tril(-1), torch.eye(5, dtype=torch.bool)):
        first, second = zh_twice(nb05.check_mha_causal_mask, answer, reset=nb05.reset_hints)
        assert where_told(first, second)
    for answer in (None, [[True]], torch.zeros(5, 5, dtype=torch.int64), torch.zeros(4, 4, dtype=torch.bool)):
        assert not zh(nb05.check_mha_causal_mask, answer).correct
    s = nb05.SHAPES_SETUP
    B, L, H = s["batch"], s["length"], s["num_heads"]
    assert zh(nb05.check_weight_shapes, {"averaged": (B, L, L), "per_head": (B, H, L, L)}).correct
    for answer in ({"averaged": (B, H, L, L), "per_head": (B, H, L, L)},
                   {"averaged": (L, B, L), "per_head": (B, H, L, L)},
                   {"averaged": (B, L, L), "per_head": (B, L, H, L)},
                   {"averaged": "BLL", "per_head": (1,)}, None):
        assert not zh(nb05.check_weight_shapes, answer).correct
    assert zh(nb05.check_fully_masked_row, {"-inf": "nan", "-1e9": "uniform", "package": "zeros"}).correct
    for answer in ({"-inf": "zeros", "-1e9": "nan", "package": "uniform"},
                   {"-inf": "nan", "-1e9": "flat", "package": "zeros"}, None):
        assert not zh(nb05.check_fully_masked_row, answer).correct


# ---- notebook 06 ---------------------------------------------------------------------------

def test_nb06():
    kinds = list(nb06._MYSTERY_KINDS)
    assert zh(nb06.check_pattern_names, kinds).correct
    for answer in (kinds[1:] + kinds[:1], ["diagonal", "stripe", "block"], None):
        assert not zh(nb06.check_pattern_names, answer).correct
    q, k = handbuilt_heads.vertical_qk(6, 8, strength=1.0, key=0)
    assert zh(nb06.check_vertical_qk, (q, k)).correct
    for answer in (handbuilt_heads.vertical_qk(6, 8, strength=0.1, key=0), None, (q[:5], k),
                   (q, k[:, :4]), (q, "x"), (q, torch.full((6, 8), float("inf")))):
        assert not zh(nb06.check_vertical_qk, answer).correct
    s = nb06.DIAGONAL_SETUP
    score = s["strength"] * math.sqrt(s["d_k"])
    assert zh(nb06.check_diagonal_weight, math.exp(score) / (math.exp(score) + s["n"] - 1)).correct
    raw = s["strength"] * s["d_k"]
    for answer in (1 / s["n"], math.exp(raw) / (math.exp(raw) + s["n"] - 1), 0.9, None, [0.1, 0.2]):
        assert not zh(nb06.check_diagonal_weight, answer).correct


# ---- notebook 07 ---------------------------------------------------------------------------

def test_nb07_weights_bytes_and_causal_pairs():
    B, H, L = nb07.WEIGHTS_B, nb07.WEIGHTS_H, nb07.WEIGHTS_L
    right = B * H * L * L * 4
    assert zh(nb07.check_weights_bytes, right).correct
    for answer in (right // 4, L * L * 4, right * 2, 123, None, [1, 2], 2.5, True):
        assert not zh(nb07.check_weights_bytes, answer).correct
    L, bq, bk = nb07.CAUSAL_L, nb07.CAUSAL_QUERY_BLOCK, nb07.CAUSAL_KEY_BLOCK
    pairs = causal_blocks(L, block_size=bk, query_block_size=bq)
    full = math.ceil(L / bq) * math.ceil(L / bk)
    assert zh(nb07.check_causal_pairs, pairs).correct
    for answer in (full, full // 2, pairs + 1, None):
        assert not zh(nb07.check_causal_pairs, answer).correct


@pytest.mark.parametrize("rule", ["no_rescale", "no_shift", "flipped", "flipped_guarded",
                                  "block_max", "last_block"])
def test_nb07_online_softmax_each_slip_in_both_tiers(rule):
    first, second = zh_twice(nb07.check_online_softmax, t07._online(rule),
                             reset=nb07.ONLINE_SOFTMAX_HINTS.reset)
    assert where_told(first, second)


def test_nb07_online_softmax_right_two_pass_and_input_errors():
    def todo(blocks):
        raise NotImplementedError

    nb07.ONLINE_SOFTMAX_HINTS.reset()
    assert zh(nb07.check_online_softmax, t07._online()).correct
    first, second = zh_twice(nb07.check_online_softmax, t07._two_pass_twice,
                             reset=nb07.ONLINE_SOFTMAX_HINTS.reset)
    assert where_told(first, second)
    for answer in (todo, lambda blocks: 3.0, lambda blocks: (next(iter(blocks)).max(), 1.0),
                   lambda blocks: (torch.cat(list(blocks)).softmax(0), 1.0), None, 3,
                   lambda blocks: (max(b.max().item() for b in blocks), 1.0),
                   lambda blocks: (max(b.max().item() for b in blocks), math.inf),
                   lambda blocks: ([b for b in blocks] and 0.0, 1.0)):
        assert not zh(nb07.check_online_softmax, answer).correct


# ---- notebook 08 ---------------------------------------------------------------------------

def test_nb08():
    i = torch.arange(6)
    previous = i[None, :] == i[:, None] - 1
    assert zh(nb08.check_previous_token_mask, previous).correct
    for answer in (i[:, None] == i[None, :], previous.T, previous | (i[:, None] + i[None, :] == 0),
                   previous | previous.roll(1, 0), torch.zeros(6, 6, dtype=torch.bool), None,
                   (i[None, :] == i[:, None] - 2) | ((i[:, None] == 1) & (i[None, :] == 5)),
                   torch.zeros(5, 5), torch.full((6, 6), 0.5)):
        assert not zh(nb08.check_previous_token_mask, answer).correct
    seg = torch.tensor(nb08.EXERCISE_SEGMENTS)
    same = seg[:, None] == seg[None, :]
    assert zh(nb08.check_block_mask, same).correct
    for answer in (torch.eye(10, dtype=torch.bool), torch.ones(10, 10).tril().bool(),
                   same & ~torch.eye(10, dtype=torch.bool), None):
        assert not zh(nb08.check_block_mask, answer).correct
    w = nb08.exercise_map()
    assert zh(nb08.check_vertical_score, w[..., 0].mean(dim=(0, 2))).correct
    for answer in (w[..., 0].sum(-1).mean(0), w[..., 1].mean(dim=(0, 2)), torch.full((2,), 3.0), None):
        assert not zh(nb08.check_vertical_score, answer).correct
    truth = [TASKS[t].pattern for t in nb08.MYSTERY_TASKS]
    assert zh(nb08.check_pattern_names, truth).correct
    for answer in (truth[1:] + truth[:1], ["diagonal", "stripes", "block", "vertical"], ["block"], None):
        assert not zh(nb08.check_pattern_names, answer).correct


# ---- notebook 09 ---------------------------------------------------------------------------

def test_nb09_sinusoidal():
    def todo(length, d):
        raise NotImplementedError

    def swapped(length, d):
        pe = t09.sinusoidal_vectorised(length, d)
        return pe[:, [j + 1 if j % 2 == 0 else j - 1 for j in range(d)]]

    def halves(length, d):
        pe = t09.sinusoidal_vectorised(length, d)
        return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)

    def formula(angle):
        """A table like the Transformer's with another angle(p, i, d)."""
        def table(length, d):
            pe = torch.zeros(length, d, dtype=torch.float64)
            for p in range(length):
                for i in range(d // 2):
                    pe[p, 2 * i], pe[p, 2 * i + 1] = math.sin(angle(p, i, d)), math.cos(angle(p, i, d))
            return pe
        return table

    assert zh(nb09.check_sinusoidal, t09.sinusoidal_loops).correct
    for answer in (swapped, halves, formula(lambda p, i, d: p / 10000 ** (i / d)),
                   formula(lambda p, i, d: p * 10000 ** (2 * i / d)),
                   lambda length, d: t09.sinusoidal_vectorised(length + 1, d)[1:],
                   lambda length, d: 2 * t09.sinusoidal_vectorised(length, d), todo,
                   lambda L, d: torch.zeros(d, L), lambda L, d: [[0.0]], lambda L, d: 1 / 0, 3):
        assert not zh(nb09.check_sinusoidal, answer).correct


def test_nb09_rope():
    def in_place(x):
        x[:] = t09.rope_loops(x)
        return x

    def halves(x):
        L, E = x.shape
        inter = torch.stack([x[:, : E // 2], x[:, E // 2:]], dim=-1).reshape(L, E)
        r = t09.rope_loops(inter).reshape(L, E // 2, 2)
        return torch.cat([r[..., 0], r[..., 1]], dim=1)

    assert zh(nb09.check_rope, t09.rope_loops).correct
    for answer in (lambda x: t09._rotate(x, sign=-1), lambda x: t09._rotate(x, start=1),
                   lambda x: t09._rotate(x, exponent=1), lambda x: t09._rotate(x, sign=0.5),
                   lambda x: 2 * t09.rope_loops(x), in_place, halves, lambda x: x[:1], 3):
        assert not zh(nb09.check_rope, answer).correct


# ---- notebook 10 ---------------------------------------------------------------------------

def test_nb10_cache_bytes():
    n = 2 * nb10.LAYERS * nb10.BATCH * nb10.TOKENS * nb10.D_MODEL
    assert zh(nb10.check_cache_bytes, 2 * n).correct
    for answer in (n, 4 * n, 2 * 2 * nb10.BATCH * nb10.TOKENS * nb10.D_MODEL, 2 * n + 1, None, "big"):
        assert not zh(nb10.check_cache_bytes, answer).correct


def test_nb10_cached_step():
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
        return t10.right(x_new, keys, values, W_q, W_k, W_v)[0], keys, values

    def todo(*args):
        raise NotImplementedError

    assert zh(nb10.check_cached_step, t10.right).correct
    for fn in (before, unscaled, by_dk, keys_as_values, lambda *a: (torch.zeros(1, 4, dtype=torch.float64),
                                             torch.cat([a[1], a[0] @ a[4]]), torch.cat([a[2], a[0] @ a[5]]))):
        first, second = zh_twice(nb10.check_cached_step, fn, reset=nb10.CACHED_STEP_HINTS.reset)
        assert where_told(first, second)
    for fn in (no_append, lambda *a: t10.right(*a)[:2], lambda *a: (t10.right(*a)[0][0], *t10.right(*a)[1:]),
               lambda *a: (1.0, 2.0, 3.0), todo, lambda *a: 1 / 0, 3):
        assert not zh(nb10.check_cached_step, fn).correct


# ---- notebook 11 ---------------------------------------------------------------------------

@pytest.mark.parametrize("fn, symptom, where", t11.SOFTMAX_SLIPS)
def test_nb11_softmax_backward_each_slip_in_both_tiers(fn, symptom, where):
    first, second = zh_twice(nb11.check_softmax_backward, fn, reset=t11._reset)
    assert where_told(first, second)


def test_nb11():
    def todo(w, dw):
        raise NotImplementedError

    t11._reset()
    assert zh(nb11.check_softmax_backward, t11.softmax_backward_formula).correct
    for answer in (None, todo, lambda w, dw: w.T, lambda w, dw: 1.0, lambda w, dw: 1 / 0):
        assert not zh(nb11.check_softmax_backward, answer).correct
    assert zh(nb11.check_score_backward, t11.score_backward_autograd).correct
    for fn in (lambda dS, Q, K, s: (dS @ K, dS.T @ Q), lambda dS, Q, K, s: (s * dS.T @ Q, s * dS @ K),
               lambda dS, Q, K, s: (s * dS @ K, s * dS @ K), lambda dS, Q, K, s: (s * dS @ K * 3, s * dS.T @ Q),
               lambda dS, Q, K, s: (dS, dS)):
        first, second = zh_twice(nb11.check_score_backward, fn, reset=t11._reset)
        assert where_told(first, second)
    for answer in (lambda dS, Q, K, s: s * dS @ K, None):
        assert not zh(nb11.check_score_backward, answer).correct
    L, E = nb11.SAVED_L, nb11.SAVED_E
    assert zh(nb11.check_saved_bytes, L * L * 4).correct
    for answer in (L * L, 3 * L * E * 4, L * L * 8, None, "big"):
        assert not zh(nb11.check_saved_bytes, answer).correct


# ---- notebook 12 ---------------------------------------------------------------------------

@pytest.fixture
def fresh_nb12_hints():
    nb12.reset_hints()
    yield
    nb12.reset_hints()


@pytest.mark.parametrize("cls, norm_first", [
    (t12.Block, None), (t12.GeluPackageBlock, None), (t12.PostLNOnly, False),
    (t12.block_with(attention=t12.MatrixMHA), None),
], ids=["chapter", "gelu-package", "post-ln-only", "raw-matrices"])
def test_nb12_correct_blocks(cls, norm_first):
    assert zh(nb12.check_transformer_block, cls, norm_first=norm_first).correct


def test_nb12_float32_round_off_verdict():
    class Norm32(nn.LayerNorm):
        """nn.LayerNorm computed in float32, as mixed-precision code does."""

        def forward(self, x):
            return F.layer_norm(x.float(), self.normalized_shape, self.weight.float(),
                                self.bias.float(), self.eps).to(x.dtype)

    class Float32Norms(t12.Block):
        def make_norm(self, d_model):
            return Norm32(d_model)

    fb = zh(nb12.check_transformer_block, Float32Norms)
    assert fb.correct and "float32" in fb.message


@pytest.mark.parametrize("bug", list(t12.BUGGY))
def test_nb12_every_classic_bug_in_both_tiers(bug, fresh_nb12_hints):
    first, second = zh_twice(nb12.check_transformer_block, t12.BUGGY[bug][0])
    assert where_told(first, second)


def test_nb12_what_the_checker_cannot_build_or_find(fresh_nb12_hints):
    class TorchInside(t12.Block):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
            super().__init__(d_model, num_heads, d_ff, dropout, norm_first)
            self.attention = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    class OneNorm(t12.Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.norm2 = self.norm1

    class FixedWidth(t12.Block):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
            super().__init__(d_model, num_heads, 4 * d_model, dropout, norm_first)

    class Raises(t12.Block):
        def forward(self, x, mask=None):
            raise NotImplementedError

    class NeverDrops(t12.Block):
        def sa(self, x, mask):
            return self.attention(x, mask)[0]

        def feed_forward(self, x):
            return self.ff[3](self.ff[1](self.ff[0](x)))

    class Unscaled(t12.ChapterMHA):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads, scale=False)

    class NoAttention(nn.Module):
        def __init__(self, d_model, num_heads, d_ff, norm_first=True):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    class InitFails(t12.Block):
        def __init__(self, *args, **kwargs):
            raise KeyError("oops")

    class NoFirstLinear(t12.Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.ff[0] = nn.Identity()

    class NoSecondLinear(t12.Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.ff[3] = nn.Identity()

    class Narrow(t12.Block):
        def forward(self, x, mask=None):
            return super().forward(x, mask)[:, :, :4]

    for cls in (TorchInside, OneNorm, FixedWidth, Raises, NeverDrops, NoAttention, InitFails,
                NoFirstLinear, NoSecondLinear, Narrow, t12.block_with(attention=Unscaled),
                t12.block_with(norm=nn.BatchNorm1d),
                t12.block_with(norm=lambda d: nn.LayerNorm((5, d))), t12.block_with(attention=Errs),
                t12.PostLNOnly, t12.Block(8, 2, 24), len):
        assert not zh(nb12.check_transformer_block, cls).correct
    assert not zh(nb12.check_transformer_block, t12.PostLNOnly, norm_first=True).correct


def test_nb12_two_bugs_at_once_get_the_honest_fallback(fresh_nb12_hints):
    class TwoBugs(t12.Block):
        BUG = "no activation"

        def make_norm(self, d_model):
            return t12.MyLayerNorm(d_model, dim=1)

    class TwoBugsWithAMask(t12.Block):
        def forward(self, x, mask=None):
            return super().forward(x, None if mask is None else ~mask)

    for cls in (TwoBugs, TwoBugsWithAMask):
        first, second = zh_twice(nb12.check_transformer_block, cls)
        assert where_told(first, second)


def test_every_checker_module_is_tried_here():
    """A new notebook's checkers need their Chinese test too."""
    tried = {nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb10, nb11, nb12}
    modules = {m.name for m in pkgutil.iter_modules(exercises.__path__) if re.fullmatch(r"nb\d\d", m.name)}
    assert modules == {m.__name__.rsplit(".", 1)[1] for m in tried}
