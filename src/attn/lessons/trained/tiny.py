"""A tiny transformer trained on the toy tasks of ``attn.lessons.trained.tasks``, so that the
chapter's attention patterns appear.

The model: token + learned position embeddings, the course's ``MultiHeadAttention`` with a
residual connection, a small MLP with a residual connection, and a linear read-out per
position. One layer, so every head's map is the whole story of how information moves.
``attention=`` puts another multi-head class in the place of the course's, such as the
learner's own from notebook 05 (any class that passes
``attn.exercises.nb05.check_multi_head_attention``; see ``attn.lessons.learner_layer``).

Each head is measured by its **pattern score** (``attn.lessons.pattern_scores``) for its task's
pattern: the attention weight inside the pattern's cells, averaged over query rows and over
the examples of a fixed held-out batch. 1 = the head attends only there; an untrained head
scores about the mask's share of cells.

Shape legend: B batch, L sequence length, H heads, C classes, E d_model.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..._checks import check_number, check_positive_int, check_token_ids
from ..learner_layer import make_attention
from ...modules import MultiHeadAttention
from ..pattern_scores import pattern_mask, pattern_score
from ...threads import torch_threads
from .adam import Adam
from .tasks import IGNORE, Batch, check_task, held_out_batch, make_batch, probe_batch

__all__ = [
    "TinyTransformer",
    "build_model",
    "held_out_maps",
    "task_pattern_scores",
    "accuracy",
    "TrainRun",
    "train_tiny",
    "save_run",
    "load_run",
    "load_trained",
]


class TinyTransformer(nn.Module):
    """One transformer layer: embeddings -> MultiHeadAttention (+ residual) -> MLP (+ residual)
    -> a linear read-out per position.

    Args:
        vocab_size: number of token ids.
        seq_len: L, the number of learned positions.
        num_classes: C, outputs per position.
        d_model: E; a multiple of ``num_heads``.
        num_heads: H.
        d_mlp: hidden size of the MLP.
        attention: the multi-head class, built as ``attention(d_model, num_heads)``: the
            course's ``MultiHeadAttention``, or a learner's (``attn.lessons.learner_layer``).
    """

    def __init__(self, vocab_size: int, seq_len: int, num_classes: int, *, d_model: int = 32,
                 num_heads: int = 2, d_mlp: int = 64,
                 attention: type[nn.Module] = MultiHeadAttention) -> None:
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("seq_len", seq_len),
                        ("num_classes", num_classes), ("d_mlp", d_mlp)):
            check_positive_int(name, v)
        self.seq_len = seq_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.attn = make_attention(attention, d_model, num_heads)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.ReLU(), nn.Linear(d_mlp, d_model))
        self.out = nn.Linear(d_model, num_classes)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor | None]:
        """tokens (B, L) long -> logits (B, L, C), attention weights (B, H, L, L) (None from
        a learner's layer that returns its output only)."""
        check_token_ids("tokens", tokens, max_len=self.seq_len, vocab_size=self.tok.num_embeddings)
        h = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))  # (B, L, E)
        a, weights = self.attn(h)  # (B, L, E), (B, H, L, L) or None
        h = h + a
        h = h + self.mlp(h)
        return self.out(h), weights


def build_model(task: str, *, seed: int = 0, seq_len: int = 10, num_heads: int = 2,
                attention: type[nn.Module] = MultiHeadAttention) -> TinyTransformer:
    """A fresh (untrained) model for ``task``, initialised from ``seed``, its attention built
    from the class ``attention`` (see ``TinyTransformer``).

    The global random state is left as it was (the init runs in a forked RNG)."""
    spec = check_task(task)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyTransformer(spec.vocab_size, seq_len, spec.num_classes, num_heads=num_heads,
                               attention=attention)


def _task_mask(task: str, batch: Batch) -> Tensor:
    """The task's pattern for every example of ``batch``: (B, 1, L, L), or (L, L) when it is the
    same for every example (only the block pattern follows each example's phrases)."""
    spec = check_task(task)
    L = batch.tokens.shape[1]
    mask = pattern_mask(spec.pattern, L, segments=batch.segments)  # (L, L) or (B, L, L)
    return mask if mask.dim() == 2 else mask[:, None]  # (B, L, L) -> (B, 1, L, L): every head


