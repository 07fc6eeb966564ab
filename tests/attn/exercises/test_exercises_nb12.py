"""The checker of notebook 12 (the Transformer block): learner-style blocks, right and wrong. A
test that takes ``language`` runs in English and in Chinese, and hears each reply in both
(tests/_replies.py)."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attn
from attn.exercises import _block_bugs, _layer_norm, nb12
from attn.language import tr

from _learner_classes import (AnnotatedLayerNorm, ArticleMHA, Block, ChapterMHA, GeluPackageBlock,  # noqa: F401
                              MaskAsKey, MyLayerNorm, OnlyTheAttentionDrops, PostLNOnly, ReversedNorms,
                              block_with)
from _replies import TORCH_ERRORS, reply, says


@pytest.fixture(autouse=True)
def fresh_hints():
    nb12.reset_hints()
    yield
    nb12.reset_hints()


@pytest.mark.parametrize("cls", [Block, ReversedNorms, GeluPackageBlock, attn.TransformerBlock,
                                 block_with(norm=MyLayerNorm), block_with(attention=ArticleMHA)],
                         ids=["chapter", "reversed-norms", "gelu-package-mha", "attn.TransformerBlock",
                              "own-layernorm", "article-mha"])
def test_correct_blocks_pass_in_both_placements(cls, language):
    fb = reply(nb12.check_transformer_block, cls)
    assert fb.correct, fb.message
    assert says(fb, "with {which}, with no mask, a causal mask and a padding mask",
                which=tr("norm_first=False and True")), fb.message
    assert ("GELU" if cls is GeluPackageBlock else "ReLU") in fb.message


def test_dropout_is_reported_only_when_the_constructor_takes_it(language):
    assert says(reply(nb12.check_transformer_block, Block), "off in eval mode and on in training")
    assert says(reply(nb12.check_transformer_block, GeluPackageBlock), "Called twice in eval mode")


def test_one_placement_without_norm_first(language):
    fb = reply(nb12.check_transformer_block, PostLNOnly, norm_first=False)
    assert fb.correct, fb.message
    assert says(fb, "with {which}, with no mask", which="norm_first=False")
    fb = reply(nb12.check_transformer_block, PostLNOnly)
    assert not fb.correct and says(fb, "takes no `norm_first`")
    fb = reply(nb12.check_transformer_block, PostLNOnly, norm_first=True)  # it is post-LN
    assert not fb.correct and says(fb, "the other placement of the norms")


@pytest.mark.parametrize("check, right, slip", [
    ("check_transformer_block", lambda: Block, lambda: block_with("dropout in eval")),
    ("check_decoder_block", lambda: DecoderBlock, lambda: decoder_with("no causal mask")),
], ids=["block", "decoder"])
def test_the_learners_rng_is_left_alone(check, right, slip):
    torch.manual_seed(0)
    before = torch.rand(3)
    torch.manual_seed(0)
    getattr(nb12, check)(right())
    getattr(nb12, check)(slip())
    assert torch.equal(torch.rand(3), before)


# ---- the classic bugs: each named, the place to look on a second try ----------------------

BUGGY = {
    "norm over the batch": (block_with(norm=lambda d: MyLayerNorm(d, dim=0)), "over the batch"),
    "norm over the sequence": (block_with(norm=lambda d: MyLayerNorm(d, dim=1)), "over the sequence"),
    "unbiased variance": (block_with(norm=lambda d: MyLayerNorm(d, unbiased=True)), "unbiased"),
    "annotated layernorm": (block_with(norm=AnnotatedLayerNorm), "unbiased"),
    "residual after the norm": (block_with("residual after the norm"), "adds the sub-layer's output to the normalised x"),
    "norm placement swapped": (block_with("norm placement swapped"), "the other placement of the norms"),
    "no residual around the attention": (block_with("no residual around the attention"), "attention sub-layer has no residual"),
    "no residual around the feed-forward": (block_with("no residual around the feed-forward"), "feed-forward sub-layer has no residual"),
    "norm1 used twice": (block_with("norm1 used twice"), "uses the first LayerNorm again"),
    "no activation": (block_with("no activation"), "no non-linearity between its two Linears"),
    "activation after the second Linear": (block_with("activation after the second Linear"), "after the feed-forward's second Linear"),
    "mask not passed": (block_with("mask not passed"), "does not pass `mask` on to the attention"),
    "dropout in eval": (block_with("dropout in eval"), "different output each time"),
}


@pytest.mark.parametrize("bug", list(BUGGY))
def test_each_classic_bug_gets_its_symptom_then_where_to_look(bug, language):
    cls, words = BUGGY[bug]
    first = reply(nb12.check_transformer_block, cls)
    assert not first.correct
    assert says(first, words), first.message
    assert not says(first, "Where to look")
    second = reply(nb12.check_transformer_block, cls)
    assert second.message.startswith(first.message) and says(second, "Where to look"), second.message


def test_the_case_is_named(language):
    fb = reply(nb12.check_transformer_block, block_with("mask not passed"))
    assert says(fb, "With norm_first={nf} and {case}:", nf=False, case=tr("a causal mask")), fb.message
    fb = reply(nb12.check_transformer_block, block_with("residual after the norm"))
    assert says(fb, "With norm_first={nf} and {case}:", nf=True, case=tr("no mask")), fb.message
    fb = reply(nb12.check_transformer_block, block_with("norm placement swapped"))
    assert says(fb, "asked for norm_first={nf}, it gives {other}.", nf=False,
                other=tr("pre-LN, x + sa(norm1(x))")), fb.message


def near_miss(off, *, placement=None, masked=None):
    """A correct block whose output is off by ``off`` in every entry: always, or only in one
    placement of the norms (``placement``), or only with a mask or without one (``masked``)."""
    class NearMiss(Block):
        def forward(self, x, mask=None):
            out = super().forward(x, mask)
            hit = ((placement is None or placement == self.norm_first)
                   and (masked is None or masked == (mask is not None)))
            return out + off if hit else out

    return NearMiss


@pytest.mark.parametrize("where", [{}, {"placement": False}, {"placement": True},
                                   {"masked": True}, {"masked": False}],
                         ids=["always", "post-LN only", "pre-LN only", "with a mask only", "without a mask only"])
def test_near_misses_are_rejected(where):
    """Off by 1e-3: far above float32 round-off (the checker's 1e-5), far below any classic bug;
    the same block off by 1e-7 is round-off and passes."""
    assert nb12.check_transformer_block(near_miss(1e-7, **where)).correct
    fb = nb12.check_transformer_block(near_miss(1e-3, **where))
    assert not fb.correct, fb.message
    assert "matches nn.TransformerEncoderLayer" not in fb.message


def test_near_miss_layer_norms_and_counts_are_rejected():
    for off in (1e-3, -1e-4):
        fb = nb12.check_layer_norm(lambda x, g, b, eps, off=off: layer_norm_right(x, g, b, eps) + off)
        assert not fb.correct, fb.message
    total = sum(nb12.block_parameters(nb12.BASE["d_model"], nb12.BASE["d_ff"]).values())
    assert nb12.check_block_parameters(total).correct
    for near in (total - 1, total + 1):
        assert not nb12.check_block_parameters(near).correct, near


def test_no_dropout_in_training(language):
    class NeverDrops(Block):
        def sa(self, x, mask):
            return self.attention(x, mask)[0]

        def feed_forward(self, x):
            return self.ff[3](self.ff[1](self.ff[0](x)))

    fb = reply(nb12.check_transformer_block, NeverDrops)
    assert not fb.correct and says(fb, "its dropout never runs")
    assert says(reply(nb12.check_transformer_block, NeverDrops), "Where to look")


def test_batch_norm_is_named(language):
    fb = reply(nb12.check_transformer_block, block_with(norm=nn.BatchNorm1d))
    assert not fb.correct and says(fb, "is a BatchNorm") and says(fb, "across the batch")


def test_float32_round_off_is_told_from_a_bug(language):
    class Norm32(nn.LayerNorm):
        """nn.LayerNorm computed in float32, as mixed-precision code does."""

        def forward(self, x):
            return F.layer_norm(x.float(), self.normalized_shape, self.weight.float(),
                                self.bias.float(), self.eps).to(x.dtype)

    fb = reply(nb12.check_transformer_block, block_with(norm=Norm32))
    assert fb.correct and says(fb, "to float32 round-off (below {bound})", bound="1e-5"), fb.message


def test_two_bugs_at_once_get_the_honest_fallback(language):
    class TwoBugs(Block):
        BUG = "no activation"

        def make_norm(self, d_model):
            return MyLayerNorm(d_model, dim=1)

    class TwoBugsWithAMask(Block):
        def forward(self, x, mask=None):
            return super().forward(x, None if mask is None else ~mask)

    for cls, words in ((TwoBugs, "not by one of the classic bugs"), (TwoBugsWithAMask, "with one it is not")):
        first = reply(nb12.check_transformer_block, cls)
        assert not first.correct and says(first, words) and not says(first, "Where to look"), first.message
        second = reply(nb12.check_transformer_block, cls)
        assert second.message.startswith(first.message) and says(second, "Where to look"), second.message


def test_the_bugs_are_told_in_english_in_the_table():
    """A table holds English (marked, not translated at import): a reply is made when asked for."""
    assert nb12.BUGS["no activation"][0].startswith("your feed-forward has no non-linearity")


# ---- what the checker cannot build or find ------------------------------------------------

def test_a_wrong_attention_layer_is_sent_back_to_05(language):
    class Unscaled(ChapterMHA):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads, scale=False)

    fb = reply(nb12.check_transformer_block, block_with(attention=Unscaled))
    assert not fb.correct
    assert says(fb, "your attention layer, alone"), fb.message
    assert says(fb, "with {case}: its output is not the chapter's", case=tr("no mask")), fb.message
    assert "check_multi_head_attention" in fb.message


def test_structural_problems(language):
    check = nb12.check_transformer_block

    class TorchInside(Block):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
            super().__init__(d_model, num_heads, d_ff, dropout, norm_first)
            self.attention = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    fb = reply(check, TorchInside)
    assert not fb.correct and says(fb, "is PyTorch's nn.MultiheadAttention")

    fb = reply(check, block_with(norm=lambda d: nn.LayerNorm((5, d))))
    assert not fb.correct and "nn.LayerNorm((5, 8))" in fb.message
    assert says(fb, "it normalises over the last {dims} dims together", dims=2)

    class OneNorm(Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.norm2 = self.norm1

    fb = reply(check, OneNorm)
    assert not fb.correct and says(fb, "should have two LayerNorms")
    assert says(fb, "found {count}: {got}.", count=1, got="norm1")

    class FixedWidth(Block):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
            super().__init__(d_model, num_heads, 4 * d_model, dropout, norm_first)

    fb = reply(check, FixedWidth)
    assert not fb.correct and says(fb, "built with d_ff={F}", F=24) and "8 -> 32" in fb.message

    class Raises(Block):
        def forward(self, x, mask=None):
            raise NotImplementedError

    assert says(reply(check, Raises), "forward is not written yet")
    assert says(reply(check, Block(8, 2, 24)), "Pass the class itself")
    assert says(reply(check, len), "an nn.Module subclass")
    with pytest.raises(TypeError, match=r"norm_first: expected None, True or False, got str 'yes'"):
        check(Block, norm_first="yes")


def test_what_else_the_checker_cannot_build_or_find(language):
    class NoAttention(nn.Module):
        def __init__(self, d_model, num_heads, d_ff, norm_first=True):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    class InitFails(Block):
        def __init__(self, *args, **kwargs):
            raise KeyError("oops")

    class NoFirstLinear(Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.ff[0] = nn.Identity()

    class NoSecondLinear(Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.ff[3] = nn.Identity()

    class Narrow(Block):
        def forward(self, x, mask=None):
            return super().forward(x, mask)[:, :, :4]

    class Errs(ChapterMHA):
        def forward(self, x, mask=None):
            raise RuntimeError(TORCH_ERRORS[0])

    check = nb12.check_transformer_block
    assert says(reply(check, NoAttention), "has no attention layer the checker can find")
    fb = reply(check, InitFails)
    assert says(fb, "The checker builds") and "KeyError: 'oops'" in fb.message, fb.message
    first = tr("the first Linear ({E} -> {F})", E=8, F=24)
    second = tr("the second Linear ({F} -> {E})", E=8, F=24)
    assert says(reply(check, NoFirstLinear), "it lacks {lacks}", lacks=first)
    assert says(reply(check, NoSecondLinear), "it lacks {lacks}", lacks=second)
    assert says(reply(check, Narrow), "the output should have shape")
    fb = reply(check, block_with(attention=Errs))
    assert says(fb, "your attention layer, alone") and TORCH_ERRORS[0] in fb.message, fb.message


# ---- the checker's own reference ----------------------------------------------------------

def _params():
    gen = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    E, Fd = nb12.BLOCK_ARGS["d_model"], nb12.BLOCK_ARGS["d_ff"]
    attn_params = {r: (randn(E, E) / math.sqrt(E), 0.3 * randn(E)) for r in "qkvo"}
    return _block_bugs.BlockParams(attn_params, (1 + 0.3 * randn(E), 0.3 * randn(E), 1e-5),
                                   (1 + 0.3 * randn(E), 0.3 * randn(E), 1e-5),
                                   (randn(Fd, E) / math.sqrt(E), 0.3 * randn(Fd)),
                                   (randn(E, Fd) / math.sqrt(Fd), 0.3 * randn(E)))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_variant_without_a_bug_is_torch_and_every_bug_is_far_from_it(norm_first, activation):
    params = _params()
    x = torch.randn(_block_bugs.BATCH, _block_bugs.LENGTH, 8, generator=torch.Generator().manual_seed(1),
                    dtype=torch.float64)
    for case, mask, torch_kwargs in _block_bugs.cases():
        right = nb12.variant(x, params, mask, norm_first=norm_first, activation=activation)
        expected = _block_bugs.torch_reference(x, params, torch_kwargs, norm_first=norm_first,
                                               activation=activation)
        torch.testing.assert_close(right, expected, atol=1e-12, rtol=0)
        for bug in _block_bugs.bugs_for(norm_first, mask is not None):
            got = nb12.variant(x, params, mask, norm_first=norm_first, activation=activation, bug=bug)
            assert (got - right).abs().max() > 1e-3, (bug, case)
    with pytest.raises(ValueError, match=r"bug: expected None or one of"):
        nb12.variant(x, params, None, norm_first=True, activation="relu", bug="typo")


class MatrixMHA(nn.Module):
    """Raw (E, E) matrices used as x @ W.T (the orientation the shape cannot tell)."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.d = n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Parameter(torch.randn(d_model, d_model))
                                                  for _ in range(4))

    def forward(self, x, mask=None):
        B, L, E = x.shape
        q, k, v = ((x @ W.T).view(B, L, self.h, self.d).transpose(1, 2)
                   for W in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, L, E)
        return out @ self.W_o.T


