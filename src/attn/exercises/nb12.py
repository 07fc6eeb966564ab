"""Checkers for notebook 12 (the Transformer block).

Four checkers: ``check_transformer_block`` (the block itself), ``check_layer_norm`` (exercise 1:
LayerNorm written out), ``check_block_parameters`` (exercise 2: what one block of the 2017
paper's base model holds) and ``check_decoder_block`` (exercise 3: a decoder block, against
``nn.TransformerDecoderLayer``); ``passes`` asks the first one quietly (no hint counted), for the
cell that trains a model of the learner's blocks.

This module holds exercise 2 and is the notebook's door to the others, whose names it imports,
so that the notebook asks ``nb12.check_transformer_block(...)``:

- ``attn.exercises._block_checker``: ``check_transformer_block`` and ``passes``; it reads the
  learner's block through ``attn.exercises._block_parts`` and compares it with the block of
  ``attn.exercises._block_bugs`` (PyTorch's layer, and the chapter's block with each bug).
- ``attn.exercises._layer_norm``: ``check_layer_norm``, LayerNorm written out.
- ``attn.exercises._decoder_checker``: ``check_decoder_block``, the decoder block and its slips.
"""
from __future__ import annotations

from typing import Any

from ..language import mark, tr
from ._base import Feedback, as_whole_number, checker
from ._block_bugs import BLOCK_ARGS, BUGS, variant
from ._block_checker import BLOCK_HINTS, check_transformer_block, passes
from ._block_parts import DROPOUT
from ._decoder_checker import DECODER_ARGS, DECODER_BUGS, DECODER_HINTS, check_decoder_block
from ._layer_norm import LAYER_NORM_BUGS, LAYER_NORM_HINTS, check_layer_norm, layer_norm_variant

__all__ = ["BLOCK_ARGS", "DROPOUT", "BUGS", "check_transformer_block", "passes", "variant", "reset_hints",
           "LAYER_NORM_BUGS", "layer_norm_variant", "check_layer_norm", "BASE", "block_parameters",
           "check_block_parameters", "DECODER_ARGS", "DECODER_BUGS", "check_decoder_block"]


def reset_hints() -> None:
    """Start the checkers' hints again from the first tier (the symptom alone)."""
    BLOCK_HINTS.reset()
    LAYER_NORM_HINTS.reset()
    DECODER_HINTS.reset()


# ---- exercise 2: what one block holds ----------------------------------------------------

#: The 2017 paper's base model: the sizes of each of its blocks.
BASE: dict[str, int] = {"d_model": 512, "num_heads": 8, "d_ff": 2048}


def block_parameters(d_model: int, d_ff: int) -> dict[str, int]:
    """The parameters of one block (biases everywhere, as ``nn.TransformerEncoderLayer``), by part."""
    E, Fd = d_model, d_ff
    return {"attention": 4 * (E * E + E), "feed-forward": E * Fd + Fd + Fd * E + E, "norms": 2 * 2 * E}


@checker
def check_block_parameters(answer: Any) -> Feedback:
    """Exercise 2: how many numbers one block of the base model (``BASE``) learns, with a bias
    in every Linear and a gain and a bias in each LayerNorm (``attn.TransformerBlock`` and
    ``nn.TransformerEncoderLayer`` count the same). The usual miscounts are named."""
    answer = as_whole_number(tr("a number of parameters"), answer)
    E, Fd = BASE["d_model"], BASE["d_ff"]
    parts = block_parameters(E, Fd)
    total = sum(parts.values())
    if answer == total:
        return Feedback(True, tr("{total:,} numbers: the feed-forward holds {ff:,} of them ({share:.0%}), "
                                 "the attention {att:,}, the two LayerNorms {norms:,}.", total=total,
                                 ff=parts["feed-forward"], share=parts["feed-forward"] / total,
                                 att=parts["attention"], norms=parts["norms"]))
    attention_biases, norms, ffn_biases = 4 * E, parts["norms"], Fd + E
    known = [  # (a miscount, what it leaves out or adds)
        (total - attention_biases - ffn_biases - norms,
         mark("That counts the weight matrices alone: every Linear has a bias too, and each LayerNorm a "
              "gain and a bias.")),
        (total - attention_biases - ffn_biases,
         mark("That leaves out the biases of the Linears (four in the attention, two in the feed-forward).")),
        (total - attention_biases,
         mark("That is {short:,} short: 4 x {E}, the biases of the attention's four projections, or the two "
              "LayerNorms' gains and biases (also 4 x {E}).")),
        (total - ffn_biases, mark("That leaves out the feed-forward's two biases ({F} + {E} numbers).")),
        (total - norms // 2, mark("That counts one LayerNorm's gain and bias, or each norm's gain alone: a "
                                  "block has two LayerNorms, each with a gain and a bias of {E} numbers.")),
        (total - E * E - E, mark("That leaves out the attention's output projection W_o ({E} x {E} and its "
                                 "bias).")),
        (parts["attention"], mark("That is the attention alone: the feed-forward and the norms are part of "
                                  "the block too.")),
        (parts["feed-forward"], mark("That is the feed-forward alone: the attention and the norms are part "
                                     "of the block too.")),
    ]
    for count, message in known:
        if answer == count:
            return Feedback(False, tr(message, short=total - count, E=E, F=Fd))
    return Feedback(False, tr("Not that. Count each part: the attention's four projections ({E} -> {E}, with "
                              "biases), the feed-forward's two Linears ({E} -> {F} -> {E}, with biases), and "
                              "two LayerNorms of {E} features.", E=E, F=Fd))
