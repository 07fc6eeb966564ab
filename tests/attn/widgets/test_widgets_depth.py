"""The depth explorer of notebook 12: the profiles it draws are attn.lessons.depth's, and its readout says
what they show."""
import re

import numpy as np
import pytest
import torch

from attn.lessons import depth
from attn.lessons.depth import run_stack, stack_blocks, stack_profile
from attn.language import language
from attn.widgets.depth import COLLAPSED, DEPTHS, depth_explorer, depth_view


def test_the_view_is_the_chosen_stack_and_the_other_placement():
    v = depth_view(8, "pre-LN", False)
    assert v.shown is stack_profile(8, norm_first=True, residual=False)
    assert v.other is stack_profile(8, norm_first=False, residual=False)
    with pytest.raises(ValueError, match="depth: expected one of 1, 2, 4"):
        depth_view(5)
    with pytest.raises(TypeError, match="depth: expected an int, got bool True"):
        depth_view(True)
    with pytest.raises(ValueError, match="placement: expected one of 'post-LN', 'pre-LN', got 'LN'"):
        depth_view(8, "LN")
    with pytest.raises(TypeError, match="residual: expected a bool"):
        depth_view(8, "pre-LN", "yes")


def test_the_lines_hold_the_profiles_and_the_axis_follows_the_depth():
    ex = depth_explorer()
    for depth, placement, residual in ((24, "pre-LN", True), (4, "post-LN", False), (48, "post-LN", True)):
        ex.controls["depth"].value = depth
        ex.controls["placement"].value = placement
        ex.controls["residual"].value = residual
        shown, other = ex.lines["activation"]
        p = stack_profile(depth, norm_first=placement == "pre-LN", residual=residual)
        np.testing.assert_array_equal(shown.get_xdata(), np.arange(depth + 1))
        np.testing.assert_allclose(shown.get_ydata(), p.activation)
        grad, _ = ex.lines["gradient"]
        np.testing.assert_allclose(grad.get_ydata(), p.gradient)
        spread, _ = ex.lines["spread"]
        np.testing.assert_allclose(spread.get_ydata(), np.maximum(p.spread, 1e-17))  # round-off at the floor
        q = stack_profile(depth, norm_first=placement != "pre-LN", residual=residual)
        np.testing.assert_allclose(other.get_ydata(), q.activation)
        assert shown.axes.get_xlim() == (-1, 49)
    ex.close()


def test_the_readout_says_what_each_setting_shows():
    ex = depth_explorer(24, "post-LN", True)
    assert "every activation stays at RMS 1" in ex.readout.value
    ex.controls["placement"].value = "pre-LN"
    assert "the stream grows from RMS 0.99 to 1.98" in ex.readout.value
    ex.controls["residual"].value = False
    assert "from block 4 on every token of a sequence holds the same vector" in ex.readout.value
    assert "below 1e-12" in ex.readout.value and COLLAPSED == 1e-12
    ex.controls["depth"].value = 2
    assert "tokens' spread falls from 0.96 to" in ex.readout.value
    assert "pre-LN, 2 block(s), without residual connections" in ex.alt_text()
    ex.close()
    with language("zh"):
        zh = depth_explorer(12, "pre-LN", True)
    assert "前置" in zh.readout.value or "前置" in zh.alt_text()
    zh.close()


def test_every_depth_is_drawn():
    assert DEPTHS[0] == 1 and DEPTHS[-1] == 48 and list(DEPTHS) == sorted(DEPTHS)


def test_a_move_redraws_the_lines_alone():
    ex = depth_explorer()
    before = ex.full_redraws
    for control, value in (("depth", 48), ("placement", "pre-LN"), ("residual", False), ("depth", 2)):
        ex.controls[control].value = value
    assert ex.full_redraws == before
    ex.close()


@pytest.mark.parametrize("placement", ["post-LN", "pre-LN"])
def test_the_readouts_gradient_ratio_is_the_bottoms_over_the_tops(placement):
    """The readout's "the gradient reaching the input is r times the one leaving the top", with r
    computed here by autograd on the same seeded stack (attn.lessons.depth's recipe: the input and the
    loss direction G from seed 1, loss = <final(x_N), G>), not read from the profile. Post-LN
    shrinks the gradient on the way down (r < 1), pre-LN does not (r > 1)."""
    N = 24
    norm_first = placement == "pre-LN"
    g = torch.Generator().manual_seed(1)
    x = torch.randn(depth.BATCH, depth.TOKENS, depth.D_MODEL, generator=g, dtype=torch.float64)
    G = torch.randn(x.shape, generator=g, dtype=torch.float64)
    x.requires_grad_(True)
    top = run_stack(stack_blocks(N), x, norm_first=norm_first)[-1]  # x_N
    top.retain_grad()
    out = torch.nn.functional.layer_norm(top, (depth.D_MODEL,)) if norm_first else top
    (out * G).sum().backward()
    ratio = (x.grad.pow(2).mean().sqrt() / top.grad.pow(2).mean().sqrt()).item()
    assert (ratio < 0.75) if placement == "post-LN" else (ratio > 1.0)
    ex = depth_explorer(N, placement, True)
    said = re.search(r"the gradient reaching the input is ([0-9.]+) times the one leaving the top",
                     ex.readout.value)
    ex.close()
    assert said is not None, ex.readout.value
    assert said.group(1) == f"{ratio:.2f}"


@pytest.mark.parametrize("placement", ["post-LN", "pre-LN"])
def test_without_residuals_the_readout_gives_the_same_ratio_and_it_is_a_fraction(placement):
    """Notebook 12 compares stacks with and without residuals by one quantity, the gradient at
    the input over the one at the top (``StackProfile.gradient_ratio``); the readout gives it
    for the residual-free stacks too, and at every depth it is below 1 there."""
    for N in DEPTHS:
        v = depth_view(N, placement, False)
        assert v.shown.gradient_ratio < 1, (N, placement)
    ex = depth_explorer(48, placement, False)
    said = re.search(r"The gradient reaching the input is ([0-9.]+) times the one leaving the top",
                     ex.readout.value)
    ex.close()
    assert said is not None, ex.readout.value
    assert said.group(1) == f"{depth_view(48, placement, False).shown.gradient_ratio:.3f}"