def test_raw_matrices_either_way_round_pass(language):
    fb = reply(nb12.check_transformer_block, block_with(attention=MatrixMHA))
    assert fb.correct, fb.message


def test_a_wrong_raw_matrix_attention_is_sent_back_to_05(language):
    class Unscaled(MatrixMHA):
        def forward(self, x, mask=None):
            return super().forward(x * math.sqrt(self.d) ** 0.5, mask)  # the inputs scaled: wrong

    fb = reply(nb12.check_transformer_block, block_with(attention=Unscaled))
    assert not fb.correct and says(fb, "your attention layer, alone"), fb.message


# ---- passes: the checker asked quietly ----------------------------------------------------

def test_passes_says_what_the_checker_says_and_counts_no_hint():
    assert nb12.passes(Block) and nb12.passes(attn.TransformerBlock)
    buggy = block_with("residual after the norm")
    assert not nb12.passes(buggy) and not nb12.passes(buggy)
    assert "Where to look" not in nb12.check_transformer_block(buggy).message  # still the first tier
    assert nb12.passes(PostLNOnly, norm_first=False) and not nb12.passes(PostLNOnly)


# ---- exercise 1: LayerNorm written out ----------------------------------------------------

def layer_norm_right(x, gain, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gain + bias


def layer_norm_torch(x, gain, bias, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], gain, bias, eps)


