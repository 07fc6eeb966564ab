"""A tiny transformer trained on toy tasks, so that the chapter's attention patterns appear.

Each task is chosen so that one of the chapter's patterns (常见的注意力模式) is the natural
way to solve it:

==========  ==================================================  ===============
task        per-position target                                 pattern
==========  ==================================================  ===============
neighbours  how many 1s among the token and its two neighbours  diagonal (band)
reverse     the token at the mirrored position, L - 1 - i       anti-diagonal
cls         the label held by the first ([CLS]-like) token      vertical
phrases     the majority bit of the token's phrase              block
==========  ==================================================  ===============

The model: token + learned position embeddings, the course's ``MultiHeadAttention`` with a
residual connection, a small MLP with a residual connection, and a linear read-out per
position. One layer, so every head's map is the whole story of how information moves.

A pattern is a bool mask over (query, key) pairs, True = the pattern's cells; a head's
**pattern score** is the attention weight that falls inside the mask, averaged over query
rows and examples: 1 = the head attends only there, an untrained head scores about the
mask's share of cells.

Shape legend: B batch, L sequence length, H heads, C classes, E d_model.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import check_positive_int, check_rank, check_tensor, shape_str
from ..modules import MultiHeadAttention

__all__ = [
    "TASKS",
    "TaskSpec",
    "Batch",
    "make_batch",
    "held_out_batch",
    "token_labels",
    "TinyTransformer",
    "build_model",
    "PATTERNS",
    "pattern_mask",
    "pattern_score",
    "head_scores",
    "accuracy",
    "TrainRun",
    "Adam",
    "train_tiny",
    "save_run",
    "load_run",
    "load_trained",
    "EVAL_SEED",
    "PROBE_SEED",
    "IGNORE",
    "single_thread",
]

#: The seed of the held-out batch that every score and accuracy is measured on.
EVAL_SEED = 20_240_616
#: The seed of the one example whose maps are recorded during training.
PROBE_SEED = 7
#: A target that the loss and the accuracy skip (the [CLS] position of task ``cls``).
IGNORE = -100


@dataclass(frozen=True)
class TaskSpec:
    """What a task needs: vocabulary size, number of classes, its pattern, default steps."""

    name: str
    pattern: str
    vocab_size: int
    num_classes: int
    steps: int
    description: str


TASKS: dict[str, TaskSpec] = {
    "neighbours": TaskSpec("neighbours", "diagonal", 2, 4, 200,
                           "count the 1s among a bit and its two neighbours"),
    "reverse": TaskSpec("reverse", "anti-diagonal", 8, 8, 200,
                        "output the sequence backwards"),
    "cls": TaskSpec("cls", "vertical", 4, 4, 200,
                    "repeat, at every position, the label held by the first ([CLS]-like) token"),
    "phrases": TaskSpec("phrases", "block", 10, 2, 200,
                        "output the majority bit of the token's phrase (ties count as 1)"),
}
PATTERNS = ("diagonal", "anti-diagonal", "vertical", "block")
N_LABELS = 4  # labels of the cls task (the other tokens use the same ids)
N_LETTERS = 5  # phrase letters A..E: at most 5 phrases of length >= 2 fit in 10 tokens


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one thread inside the block, then restore the thread count.

    The tensors here are tiny: a second thread brings no speed, only waiting (badly so on a
    busy machine), and one thread makes training bit-for-bit repeatable on one machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _check_task(task: object) -> TaskSpec:
    if not isinstance(task, str):
        raise TypeError(f"task: expected one of {list(TASKS)}, got {type(task).__name__}")
    if task not in TASKS:
        raise ValueError(f"task: expected one of {list(TASKS)}, got {task!r}")
    return TASKS[task]


@dataclass(frozen=True)
class Batch:
    """tokens (B, L) long; targets (B, L) long (-100 = no target); segments (B, L) long:
    the phrase index of each position (task ``phrases``), else zeros."""

    task: str
    tokens: Tensor
    targets: Tensor
    segments: Tensor


def _random_segments(g: torch.Generator, B: int, L: int, lo: int = 2, hi: int = 4) -> Tensor:
    """Phrase index per position (B, L): phrases of lo..hi tokens (the last may be cut)."""
    lengths = torch.randint(lo, hi + 1, (B, L), generator=g)  # more phrases than needed
    ends = lengths.cumsum(1)  # (B, L): where each phrase stops
    pos = torch.arange(L)
    return (pos[None, :, None] >= ends[:, None, :]).sum(-1)  # (B, L, 1) vs (B, 1, L) -> (B, L)


def make_batch(task: str, batch_size: int, *, seq_len: int = 10,
               generator: torch.Generator | None = None) -> Batch:
    """Draw ``batch_size`` examples of ``task`` (see ``TASKS``).

    Args:
        task: one of ``TASKS``.
        batch_size: B >= 1.
        seq_len: L >= 2.
        generator: a seeded ``torch.Generator`` for reproducible draws (default: a fresh one
            seeded with 0).

    Returns:
        A ``Batch`` with tokens (B, L), targets (B, L), segments (B, L).
    """
    spec = _check_task(task)
    check_positive_int("batch_size", batch_size)
    check_positive_int("seq_len", seq_len)
    if seq_len < 2:
        raise ValueError(f"seq_len: expected at least 2, got {seq_len}")
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    B, L = batch_size, seq_len
    segments = torch.zeros(B, L, dtype=torch.long)
    if spec.name == "neighbours":
        tokens = torch.randint(0, 2, (B, L), generator=g)
        padded = F.pad(tokens, (1, 1))  # (B, L + 2): a 0 beyond each end
        targets = padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]
    elif spec.name == "reverse":
        tokens = torch.randint(0, spec.vocab_size, (B, L), generator=g)
        targets = tokens.flip(1)
    elif spec.name == "cls":
        tokens = torch.randint(0, N_LABELS, (B, L), generator=g)
        targets = tokens[:, :1].expand(B, L).clone()  # (B, 1) -> (B, L): the first token's label
        targets[:, 0] = IGNORE
    else:  # phrases
        bits = torch.randint(0, 2, (B, L), generator=g)
        segments = _random_segments(g, B, L)
        same = segments[:, :, None] == segments[:, None, :]  # (B, L, L)
        ones = (same * bits[:, None, :]).sum(-1)  # (B, L): 1s in my phrase
        size = same.sum(-1)  # (B, L): my phrase's length
        targets = (2 * ones >= size).long()
        tokens = segments % N_LETTERS * 2 + bits  # letter A.. of the phrase, then the bit
    return Batch(spec.name, tokens, targets, segments)


def token_labels(task: str, tokens: Tensor) -> list[str]:
    """Readable labels for one sequence (L,): bits, digits, [+k] keys, or phrase letter + bit."""
    spec = _check_task(task)
    check_tensor("tokens", tokens)
    check_rank("tokens", tokens, 1, "(L,)")
    out = []
    for t in tokens.tolist():
        if spec.name == "cls" and not out:
            out.append(f"[{t}]")
        elif spec.name == "phrases":
            out.append("ABCDE"[t // 2] + str(t % 2))
        else:
            out.append(str(t))
    return out


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
    """

    def __init__(self, vocab_size: int, seq_len: int, num_classes: int, *, d_model: int = 32,
                 num_heads: int = 2, d_mlp: int = 64) -> None:
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("seq_len", seq_len),
                        ("num_classes", num_classes), ("d_mlp", d_mlp)):
            check_positive_int(name, v)
        self.seq_len = seq_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.ReLU(), nn.Linear(d_mlp, d_model))
        self.out = nn.Linear(d_model, num_classes)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """tokens (B, L) long -> logits (B, L, C), attention weights (B, H, L, L)."""
        check_tensor("tokens", tokens)
        check_rank("tokens", tokens, 2, "(B, L)")
        if tokens.dtype != torch.long:
            raise TypeError(f"tokens: expected dtype torch.long, got {tokens.dtype}")
        if tokens.shape[1] > self.seq_len:
            raise ValueError(f"tokens: expected at most L={self.seq_len} positions, got shape "
                             f"{shape_str(tokens)}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.tok.num_embeddings):
            raise ValueError(f"tokens: expected ids in 0..{self.tok.num_embeddings - 1}, got "
                             f"{tokens.min().item()}..{tokens.max().item()}")
        h = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))  # (B, L, E)
        a, weights = self.attn(h)  # (B, L, E), (B, H, L, L)
        h = h + a
        h = h + self.mlp(h)
        return self.out(h), weights


