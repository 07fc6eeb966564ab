"""Training a character-level language model, measuring it, and catching a model that cheats.

Training reads B random windows of the text per step (``corpus.random_windows``) and
minimises the cross-entropy of each next character, averaged over the B x T positions, with
Adam (``attn.lessons.trained.adam``, the updates of ``torch.optim.Adam``): optionally a linear
warm-up of the learning rate over the first steps, and a cosine decay to a tenth of it by the
last. Seeded and on one thread, so the same call gives the same weights, bit for bit, on the
same machine.

A loss in nats per character reads against two marks: log V, the loss of the uniform guess
(4.14 for Shakespeare's 63 characters, 8.32 for the poems' 4,124), and zero, the loss of a
model that knows the next character. Real text is never that predictable: the best models of
English lose about 0.7 nats a character. A model whose loss falls far below that in a few
hundred steps has not learned the language: it **sees the answer**, the next character,
through a causal mask that lets a position attend one step ahead. ``looks_like_a_leak`` reads
that in the losses; ``future_leaks`` proves it, by changing a later character and watching an
earlier prediction move.

Shape legend: B batch, T context, V vocabulary.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import check_int, check_number, check_positive_int, check_rank, check_tensor
from ...threads import torch_threads
from ..trained.adam import Adam
from .corpus import random_windows
from .model import CharLM

__all__ = ["LEAK_FLOOR", "TrainRun", "learning_rate", "train_char_lm", "held_out_loss", "looks_like_a_leak",
           "future_leaks"]

#: Nats per character: a loss below this, on text, means the model sees what it must guess.
LEAK_FLOOR = 0.5


@dataclass
class TrainRun:
    """What ``train_char_lm`` returns.

    Attributes:
        model: the trained model, in eval mode.
        losses: the training loss (nats per character) of each step.
        held_out: (step, held-out loss) every ``eval_every`` steps, and at the last step.
        seconds: the wall-clock time of the training loop.
        settings: the training arguments (steps, batch size, learning rate, seed, ...).
    """

    model: CharLM
    losses: list[float]
    held_out: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0
    settings: dict = field(default_factory=dict)


def learning_rate(step: int, steps: int, lr: float, *, warmup: int = 0, decay: bool = False) -> float:
    """The learning rate of ``step`` (1..steps): rising linearly to ``lr`` over the first
    ``warmup`` steps, then constant, or (``decay``) falling along a cosine to lr / 10 at the last."""
    if step <= warmup:
        return lr * step / warmup
    if not decay:
        return lr
    progress = (step - warmup) / max(1, steps - warmup)  # 0 -> 1
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def _check_model(model: object) -> CharLM:
    if not isinstance(model, CharLM):
        raise TypeError(f"model: expected an attn.lessons.language_model.CharLM, got {type(model).__name__}")
    return model


def _loss(model: CharLM, inputs: Tensor, targets: Tensor) -> Tensor:
    """The mean cross-entropy of every position's next character, nats."""
    logits = model(inputs)  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))  # (B T, V), (B T,)


def train_char_lm(model: CharLM, data: Tensor, *, steps: int, batch_size: int = 32, context: int | None = None,
                  lr: float = 3e-3, warmup: int = 0, decay: bool = False, seed: int = 0,
                  held_out: Tensor | None = None, eval_every: int = 0) -> TrainRun:
    """Train ``model`` on random windows of ``data`` with Adam.

    Seeded (the windows from ``seed + 1``, the dropout from ``seed``) and on one thread, the
    global RNG and thread count left as they were; ends in eval mode.

    Args:
        model: a ``CharLM`` (trained in place).
        data: (N,) long ids, the training text (``Corpus.train``).
        steps: optimiser steps.
        batch_size: B windows per step.
        context: T characters per window; None: the model's ``context``.
        lr, warmup, decay: the learning rate at each step (``learning_rate``).
        seed: the seed of the windows and the dropout.
        held_out: (M,) long ids (``Corpus.held_out``) to measure ``held_out_loss`` on every
            ``eval_every`` steps (0: never) and after the last.

    Returns:
        A ``TrainRun``.
    """
    model = _check_model(model)
    data = check_tensor("data", data)
    check_rank("data", data, 1, "(N,)")
    steps = check_positive_int("steps", steps)
    context = model.context if context is None else check_int("context", context, low=1, high=model.context)
    lr = check_number("lr", lr, positive=True)
    warmup = check_int("warmup", warmup, low=0)
    seed = check_int("seed", seed, low=0)
    eval_every = check_int("eval_every", eval_every, low=0)
    if held_out is not None:
        check_rank("held_out", check_tensor("held_out", held_out), 1, "(M,)")
    windows = torch.Generator().manual_seed(seed + 1)
    run = TrainRun(model, [], settings={"steps": steps, "batch_size": batch_size, "context": context, "lr": lr,
                                        "warmup": warmup, "decay": decay, "seed": seed})
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        opt = Adam(model.parameters(), lr=lr)  # = torch.optim.Adam(..., lr=lr), see attn.lessons.trained.adam
        start = time.perf_counter()
        for step in range(1, steps + 1):
            model.train()
            inputs, targets = random_windows(data, batch_size, context, generator=windows)  # (B, T) each
            loss = _loss(model, inputs, targets)
            opt.lr = learning_rate(step, steps, lr, warmup=warmup, decay=decay)
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.losses.append(loss.item())
            if held_out is not None and (step == steps or (eval_every and step % eval_every == 0)):
                run.held_out.append((step, held_out_loss(model, held_out, context=context)))
        run.seconds = time.perf_counter() - start
    model.eval()
    return run


