"""A tiny encoder-decoder that learns to reverse a sequence of digits: cross-attention, trained.

The encoder reads the source digits; the decoder writes the target one digit at a time, and at
each step its **cross-attention** (交叉注意力) looks back at the encoder: queries from the
decoder, keys and values from the encoder, L target positions against S source positions.
Reversing a sequence needs exactly one thing from cross-attention, to find source position
S - 1 - t when writing target position t, so the trained weights show the alignment as an
anti-diagonal: the picture of Bahdanau et al. (2015), on a task small enough to train in
seconds.

``attention=`` builds every attention layer from another multi-head class, such as the
learner's own from notebook 05 (any class that passes
``attn.exercises.nb05.check_multi_head_attention``; see ``attn.lessons.learner_layer``, which also says
how a layer written for one sequence does cross-attention).

Shape legend: B batch, S source length, L target length (= S here), E = d_model.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..._checks import check_choice, check_int, check_rank, shape_str
from ..learner_layer import make_attention
from ...modules import MultiHeadAttention
from ...positions import sinusoidal
from .adam import Adam

__all__ = ["TASKS", "BOS", "Seq2Seq", "make_pairs", "train_seq2seq", "Seq2SeqRun", "greedy_decode"]

#: What the target is, given the source.
TASKS = ("reverse", "copy")
#: The start token the decoder reads before its first output (the digits are 0..9).
BOS = 10
VOCAB = 11


def make_pairs(task: str, batch_size: int, length: int, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random digit sequences and their targets: (source, target), each (B, S) of ints 0..9."""
    check_choice("task", task, TASKS)
    check_int("batch_size", batch_size, low=1)
    check_int("length", length, low=1)
    source = torch.randint(0, 10, (batch_size, length), generator=generator)
    target = source.flip(1) if task == "reverse" else source.clone()
    return source, target


class Seq2Seq(nn.Module):
    """Encoder: embedding + sinusoidal positions + a feed-forward layer. Decoder: embedding +
    positions, causal self-attention, cross-attention to the encoder, feed-forward, output.

    Every attention layer is the course's ``attn.MultiHeadAttention``, or one built from the
    class ``attention`` (``attention(d_model, num_heads)``, a learner's from notebook 05).
    """

    def __init__(self, length: int, *, d_model: int = 32, num_heads: int = 1,
                 attention: type[nn.Module] = MultiHeadAttention) -> None:
        super().__init__()
        self.length = check_int("length", length, low=1)
        self.embed = nn.Embedding(VOCAB, d_model)
        self.register_buffer("positions", sinusoidal(length, d_model, dtype=torch.float32))
        self.encoder_ffn = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))
        self.self_attn = make_attention(attention, d_model, num_heads)
        self.cross_attn = make_attention(attention, d_model, num_heads)
        self.decoder_ffn = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))
        self.out = nn.Linear(d_model, 10)

    def encode(self, source: Tensor) -> Tensor:
        """source (B, S) digits -> memory (B, S, E)."""
        check_rank("source", source, 2, "(B, S)")
        e = self.embed(source) + self.positions[: source.shape[1]]  # (B, S, E)
        return e + self.encoder_ffn(e)

    def decode(self, memory: Tensor, decoder_input: Tensor) -> tuple[Tensor, Tensor | None]:
        """memory (B, S, E), decoder_input (B, L) tokens -> logits (B, L, 10) and the
        cross-attention weights (B, H, L, S) (None from a layer that returns its output only)."""
        check_rank("decoder_input", decoder_input, 2, "(B, L)")
        if decoder_input.shape[1] > self.length:
            raise ValueError(f"decoder_input: expected at most {self.length} positions, "
                             f"got shape {shape_str(decoder_input)}")
        d = self.embed(decoder_input) + self.positions[: decoder_input.shape[1]]  # (B, L, E)
        d = d + self.self_attn(d, causal=True)[0]
        cross, weights = self.cross_attn(d, memory)  # queries: decoder; keys, values: encoder
        d = d + cross
        return self.out(d + self.decoder_ffn(d)), weights

    def forward(self, source: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: the decoder reads BOS and the target shifted right.

        source, target (B, S) -> logits (B, S, 10), cross-attention weights (B, H, S, S)."""
        bos = torch.full_like(target[:, :1], BOS)
        return self.decode(self.encode(source), torch.cat([bos, target[:, :-1]], dim=1))


@dataclass
class Seq2SeqRun:
    model: Seq2Seq
    task: str
    steps: int
    losses: list[float]
    accuracy: float  # share of target digits right under greedy decoding, held-out pairs


def greedy_decode(model: Seq2Seq, source: Tensor) -> tuple[Tensor, Tensor | None]:
    """Write the target one digit at a time, each step reading the digits written so far.

    Returns:
        digits (B, S) and the cross-attention weights of the last step (B, H, S, S): row t is
        what the decoder looked at when it wrote digit t (None from a layer that returns its
        output only).
    """
    with torch.no_grad():
        memory = model.encode(source)
        written = torch.full_like(source[:, :1], BOS)  # (B, 1)
        for _ in range(source.shape[1]):
            logits, weights = model.decode(memory, written)
            written = torch.cat([written, logits[:, -1:].argmax(-1)], dim=1)  # one more digit
    return written[:, 1:], weights


def train_seq2seq(task: str = "reverse", *, steps: int = 150, length: int = 8, seed: int = 0,
                  batch_size: int = 64, lr: float = 3e-3,
                  attention: type[nn.Module] = MultiHeadAttention) -> Seq2SeqRun:
    """Train a ``Seq2Seq`` with Adam (``attn.lessons.trained.adam``, the updates of ``torch.optim.Adam``)
    on fresh random pairs; seeded, so the same arguments give the same model on the same machine
    and thread count. ``attention``: the class of its attention layers (see ``Seq2Seq``)."""
    check_choice("task", task, TASKS)
    check_int("steps", steps, low=1)
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Seq2Seq(length, attention=attention)
    optimizer = Adam(model.parameters(), lr=lr)  # = torch.optim.Adam(..., lr=lr), see attn.lessons.trained.adam
    losses = []
    for _ in range(steps):
        source, target = make_pairs(task, batch_size, length, generator=g)
        logits, _ = model(source, target)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 10), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    source, target = make_pairs(task, 256, length, generator=torch.Generator().manual_seed(seed + 1))
    digits, _ = greedy_decode(model.eval(), source)
    return Seq2SeqRun(model, task, steps, losses, (digits == target).double().mean().item())