def build_model(task: str, *, seed: int = 0, seq_len: int = 10, num_heads: int = 2) -> TinyTransformer:
    """A fresh (untrained) model for ``task``, initialised from ``seed``.

    The global random state is left as it was (the init runs in a forked RNG)."""
    spec = _check_task(task)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyTransformer(spec.vocab_size, seq_len, spec.num_classes, num_heads=num_heads)


def pattern_mask(pattern: str, seq_len: int, *, segments: Tensor | None = None) -> Tensor:
    """The cells of a pattern, True = inside.

    Args:
        pattern: ``"diagonal"`` (|i - j| <= 1: itself and its neighbours), ``"anti-diagonal"``
            (j = L - 1 - i), ``"vertical"`` (j = 0, the first token) or ``"block"`` (i and j
            in the same phrase; needs ``segments``).
        seq_len: L.
        segments: (B, L) or (L,) phrase index per position, for ``"block"``.

    Returns:
        (L, L) bool, or (B, L, L) for ``"block"`` with (B, L) segments.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"pattern: expected one of {list(PATTERNS)}, got {pattern!r}")
    check_positive_int("seq_len", seq_len)
    i = torch.arange(seq_len)
    if pattern == "diagonal":
        return (i[:, None] - i[None, :]).abs() <= 1
    if pattern == "anti-diagonal":
        return i[:, None] + i[None, :] == seq_len - 1
    if pattern == "vertical":
        return (i[None, :] == 0).repeat(seq_len, 1)  # (1, L) -> (L, L)
    if segments is None:
        raise TypeError("segments: expected a (B, L) or (L,) tensor for pattern 'block', got None")
    check_tensor("segments", segments)
    check_rank("segments", segments, (1, 2), "(B, L) or (L,)")
    if segments.shape[-1] != seq_len:
        raise ValueError(f"segments: expected last dim L={seq_len}, got shape {shape_str(segments)}")
    return segments[..., :, None] == segments[..., None, :]  # (..., L, 1) vs (..., 1, L) -> (..., L, L)


def pattern_score(weights: Tensor, mask: Tensor) -> Tensor:
    """Attention weight inside ``mask``, per head, averaged over query rows and examples.

    Args:
        weights: (B, H, L, S) or (H, L, S) attention weights (rows sum to 1).
        mask: bool, (L, S) or (B, L, S); True = a cell of the pattern.

    Returns:
        (H,) scores in [0, 1].
    """
    check_tensor("weights", weights)
    check_rank("weights", weights, (3, 4), "(B, H, L, S) or (H, L, S)")
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask: expected a bool tensor (True = in the pattern), got {mask.dtype}")
    w = weights if weights.dim() == 4 else weights[None]  # (H, L, S) -> (B=1, H, L, S)
    B, _, L, S = w.shape
    if mask.shape not in ((L, S), (B, L, S)):
        raise ValueError(f"mask: expected shape (L, S) = {(L, S)} or (B, L, S) = {(B, L, S)} "
                         f"for weights {shape_str(weights)}, got {shape_str(mask)}")
    m = mask[:, None] if mask.dim() == 3 else mask  # (B, L, S) -> (B, 1, L, S), or (L, S)
    inside = (w * m).sum(-1)  # (B, H, L)
    return inside.mean(dim=(0, 2))


def held_out_batch(task: str, n: int = 256, *, seq_len: int = 10) -> Batch:
    """The held-out examples every score and accuracy is measured on (seed ``EVAL_SEED``;
    the first n of a larger draw are not the same as a smaller draw)."""
    return make_batch(task, n, seq_len=seq_len, generator=torch.Generator().manual_seed(EVAL_SEED))


@torch.no_grad()
def head_scores(model: TinyTransformer, task: str, *, n: int = 256, batch: Batch | None = None) -> Tensor:
    """Each head's score for the task's own pattern, on the held-out batch -> (H,)."""
    spec = _check_task(task)
    batch = batch if batch is not None else held_out_batch(task, n, seq_len=model.seq_len)
    with single_thread():
        _, w = model(batch.tokens)
    L = batch.tokens.shape[1]
    return pattern_score(w, pattern_mask(spec.pattern, L, segments=batch.segments))


@torch.no_grad()
def accuracy(model: TinyTransformer, task: str, *, n: int = 256, batch: Batch | None = None) -> float:
    """Share of positions (with a target) predicted right, on the held-out batch."""
    _check_task(task)
    batch = batch if batch is not None else held_out_batch(task, n, seq_len=model.seq_len)
    with single_thread():
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
        maps: (N, H, L, L) the probe example's attention maps at each snapshot.
        scores: (N, H) each head's pattern score on the held-out batch at each snapshot.
        accuracies: (N,) held-out accuracy at each snapshot.
        probe: the probe example (a ``Batch`` of one).
    """

    task: str
    model: TinyTransformer
    losses: list[float]
    steps: list[int]
    maps: Tensor
    scores: Tensor
    accuracies: Tensor
    probe: Batch

    @property
    def untrained_scores(self) -> Tensor:
        """(H,) the pattern scores before the first step."""
        return self.scores[0]


