"""The toy tasks of the tiny transformer, each solved by one of the chapter's patterns.

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

The patterns are those of ``attn.lessons.pattern_scores``; a batch carries the phrase of every
position (``segments``) for the block pattern.

Shape legend: B batch, L sequence length.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ..._checks import check_choice, check_int, check_positive_int, check_rank, check_tensor
from ...language import mark, tr

__all__ = [
    "TaskSpec",
    "TASKS",
    "check_task",
    "TASK_PATTERNS",
    "IGNORE",
    "EVAL_SEED",
    "PROBE_SEED",
    "Batch",
    "make_batch",
    "held_out_batch",
    "probe_batch",
    "token_labels",
]

#: The seed of the held-out batch that every score and accuracy is measured on.
EVAL_SEED = 20_240_616
#: The seed of the one example whose maps are recorded during training.
PROBE_SEED = 7
#: A target that the loss and the accuracy skip (the [CLS] position of task ``cls``).
IGNORE = -100


@dataclass(frozen=True)
class TaskSpec:
    """What a task needs: vocabulary size, number of classes, its pattern, default steps.

    ``english`` says what the task asks, in English; ``description`` says it in the current
    language (``attn.language``).
    """

    name: str
    pattern: str
    vocab_size: int
    num_classes: int
    steps: int
    english: str

    @property
    def description(self) -> str:
        """What the task asks for at each position, in the current language."""
        return tr(self.english)


#: The four tasks, by name.
TASKS: dict[str, TaskSpec] = {
    "neighbours": TaskSpec("neighbours", "diagonal", 2, 4, 200,
                           mark("count the 1s among a bit and its two neighbours")),
    "reverse": TaskSpec("reverse", "anti-diagonal", 8, 8, 200,
                        mark("output the sequence backwards")),
    "cls": TaskSpec("cls", "vertical", 4, 4, 200,
                    mark("repeat, at every position, the label held by the first ([CLS]-like) token")),
    "phrases": TaskSpec("phrases", "block", 10, 2, 200,
                        mark("output the majority bit of the token's phrase (ties count as 1)")),
}
#: The pattern of each task, in the order of ``TASKS`` (names of ``attn.lessons.pattern_scores``).
TASK_PATTERNS: tuple[str, ...] = tuple(spec.pattern for spec in TASKS.values())
N_LABELS = 4  # labels of the cls task (the other tokens use the same ids)
N_LETTERS = 5  # phrase letters A..E: at most 5 phrases of length >= 2 fit in 10 tokens


def check_task(task: object) -> TaskSpec:
    """The ``TaskSpec`` of a task name (ValueError naming ``task`` for anything else)."""
    return TASKS[check_choice("task", task, tuple(TASKS))]


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
    spec = check_task(task)
    check_positive_int("batch_size", batch_size)
    check_int("seq_len", seq_len, low=2)
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
    spec = check_task(task)
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


def held_out_batch(task: str, n: int = 256, *, seq_len: int = 10) -> Batch:
    """The held-out examples every score and accuracy is measured on (seed ``EVAL_SEED``;
    the first n of a larger draw are not the same as a smaller draw)."""
    return make_batch(task, n, seq_len=seq_len, generator=torch.Generator().manual_seed(EVAL_SEED))


def probe_batch(task: str, seq_len: int = 10) -> Batch:
    """The one example whose maps ``train_tiny`` records (seed ``PROBE_SEED``)."""
    return make_batch(task, 1, seq_len=seq_len, generator=torch.Generator().manual_seed(PROBE_SEED))
