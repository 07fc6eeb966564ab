"""Schematic diagrams of the flow through attention, drawn from numbers the package computes.

Four pictures that the prose of notebooks 04, 10 and 12 leans on. None is typed in: each runs the
package's own layers on a small seeded example and draws what came out, so a change in the code
changes the picture, and every word goes through ``attn.language.tr`` (the Chinese edition
draws them in Chinese).

- ``split_merge_diagram``: multi-head attention's split and merge, (B, L, E) -> (B, L, H, D)
  -> (B, H, L, D) -> attend -> (B, L, H, D) -> (B, L, E), one token's numbers followed through;
- ``encoder_decoder_diagram``: an encoder-decoder's three attentions, where the queries, keys
  and values of each come from, and which mask each one gets (read back from its weights);
- ``kv_cache_diagram``: one decoding step with a KV cache: what is appended, what is read;
- ``residual_stream_diagram``: one Transformer block's residual stream, its two sub-layers on
  branches that add back into it, post-LN beside pre-LN (where the LayerNorms sit, read from a
  run of ``attn.TransformerBlock``).

Each draws on one matplotlib ``Axes`` that covers a whole figure (a new Agg figure outside
pyplot, of the size its layout needs, if ``ax`` is None), placing everything in inches, words
in ``text_font`` (tokens in ``token_font``), and returns a dataclass with what it drew and the
numbers it drew from; its ``description()`` is the text alternative for
``attn.drawing.figures.show_figure``, computed from those numbers. Tensors are drawn as heatmaps: one
cell per number, shaded by value on a sequential map (readable in greyscale), the numbers that
are followed written in their cells (the residual stream draws no tensor: its boxes are the
block's parts).

One file per picture (``split_merge``, ``encoder_decoder``, ``kv_cache_step``,
``residual_stream``); what they are drawn with, in ``_drawing``.

Shape legend: B batch, L queries (tokens), S keys (source positions), E = d_model, H heads,
D = E // H, T cached positions. Masks are bool, True = may attend.
"""
from ._drawing import ALLOWED, BLOCKED, CMAP, Grid, number
from .encoder_decoder import (AttentionUse, EncoderDecoderDiagram, EncoderDecoderFlow, encoder_decoder_diagram,
                              encoder_decoder_flow)
from .kv_cache_step import KVCacheDiagram, kv_cache_diagram
from .residual_stream import ResidualStreamDiagram, Step, block_steps, residual_stream_diagram
from .split_merge import SplitMergeDiagram, SplitMergePanel, split_merge_diagram

__all__ = ["split_merge_diagram", "SplitMergeDiagram", "SplitMergePanel", "encoder_decoder_diagram",
           "encoder_decoder_flow", "EncoderDecoderDiagram", "EncoderDecoderFlow", "AttentionUse",
           "kv_cache_diagram", "KVCacheDiagram", "residual_stream_diagram", "ResidualStreamDiagram", "Step",
           "block_steps", "Grid", "number", "CMAP", "ALLOWED", "BLOCKED"]
