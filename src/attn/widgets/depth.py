"""Depth and the placement of the norms: the size of the activations and of the gradients,
block by block, through a stack of Transformer blocks (notebook 12; its numbers:
``attn.lessons.depth.stack_profile``).

Three panels against l, the block (0 = the input): the RMS of the residual stream x_l, the RMS
of the gradient d loss / d x_l that reaches block l + 1, and how far apart the tokens of a
sequence still are. The chosen setting is drawn solid; the other placement of the norms, at the
same depth, dashed, for comparison. The x axis runs to the deepest stack whatever the depth (a
stack's lines are as long as it is deep), so that a move redraws the lines alone.

What moving it shows: post-LN keeps every activation at 1, and its gradient shrinks on the way
down to the first blocks; pre-LN lets the stream grow with depth (about 2x by 24 blocks) and
keeps the gradient as large at the bottom as at the top. Without the residual connections the
tokens of a sequence turn into one and the same vector within a few blocks, in either placement,
and the gradient reaches the input a fraction of the size it left the top with.
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .._checks import check_bool, check_choice, check_int
from ..lessons.depth import MAX_DEPTH, StackProfile, stack_profile
from ..language import mark, tr
from ..drawing.plotting import new_figure, power_of_ten_label, text_font
from ._base import Explorer, options, sentences

__all__ = ["DEPTHS", "PLACEMENTS", "DepthView", "depth_view", "depth_explorer"]

DEPTHS = (1, 2, 4, 8, 12, 16, 24, 32, MAX_DEPTH)
PLACEMENTS = (mark("post-LN"), mark("pre-LN"))
#: Fixed y ranges (log scale), so that a move shows the numbers change, not the axes.
_LIMITS = {"activation": (0.1, 5.0), "gradient": (5e-4, 10.0), "spread": (1e-17, 2.0)}
#: A spread below this is round-off: every token holds the same vector.
COLLAPSED = 1e-12


class DepthView:
    """What the explorer draws: the chosen stack (``shown``) and the other placement
    (``other``), both ``StackProfile``s of the same depth, with and without residuals alike."""

    def __init__(self, depth: int, placement: str, residual: bool) -> None:
        self.depth, self.placement, self.residual = depth, placement, residual
        self.shown: StackProfile = stack_profile(depth, norm_first=placement == "pre-LN", residual=residual)
        self.other: StackProfile = stack_profile(depth, norm_first=placement != "pre-LN", residual=residual)


def depth_view(depth: int = 24, placement: str = "post-LN", residual: bool = True) -> DepthView:
    """The profiles behind the explorer (``attn.lessons.depth.stack_profile``, seed 0).

    Args:
        depth: N, one of ``DEPTHS``.
        placement: "post-LN" or "pre-LN".
        residual: with the residual connections.
    """
    check_int("depth", depth)  # a bool is not a depth (True == 1)
    check_choice("depth", depth, DEPTHS)
    check_choice("placement", placement, PLACEMENTS)
    check_bool("residual", residual)
    return DepthView(depth, placement, residual)


def _spread_text(value: float) -> str:
    return tr("below {bound:.0e}", bound=COLLAPSED) if value < COLLAPSED else f"{value:.2f}"


def _readout(v: DepthView) -> str:
    p, N = v.shown, v.depth
    rows = "".join(
        f"<tr><td>{tr('block {l}', l=l) if l else tr('input')}</td><td>{p.activation[l]:.2f}</td>"
        f"<td>{p.gradient[l]:.3f}</td><td>{_spread_text(p.spread[l])}</td></tr>"
        for l in sorted({0, N // 2, N}))
    notes = []
    if not v.residual:
        collapsed = [l for l in range(N + 1) if p.spread[l] < COLLAPSED]
        if collapsed:
            notes.append(tr("Without residual connections, from block {l} on every token of a sequence "
                            "holds the same vector: the stack has forgotten which token is which.",
                            l=collapsed[0]))
        else:
            notes.append(tr("Without residual connections the tokens' spread falls from {start:.2f} to "
                            "{end:.2f} in {n} block(s).", start=p.spread[0], end=p.spread[N], n=N))
        notes.append(tr("The gradient reaching the input is {ratio:.3f} times the one leaving the top.",
                        ratio=p.gradient_ratio))
    elif v.placement == "post-LN":
        notes.append(tr("Post-LN: every activation stays at RMS 1 (a LayerNorm ends each sub-layer); the "
                        "gradient reaching the input is {ratio:.2f} times the one leaving the top.",
                        ratio=p.gradient_ratio))
    else:
        notes.append(tr("Pre-LN: the stream grows from RMS {start:.2f} to {end:.2f} (nothing normalises "
                        "it until the last LayerNorm); the gradient reaching the input is {ratio:.2f} "
                        "times the one leaving the top.", start=p.activation[0], end=p.activation[N],
                        ratio=p.gradient_ratio))
    head = tr("{placement}, {n} block(s), {residual}", placement=tr(v.placement), n=N,
              residual=tr("with residual connections") if v.residual else tr("without residual connections"))
    return (f"<p><b>{head}</b></p><table><tr><th></th><th>{tr('activations (RMS)')}</th>"
            f"<th>{tr('gradient (RMS)')}</th><th>{tr('tokens apart')}</th></tr>{rows}</table>"
            f"<p>{sentences(notes)}</p>")


def depth_explorer(depth: int = 24, placement: str = "post-LN", residual: bool = True) -> Explorer:
    """Controls: the depth, the placement of the norms, the residual connections. Three panels
    against the block l: activations, gradients, tokens' spread (log scales).

    Returns:
        An ``Explorer``; ``.lines`` is name -> (shown, other) ``Line2D`` per panel.
    """
    depth_view(depth, placement, residual)  # validates the arguments
    fig = new_figure(11, 3.3, dpi=72)
    titles = {"activation": mark("activations: RMS of x_l"),
              "gradient": mark("gradient: RMS of ∂L/∂x_l"),
              "spread": mark("tokens apart: |x − mean| / |x|")}
    axes, lines = {}, {}
    for k, name in enumerate(titles):
        ax = fig.add_axes((0.06 + k * 0.33, 0.3, 0.26, 0.58))
        ax.set_yscale("log")
        ax.set_ylim(*_LIMITS[name])
        ax.set_title(tr(titles[name]), fontproperties=text_font(10))
        ax.set_xlabel(tr("block l (0 = the input)"), fontproperties=text_font(9), labelpad=1)
        ax.grid(True, which="major", color="0.9", lw=0.8)
        ax.yaxis.set_minor_locator(NullLocator())
        if name == "activation":  # 0.125 .. 4: plain numbers
            ax.yaxis.set_major_locator(FixedLocator([0.125, 0.25, 0.5, 1, 2, 4]))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        else:  # powers of ten, as plain text (no mathtext)
            ax.yaxis.set_major_locator(FixedLocator([10.0 ** e for e in range(-18, 2, 3 if name == "spread" else 1)]))
            ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten_label))
        shown, = ax.plot([], [], "o-", color="tab:blue", ms=3, lw=1.8)
        other, = ax.plot([], [], "s--", color="tab:orange", ms=3, lw=1.2)
        axes[name], lines[name] = ax, (shown, other)
    for ax in axes.values():  # one x axis for every depth: a stack's line is as long as it is deep
        ax.set_xlim(-1, MAX_DEPTH + 1)
        ax.set_xticks(range(0, MAX_DEPTH + 1, 8))
    fig.legend([lines["activation"][0], lines["activation"][1]],
               [tr("the chosen placement of the norms"), tr("the other placement, for comparison")],
               loc="lower center", ncol=2, prop=text_font(9), frameon=False, bbox_to_anchor=(0.5, 0.0))

    def update(depth: int, placement: str, residual: bool) -> tuple[DepthView, str]:
        v = depth_view(depth, placement, residual)
        layers = np.arange(depth + 1)
        for name, (shown, other) in lines.items():
            floor = _LIMITS[name][0]
            shown.set_data(layers, np.maximum(getattr(v.shown, name), floor))  # round-off drawn at the floor
            other.set_data(layers, np.maximum(getattr(v.other, name), floor))
        return v, _readout(v)

    def live() -> list:
        return [line for pair in lines.values() for line in pair]

    controls = {
        "depth": widgets.SelectionSlider(options=DEPTHS, value=depth, description=tr("blocks"),
                                         continuous_update=False),
        "placement": widgets.ToggleButtons(options=options(PLACEMENTS), value=placement,
                                           description=tr("norms")),
        "residual": widgets.Checkbox(value=residual, description=tr("residual connections")),
    }
    explorer = Explorer(controls, fig, update, live,
                        title=tr("A stack of blocks at initialisation: how large are the activations "
                                 "and the gradients, block by block?"))
    explorer.lines = lines
    return explorer
