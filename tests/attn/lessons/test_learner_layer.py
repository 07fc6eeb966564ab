"""attn.lessons.learner_layer: a learner's multi-head layer from notebook 05, called the package's way.

Each learner-style class (tests/_learner_classes.py) is wrapped and compared in float64 with
the package's ``MultiHeadAttention`` holding the same weights: self-attention with no mask, a
causal and a padding mask, and cross-attention (L != S) with and without a padding mask over
the memory, outputs, weights and gradients. A layer written for one sequence does
cross-attention over [x; memory] (see the module), so the comparison checks that path too.
"""
import inspect

import pytest
import torch
from torch import nn

from attn.lessons.learner_layer import (FUSED, NAMINGS, LearnerAttention, call_arguments, call_style, find_projections,
                                        make_attention, split_output)
from attn.masks import padding_mask
from attn.modules import MultiHeadAttention

from _learner_classes import (
    LEARNER_CLASSES,
    ArticleMultiHeadAttention,
    ChapterMultiHeadAttention,
    OutputOnlyMultiHeadAttention,
)

E, H, B, L, S = 8, 2, 2, 3, 5
NAMES = {"q": ("W_q", "q_linear", "W_query"), "k": ("W_k", "k_linear", "W_key"),
         "v": ("W_v", "v_linear", "W_value"), "o": ("W_o", "out_linear", "out_proj")}


def learner_and_package(cls, seed=0):
    """The learner's layer, wrapped, and the package's layer with the same weights (float64)."""
    torch.manual_seed(seed)
    wrapped = make_attention(cls, E, H).double()
    package = MultiHeadAttention(E, H, bias=True).double()
    with torch.no_grad():
        for role, lin in zip("qkvo", (package.W_q, package.W_k, package.W_v, package.W_o)):
            mine = next(getattr(wrapped.layer, n) for n in NAMES[role] if hasattr(wrapped.layer, n))
            lin.weight.copy_(mine.weight)
            lin.bias.copy_(torch.zeros_like(lin.bias) if mine.bias is None else mine.bias)
    return wrapped, package


def inputs(seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, L, E, generator=g, dtype=torch.float64)  # (B, L, E)
    memory = torch.randn(B, S, E, generator=g, dtype=torch.float64)  # (B, S, E)
    return x, memory


class ArticleNamedMask(ArticleMultiHeadAttention):
    """The article's layer with its mask under another name, ``forward(q, k, v, attn_mask=None)``:
    the mask goes in fourth place, after q, k, v (``call_style`` gives (True, 3))."""

    def forward(self, q, k, v, attn_mask=None):
        return super().forward(q, k, v, attn_mask)


class ChapterPositionalMask(ChapterMultiHeadAttention):
    """The chapter's layer with its mask under another name, ``forward(x, m=None)``: the mask goes
    in second place, after x (``call_style`` gives (False, 1))."""

    def forward(self, x, m=None):
        return super().forward(x, m)


#: The learner-style layers, and two whose mask is not called ``mask`` (given by position).
LAYERS = [*LEARNER_CLASSES.values(), ArticleNamedMask, ChapterPositionalMask]