def layer_norm_module(x, gain, bias, eps=1e-5):
    ln = nn.LayerNorm(x.shape[-1], eps=eps).double()
    with torch.no_grad():
        ln.weight.copy_(gain)
        ln.bias.copy_(bias)
    return ln(x).detach()


def layer_norm_var_mean(x, gain, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * gain + bias


@pytest.mark.parametrize("fn", [layer_norm_right, layer_norm_var_mean])
def test_a_right_layer_norm_passes(fn, language):
    fb = reply(nb12.check_layer_norm, fn)
    assert fb.correct, fb.message
    assert says(fb, "with a large eps ({large:g}) and with the usual one", large=0.5), fb.message


@pytest.mark.parametrize("fn", [layer_norm_torch, layer_norm_module])
def test_a_library_layer_norm_is_switched_off(fn, language):
    fb = reply(nb12.check_layer_norm, fn)
    assert not fb.correct and says(fb, "Your function calls a library norm"), fb.message


def _slip(bug):
    return lambda x, g, b, eps=1e-5: nb12.layer_norm_variant(x, g, b, eps, bug)


LAYER_NORM_SLIPS = {
    "norm over the batch": (_slip("norm over the batch"), "over the batch"),
    "norm over the sequence": (_slip("norm over the sequence"), "over the sequence"),
    "over a whole sequence": (_slip("norm over the sequence and the features"), "nn.LayerNorm((L, d_model))"),
    "unbiased": (lambda x, g, b, eps=1e-5: (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * g + b,
                 "unbiased"),
    "annotated transformer": (lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) + b,
                              "unbiased"),
    "eps outside": (lambda x, g, b, eps=1e-5: (x - x.mean(-1, keepdim=True)) / (x.std(-1, unbiased=False, keepdim=True) + eps) * g + b,
                    "after the square root"),
    "no eps": (lambda x, g, b, eps=1e-5: (x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True) * g + b,
               "leaves eps out"),
    "rmsnorm": (lambda x, g, b, eps=1e-5: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g + b, "RMSNorm"),
    "no affine": (lambda x, g, b, eps=1e-5: layer_norm_right(x, torch.ones_like(g), torch.zeros_like(b), eps),
                  "without the gain and the bias"),
    "swapped": (lambda x, g, b, eps=1e-5: layer_norm_right(x, b, g, eps), "swapped"),
}


@pytest.mark.parametrize("slip", list(LAYER_NORM_SLIPS))
def test_each_layer_norm_slip_gets_its_symptom_then_where_to_look(slip, language):
    fn, words = LAYER_NORM_SLIPS[slip]
    first = reply(nb12.check_layer_norm, fn)
    assert not first.correct and says(first, words), first.message
    assert (language != "en" or first.message[:1].isupper()) and not says(first, "Where to look")
    second = reply(nb12.check_layer_norm, fn)
    assert second.message.startswith(first.message) and says(second, "Where to look"), second.message


def test_layer_norm_variant_without_a_slip_is_torchs_and_every_slip_is_far_from_it():
    for x, gain, bias, eps in _layer_norm._ln_inputs():
        right = nb12.layer_norm_variant(x, gain, bias, eps)
        torch.testing.assert_close(right, F.layer_norm(x, x.shape[-1:], gain, bias, eps), atol=1e-12, rtol=0)
        for bug in nb12.LAYER_NORM_BUGS:
            if eps < 0.01 and bug in ("no eps", "eps outside the square root"):
                continue  # a small eps hides where it goes: the checker tries a large one first
            assert (nb12.layer_norm_variant(x, gain, bias, eps, bug) - right).abs().max() > 1e-3, (bug, eps)
    with pytest.raises(ValueError, match=r"bug: expected None or one of"):
        nb12.layer_norm_variant(x, gain, bias, eps, "typo")


def test_layer_norm_checker_other_answers(language):
    def todo(x, gain, bias, eps=1e-5):
        raise NotImplementedError

    def in_place(x, gain, bias, eps=1e-5):
        x -= x.mean(-1, keepdim=True)
        return layer_norm_right(x, gain, bias, eps)

    check = nb12.check_layer_norm
    assert says(reply(check, todo), "Not implemented yet")
    assert says(reply(check, in_place), "changed its inputs in place")
    fb = reply(check, lambda x, g, b, eps: 1 / 0)
    assert says(fb, "Your function raised {error}") and "ZeroDivisionError: division by zero" in fb.message
    assert says(reply(check, lambda x, g, b, eps: 1.0), "Return a torch.Tensor, got {kind}.", kind="float")
    fb = reply(check, lambda x, g, b, eps: x[..., 0])
    assert says(fb, "The output has the shape of x {shape}, got {got}.", shape=(2, 5, 8), got=(2, 5))
    assert says(reply(check, None), "Pass your function itself")
    fb = reply(check, lambda x, g, b, eps: 2 * layer_norm_right(x, g, b, eps))
    assert not fb.correct and says(fb, "not by one of the usual slips")


# ---- exercise 2: what one block holds ------------------------------------------------------

def test_block_parameters_are_torchs_count():
    E, H, Fd = nb12.BASE["d_model"], nb12.BASE["num_heads"], nb12.BASE["d_ff"]
    layer = nn.TransformerEncoderLayer(E, H, Fd, batch_first=True)
    assert sum(nb12.block_parameters(E, Fd).values()) == sum(p.numel() for p in layer.parameters())
    assert sum(nb12.block_parameters(E, Fd).values()) == sum(
        p.numel() for p in attn.TransformerBlock(E, H, Fd).parameters())


def test_check_block_parameters_right_and_each_miscount_named(language):
    check = nb12.check_block_parameters
    fb = reply(check, 3_152_384)
    assert fb.correct and "2,099,712" in fb.message
    assert reply(check, 3152384.0).correct and reply(check, torch.tensor(3152384))
    for answer, words in ((3_145_728, "weight matrices alone"), (3_147_776, "biases of the Linears"),
                          (3_150_336, "That is {short:,} short"), (3_149_824, "feed-forward's two biases"),
                          (3_151_360, "one LayerNorm's gain and bias"), (2_889_728, "output projection W_o"),
                          (1_050_624, "the attention alone"), (2_099_712, "the feed-forward alone"),
                          (12, "Count each part")):
        fb = reply(check, answer)
        assert not fb.correct and says(fb, words), (answer, fb.message)
    assert says(reply(check, 3_150_336), "That is {short:,} short", short=2048)
    assert says(reply(check, None), "placeholder")
    assert says(reply(check, 3.5), "whole number")


def test_a_mask_given_where_the_key_goes_is_named(language):
    fb = reply(nb12.check_transformer_block, MaskAsKey)
    assert not fb.correct
    assert "by keyword" in fb.message and "float64" not in fb.message, fb.message  # the package's TypeError


def test_a_block_whose_own_dropout_never_runs_is_told_so(language):
    """Its attention layer's dropout (on the weights) is not the block's: the success message
    would say its dropout is on in training."""
    fb = reply(nb12.check_transformer_block, OnlyTheAttentionDrops)
    assert not fb.correct and says(fb, "in training mode it gives the same output twice"), fb.message


# ---- exercise 3: the decoder block, against nn.TransformerDecoderLayer -------------------------

class DecoderBlock(nn.Module):
    """The worked solution: post-LN by default, as nn.TransformerDecoderLayer."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = attn.MultiHeadAttention(d_model, num_heads, bias=True, dropout=dropout)
        self.cross_attn = attn.MultiHeadAttention(d_model, num_heads, bias=True, dropout=dropout)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def self_attention(self, x):
        return self.dropout(self.self_attn(x, causal=True)[0])

    def cross_attention(self, x, memory, memory_mask):
        return self.dropout(self.cross_attn(x, memory, memory, mask=memory_mask)[0])

    def feed_forward(self, x):
        return self.dropout(self.linear2(self.dropout(torch.relu(self.linear1(x)))))

    def forward(self, x, memory, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x))
            x = x + self.cross_attention(self.norm2(x), memory, memory_mask)
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x))
        x = self.norm2(x + self.cross_attention(x, memory, memory_mask))
        return self.norm3(x + self.feed_forward(x))


def decoder_with(bug):
    """The solution with one slip a learner makes, written as a learner would write it."""
    class Slipped(DecoderBlock):
        def self_attention(self, x):
            if bug == "no causal mask":
                return self.dropout(self.self_attn(x)[0])
            return super().self_attention(x)

        def cross_attention(self, x, memory, memory_mask):
            call = {"keys and values from the decoder": lambda: self.cross_attn(x, x, x, mask=memory_mask),
                    "queries from the memory": lambda: self.cross_attn(memory, x, x, mask=memory_mask),
                    "memory mask applied as causal": lambda: self.cross_attn(x, memory, memory, causal=True),
                    "memory mask not passed": lambda: self.cross_attn(x, memory, memory),
                    "memory normalised": lambda: self.cross_attn(x, self.norm2(memory), self.norm2(memory),
                                                                 mask=memory_mask)}.get(bug)
            if bug == "memory normalised" and not self.norm_first:  # the slip of pre-LN, where norm2 is on the branch
                call = None
            return super().cross_attention(x, memory, memory_mask) if call is None else self.dropout(call()[0])

        def forward(self, x, memory, memory_mask=None):
            keep = {part: 0 if bug == f"no residual around the {part}" else 1
                    for part in ("self-attention", "cross-attention", "feed-forward")}
            if self.norm_first != (bug == "norm placement swapped"):  # pre-LN
                x = keep["self-attention"] * x + self.self_attention(self.norm1(x))
                x = keep["cross-attention"] * x + self.cross_attention(self.norm2(x), memory, memory_mask)
                return keep["feed-forward"] * x + self.feed_forward(self.norm3(x))
            x = self.norm1(keep["self-attention"] * x + self.self_attention(x))
            x = self.norm2(keep["cross-attention"] * x + self.cross_attention(x, memory, memory_mask))
            return self.norm3(keep["feed-forward"] * x + self.feed_forward(x))

    Slipped.__name__ = "DecoderBlock"
    return Slipped


def test_the_written_out_decoder_is_torchs_decoder_layer():
    """decoder_variant(bug=None), which names the slips, equals nn.TransformerDecoderLayer."""
    from attn.exercises import _decoder_checker as dc

    block = dc._build(DecoderBlock, False, both=True)
    x = torch.randn(dc.BATCH, dc.TARGET, 8, dtype=torch.float64)
    params = dc._write_weights(block, x)
    for nf in (False, True):
        for _, S, mask in dc.decoder_cases():
            memory = torch.randn(dc.BATCH, S, 8, dtype=torch.float64)
            expected = dc.decoder_reference(x, memory, params, mask, norm_first=nf)
            assert torch.allclose(dc.decoder_variant(x, memory, params, mask, norm_first=nf), expected, atol=1e-12)


def test_every_slip_is_far_from_the_right_block_and_from_every_other_slip():
    from attn.exercises import _decoder_checker as dc

    block = dc._build(DecoderBlock, True, both=True)
    x = torch.randn(dc.BATCH, dc.TARGET, 8, dtype=torch.float64)
    params = dc._write_weights(block, x)
    for nf in (False, True):
        _, S, mask = dc.decoder_cases()[2]  # padded: where every slip shows
        memory = torch.randn(dc.BATCH, dc.TARGET, 8, dtype=torch.float64)
        outs = {None: dc.decoder_variant(x, memory, params, None, norm_first=nf)}
        for bug in nb12.DECODER_BUGS:
            if bug in ("memory mask not passed",) or (bug == "memory normalised" and not nf):
                continue
            outs[bug] = dc.decoder_variant(x, memory, params, None, norm_first=nf, bug=bug)
        names = list(outs)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                assert (outs[a] - outs[b]).abs().max() > 1e-3, (nf, a, b)


@pytest.mark.parametrize("norm_first", [None, False, True])
def test_the_decoder_solution_passes(norm_first, language):
    fb = reply(nb12.check_decoder_block, DecoderBlock, norm_first=norm_first)
    assert fb.correct, fb.message
    assert says(fb, "matches nn.TransformerDecoderLayer with the same weights"), fb.message


DECODER_SLIPS = {
    "no causal mask": "self-attention has no causal mask",
    "keys and values from the decoder": "takes its keys and values from the decoder",
    "queries from the memory": "takes its queries from the memory",
    "memory mask applied as causal": "cross-attention applies a causal mask",
    "memory mask not passed": "does not pass `memory_mask` on",
    "no residual around the self-attention": "self-attention sub-layer has no residual",
    "no residual around the cross-attention": "cross-attention sub-layer has no residual",
    "no residual around the feed-forward": "feed-forward sub-layer has no residual",
    "norm placement swapped": "the other placement of the norms",
    "memory normalised": "normalises the memory too",
}


def test_every_decoder_slip_has_a_plant():
    assert set(DECODER_SLIPS) == set(nb12.DECODER_BUGS)


@pytest.mark.parametrize("bug", list(DECODER_SLIPS))
def test_each_decoder_slip_is_named_then_where_to_look(bug, language):
    first = reply(nb12.check_decoder_block, decoder_with(bug))
    assert not first.correct
    assert says(first, DECODER_SLIPS[bug]), first.message
    assert not says(first, "Where to look")
    second = reply(nb12.check_decoder_block, decoder_with(bug))
    assert second.message.startswith(first.message) and says(second, "Where to look"), second.message


def test_the_decoder_checker_refuses_what_it_cannot_read(language):
    class NoCross(DecoderBlock):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.cross_attn = None

    assert says(reply(nb12.check_decoder_block, NoCross), "is not set yet")

    class Shared(DecoderBlock):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.cross_attn = self.self_attn

    assert says(reply(nb12.check_decoder_block, Shared), "is the same layer as")
    assert says(reply(nb12.check_decoder_block, DecoderBlock(8, 2, 24)), "not an instance")

    class Dropping(DecoderBlock):
        def forward(self, x, memory, memory_mask=None):
            return nn.functional.dropout(super().forward(x, memory, memory_mask), 0.5, training=True)

    assert says(reply(nb12.check_decoder_block, Dropping), "different output each time")