@torch.no_grad()
def held_out_loss(model: CharLM, data: Tensor, *, context: int | None = None, windows: int = 64) -> float:
    """The mean loss (nats per character) on the first ``windows`` non-overlapping windows of
    T + 1 characters of ``data``, in eval mode, on one thread: the same windows every time.

    Args:
        model: a ``CharLM``.
        data: (M,) long ids, text the model did not train on (``Corpus.held_out``).
        context: T; None: the model's ``context``.
        windows: how many windows at most (fewer if ``data`` is shorter).
    """
    model = _check_model(model)
    data = check_tensor("data", data)
    check_rank("data", data, 1, "(M,)")
    context = model.context if context is None else check_int("context", context, low=1, high=model.context)
    windows = check_positive_int("windows", windows)
    n = min(windows, (data.shape[0] - 1) // context)
    if n < 1:
        raise ValueError(f"data: expected at least context + 1 = {context + 1} ids, got {data.shape[0]}")
    chunks = data[: n * context + 1]
    inputs = chunks[:-1].view(n, context)  # (n, T)
    targets = chunks[1:].view(n, context)  # (n, T): each input's next character
    training = model.training
    model.eval()
    try:
        with torch_threads(1):
            return _loss(model, inputs, targets).item()
    finally:
        model.train(training)


def looks_like_a_leak(losses: list[float] | Tensor, *, floor: float = LEAK_FLOOR, last: int = 10) -> bool:
    """Whether the training loss fell too low for text: the mean of the ``last`` losses below
    ``floor`` nats per character (``LEAK_FLOOR``), which no model of real text reaches in the
    few hundred steps of the course's runs. It means the model sees what it must guess:
    check the causal mask (``future_leaks``)."""
    if isinstance(losses, Tensor):
        losses = losses.tolist()
    if not isinstance(losses, list) or not losses or not all(isinstance(x, (int, float)) for x in losses):
        raise TypeError(f"losses: expected a non-empty list of losses (TrainRun.losses), got {losses!r:.60}")
    floor = check_number("floor", floor, positive=True)
    last = check_positive_int("last", last)
    tail = losses[-last:]
    return sum(tail) / len(tail) < floor


@torch.no_grad()
def future_leaks(model: nn.Module, *, length: int = 12, seed: int = 0) -> list[tuple[int, int]]:
    """Every (t, s) with s > t such that changing the character at position s changes the
    model's guess at position t: the places where a position sees the future. A causal model
    gives [].

    One random sequence of ``length`` characters, then, for each s, the same sequence with
    character s changed: the logits of positions 0..s - 1 must not move (beyond round-off,
    1e-4 of their size). In eval mode, on one thread; the global RNG is not touched.

    Args:
        model: a ``CharLM``.
        length: T, at most the model's ``context``.
        seed: the seed of the random sequence and of the changed characters.
    """
    model = _check_model(model)
    length = check_int("length", length, low=2, high=model.context)
    g = torch.Generator().manual_seed(check_int("seed", seed, low=0))
    V = model.vocab_size
    tokens = torch.randint(0, V, (1, length), generator=g)  # (1, T)
    training = model.training
    model.eval()
    found = []
    try:
        with torch_threads(1):
            base = model(tokens)[0]  # (T, V)
            for s in range(1, length):
                changed = tokens.clone()
                changed[0, s] = (tokens[0, s] + torch.randint(1, max(V, 2), (1,), generator=g)) % V
                moved = (model(changed)[0] - base).abs().amax(-1)  # (T,)
                tol = 1e-4 * base.abs().max().clamp_min(1.0)
                found += [(t, s) for t in range(s) if moved[t] > tol]
    finally:
        model.train(training)
    return sorted(found)
