"""Multi-head attention's split and merge, drawn from the layer's own numbers (notebook 04).

(B, L, E) -> .view -> (B, L, H, D) -> .transpose(1, 2) -> (B, H, L, D) -> attend, each head on
its own -> .transpose(1, 2) -> (B, L, H, D) -> .reshape -> (B, L, E), with one token's numbers
written at every step. The split runs left to right on top, the merge right to left below it.

Shape legend: B batch (1), L tokens, E = d_model, H heads, D = E // H.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.text import Text
from torch import Tensor

from ..._checks import check_float, check_int, check_rank, shape_str
from ...lessons.cost.counts import trace_multi_head
from ...language import mark, tr
from ...modules import MultiHeadAttention
from ..plotting import token_font
from ._drawing import (MAX_E, MAX_TOKENS, SMALL, WORDS, Grid, arrow, canvas, frame, grid, number, shape_text,
                       words)

__all__ = ["SplitMergePanel", "SplitMergeDiagram", "split_merge_diagram"]

@dataclass
class SplitMergePanel:
    """One step of the split and merge: the tensor's shape and its picture.

    Attributes:
        step: the step's name (English, marked: ``tr(step)`` shows it).
        shape: the tensor's real shape.
        blocks: its heatmaps: one (L, E) block, or H blocks of (L, D) side by side
            ((B, L, H, D)) or stacked (one per head, (B, H, L, D)).
        token_values: (H, D) the followed token's numbers at this step.
    """

    step: str
    shape: tuple[int, ...]
    blocks: list[Grid]
    token_values: np.ndarray

    def token_texts(self) -> list[Text]:
        """The followed token's numbers as drawn, in the tensor's order along E (head 1's
        D numbers first)."""
        return [t for b in self.blocks for _, t in sorted(b.numbers.items())]


@dataclass
class SplitMergeDiagram:
    """What ``split_merge_diagram`` drew.

    Attributes:
        ax: the axes drawn on; ``figure`` its figure.
        token: the followed token's position; tokens: every token's label.
        panels: the six steps, in the order of the flow: Q (B, L, E), (B, L, H, D),
            (B, H, L, D), the heads' outputs (B, H, L, D), (B, L, H, D), the concatenation
            (B, L, E).
        texts: every word and number drawn.
    """

    ax: Axes
    token: int
    tokens: list[str]
    panels: list[SplitMergePanel]
    texts: list[Text] = field(default_factory=list)

    @property
    def figure(self) -> Figure:
        return self.ax.figure

    @property
    def grids(self) -> list[Grid]:
        """Every heatmap drawn, panel by panel."""
        return [b for p in self.panels for b in p.blocks]

    def description(self) -> str:
        """The text alternative, in the current language, from the numbers drawn."""
        q, _, split, heads, _, merged = self.panels
        H, D = q.token_values.shape
        first = ", ".join(number(v) for v in q.token_values[0, :2])
        second = ", ".join(number(v) for v in q.token_values[1, :2])
        out_first = ", ".join(number(v) for v in heads.token_values[0, :2])
        out_second = ", ".join(number(v) for v in heads.token_values[1, :2])
        return tr("A diagram of six heatmaps following multi-head attention's split and merge on {L} "
                  "tokens, E = {E}, {H} heads of D = {D} numbers: in every heatmap the rows are the tokens "
                  "and the columns their numbers, shaded by value, and the framed row is the token "
                  "{token}, its numbers written. Top row, left to right: the queries Q {q_shape}; "
                  ".view cuts each row into {H} groups of {D}, {view_shape}, in the same order; "
                  ".transpose(1, 2) gives {split_shape}, one block of {L} rows per head: {token}'s first "
                  "{D} numbers ({first}, ...) are in head 1's block, the next {D} ({second}, ...) in "
                  "head 2's. Bottom row, right to left: each head attends on its own, {heads_shape}, "
                  "and .transpose(1, 2) and .reshape put the heads side by side again, {merged_shape}: "
                  "{token}'s row is head 1's output ({out_first}, ...) followed by head 2's "
                  "({out_second}, ...).",
                  L=len(self.tokens), E=H * D, H=H, D=D, token=self.tokens[self.token],
                  q_shape=shape_text(q.shape), view_shape=shape_text(self.panels[1].shape),
                  split_shape=shape_text(split.shape), heads_shape=shape_text(heads.shape),
                  merged_shape=shape_text(merged.shape), first=first, second=second,
                  out_first=out_first, out_second=out_second)


def split_merge_diagram(mha: MultiHeadAttention, x: Tensor, *, tokens: Sequence[str] | None = None,
                        token: int = 0, ax: Axes | None = None) -> SplitMergeDiagram:
    """Draw multi-head attention's split and merge on ``x``, one token's numbers followed.

    The numbers are the layer's own (``attn.lessons.cost.counts.trace_multi_head`` runs ``mha(x)``
    once and keeps its tensors): the queries Q = X W^Q (B, L, E); ``.view(B, L, H, D)``, each
    row cut into H groups of D; ``.transpose(1, 2)``, (B, H, L, D), the head axis in front, so
    that each head is one (L, D) block (``mha.split_heads``); each head's attention output
    (B, H, L, D); ``.transpose(1, 2)`` back to (B, L, H, D); ``.reshape(B, L, E)``, the heads
    side by side again (``mha.merge_heads``), which W^O then projects. The split runs left to
    right on top, the merge right to left below it.

    Args:
        mha: an ``attn.MultiHeadAttention`` with E = d_model <= 8 and at least 2 heads.
        x: (1, L, E), L <= 8 tokens (self-attention, no mask).
        tokens: L labels of the rows (default "0", "1", ...).
        token: the position whose numbers are written (0-based).
        ax: where to draw: an axes covering a whole figure of about 10.3 x 8.7 inches (for
            L = 6, E = 8, H = 2; the layout is in inches, so a smaller figure crowds it);
            None: a new figure of the size the layout needs.

    Returns:
        A ``SplitMergeDiagram``.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha: expected attn.MultiHeadAttention, got {type(mha).__name__}")
    if mha.d_model > MAX_E:
        raise ValueError(f"mha: expected d_model <= {MAX_E} to draw, got d_model={mha.d_model}")
    H, D = mha.num_heads, mha.head_dim
    if H < 2:
        raise ValueError(f"mha: expected at least 2 heads (one head splits nothing), got num_heads={H}")
    check_float("x", x)
    check_rank("x", x, 3, "(B, L, E)")
    B, L, E = x.shape
    if B != 1 or not 1 <= L <= MAX_TOKENS or E != mha.d_model:
        raise ValueError(f"x: expected (1, L, E) with L <= {MAX_TOKENS} and E = d_model = {mha.d_model}, "
                         f"got shape {shape_str(x)}")
    tokens = [str(i) for i in range(L)] if tokens is None else [str(t) for t in tokens]
    if len(tokens) != L:
        raise ValueError(f"tokens: expected {L} labels (one per row of x), got {len(tokens)}")
    t = check_int("token", token, low=0, high=L - 1)

    with torch.no_grad():
        steps = dict(trace_multi_head(mha, x))
    q = steps["Q = X W^Q"]  # (B, L, E)
    heads = steps["head outputs"]  # (B, H, L, D)
    tensors = [
        (mark("the queries Q = X W^Q"), q),  # (B, L, E)
        (mark("each row cut into H groups of D"), q.view(B, L, H, D)),  # (B, L, E) -> (B, L, H, D)
        (mark("one (L, D) block per head"), steps["Q split into heads"]),  # (B, L, H, D) -> (B, H, L, D)
        (mark("each head's attention output"), heads),  # (B, H, L, D)
        (mark("the tokens in front again"), heads.transpose(1, 2)),  # (B, H, L, D) -> (B, L, H, D)
        (mark("the heads side by side: Concat"), steps["concat(heads)"]),  # (B, L, H, D) -> (B, L, E)
    ]
    q_norm = Normalize(float(q.min()), float(q.max()))
    out_norm = Normalize(float(heads.min()), float(heads.max()))

    # the layout, in inches: three columns (E, H x D, D cells wide), the split on top and the
    # merge below it; the (B, H, L, D) panels stand H blocks tall
    cw, ch = 0.34, 0.21
    gap, head_gap, arrow_w, margin = 0.1, 0.32, 1.25, 0.15
    label_w = 0.1 + max(len(s) for s in tokens) * SMALL / 72
    x1 = margin + label_w
    x2 = x1 + E * cw + arrow_w
    x3 = x2 + E * cw + (H - 1) * gap + arrow_w
    width = x3 + D * cw + margin + 0.35  # room for the titles centred on the narrow right column
    block_h = L * ch
    tall = H * block_h + (H - 1) * head_gap
    header = 0.55  # the figure's title and legend
    titles = 0.45  # a panel's two lines of title
    head_label = 0.22
    middle = 0.8  # the band of the attend arrow
    height = margin + header + titles + head_label + tall + middle + head_label + tall + titles + margin
    ax = canvas((width, height), ax)
    texts: list[Text] = []

    top1 = height - margin - header - titles - head_label  # first blocks' top, upper row
    top2 = top1 - tall - middle - head_label  # lower row
    bottom2 = top2 - tall

    def draw(i: int, left: float, top: float, layout: str, norm: Normalize) -> SplitMergePanel:
        step, tensor = tensors[i]
        values = tensor[0].detach().numpy().astype(float)
        blocks = []
        if layout == "row":  # (L, E): one block
            blocks.append(grid(ax, values, left, top, norm=norm, cell=(cw, ch),
                               written=[(t, c) for c in range(E)]))
        elif layout == "side":  # (L, H, D): the H groups of a row side by side
            for h in range(H):
                blocks.append(grid(ax, values[:, h], left + h * (D * cw + gap), top, norm=norm,
                                   cell=(cw, ch), written=[(t, c) for c in range(D)]))
        else:  # (H, L, D): one block per head, stacked
            for h in range(H):
                blocks.append(grid(ax, values[h], left, top - h * (block_h + head_gap), norm=norm,
                                   cell=(cw, ch), written=[(t, c) for c in range(D)]))
        for b in blocks:
            frame(ax, b, t)
            texts.extend(b.numbers.values())
        if layout != "row":
            for h, b in enumerate(blocks):
                texts.append(words(ax, (b.left + b.right) / 2, b.top + 0.05, tr("head {h}", h=h + 1),
                                   size=SMALL, ha="center", va="bottom"))
        token_values = (values[t].reshape(H, D) if layout == "row" else
                        values[t] if layout == "side" else values[:, t])
        return SplitMergePanel(step, tuple(tensor.shape), blocks, token_values)

    panels = [
        draw(0, x1, top1, "row", q_norm),
        draw(1, x2, top1, "side", q_norm),
        draw(2, x3, top1, "stack", q_norm),
        draw(3, x3, top2, "stack", out_norm),
        draw(4, x2, bottom2 + block_h, "side", out_norm),
        draw(5, x1, bottom2 + block_h, "row", out_norm),
    ]

    # row labels: the tokens, left of the (B, L, E) panels
    for p in (panels[0], panels[5]):
        g = p.blocks[0]
        for r, s in enumerate(tokens):
            texts.append(words(ax, g.left - 0.07, g.row_y(r), s, font=token_font(SMALL),
                               ha="right", va="center"))
    # titles: above the upper panels, below the lower ones
    for i, p in enumerate(panels):
        first, last = p.blocks[0], p.blocks[-1]
        centre = (first.left + last.right) / 2
        title = tr(p.step) + "\n" + shape_text(p.shape)
        if i < 3:
            y = first.top + (head_label if i else 0.05)
            texts.append(words(ax, centre, y, title, size=SMALL, ha="center", va="bottom",
                               linespacing=1.3))
        else:
            texts.append(words(ax, centre, last.bottom - 0.07, title, size=SMALL, ha="center",
                               va="top", linespacing=1.3))
    # arrows between the panels, each with the code above it and what it does below it
    steps_between = [
        (0, 1, ".view(B, L, H, D)", tr("same order")),
        (1, 2, ".transpose(1, 2)", tr("heads to the front")),
        (4, 5, ".reshape(B, L, E)", tr("same order")),
        (3, 4, ".transpose(1, 2)", tr("tokens to the front")),
    ]
    for a, b, code, what in steps_between:
        pa, pb = panels[a], panels[b]
        leftward = a > 2
        y = pa.blocks[-1].row_y(L // 2 - 1) if not leftward else pb.blocks[-1].row_y(L // 2 - 1)
        if leftward:  # the lower row runs right to left
            start, end = pa.blocks[0].left - 0.08, pb.blocks[-1].right + 0.08
        else:
            start, end = pa.blocks[-1].right + 0.08, pb.blocks[0].left - 0.08
        arrow(ax, (start, y), (end, y))
        centre = (start + end) / 2
        texts.append(words(ax, centre, y + 0.08, code, size=SMALL, ha="center", va="bottom"))
        texts.append(words(ax, centre, y - 0.08, what, size=SMALL, ha="center", va="top"))
    # the attend step: down the right column
    upper, lower = panels[2].blocks[-1], panels[3].blocks[0]
    xa = (upper.left + upper.right) / 2
    arrow(ax, (xa, upper.bottom - 0.05), (xa, lower.top + head_label + 0.02))
    texts.append(words(ax, upper.left - 0.12, (upper.bottom + lower.top + head_label) / 2,
                       tr("attend, each head on its own:") + "\nsoftmax(Q K^T / \u221aD) V",
                       size=SMALL, ha="right", va="center", linespacing=1.4))
    # the figure's title and the legend of the shapes
    texts.append(words(ax, margin, height - margin,
                       tr("Splitting into heads and merging them back: the framed row is one token, "
                           "its numbers written at every step"), size=WORDS + 1, ha="left", va="top"))
    texts.append(words(ax, margin, height - margin - 0.3,
                       tr("B batch, L tokens, E = d_model, H heads, D = E / H numbers per head"),
                       size=SMALL, ha="left", va="top"))
    return SplitMergeDiagram(ax, t, tokens, panels, texts)
