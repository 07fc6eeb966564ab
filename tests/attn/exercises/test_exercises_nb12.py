"""The checker of notebook 12 (the Transformer block): learner-style blocks, right and wrong."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attn
from attn.exercises import _block_bugs, _layer_norm, nb12

from _learner_classes import (AnnotatedLayerNorm, ArticleMHA, Block, ChapterMHA, GeluPackageBlock,  # noqa: F401
                              MaskAsKey, MyLayerNorm, OnlyTheAttentionDrops, PostLNOnly, ReversedNorms,
                              block_with)


@pytest.fixture(autouse=True)
def fresh_hints():
    nb12.reset_hints()
    yield
    nb12.reset_hints()


@pytest.mark.parametrize("cls", [Block, ReversedNorms, GeluPackageBlock, attn.TransformerBlock,
                                 block_with(norm=MyLayerNorm), block_with(attention=ArticleMHA)],
                         ids=["chapter", "reversed-norms", "gelu-package-mha", "attn.TransformerBlock",
                              "own-layernorm", "article-mha"])
def test_correct_blocks_pass_in_both_placements(cls):
    fb = nb12.check_transformer_block(cls)
    assert fb.correct, fb.message
    assert "norm_first=False and True" in fb.message and "a padding mask" in fb.message
    assert ("GELU" if cls is GeluPackageBlock else "ReLU") in fb.message


def test_dropout_is_reported_only_when_the_constructor_takes_it():
    assert "off in eval mode and on in training" in nb12.check_transformer_block(Block).message
    assert "twice in eval mode" in nb12.check_transformer_block(GeluPackageBlock).message


def test_one_placement_without_norm_first():
    fb = nb12.check_transformer_block(PostLNOnly, norm_first=False)
    assert fb.correct, fb.message
    assert "with norm_first=False," in fb.message
    fb = nb12.check_transformer_block(PostLNOnly)
    assert not fb.correct and "takes no `norm_first`" in fb.message
    fb = nb12.check_transformer_block(PostLNOnly, norm_first=True)  # it is post-LN
    assert not fb.correct and "other placement" in fb.message


def test_the_learners_rng_is_left_alone():
    torch.manual_seed(0)
    before = torch.rand(3)
    torch.manual_seed(0)
    nb12.check_transformer_block(Block)
    nb12.check_transformer_block(block_with("dropout in eval"))
    assert torch.equal(torch.rand(3), before)


# ---- the classic bugs: each named, the place to look on a second try ----------------------

BUGGY = {
    "norm over the batch": (block_with(norm=lambda d: MyLayerNorm(d, dim=0)), "over the batch"),
    "norm over the sequence": (block_with(norm=lambda d: MyLayerNorm(d, dim=1)), "over the sequence"),
    "unbiased variance": (block_with(norm=lambda d: MyLayerNorm(d, unbiased=True)), "unbiased"),
    "annotated layernorm": (block_with(norm=AnnotatedLayerNorm), "unbiased"),
    "residual after the norm": (block_with("residual after the norm"), "adds the sub-layer's output to the normalised x"),
    "norm placement swapped": (block_with("norm placement swapped"), "asked for norm_first=False, it gives pre-LN"),
    "no residual around the attention": (block_with("no residual around the attention"), "attention sub-layer has no residual"),
    "no residual around the feed-forward": (block_with("no residual around the feed-forward"), "feed-forward sub-layer has no residual"),
    "norm1 used twice": (block_with("norm1 used twice"), "uses the first LayerNorm again"),
    "no activation": (block_with("no activation"), "no non-linearity between its two Linears"),
    "activation after the second Linear": (block_with("activation after the second Linear"), "after the feed-forward's second Linear"),
    "mask not passed": (block_with("mask not passed"), "does not pass `mask` on to the attention"),
    "dropout in eval": (block_with("dropout in eval"), "different output each time"),
}


@pytest.mark.parametrize("bug", list(BUGGY))
def test_each_classic_bug_gets_its_symptom_then_where_to_look(bug):
    cls, words = BUGGY[bug]
    first = nb12.check_transformer_block(cls)
    assert not first.correct
    assert words in first.message, first.message
    assert "Where to look" not in first.message
    second = nb12.check_transformer_block(cls)
    assert second.message.startswith(first.message) and "Where to look:" in second.message


def test_the_case_is_named():
    assert "With norm_first=False and a causal mask:" in nb12.check_transformer_block(
        block_with("mask not passed")).message
    assert "With norm_first=True and no mask:" in nb12.check_transformer_block(
        block_with("residual after the norm")).message


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


def test_no_dropout_in_training():
    class NeverDrops(Block):
        def sa(self, x, mask):
            return self.attention(x, mask)[0]

        def feed_forward(self, x):
            return self.ff[3](self.ff[1](self.ff[0](x)))

    fb = nb12.check_transformer_block(NeverDrops)
    assert not fb.correct and "its dropout never runs" in fb.message
    assert "Where to look" in nb12.check_transformer_block(NeverDrops).message


def test_batch_norm_is_named():
    fb = nb12.check_transformer_block(block_with(norm=nn.BatchNorm1d))
    assert not fb.correct and "is a BatchNorm" in fb.message and "across the batch" in fb.message


# ---- what the checker cannot build or find ------------------------------------------------

def test_a_wrong_attention_layer_is_sent_back_to_05():
    class Unscaled(ChapterMHA):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads, scale=False)

    fb = nb12.check_transformer_block(block_with(attention=Unscaled))
    assert not fb.correct
    assert "your attention layer, alone with no mask" in fb.message
    assert "check_multi_head_attention" in fb.message


def test_structural_problems():
    class TorchInside(Block):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
            super().__init__(d_model, num_heads, d_ff, dropout, norm_first)
            self.attention = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    fb = nb12.check_transformer_block(TorchInside)
    assert not fb.correct and "PyTorch's nn.MultiheadAttention" in fb.message

    fb = nb12.check_transformer_block(block_with(norm=lambda d: nn.LayerNorm((5, d))))
    assert not fb.correct and "nn.LayerNorm((5, 8))" in fb.message and "last 2 dims" in fb.message

    class OneNorm(Block):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.norm2 = self.norm1

    fb = nb12.check_transformer_block(OneNorm)
    assert not fb.correct and "two LayerNorms" in fb.message and "found 1: norm1" in fb.message

    class FixedWidth(Block):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=True):
            super().__init__(d_model, num_heads, 4 * d_model, dropout, norm_first)

    fb = nb12.check_transformer_block(FixedWidth)
    assert not fb.correct and "built with d_ff=24" in fb.message and "8 -> 32" in fb.message

    class Raises(Block):
        def forward(self, x, mask=None):
            raise NotImplementedError

    assert "forward is not written yet" in nb12.check_transformer_block(Raises).message
    assert "class itself" in nb12.check_transformer_block(Block(8, 2, 24)).message
    assert "nn.Module subclass" in nb12.check_transformer_block(len).message
    with pytest.raises(TypeError, match=r"norm_first: expected None, True or False, got str 'yes'"):
        nb12.check_transformer_block(Block, norm_first="yes")


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


def test_raw_matrices_either_way_round_pass():
    fb = nb12.check_transformer_block(block_with(attention=MatrixMHA))
    assert fb.correct, fb.message


def test_a_wrong_raw_matrix_attention_is_sent_back_to_05():
    class Unscaled(MatrixMHA):
        def forward(self, x, mask=None):
            return super().forward(x * math.sqrt(self.d) ** 0.5, mask)  # the inputs scaled: wrong

    fb = nb12.check_transformer_block(block_with(attention=Unscaled))
    assert not fb.correct and "your attention layer, alone with no mask" in fb.message


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


@pytest.mark.parametrize("fn", [layer_norm_right, layer_norm_torch, layer_norm_module])
def test_a_right_layer_norm_passes(fn):
    fb = nb12.check_layer_norm(fn)
    assert fb.correct and "with a large eps (0.5) and with the usual one" in fb.message, fb.message


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
    "no affine": (lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], eps=eps), "without the gain and the bias"),
    "swapped": (lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], b, g, eps), "swapped"),
}


@pytest.mark.parametrize("slip", list(LAYER_NORM_SLIPS))
def test_each_layer_norm_slip_gets_its_symptom_then_where_to_look(slip):
    fn, words = LAYER_NORM_SLIPS[slip]
    first = nb12.check_layer_norm(fn)
    assert not first.correct and words in first.message, first.message
    assert first.message[:1].isupper() and "Where to look" not in first.message
    second = nb12.check_layer_norm(fn)
    assert second.message.startswith(first.message) and "Where to look:" in second.message


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


def test_layer_norm_checker_other_answers():
    def todo(x, gain, bias, eps=1e-5):
        raise NotImplementedError

    def in_place(x, gain, bias, eps=1e-5):
        x -= x.mean(-1, keepdim=True)
        return layer_norm_right(x, gain, bias, eps)

    assert "Not implemented yet" in nb12.check_layer_norm(todo).message
    assert "changed its inputs in place" in nb12.check_layer_norm(in_place).message
    assert "raised ZeroDivisionError" in nb12.check_layer_norm(lambda x, g, b, eps: 1 / 0).message
    assert "Return a torch.Tensor, got float" in nb12.check_layer_norm(lambda x, g, b, eps: 1.0).message
    assert "shape of x (2, 5, 8), got (2, 5)" in nb12.check_layer_norm(lambda x, g, b, eps: x[..., 0]).message
    assert "Pass your function itself" in nb12.check_layer_norm(None).message
    fb = nb12.check_layer_norm(lambda x, g, b, eps: 2 * layer_norm_right(x, g, b, eps))
    assert not fb.correct and "not by one of the usual slips" in fb.message


# ---- exercise 2: what one block holds ------------------------------------------------------

def test_block_parameters_are_torchs_count():
    E, H, Fd = nb12.BASE["d_model"], nb12.BASE["num_heads"], nb12.BASE["d_ff"]
    layer = nn.TransformerEncoderLayer(E, H, Fd, batch_first=True)
    assert sum(nb12.block_parameters(E, Fd).values()) == sum(p.numel() for p in layer.parameters())
    assert sum(nb12.block_parameters(E, Fd).values()) == sum(
        p.numel() for p in attn.TransformerBlock(E, H, Fd).parameters())


def test_check_block_parameters_right_and_each_miscount_named():
    fb = nb12.check_block_parameters(3_152_384)
    assert fb.correct and "2,099,712" in fb.message
    assert nb12.check_block_parameters(3152384.0).correct and nb12.check_block_parameters(torch.tensor(3152384))
    for answer, words in ((3_145_728, "weight matrices alone"), (3_147_776, "biases of the Linears"),
                          (3_150_336, "2,048 short"), (3_149_824, "feed-forward's two biases"),
                          (3_151_360, "two LayerNorms"), (2_889_728, "output projection W_o"),
                          (1_050_624, "the attention alone"), (2_099_712, "the feed-forward alone"),
                          (12, "Count each part")):
        fb = nb12.check_block_parameters(answer)
        assert not fb.correct and words in fb.message, (answer, fb.message)
    assert "placeholder" in nb12.check_block_parameters(None).message
    assert "whole number" in nb12.check_block_parameters(3.5).message


def test_a_mask_given_where_the_key_goes_is_named():
    fb = nb12.check_transformer_block(MaskAsKey)
    assert not fb.correct
    assert "by keyword" in fb.message and "float64" not in fb.message, fb.message


def test_a_block_whose_own_dropout_never_runs_is_told_so():
    """Its attention layer's dropout (on the weights) is not the block's: the success message
    would say its dropout is on in training."""
    fb = nb12.check_transformer_block(OnlyTheAttentionDrops)
    assert not fb.correct and "in training mode it gives the same output twice" in fb.message, fb.message