@torch.no_grad()
def held_out_maps(model: TinyTransformer, task: str, *, n: int = 256) -> tuple[Batch, Tensor]:
    """The model's attention maps on the held-out batch of ``task``: the batch and its
    weights (B, H, L, L), on one thread.

    Raises:
        ValueError: the model's attention layer returns its output only (no maps to draw)."""
    check_task(task)
    batch = held_out_batch(task, n, seq_len=model.seq_len)
    with torch_threads(1):
        _, w = model(batch.tokens)  # (B, H, L, L) or None
    if w is None:
        raise ValueError(f"model: expected an attention layer that returns its weights, got "
                         f"{type(model.attn.layer).__name__}, whose forward returns the output only")
    return batch, w


def task_pattern_scores(model: TinyTransformer, task: str, *, n: int = 256) -> Tensor:
    """Each head's pattern score for its task's pattern, averaged over the held-out batch -> (H,)."""
    batch, w = held_out_maps(model, task, n=n)
    return pattern_score(w, _task_mask(task, batch)).mean(0)  # (B, H) -> (H,)


@torch.no_grad()
def accuracy(model: TinyTransformer, task: str, *, n: int = 256, batch: Batch | None = None) -> float:
    """Share of positions (with a target) predicted right, on the held-out batch."""
    check_task(task)
    batch = batch if batch is not None else held_out_batch(task, n, seq_len=model.seq_len)
    with torch_threads(1):
        logits, _ = model(batch.tokens)
    keep = batch.targets != IGNORE
    return (logits.argmax(-1) == batch.targets)[keep].float().mean().item()


@dataclass
class TrainRun:
    """What ``train_tiny`` returns (and ``load_run`` gives back for the shipped runs).

    Attributes:
        task: the task's name.
        model: the trained ``TinyTransformer`` (in eval mode).
        losses: the training loss at each step.
        steps: the step numbers of the N snapshots (0 = before training).
        maps: (N, H, L, L) the probe example's attention maps at each snapshot; None when the
            attention layer (a learner's) returns its output only.
        scores: (N, H) each head's pattern score on the held-out batch at each snapshot; None
            as ``maps``.
        accuracies: (N,) held-out accuracy at each snapshot.
        probe: the probe example (a ``Batch`` of one).
    """

    task: str
    model: TinyTransformer
    losses: list[float]
    steps: list[int]
    maps: Tensor | None
    scores: Tensor | None
    accuracies: Tensor
    probe: Batch

    @property
    def untrained_scores(self) -> Tensor | None:
        """(H,) the pattern scores before the first step (None as ``scores``)."""
        return None if self.scores is None else self.scores[0]