class Adam:
    """Adam (Kingma and Ba, 2015) with ``torch.optim.Adam``'s defaults and arithmetic.

    The same operations, in the same order, as ``torch.optim.Adam(params, lr)`` on CPU
    (betas 0.9 and 0.999, eps 1e-8, no weight decay), so it gives the same weights bit for
    bit. It is written out because ``torch.optim``'s first step imports ``torch._dynamo``,
    which takes seconds, more than the whole training of a tiny model.

    Per parameter p with gradient g, at step t = 1, 2, ...:
    m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2;
    p <- p - lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps).
    """

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps = lr, betas, eps
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]  # first moments
        self.v = [torch.zeros_like(p) for p in self.params]  # second moments

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        beta1, beta2 = self.betas
        step_size = self.lr / (1 - beta1 ** self.t)
        bias_correction2_sqrt = (1 - beta2 ** self.t) ** 0.5
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            g = p.grad
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / bias_correction2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-step_size)


def train_tiny(task: str, *, steps: int | None = None, seed: int = 0, batch_size: int = 64,
               lr: float = 1e-2, snapshot_every: int = 10, num_heads: int = 2,
               seq_len: int = 10) -> TrainRun:
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

    Returns:
        A ``TrainRun``.
    """
    spec = _check_task(task)
    steps = spec.steps if steps is None else steps
    for name, v in (("steps", steps), ("batch_size", batch_size), ("snapshot_every", snapshot_every)):
        check_positive_int(name, v)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
        raise ValueError(f"lr: expected a positive number, got {lr!r}")
    model = build_model(task, seed=seed, seq_len=seq_len, num_heads=num_heads)
    data = torch.Generator().manual_seed(seed + 1)
    probe = _probe(task, seq_len)
    held_out = held_out_batch(task, 256, seq_len=seq_len)
    mask = pattern_mask(spec.pattern, seq_len, segments=held_out.segments)
    snap_steps: list[int] = []
    maps, scores, accs, losses = [], [], [], []

    @torch.no_grad()
    def snapshot(step: int) -> None:
        _, w_probe = model(probe.tokens)  # (1, H, L, L)
        logits, w = model(held_out.tokens)  # (B, L, C), (B, H, L, L)
        keep = held_out.targets != IGNORE
        snap_steps.append(step)
        maps.append(w_probe[0])
        scores.append(pattern_score(w, mask))
        accs.append((logits.argmax(-1) == held_out.targets)[keep].float().mean())

    with single_thread():
        opt = Adam(model.parameters(), lr=lr)  # = torch.optim.Adam(..., lr=lr), see Adam
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
    return TrainRun(spec.name, model, losses, snap_steps, torch.stack(maps), torch.stack(scores),
                    torch.stack(accs), probe)


def _probe(task: str, seq_len: int) -> Batch:
    return make_batch(task, 1, seq_len=seq_len, generator=torch.Generator().manual_seed(PROBE_SEED))


def _weights_file(task: str):
    return resources.files("attn.trained") / "weights" / f"tiny_{task}.pt"


def save_run(run: TrainRun, directory: str | Path) -> Path:
    """Write ``run`` (the model's state_dict and the recorded history) to
    ``directory/tiny_<task>.pt``, readable with ``torch.load(..., weights_only=True)``."""
    if not isinstance(run, TrainRun):
        raise TypeError(f"run: expected a TrainRun, got {type(run).__name__}")
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
    spec = _check_task(task)
    if directory is not None:
        saved = torch.load(Path(directory) / f"tiny_{spec.name}.pt", weights_only=True)
    else:
        with resources.as_file(_weights_file(spec.name)) as path:
            saved = torch.load(path, weights_only=True)
    model = build_model(spec.name, seq_len=saved["probe_tokens"].shape[1],
                        num_heads=saved["maps"].shape[1])
    model.load_state_dict(saved["model"])
    probe = _probe(spec.name, model.seq_len)
    return TrainRun(spec.name, model.eval(), saved["losses"].tolist(), saved["steps"].tolist(),
                    saved["maps"], saved["scores"], saved["accuracies"], probe)


def load_trained(task: str) -> TinyTransformer:
    """The shipped trained model of ``task`` (see ``load_run``)."""
    return load_run(task).model
