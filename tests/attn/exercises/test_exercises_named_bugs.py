"""The checkers name each classic confusion of this field by what it does (issue 32 §2).

One learner class per confusion (tests/_learner_classes.py), written as a learner writes it: the
mask convention inverted (True = blocked, as nn.MultiheadAttention reads it), a padding mask on
the query axis, a padding mask whose batch dimension meets the heads, the scores divided by
√d_model instead of √d_k, the heads split by a view without a transpose, the softmax over the
queries, Q and K swapped, K not transposed, weights right but the weighted sum wrong, and a
block's dropout that does not rescale what it keeps; and notebook 12's LayerNorm exercise
answered by a library norm. Each must hear its own symptom (not the generic "not one of the
classic bugs", and no other confusion's symptom), then on a second try where to look, in English
and in Chinese.
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import _learner_classes as L
from attn.exercises import _block_bugs, _block_checker, _layer_bugs, _layer_checker, nb05, nb12
from attn.exercises._base import sentence_inside
from attn.language import language, translation, tr

#: (confusion, checker, learner class, the (symptom, where) it must hear, the case it shows in)
CONFUSIONS = [
    ("mask convention inverted", nb05.check_multi_head_attention, L.MaskTrueBlocksMHA,
     _layer_bugs.BUGS["mask flipped"], "a causal mask"),
    ("padding on the query axis", nb05.check_multi_head_attention, L.PaddingOnQueriesMHA,
     _layer_bugs.BUGS["mask along the wrong axis"], "a padding mask"),
    ("mask broadcast over the heads", nb05.check_multi_head_attention, L.MaskOverHeadsMHA,
     _layer_bugs.BUGS["mask over the heads"], "a padding mask"),
    ("scaled by the model size", nb05.check_multi_head_attention, L.ScaledByModelSizeMHA,
     _layer_bugs.BUGS["scaled by sqrt(d_model)"], "no mask"),
    ("view without transpose", nb05.check_multi_head_attention, L.ViewWithoutTransposeMHA,
     _layer_bugs.BUGS["heads split without a transpose"], "no mask"),
    ("softmax over the queries", nb05.check_multi_head_attention, L.SoftmaxOverQueriesMHA,
     _layer_bugs.BUGS["softmax over the queries"], "no mask"),
    ("Q and K swapped", nb05.check_multi_head_attention, L.KeysTimesQueriesScoresMHA,
     _layer_bugs.BUGS["keys times queries"], "no mask"),
    ("K not transposed, heads", nb05.check_multi_head_attention, L.KeysNotTransposedMHA,
     _layer_bugs.BUGS["keys not transposed"], "no mask"),
    ("K not transposed, one head", nb05.check_self_attention, L.KeysNotTransposedHead,
     _layer_bugs.BUGS["keys not transposed"], "no mask"),
    ("weights transposed before V, heads", nb05.check_multi_head_attention, L.WeightsTransposedMHA,
     _layer_bugs.BUGS["weights transposed before the values"], "no mask"),
    ("weights transposed before V, one head", nb05.check_self_attention, L.WeightsTransposedHead,
     _layer_bugs.BUGS["weights transposed before the values"], "no mask"),
    ("weights right, sum wrong", nb05.check_multi_head_attention, L.ScoresTimesValuesMHA,
     _layer_checker.RIGHT_WEIGHTS_WRONG_SUM, "no mask"),
]

#: Every symptom a layer's checker can give: one confusion's reply must hold none but its own.
LAYER_SYMPTOMS = [s for s, _ in _layer_bugs.BUGS.values()] + [_layer_checker.RIGHT_WEIGHTS_WRONG_SUM[0],
                                                                _layer_checker.RANDOM_IN_EVAL[0]]
#: The generic replies, which a named confusion must not get.
GENERIC = [
    "With no mask: your output differs from the chapter's attention, and not by one of the classic bugs "
    "this checker knows.",
    "More than one step may be wrong.",
    "Check how forward applies the mask (mask == 0 is blocked).",
]


@pytest.fixture(autouse=True)
def first_tier_hints():
    nb05.reset_hints()
    nb12.reset_hints()
    yield
    nb05.reset_hints()
    nb12.reset_hints()


def assert_named(message: str, symptom: str, others: list[str]) -> None:
    """``message`` holds ``symptom`` (already in the message's language) and no other symptom of
    ``others`` (English templates, translated here) nor a generic reply."""
    assert symptom in message, message
    for other in others:
        text = sentence_inside(translation(other))
        if "{" not in text and text != symptom:
            assert text not in message, (text, message)
    for generic in GENERIC:
        assert translation(generic) not in message, message
    assert "forward raised" not in message and tr("forward raised {error}", error="") not in message


@pytest.mark.parametrize("code", ["en", "zh"])
@pytest.mark.parametrize("confusion, check, cls, bug, case", CONFUSIONS, ids=[c[0] for c in CONFUSIONS])
def test_each_confusion_of_a_layer_gets_its_own_name(code, confusion, check, cls, bug, case):
    symptom, where = bug
    with language(code):
        if code == "zh":
            assert translation(symptom) != symptom and translation(where) != where, "not translated"
        first = check(cls)
        assert not first.correct, first.message
        assert first.message.startswith(tr("With {case}: {symptom}", case=tr(case), symptom="")), first.message
        assert_named(first.message, sentence_inside(tr(symptom)), LAYER_SYMPTOMS)
        second = check(cls)
        assert not second.correct and second.message.startswith(first.message), second.message
        assert tr(where) in second.message and tr(where) not in first.message, second.message


def test_a_padding_mask_over_the_heads_runs_silently_because_batch_equals_heads():
    """The checker's batch and heads are both 2: the wrong broadcast runs instead of raising,
    which is what lets the checker name it (and it shows with the padding mask only)."""
    B, H, Lq = _layer_bugs.BATCH, nb05.MULTI_HEAD_ARGS["n_heads"], _layer_bugs.LENGTH
    assert B == H
    _, mask = nb05._MULTI.masks()[2]  # (B, 1, 1, L)
    scores = torch.zeros(B, H, Lq, Lq)
    assert scores.masked_fill(mask.squeeze(1) == 0, 1.0).shape == scores.shape


def test_keys_not_transposed_raises_at_the_checkers_length_and_is_named_at_d_k():
    """Q @ K cannot run on the checker's inputs (L = 5, d_k = 4): the checker names it by running
    the layer on L = d_k, where it runs."""
    assert _layer_bugs.LENGTH != nb05._MULTI.d_k and _layer_bugs.LENGTH != nb05._SELF.d_k
    assert tuple(nb05._MULTI.square_input().shape) == (_layer_bugs.BATCH, nb05._MULTI.d_k, nb05._MULTI.d_model)
    assert "keys not transposed" not in nb05._MULTI.bugs()  # it would raise in every case of bugs()


def test_a_layer_that_raises_for_another_reason_still_hears_its_error():
    class Raises(L.ConfusedMHA):
        def scores(self, Q, K):
            return Q @ K.transpose(-2, -1)[..., :3, :]  # a wrong slice: raises at every length

    fb = nb05.check_multi_head_attention(Raises)
    assert not fb.correct and "forward raised RuntimeError" in fb.message, fb.message


@pytest.mark.parametrize("code", ["en", "zh"])
def test_a_dropout_that_does_not_rescale_is_named(code):
    template, where = _block_checker.DROPOUT_NOT_RESCALED
    with language(code):
        if code == "zh":
            assert translation(template) != template and translation(where) != where, "not translated"
        first = nb12.check_transformer_block(L.UnscaledDropoutBlock)
        assert not first.correct, first.message
        opening = translation(template).split("{")[0]
        assert len(opening) > 10 and first.message.startswith(opening), first.message
        assert tr("{share:.0%}", share=0.5) in first.message  # 1 - p of the eval output on average
        others = [s for s, _ in _block_bugs.BUGS.values()] + [_block_checker.NO_DROPOUT_IN_TRAINING[0],
                                                               _block_checker.RANDOM_IN_EVAL[0]]
        assert not any(translation(o).split("{")[0] in first.message for o in others), first.message
        second = nb12.check_transformer_block(L.UnscaledDropoutBlock)
        assert second.message.startswith(first.message) and tr(where) in second.message


def test_blocks_whose_dropout_rescales_are_not_accused(monkeypatch):
    """A right block keeps about all of its eval output on average in training (the share the
    checker measures is near 1, far from the 1 - p = 0.5 of a dropout that does not rescale)."""
    shares = []
    measure = _block_checker._kept_share_in_training

    def watched(*args):
        shares.append(measure(*args))
        return shares[-1]

    monkeypatch.setattr(_block_checker, "_kept_share_in_training", watched)
    for cls in (L.Block, L.ReversedNorms):
        fb = nb12.check_transformer_block(cls)
        assert fb.correct, (cls.__name__, fb.message)
    assert len(shares) == 2 and all(abs(s - 1) < 0.1 for s in shares), shares


def _layer_norm_by(norm):
    """A LayerNorm exercise answered by a library function or module."""
    def answer(x, gain, bias, eps=1e-5):
        E = x.shape[-1]
        return {
            "F.layer_norm": lambda: F.layer_norm(x, (E,), gain, bias, eps),
            "torch.layer_norm": lambda: torch.layer_norm(x, (E,), gain, bias, eps),
            "nn.LayerNorm": lambda: nn.LayerNorm(E, eps=eps, elementwise_affine=False).double()(x) * gain + bias,
            "F.group_norm": lambda: F.group_norm(x.reshape(-1, E), 1, eps=eps).reshape(x.shape) * gain + bias,
            "nn.GroupNorm": lambda: nn.GroupNorm(1, E, eps=eps, affine=False)(x.reshape(-1, E)).reshape(x.shape)
            * gain + bias,
            "F.instance_norm": lambda: F.instance_norm(x.reshape(1, -1, E), eps=eps).reshape(x.shape) * gain + bias,
            "F.batch_norm": lambda: F.batch_norm(x.reshape(-1, E).T, None, None, training=True,
                                                 eps=eps).T.reshape(x.shape) * gain + bias,
        }[norm]()
    return answer


NORMS = ["F.layer_norm", "torch.layer_norm", "nn.LayerNorm", "F.group_norm", "nn.GroupNorm",
         "F.instance_norm", "F.batch_norm"]


@pytest.mark.parametrize("code", ["en", "zh"])
@pytest.mark.parametrize("norm", NORMS)
def test_a_library_norm_is_named_in_the_layer_norm_exercise(code, norm):
    answer = _layer_norm_by(norm)
    x, gain, bias, eps = torch.randn(2, 3, 8, dtype=torch.float64), torch.rand(8, dtype=torch.float64), \
        torch.randn(8, dtype=torch.float64), 1e-5
    torch.testing.assert_close(answer(x, gain, bias, eps), F.layer_norm(x, (8,), gain, bias, eps))  # it is one
    with language(code):
        fb = nb12.check_layer_norm(answer)
        assert not fb.correct
        named = tr("Your function calls a library norm (F.layer_norm or nn.LayerNorm, or F.group_norm, "
                   "F.instance_norm or F.batch_norm, which give a LayerNorm when called on the right dims): "
                   "the checker switches them off. Write the steps out: the mean, the variance, the "
                   "division, the gain and the bias.")
        assert fb.message == named, fb.message
        if code == "zh":
            assert "层归一化" in fb.message
    assert F.layer_norm(x, (8,)).shape == x.shape  # the library is back afterwards
