"""An encoder-decoder's three attentions and their masks, read back from a run (notebook 10).

Where the queries, keys and values of each attention come from, and which mask each one gets:
the causal mask in the decoder's self-attention only; the source's padding mask in the
encoder's self-attention and in cross-attention. The grids are not typed in: they are the keys
each query attended to, read from the weights the layers returned.

Shape legend: B batch, S source length (padded), L target length, E = d_model, H heads.
Masks are bool, True = may attend.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from torch import Tensor

from ..._checks import check_int
from ...language import mark, tr
from ...masks import padding_mask
from ...modules import MultiHeadAttention
from ._drawing import (ALLOWED, BLOCKED, MAX_TOKENS, NUMBERS, SMALL, WORDS, Grid, arrow, canvas, extent, grid,
                       shape_text, words)

__all__ = ["AttentionUse", "EncoderDecoderFlow", "encoder_decoder_flow", "EncoderDecoderDiagram",
           "encoder_decoder_diagram"]

@dataclass(frozen=True)
class AttentionUse:
    """One attention of an encoder-decoder, as it ran.

    Attributes:
        name: which attention (English, marked: ``tr(name)`` shows it).
        queries, keys_values: where its queries, and its keys and values, come from (marked).
        mask: the mask it was given (marked).
        query_shape, key_shape: the real shapes of its query input (B, L, E) and of its key and
            value input (B, S, E).
        allowed: (L, S) bool, for the drawn sequence: True where the weights the layer returned
            are above 0 (in any head), i.e. the keys each query attended to. Read back from the
            weights, so it shows the mask the layer really applied.
    """

    name: str
    queries: str
    keys_values: str
    mask: str
    query_shape: tuple[int, ...]
    key_shape: tuple[int, ...]
    allowed: np.ndarray


@dataclass(frozen=True)
class EncoderDecoderFlow:
    """The three attentions of a one-layer encoder-decoder on a padded batch.

    Attributes:
        source_lengths: (B,) the real tokens of each source, padded to S = max.
        target_length: L.
        sequence: the batch position drawn.
        padding_shape: the padding mask's shape (B, 1, 1, S).
        uses: the encoder's self-attention, the decoder's self-attention, cross-attention.
    """

    source_lengths: tuple[int, ...]
    target_length: int
    sequence: int
    padding_shape: tuple[int, ...]
    uses: tuple[AttentionUse, AttentionUse, AttentionUse]


def encoder_decoder_flow(source_lengths: Sequence[int] = (5, 3), target_length: int = 4, *,
                         d_model: int = 8, num_heads: int = 2, seed: int = 0,
                         sequence: int | None = None) -> EncoderDecoderFlow:
    """Run the three attentions of a one-layer encoder-decoder (seeded ``MultiHeadAttention``s
    on seeded random token vectors; residuals kept, feed-forward layers left out) and record
    where each one's inputs come from and which keys each query attended to.

    - the encoder's self-attention: queries, keys and values from the source, with the
      source's padding mask (``attn.padding_mask``): no query looks at a pad;
    - the decoder's self-attention: queries, keys and values from the target, causal
      (``causal=True``): target position i sees positions 0..i only;
    - cross-attention: queries from the decoder, keys and values from the encoder's output
      (the memory), with the source's padding mask and no causal mask: every source token is
      known before the decoder starts.

    Args:
        source_lengths: B lengths, each 1..S, S = the largest (at most 8).
        target_length: L, 1..8 (targets are not padded).
        d_model, num_heads: the layers' E and H.
        seed: seeds the layers and the token vectors.
        sequence: the batch position to record; default the shortest source.

    Returns:
        An ``EncoderDecoderFlow``.
    """
    if not isinstance(source_lengths, (list, tuple)) or not source_lengths:
        raise TypeError(f"source_lengths: expected a non-empty list of ints, got {source_lengths!r}")
    lengths = tuple(check_int("source_lengths", n, low=1, high=MAX_TOKENS) for n in source_lengths)
    L = check_int("target_length", target_length, low=1, high=MAX_TOKENS)
    check_int("seed", seed, low=0)
    B, S = len(lengths), max(lengths)
    b = lengths.index(min(lengths)) if sequence is None else check_int("sequence", sequence, low=0, high=B - 1)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        encoder_self, decoder_self, cross = (MultiHeadAttention(d_model, num_heads) for _ in range(3))
    g = torch.Generator().manual_seed(seed)
    source = torch.randn(B, S, d_model, generator=g)  # (B, S, E): the source's token vectors, padded
    target = torch.randn(B, L, d_model, generator=g)  # (B, L, E): the target's (shifted right)
    pad = padding_mask(list(lengths), S)  # (B, 1, 1, S): True on the real source tokens
    with torch.no_grad():
        a, w_encoder = encoder_self(source, mask=pad)  # (B, S, E), (B, H, S, S)
        memory = source + a  # (B, S, E): what the decoder reads
        a, w_decoder = decoder_self(target, causal=True)  # (B, L, E), (B, H, L, L)
        d = target + a  # (B, L, E)
        _, w_cross = cross(d, memory, memory, mask=pad)  # queries: decoder; keys, values: memory

    def seen(w: Tensor) -> np.ndarray:
        return (w[b] > 0).any(dim=0).numpy()  # (H, L, S) -> (L, S)

    uses = (
        AttentionUse(mark("the encoder's self-attention"), mark("the source"), mark("the source"),
                     mark("the source's padding"), tuple(source.shape), tuple(source.shape), seen(w_encoder)),
        AttentionUse(mark("the decoder's self-attention"), mark("the target"), mark("the target"),
                     mark("causal"), tuple(target.shape), tuple(target.shape), seen(w_decoder)),
        AttentionUse(mark("cross-attention"), mark("the decoder"), mark("the encoder's output"),
                     mark("the source's padding"), tuple(d.shape), tuple(memory.shape), seen(w_cross)),
    )
    return EncoderDecoderFlow(lengths, L, b, tuple(pad.shape), uses)


@dataclass
class EncoderDecoderDiagram:
    """What ``encoder_decoder_diagram`` drew.

    Attributes:
        ax: the axes drawn on; ``figure`` its figure.
        flow: the computed flow it was drawn from.
        grids: the allowed keys of each attention as drawn ((L, S) cells, dark = may attend),
            in the order of ``flow.uses``.
        texts: every word drawn.
    """

    ax: Axes
    flow: EncoderDecoderFlow
    grids: list[Grid]
    texts: list[Text] = field(default_factory=list)

    @property
    def figure(self) -> Figure:
        return self.ax.figure

    def description(self) -> str:
        """The text alternative, in the current language, from the flow drawn."""
        f = self.flow
        encoder, decoder, cross = f.uses
        n = f.source_lengths[f.sequence]
        S = len(cross.allowed[0])
        return tr("A diagram of an encoder-decoder's three attentions, each with a small heatmap of the "
                  "keys its queries attended to (rows are the queries, columns the keys; dark cells may "
                  "attend, white cells are blocked), for sequence {b} of a batch whose source has {n} "
                  "tokens padded to {S}. Left, the encoder's self-attention: queries, keys and values from "
                  "the source {source}, with the source's padding mask {pad}: its last {pads} columns "
                  "are white. Right, bottom, the decoder's self-attention: queries, keys and values from "
                  "the target {target}, with the causal mask: a lower triangle of {L} by {L}. Right, top, "
                  "cross-attention: queries from the decoder {queries}, keys and values from the "
                  "encoder's output {memory}, with the source's padding mask only: every row sees the "
                  "{n} real source tokens, none of the pads, and no triangle.",
                  b=f.sequence + 1, n=n, S=S, source=shape_text(encoder.query_shape), pad=shape_text(f.padding_shape),
                  pads=S - n, target=shape_text(decoder.query_shape), L=f.target_length,
                  queries=shape_text(cross.query_shape), memory=shape_text(cross.key_shape))


def encoder_decoder_diagram(source_lengths: Sequence[int] = (5, 3), target_length: int = 4, *,
                            seed: int = 0, ax: Axes | None = None) -> EncoderDecoderDiagram:
    """Draw an encoder-decoder's three attentions: where each one's queries, keys and values
    come from, and the keys each query attended to (the mask it really got).

    Computed by ``encoder_decoder_flow`` (a batch of sources of ``source_lengths`` padded to
    the longest, targets of ``target_length``); drawn for the shortest source. The causal mask
    is in the decoder's self-attention only; the source's padding mask is in the encoder's
    self-attention and in cross-attention.

    Args:
        source_lengths, target_length, seed: as in ``encoder_decoder_flow``.
        ax: an axes covering a whole figure of about 10.2 x 7 inches (the layout is in inches);
            None: a new figure of the size the layout needs.

    Returns:
        An ``EncoderDecoderDiagram``.
    """
    flow = encoder_decoder_flow(source_lengths, target_length, seed=seed)
    encoder, decoder, cross = flow.uses
    n, S, L = flow.source_lengths[flow.sequence], len(cross.allowed[0]), flow.target_length
    pad = tr("pad")
    source_tokens = [f"s{i + 1}" for i in range(n)] + [pad] * (S - n)
    target_tokens = [f"y{i + 1}" for i in range(L)]

    cell, margin, column_w, gap = 0.25, 0.15, 4.75, 0.35
    block_h = max(S, L) * cell + 0.75
    width = 2 * margin + 2 * column_w + gap
    tokens_h, header = 0.75, 0.8
    height = margin + tokens_h + 0.45 + block_h + 0.5 + block_h + 0.15 + header + margin
    ax = canvas((width, height), ax)
    texts: list[Text] = []
    grids: list[Grid] = []

    def block(use: AttentionUse, left: float, bottom: float, lines: list[str], rows: list[str],
              cols: list[str]) -> tuple[float, float, float, float]:
        """A framed block: the attention's name and lines on the left, its grid on the right.
        Returns the frame (left, bottom, right, top)."""
        right, top = left + column_w, bottom + block_h
        ax.add_patch(Rectangle((left, bottom), column_w, block_h, fill=False, edgecolor="black",
                               linewidth=1.2))
        texts.append(words(ax, left + 0.12, top - 0.12, tr(use.name), size=WORDS + 1, ha="left",
                           va="top", weight="bold"))
        texts.append(words(ax, left + 0.12, top - 0.45, "\n".join(lines), size=SMALL, ha="left",
                           va="top", linespacing=1.6))
        R, C = use.allowed.shape
        g_left = right - 0.15 - C * cell
        g_top = bottom + 0.3 + R * cell + (max(S, L) - R) * cell / 2
        colors = np.where(use.allowed, ALLOWED, BLOCKED)
        g = grid(ax, use.allowed.astype(float), g_left, g_top, norm=None, cell=(cell, cell), colors=colors)
        grids.append(g)
        for r, s in enumerate(rows):
            texts.append(words(ax, g_left - 0.06, g.row_y(r), s, size=NUMBERS, ha="right", va="center"))
        for c, s in enumerate(cols):
            texts.append(words(ax, g.col_x(c), g.bottom - 0.05, s, size=NUMBERS, ha="center",
                               va="top"))
        return left, bottom, right, top

    x_enc, x_dec = margin, margin + column_w + gap
    y1 = margin + tokens_h + 0.45  # the lower blocks' bottom
    y2 = y1 + block_h + 0.5  # the upper blocks'
    enc = block(encoder, x_enc, y1, [
        tr("queries, keys, values: {where}", where=tr(encoder.queries)),
        tr("mask: {mask} {shape}", mask=tr(encoder.mask), shape=shape_text(flow.padding_shape)),
        tr("no causal mask: the whole source is known"),
    ], source_tokens, source_tokens)
    dec = block(decoder, x_dec, y1, [
        tr("queries, keys, values: {where}", where=tr(decoder.queries)),
        tr("mask: {mask} {shape}", mask=tr(decoder.mask), shape=shape_text((L, L))),
        tr("position i sees positions up to i"),
    ], target_tokens, target_tokens)
    crs = block(cross, x_dec, y2, [
        tr("queries: {where} {shape}", where=tr(cross.queries), shape=shape_text(cross.query_shape)),
        tr("keys, values: {where} {shape}", where=tr(cross.keys_values), shape=shape_text(cross.key_shape)),
        tr("mask: {mask} {shape}", mask=tr(cross.mask), shape=shape_text(flow.padding_shape)),
        tr("no causal mask: the whole source is known"),
    ], target_tokens, source_tokens)

    # the tokens under each column, the source padded
    box_w, box_h = 0.5, 0.3
    for left, labels, caption, real in (
            (x_enc, source_tokens, tr("source, padded to S = {S}: {shape}", S=S,
                                      shape=shape_text(encoder.query_shape)), n),
            (x_dec, target_tokens, tr("target: {shape}", shape=shape_text(decoder.query_shape)), L)):
        start = left + (column_w - len(labels) * (box_w + 0.08)) / 2
        for i, s in enumerate(labels):
            ax.add_patch(Rectangle((start + i * (box_w + 0.08), margin + 0.3), box_w, box_h,
                                   facecolor="white" if i < real else "#d9d9d9", edgecolor="black",
                                   linewidth=0.8, linestyle="-" if i < real else "--"))
            texts.append(words(ax, start + i * (box_w + 0.08) + box_w / 2, margin + 0.3 + box_h / 2, s,
                               size=SMALL, ha="center", va="center"))
        texts.append(words(ax, left + column_w / 2, margin, caption, size=SMALL, ha="center", va="bottom"))
        arrow(ax, (left + column_w / 2, margin + 0.3 + box_h), (left + column_w / 2, y1))

    # the memory: the encoder's output, read by cross-attention as keys and values
    memory_y = (crs[1] + crs[3]) / 2
    memory = words(ax, x_enc + column_w - 1.1, memory_y,
                   tr("memory: the encoder's output {shape}", shape=shape_text(cross.key_shape)),
                   size=WORDS, ha="right", va="center",
                   bbox=dict(boxstyle="round,pad=0.35", facecolor="white", edgecolor="black"))
    texts.append(memory)
    box = extent(ax, memory)  # (left, bottom, right, top) of the words, in inches
    arrow(ax, ((box[0] + box[2]) / 2, enc[3]), ((box[0] + box[2]) / 2, box[1] - 0.1))
    arrow(ax, (box[2] + 0.12, memory_y), (crs[0], memory_y))
    texts.append(words(ax, (box[2] + 0.12 + crs[0]) / 2, memory_y + 0.1, tr("keys, values"),
                       size=SMALL, ha="center", va="bottom"))
    # the decoder's self-attention feeds cross-attention's queries
    arrow(ax, (x_dec + 0.9, dec[3]), (x_dec + 0.9, crs[1]))
    texts.append(words(ax, x_dec + 1.0, (dec[3] + crs[1]) / 2, tr("queries"), size=SMALL, ha="left",
                       va="center"))
    # title and legend
    texts.append(words(ax, margin, height - margin,
                       tr("An encoder-decoder: where cross-attention's queries, keys and values come "
                           "from, and which mask each attention gets"), size=WORDS + 1, ha="left", va="top"))
    texts.append(words(ax, margin, height - margin - 0.32,
                       tr("In each grid the rows are the queries and the columns the keys, for sequence "
                           "{b} of the batch:\ndark = may attend, white = blocked, read from the weights "
                           "each layer returned.", b=flow.sequence + 1), size=SMALL, ha="left", va="top",
                        linespacing=1.4))
    return EncoderDecoderDiagram(ax, flow, grids, texts)
