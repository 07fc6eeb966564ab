"""A decoder-only, character-level language model made of Transformer blocks: any block class,
such as the one a learner writes in notebook 12, with the positions of notebook 09.

    characters (B, T) -> embedding + positions -> N causal blocks -> LayerNorm -> read-out
                      -> logits (B, T, V)

At position t the logits are the model's guess of character t + 1. Every block is called as
notebook 12's block is, ``block(x, mask)``, with the **causal mask** (``attn.causal_mask(T)``,
True = may attend): position t sees positions 0..t and never the characters it must guess.
``CharLM.mask`` builds it; a model whose mask lets a position see the next one learns to copy
instead of to predict, and its loss collapses (``attn.lessons.language_model.training`` names it).

The read-out is a Linear of its own, not the embedding transposed (the **tied** weights of
Vaswani et al. 2017 and GPT-2). Tied, an untrained model scores highest the character it has
just read (its own vector against itself), and its first loss lies above log V, the loss of
the uniform guess; untied, training starts at log V, the mark a learner reads the falling
curve against. The price is V x E parameters more: 0.5 M for the 4,124 characters of the
Tang poems at E = 128, 8 K for Shakespeare's 63.

Generating (``attn.lessons.language_model.generation``) runs the model on the new characters
only, each ``attn.TransformerBlock`` with its own ``attn.KVCache`` (``new_caches``).

Shape legend: B batch, T characters, V vocabulary, E = d_model, N blocks.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

from ..._checks import check_choice, check_int, check_positive_int, check_token_ids, shape_str
from ...block import TransformerBlock
from ...kv_cache import KVCache
from ...masks import causal_mask
from ...positions import sinusoidal
from ..trained.blocks import BlockModel

__all__ = ["POSITIONS", "CharLM", "build_char_lm"]

#: The kinds of positions a ``CharLM`` takes by name (or a function, the learner's from 09).
POSITIONS = ("sinusoidal", "learned")


def position_table(positions: str | Callable[[int, int], Tensor], context: int, d_model: int) -> Tensor | None:
    """The fixed codes (T, E) float32 added to the characters: ``attn.positions.sinusoidal``
    for "sinusoidal", ``positions(context, d_model)`` for a function (notebook 09's learner
    writes one); None for "learned" (the model learns one vector per position)."""
    if isinstance(positions, str):
        check_choice("positions", positions, POSITIONS)
        if positions == "learned":
            return None
        return sinusoidal(context, d_model, dtype=torch.float32)  # (T, E)
    if not callable(positions):
        raise TypeError(f"positions: expected 'sinusoidal', 'learned' or a function (length, d_model) -> "
                        f"codes (length, d_model), got {type(positions).__name__}")
    table = positions(context, d_model)
    if not isinstance(table, Tensor) or table.shape != (context, d_model) or not table.is_floating_point():
        got = f"shape {shape_str(table)}" if isinstance(table, Tensor) else type(table).__name__
        raise ValueError(f"positions: expected the function to return float codes (length, d_model) = "
                         f"({context}, {d_model}), got {got}")
    return table.detach().to(torch.float32).clone()  # (T, E)


class CharLM(BlockModel):
    """A decoder-only language model over characters, made of blocks of any class.

    Args:
        vocab_size: V, the characters (``Vocabulary``).
        d_model: E.
        num_heads: H, in each block.
        num_layers: N blocks.
        d_ff: each block's feed-forward size; None: 4 E (the 2017 paper).
        context: T_max, the most characters the model reads at once (its positions).
        block: the class of the blocks, built as ``block(d_model, num_heads, d_ff,
            norm_first=..., dropout=...)`` (a keyword its constructor does not take is left
            out, as in ``attn.lessons.trained.blocks.BlockModel``) and called as notebook 12's
            block is, ``block(x, mask)`` with x (B, T, E) and the causal mask (1, T, T).
        positions: "sinusoidal" (``attn.positions.sinusoidal``, fixed), "learned" (a vector per
            position), or a function ``positions(length, d_model)`` returning the codes
            (length, d_model), such as the learner's from notebook 09.
        norm_first: pre-LN blocks and a last LayerNorm (True), or post-LN blocks (False).
        dropout: passed to each block that takes it.

    Attributes:
        config: the arguments above (a function's positions as its name), for saving.
    """

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2, *,
                 d_ff: int | None = None, context: int = 128, block: type[nn.Module] = TransformerBlock,
                 positions: str | Callable[[int, int], Tensor] = "sinusoidal", norm_first: bool = True,
                 dropout: float = 0.0) -> None:
        d_model = check_positive_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else check_positive_int("d_ff", d_ff)
        context = check_positive_int("context", context)
        table = position_table(positions, context, d_model)  # (T, E), or None: learned
        super().__init__(block, vocab_size, vocab_size, num_blocks=num_layers, seq_len=context,
                         d_model=d_model, num_heads=num_heads, d_ff=d_ff, norm_first=norm_first,
                         dropout=dropout)
        self.context, self.vocab_size = context, vocab_size
        self.config = {"vocab_size": vocab_size, "d_model": d_model, "num_heads": num_heads,
                       "num_layers": num_layers, "d_ff": d_ff, "context": context,
                       "positions": positions if isinstance(positions, str) else positions.__name__,
                       "norm_first": norm_first, "dropout": dropout, "block": block.__name__}
        if table is not None:  # fixed codes instead of the learned ``pos`` of BlockModel
            del self.pos
            self.register_buffer("position_codes", table, persistent=False)  # (T, E)

    def mask(self, length: int) -> Tensor:
        """The causal mask (T, T) every block gets: position t may attend to 0..t
        (``attn.causal_mask``; True = may attend)."""
        return causal_mask(length, device=self.tok.weight.device)  # (T, T)

    def positions_at(self, start: int, length: int) -> Tensor:
        """The codes of positions start..start + length - 1: (T, E)."""
        if hasattr(self, "position_codes"):
            return self.position_codes[start:start + length]  # (T, E)
        return self.pos(torch.arange(start, start + length, device=self.tok.weight.device))  # (T, E)

    def uses_caches(self) -> bool:
        """Whether every block is an ``attn.TransformerBlock``, which takes a KV cache."""
        return all(isinstance(b, TransformerBlock) for b in self.blocks)

    def new_caches(self) -> list[KVCache]:
        """One empty ``attn.KVCache`` per block, for ``forward(..., caches=...)``.

        Raises:
            ValueError: a block that is not an ``attn.TransformerBlock`` (a learner's block
                has no cache: generate without one).
        """
        if not self.uses_caches():
            names = sorted({type(b).__name__ for b in self.blocks})
            raise ValueError(f"cache: expected blocks that take a KV cache (attn.TransformerBlock), got "
                             f"{', '.join(names)}: generate with cache=False")
        return [KVCache(block.self_attn) for block in self.blocks]

    def forward(self, tokens: Tensor, caches: list[KVCache] | None = None) -> Tensor:
        """The logits of the character after each position.

        Args:
            tokens: (B, T) long ids: all the characters (caches None), or only the new ones
                after the positions the caches hold.
            caches: None, or ``new_caches()``, one per block, all holding the same positions.

        Returns:
            logits (B, T, V): row t scores every character as the one after ``tokens[:, t]``.
        """
        past = 0
        if caches is not None:
            if (not isinstance(caches, list) or len(caches) != len(self.blocks)
                    or not all(isinstance(c, KVCache) for c in caches)):
                raise TypeError(f"caches: expected a list of {len(self.blocks)} attn.KVCache (new_caches()), "
                                f"got {caches!r:.80}")
            past = len(caches[0])
        tokens = check_token_ids("tokens", tokens, max_len=self.context, vocab_size=self.vocab_size)
        B, T = tokens.shape
        if past + T > self.context:
            raise ValueError(f"tokens: expected at most context={self.context} positions in all, got "
                             f"{past} cached and {T} new")
        x = self.tok(tokens) + self.positions_at(past, T)  # (B, T, E): each number of size about 1
        if caches is None:
            # (T, T) -> (1, T, T), True = may attend: one mask for every sequence (3 dims, so
            # that a batch of B = T sequences cannot read it as one row per sequence)
            mask = self.mask(T)[None]
            for i, block in enumerate(self.blocks):
                x = self._block_output(i, block, x, block(x, mask))  # (B, T, E)
        else:
            for block, cache in zip(self.blocks, caches):
                x = block(x, cache=cache)  # (B, T, E): the new positions, after the cached ones
        return self.out(self.norm(x))  # (B, T, E) -> (B, T, V)


def build_char_lm(vocab_size: int, *, seed: int = 0, **kwargs: object) -> CharLM:
    """``CharLM(vocab_size, **kwargs)`` initialised from ``seed``, the global RNG left as it was."""
    check_int("seed", seed, low=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return CharLM(vocab_size, **kwargs)