CASES = {  # name -> (memory?, keyword arguments)
    "self, no mask": (False, {}),
    "self, causal": (False, {"causal": True}),
    "self, padding mask": (False, {"mask": padding_mask([L, L - 1], max_len=L)}),  # (B, 1, 1, L)
    "cross, no mask": (True, {}),
    "cross, padding mask over the memory": (True, {"mask": padding_mask([S, S - 2], max_len=S)}),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("cls", LAYERS, ids=lambda c: c.__name__)
def test_a_learners_layer_gives_the_packages_numbers(cls, case):
    wrapped, package = learner_and_package(cls)
    x, memory = inputs()
    with_memory, kwargs = CASES[case]
    args = (x, memory) if with_memory else (x,)
    out, weights = wrapped(*args, **kwargs)
    want_out, want_weights = package(*args, **kwargs)
    torch.testing.assert_close(out, want_out, atol=1e-12, rtol=0)
    if issubclass(cls, ChapterMultiHeadAttention):  # the only form that returns its weights
        assert weights.shape == (B, H, L, S if with_memory else L)
        torch.testing.assert_close(weights, want_weights, atol=1e-12, rtol=0)
    else:
        assert weights is None
    # gradients reach the learner's projections as they reach the package's
    out.square().sum().backward()
    want_out.square().sum().backward()
    for role, lin in zip("qkvo", (package.W_q, package.W_k, package.W_v, package.W_o)):
        mine = next(getattr(wrapped.layer, n) for n in NAMES[role] if hasattr(wrapped.layer, n))
        torch.testing.assert_close(mine.weight.grad, lin.weight.grad, atol=1e-10, rtol=0)


def test_a_layer_for_one_sequence_does_cross_attention_over_the_joined_sequence():
    """The chapter's forward(x, mask) gets [x; memory] and a mask whose rows see the memory's
    columns only; the article's forward(q, k, v, mask) gets the memory as k and v."""
    chapter, _ = learner_and_package(ChapterMultiHeadAttention)
    article, _ = learner_and_package(ArticleMultiHeadAttention)
    assert (chapter.takes_qkv, chapter.mask_place) == (False, "mask")
    assert (article.takes_qkv, article.mask_place) == (True, "mask")
    x, memory = inputs()
    seen = []
    chapter.layer.register_forward_pre_hook(lambda m, args, kwargs: seen.append((args, kwargs)),
                                            with_kwargs=True)
    chapter(x, memory)
    (args, kwargs), = seen
    assert len(args) == 1 and torch.equal(args[0], torch.cat([x, memory], dim=1))
    expected = torch.zeros(L + S, L + S, dtype=torch.bool)
    expected[:, L:] = True  # every row sees the memory's columns, and no other
    assert torch.equal(kwargs["mask"], expected)


def test_the_package_class_is_built_as_it_is_and_any_other_is_wrapped():
    assert type(make_attention(MultiHeadAttention, E, H)) is MultiHeadAttention
    wrapped = make_attention(ChapterMultiHeadAttention, E, H)
    assert isinstance(wrapped, LearnerAttention) and isinstance(wrapped.layer, ChapterMultiHeadAttention)
    assert (wrapped.d_model, wrapped.num_heads) == (E, H)


def test_make_attention_errors():
    with pytest.raises(TypeError, match="attention: expected a class, got an instance of MultiHeadAttention"):
        make_attention(MultiHeadAttention(E, H), E, H)
    with pytest.raises(TypeError, match="attention: expected an nn.Module class such as "
                                        "attn.MultiHeadAttention, got str"):
        make_attention("MultiHeadAttention", E, H)
    with pytest.raises(TypeError, match="attention: expected an nn.Module class .* got type"):
        make_attention(dict, E, H)
    with pytest.raises(TypeError, match="layer: expected an nn.Module, got int"):
        LearnerAttention(3, E, H)


class _NoMask(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.W_q(x)


class _Returns(nn.Module):
    """Returns whatever it is told to (a test sets ``give``)."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.give = None

    def forward(self, x, mask=None):
        return self.give(x)


def test_learner_attention_errors_name_the_argument_and_what_came_back():
    x, memory = inputs()
    no_mask = make_attention(_NoMask, E, H).double()
    assert no_mask(x)[0].shape == (B, L, E)  # no mask needed: fine
    with pytest.raises(ValueError, match=r"attention: _NoMask.forward takes no mask, and this model "
                                         r"needs one \(causal, or cross-attention\)"):
        no_mask(x, causal=True)
    with pytest.raises(ValueError, match="attention: _NoMask.forward takes no mask"):
        no_mask(x, memory)
    returns = make_attention(_Returns, E, H)
    returns.layer.give = lambda x: "output"
    with pytest.raises(TypeError, match=r"attention: _Returns.forward should return the output, or "
                                        r"\(output, weights\)"):
        returns(x)
    returns.layer.give = lambda x: x[:, :1]
    with pytest.raises(ValueError, match=r"attention: _Returns should give an output of shape \(B, L, E\) "
                                         r"= \(2, 3, 8\), got \(2, 1, 8\)"):
        returns(x)
    returns.layer.give = lambda x: (x, torch.ones(B, L, L))
    with pytest.raises(ValueError, match=r"attention: _Returns should give weights of shape "
                                         r"\(B, H, L, S\) = \(2, 2, 3, 3\), got \(2, 3, 3\)"):
        returns(x)


def _signature(text):
    namespace = {}
    exec(f"def forward{text}: pass", namespace)
    return namespace["forward"]


@pytest.mark.parametrize("signature, style", [
    ("(self, x)", (False, None)),
    ("(self, x, mask=None)", (False, "mask")),
    ("(self, x, m=None)", (False, 1)),
    ("(self, q, k, v, mask=None)", (True, "mask")),
    ("(self, q, k, v, m=None)", (True, 3)),
    ("(self, q, k, v)", (True, None)),
    ("(self, *args)", (False, 1)),
])
def test_call_style_reads_forwards_signature(signature, style):
    module = nn.Module()
    module.forward = _signature(signature).__get__(module)
    assert inspect.signature(module.forward)  # a bound method, as on a learner's layer
    assert call_style(module) == style


def test_masks_under_other_names_go_by_position():
    assert call_style(make_attention(ArticleNamedMask, E, H).layer) == (True, 3)
    assert call_style(make_attention(ChapterPositionalMask, E, H).layer) == (False, 1)


def test_call_arguments_and_split_output():
    x, memory = inputs()
    mask = torch.ones(L, S, dtype=torch.bool)
    args, kwargs = call_arguments(True, "mask", x, memory, mask)
    assert args[0] is x and args[1] is memory and args[2] is memory and kwargs == {"mask": mask}
    args, kwargs = call_arguments(False, 1, x, memory, mask)
    assert args[0] is x and args[1] is mask and len(args) == 2 and kwargs == {}
    args, kwargs = call_arguments(True, 3, x, memory, mask)  # forward(q, k, v, m): the mask fourth
    assert [a is b for a, b in zip(args, (x, memory, memory, mask))] == [True] * 4 and len(args) == 4
    assert kwargs == {}
    assert call_arguments(False, None, x, x, None) == ([x], {})
    assert call_arguments(False, None, x, x, mask) is None
    assert split_output(x)[0] is x and split_output(x)[1] is None
    assert split_output((x, None))[1] is None and split_output([x, mask])[1] is mask
    for wrong in ("x", (x,), (x, x, x), (x, "w"), None):
        assert split_output(wrong) is None


def test_the_checker_still_accepts_the_three_forms():
    """The checker calls a learner's layer through the same functions."""
    from attn.exercises.nb05 import check_multi_head_attention

    for cls in (ChapterMultiHeadAttention, ArticleMultiHeadAttention, OutputOnlyMultiHeadAttention):
        feedback = check_multi_head_attention(cls)
        assert feedback.correct, feedback


# ---- finding a layer's projections by name (the checker of 05 and the models of 12 share it) ----

def _layer(**attrs) -> nn.Module:
    layer = nn.Module()
    for name, value in attrs.items():
        setattr(layer, name, value)
    return layer


@pytest.mark.parametrize("naming", list(NAMINGS))
def test_find_projections_reads_each_naming(naming):
    names = NAMINGS[naming]
    layer = _layer(**{names[r]: nn.Linear(4, 4) for r in "qkvo"})
    assert find_projections(layer) == (naming, {r: names[r] for r in "qkv"})


def test_find_projections_prefers_a_set_naming_to_a_skeletons_blanks():
    chapter, article = list(NAMINGS.values())[:2]
    layer = _layer(**{chapter[r]: None for r in "qkv"}, **{article[r]: nn.Linear(4, 4) for r in "qkv"})
    assert find_projections(layer)[0] == list(NAMINGS)[1]  # the article's: the chapter's are blank
    blank = _layer(**{chapter[r]: ... for r in "qkv"})
    assert find_projections(blank)[0] == list(NAMINGS)[0]  # blanks alone: the naming is still read


def test_find_projections_reads_one_fused_projection_or_nothing():
    assert find_projections(_layer(W_qkv=nn.Linear(4, 12), W_o=nn.Linear(4, 4))) == (FUSED, {"qkv": "W_qkv"})
    assert find_projections(_layer(proj=nn.Linear(4, 4))) is None
    assert find_projections(nn.Linear(4, 4)) is None
