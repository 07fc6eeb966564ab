"""The residual stream of one Transformer block, post-LN beside pre-LN (notebook 12).

A vertical line carries each token's vector up through the block: the residual stream. Each
sub-layer (self-attention, then the feed-forward network) branches off it and adds its output
back at a "+". What differs between the two placements is where the LayerNorms sit: on the
stream after each addition (post-LN, the 2017 paper), or on each branch before its sub-layer
(pre-LN, GPT-2 onward).

The layout is not typed in: ``block_steps`` runs ``attn.TransformerBlock`` with forward hooks
(a public ``nn.Module`` API) and records the order in which its parts run and, for each norm,
whether it reads the stream as it comes (the branch's norm, pre-LN) or the sum of the stream
and a sub-layer's output (the stream's norm, post-LN). The diagram draws those steps.

Shape legend: B batch, L tokens, E = d_model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch
from matplotlib.text import Text
from torch import nn

from ..._checks import check_bool
from ...block import TransformerBlock
from ...language import mark, tr
from ._drawing import SMALL, WORDS, arrow, canvas, words

__all__ = ["Step", "block_steps", "ResidualStreamDiagram", "residual_stream_diagram"]

#: The parts of ``attn.TransformerBlock`` the diagram draws, by attribute, and their names (marked).
_PARTS = {"norm1": mark("LayerNorm norm1"), "self_attn": mark("self-attention"),
          "norm2": mark("LayerNorm norm2"), "linear1": mark("feed-forward")}
#: The block runs its attention through ``self_attn.compute``, which no hook sees: its query projection is hooked.
_HOOKED = {"self_attn": "self_attn.W_q"}


@dataclass(frozen=True)
class Step:
    """One part of the block, as it ran.

    Attributes:
        part: its attribute in ``attn.TransformerBlock`` ("norm1", "self_attn", "norm2",
            "linear1" for the feed-forward network).
        on_stream: True for a norm that reads the sum of the stream and a sub-layer's output
            (it sits on the stream, post-LN); False for a sub-layer, and for a norm that feeds
            one (it sits on the branch, pre-LN).
    """

    part: str
    on_stream: bool

    @property
    def name(self) -> str:
        """What the diagram writes for it, in the current language."""
        return tr(_PARTS[self.part])

    @property
    def is_norm(self) -> bool:
        return self.part.startswith("norm")


def block_steps(norm_first: bool) -> tuple[Step, ...]:
    """The parts of an ``attn.TransformerBlock(norm_first=norm_first)`` in the order they run.

    Read from a run (forward hooks on ``norm1``, ``self_attn.W_q``, ``norm2``, ``linear1``) on a
    seeded input (1, 3, 8), the RNG left as it was. A norm is on the stream when its input is
    the input of the sub-layer that ran before it plus that sub-layer's output: the residual
    sum, x + F(x). A norm that reads anything else (pre-LN: the stream, to feed a sub-layer)
    is on a branch.

    Args:
        norm_first: True for pre-LN, False for post-LN.

    Returns:
        Four ``Step``s, the first to run first.
    """
    check_bool("norm_first", norm_first)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        block = TransformerBlock(8, 2, 32, norm_first=norm_first).eval()
    x = torch.randn(1, 3, 8, generator=torch.Generator().manual_seed(0))  # (B, L, E)
    runs: list[tuple[str, torch.Tensor]] = []  # (part, its input)

    def record(part: str):
        def hook(module: nn.Module, args: tuple, output: object) -> None:
            runs.append((part, args[0]))
        return hook

    handles = [block.get_submodule(_HOOKED.get(part, part)).register_forward_hook(record(part)) for part in _PARTS]
    try:
        with torch.no_grad():
            block(x)
    finally:
        for h in handles:
            h.remove()
    steps, last = [], None  # last: what the previous sub-layer read and its output, added or not
    for part, given in runs:
        if part.startswith("norm"):  # on the stream: it reads what the last sub-layer read, plus its output
            on_stream = last is not None and torch.allclose(given, last[0] + last[1], atol=1e-6)
            steps.append(Step(part, on_stream))
        else:
            steps.append(Step(part, False))
            last = (given, _sublayer_output(block, part, given))
    return tuple(steps)


def _sublayer_output(block: TransformerBlock, part: str, given: torch.Tensor) -> torch.Tensor:
    """What the sub-layer that starts with ``part`` adds to the stream, on its input ``given``."""
    with torch.no_grad():
        if part == "self_attn":
            return block.attention_sublayer(given, None, False)
        return block.feed_forward(given)


@dataclass
class ResidualStreamDiagram:
    """What ``residual_stream_diagram`` drew.

    Attributes:
        ax: the axes drawn on; ``figure`` its figure.
        steps: placement ("post-LN", "pre-LN") -> the ``block_steps`` drawn in that panel.
        boxes: placement -> [(step, (x centre, y centre) in inches)], bottom to top.
        stream_x: placement -> the stream's column (inches); branch_x the branches' column.
        texts: every word drawn.
    """

    ax: Axes
    steps: dict[str, tuple[Step, ...]]
    boxes: dict[str, list[tuple[Step, tuple[float, float]]]]
    stream_x: dict[str, float]
    branch_x: dict[str, float]
    texts: list[Text] = field(default_factory=list)

    @property
    def figure(self) -> Figure:
        return self.ax.figure

    def description(self) -> str:
        """The text alternative, in the current language, from the steps drawn."""
        def order(steps: tuple[Step, ...]) -> str:
            return tr(", then ").join(
                tr("{part} (on the stream)", part=s.name) if s.on_stream else s.name for s in steps)
        return tr("A diagram of one Transformer block in two panels, post-LN on the left and pre-LN on the "
                  "right. Each panel has two columns: on the left the residual stream, a vertical line from the "
                  "input x at the bottom to the output at the top; on the right the branches: "
                  "self-attention and the feed-forward network each read the stream and add their output "
                  "back at a plus sign. Post-LN runs {post}: its LayerNorms sit on the stream, after each "
                  "addition. Pre-LN runs {pre}: its LayerNorms sit on the branches, before each sub-layer, "
                  "and the stream itself is never normalised inside the block.",
                  post=order(self.steps["post-LN"]), pre=order(self.steps["pre-LN"]))


def residual_stream_diagram(*, ax: Axes | None = None) -> ResidualStreamDiagram:
    """Draw one block's residual stream, post-LN (left) beside pre-LN (right): the stream as a
    vertical line, each sub-layer on a branch that adds back into it, and each LayerNorm where
    ``block_steps`` found it.

    Args:
        ax: an axes covering a whole figure of about 9.4 x 6.6 inches (the layout is in inches);
            None: a new figure of the size the layout needs.

    Returns:
        A ``ResidualStreamDiagram``.
    """
    margin, panel_w, gap = 0.2, 4.4, 0.2
    box_w, norm_w, box_h, step_h = 1.9, 1.5, 0.42, 0.62  # norm_w: a box on the stream
    bottom, header, rows = 0.95, 1.15, 6  # rows: a sub-layer, its "+" and a norm, twice
    height = bottom + (rows + 1) * step_h + header + 0.2
    width = 2 * margin + 2 * panel_w + gap
    ax = canvas((width, height), ax)
    drawn = ResidualStreamDiagram(ax, {}, {}, {}, {})
    texts = drawn.texts
    titles = {"post-LN": (mark("post-LN (the 2017 paper)"), "x \u2190 LN(x + F(x))"),
              "pre-LN": (mark("pre-LN (GPT-2 onward)"), "x \u2190 x + F(LN(x))")}
    notes = {"post-LN": mark("the stream is normalised\nafter each addition"),
             "pre-LN": mark("the stream is never normalised\ninside the block")}
    for i, (placement, norm_first) in enumerate((("post-LN", False), ("pre-LN", True))):
        left = margin + i * (panel_w + gap)
        sx, bx = left + 0.95, left + 0.95 + 1.3 + box_w / 2  # the stream's and the branches' columns
        steps = block_steps(norm_first)
        drawn.steps[placement], drawn.stream_x[placement], drawn.branch_x[placement] = steps, sx, bx
        title, formula = titles[placement]
        texts.append(words(ax, left + panel_w / 2, height - 0.2, tr(title), size=WORDS + 1, ha="center",
                           va="top", weight="bold"))
        texts.append(words(ax, left + panel_w / 2, height - 0.62, formula, size=WORDS, ha="center", va="top"))
        top = bottom + (rows + 1) * step_h
        ax.plot([sx, sx], [bottom, top - 0.05], color="black", linewidth=3, zorder=1)  # the stream
        arrow(ax, (sx, top - 0.3), (sx, top + 0.05), mutation_scale=18, linewidth=0)
        texts.append(words(ax, sx, bottom - 0.1, tr("input x (B, L, E)"), size=SMALL, ha="center", va="top"))
        texts.append(words(ax, sx, top + 0.12, tr("output (B, L, E)"), size=SMALL, ha="center", va="bottom"))
        texts.append(words(ax, sx - 0.3, bottom + 0.5 * step_h, tr("residual stream"), size=SMALL,
                           ha="right", va="bottom", rotation=90))
        texts.append(words(ax, left + panel_w - 0.05, bottom - 0.1, tr(notes[placement]), size=SMALL,
                           ha="right", va="top", linespacing=1.3, style="italic"))
        y = bottom + step_h  # where the next part is drawn
        fork, placed = None, []
        for s in steps:
            if s.is_norm and s.on_stream:  # post-LN: the norm on the stream, after the "+"
                centre = (sx, y)
            else:
                if fork is None:  # a branch starts: leave the stream to the right
                    fork = y - 0.45 * step_h
                    arrow(ax, (sx, fork), (bx, fork), arrowstyle="-", shrinkA=0, shrinkB=0)
                    arrow(ax, (bx, fork), (bx, y - box_h / 2))
                else:
                    arrow(ax, (bx, y - step_h + box_h / 2), (bx, y - box_h / 2))
                centre = (bx, y)
            _box(ax, texts, centre, (norm_w if s.on_stream else box_w, box_h), s.name, norm=s.is_norm)
            placed.append((s, centre))
            y += step_h
            if not s.is_norm:  # a sub-layer: its output goes back to the stream at a "+"
                plus = y
                arrow(ax, (bx, y - step_h + box_h / 2), (bx, plus), arrowstyle="-", shrinkA=0, shrinkB=0)
                arrow(ax, (bx, plus), (sx + 0.16, plus), shrinkA=0, shrinkB=0)
                ax.add_patch(Circle((sx, plus), 0.16, facecolor="white", edgecolor="black", linewidth=1.3,
                                    zorder=3))
                texts.append(words(ax, sx, plus, "+", size=WORDS + 2, ha="center", va="center", zorder=4))
                y += step_h
                fork = None
        drawn.boxes[placement] = placed
    return drawn


def _box(ax: Axes, texts: list[Text], centre: tuple[float, float], size: tuple[float, float], name: str, *,
         norm: bool) -> None:
    """A rounded box with ``name`` in it: grey for a LayerNorm, white for a sub-layer."""
    (x, y), (w, h) = centre, size
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor="#e6e6e6" if norm else "white", edgecolor="black", linewidth=1.2,
                                zorder=3))
    texts.append(words(ax, x, y, name, size=WORDS, ha="center", va="center", zorder=4))