def train_tiny(task: str, *, steps: int | None = None, seed: int = 0, batch_size: int = 64,
               lr: float = 1e-2, snapshot_every: int = 10, num_heads: int = 2,
               seq_len: int = 10, attention: type[nn.Module] = MultiHeadAttention) -> TrainRun:
    """Train a fresh ``TinyTransformer`` on ``task`` with Adam, recording the heads' maps.

    Seeded and single-threaded (the thread count is restored afterwards), so the same call
    gives the same weights, bit for bit, on the same machine; another CPU may differ in the
    last bits. The global random state is left untouched.

    Args:
        task: one of ``TASKS``.
        steps: optimiser steps (default: the task's ``steps``).
        seed: seeds the init (``seed``) and the stream of training batches (``seed + 1``).
        batch_size: fresh examples per step.
        lr: Adam's learning rate.
        snapshot_every: record maps, scores and accuracy every this many steps (and at
            step 0 and at the last step).
        num_heads, seq_len: the model's H and L.
        attention: the multi-head class: the course's ``MultiHeadAttention``, or a learner's
            from notebook 05, any class that passes
            ``attn.exercises.nb05.check_multi_head_attention`` (see ``attn.lessons.learner_layer``).

    Returns:
        A ``TrainRun`` (without maps and scores if ``attention`` returns its output only).
    """
    spec = check_task(task)
    steps = spec.steps if steps is None else steps
    for name, v in (("steps", steps), ("batch_size", batch_size), ("snapshot_every", snapshot_every)):
        check_positive_int(name, v)
    lr = check_number("lr", lr, positive=True)
    model = build_model(task, seed=seed, seq_len=seq_len, num_heads=num_heads, attention=attention)
    data = torch.Generator().manual_seed(seed + 1)
    probe = probe_batch(task, seq_len)
    held_out = held_out_batch(task, 256, seq_len=seq_len)
    mask = _task_mask(task, held_out)  # (L, L) or (B, 1, L, L)
    snap_steps: list[int] = []
    maps, scores, accs, losses = [], [], [], []

    @torch.no_grad()
    def snapshot(step: int) -> None:
        _, w_probe = model(probe.tokens)  # (1, H, L, L) or None
        logits, w = model(held_out.tokens)  # (B, L, C), (B, H, L, L) or None
        keep = held_out.targets != IGNORE
        snap_steps.append(step)
        if w is not None:  # a learner's layer may return its output only
            maps.append(w_probe[0])
            scores.append(pattern_score(w, mask).mean(0))  # (B, H) -> (H,)
        accs.append((logits.argmax(-1) == held_out.targets)[keep].float().mean())

    with torch_threads(1):
        opt = Adam(model.parameters(), lr=lr)  # = torch.optim.Adam(..., lr=lr), see attn.lessons.trained.adam
        snapshot(0)
        for step in range(1, steps + 1):
            b = make_batch(task, batch_size, seq_len=seq_len, generator=data)
            logits, _ = model(b.tokens)  # (B, L, C)
            loss = F.cross_entropy(logits.reshape(-1, spec.num_classes),  # (B * L, C)
                                   b.targets.reshape(-1), ignore_index=IGNORE)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if step % snapshot_every == 0 or step == steps:
                snapshot(step)
    model.eval()
    return TrainRun(spec.name, model, losses, snap_steps, torch.stack(maps) if maps else None,
                    torch.stack(scores) if scores else None, torch.stack(accs), probe)


def _weights_file(task: str):
    return resources.files("attn.lessons.trained") / "weights" / f"tiny_{task}.pt"


def save_run(run: TrainRun, directory: str | Path) -> Path:
    """Write ``run`` (the model's state_dict and the recorded history) to
    ``directory/tiny_<task>.pt``, readable with ``torch.load(..., weights_only=True)``."""
    if not isinstance(run, TrainRun):
        raise TypeError(f"run: expected a TrainRun, got {type(run).__name__}")
    if not isinstance(run.model.attn, MultiHeadAttention):
        raise ValueError(f"run: expected a run of the course's MultiHeadAttention (load_run builds "
                         f"that), got one of {type(run.model.attn.layer).__name__}")
    path = Path(directory) / f"tiny_{run.task}.pt"
    torch.save({
        "model": {k: v.detach().clone() for k, v in run.model.state_dict().items()},
        "losses": torch.tensor(run.losses),
        "steps": torch.tensor(run.steps),
        "maps": run.maps.detach().clone(),
        "scores": run.scores.detach().clone(),
        "accuracies": run.accuracies.detach().clone(),
        "probe_tokens": run.probe.tokens.clone(),
    }, path)
    return path


def load_run(task: str, directory: str | Path | None = None) -> TrainRun:
    """The shipped run of ``task``: what ``train_tiny(task)`` gave when the package was built
    (default arguments, seed 0), with its model and its recorded history.

    Args:
        task: one of ``TASKS``.
        directory: read ``directory/tiny_<task>.pt`` (written by ``save_run``) instead of
            the file shipped in the package.
    """
    spec = check_task(task)
    if directory is not None:
        saved = torch.load(Path(directory) / f"tiny_{spec.name}.pt", weights_only=True)
    else:
        with resources.as_file(_weights_file(spec.name)) as path:
            saved = torch.load(path, weights_only=True)
    model = build_model(spec.name, seq_len=saved["probe_tokens"].shape[1],
                        num_heads=saved["maps"].shape[1])
    model.load_state_dict(saved["model"])
    probe = probe_batch(spec.name, model.seq_len)
    return TrainRun(spec.name, model.eval(), saved["losses"].tolist(), saved["steps"].tolist(),
                    saved["maps"], saved["scores"], saved["accuracies"], probe)


def load_trained(task: str) -> TinyTransformer:
    """The shipped trained model of ``task`` (see ``load_run``)."""
    return load_run(task).model
