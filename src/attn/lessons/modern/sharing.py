"""What sharing keys and values costs: one small model trained with 8, 4, 2 and 1 heads of keys
and values, its held-out quality against its cache (notebook 14).

The model is notebook 08's ``TinyTransformer`` (one layer, d_model = 32, here H = 8 query heads
of D = 4), trained by its own loop, ``attn.lessons.trained.tiny.train_tiny``, with the same seed,
the same batches and the same steps; only the layer's ``num_kv_heads`` changes. The task is
``reverse`` over L = 48 tokens (each position outputs the token at the mirrored position): every
query must fetch the value of one other position, among 48, through D = 4 numbers per head.

What it shows, measured on seeds 0, 1 and 2 (and again with ``ATEN_CPU_CAPABILITY=default``,
the same to 0.001): held-out accuracy after 100 steps

    H_kv:        8       4       2       1
    seed 0:  0.993   0.998   0.983   0.879
    seed 1:  0.993   0.998   0.974   0.862
    seed 2:  0.997   1.000   0.965   0.843

Four heads of keys and values lose nothing against eight (half the cache); two lose a little;
one (MQA, an eighth of the cache) loses about 0.12. The gaps are far from any threshold the
notebook prints (``MQA_GAP``, ``GQA_TOLERANCE``). At 200 steps, or on the shorter sequences of
notebook 08 (L = 10), every setting reaches 0.99 or more: sharing costs less when the model has
room and time to spare. The large models of ``cache_budget`` measured it at scale (Ainslie et
al. 2023: GQA close to MHA, MQA a little below).

Shape legend: B batch, L sequence length, C classes, H query heads, H_kv key/value heads,
D = d_model / H.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..._checks import check_positive_int
from ...modules import MultiHeadAttention, check_num_kv_heads
from ...threads import torch_threads
from ..trained.tasks import IGNORE, check_task, held_out_batch
from ..trained.tiny import TinyTransformer, accuracy, train_tiny

__all__ = ["TASK", "SEQ_LEN", "NUM_HEADS", "KV_HEADS", "STEPS", "D_MODEL", "MQA_GAP",
           "GQA_TOLERANCE", "grouped_attention", "SharingRun",
           "train_with_kv_heads", "sharing_costs"]

#: The task, its length, the query heads, the key/value heads tried and the optimiser steps.
TASK, SEQ_LEN, NUM_HEADS, KV_HEADS, STEPS = "reverse", 48, 8, (8, 4, 2, 1), 100
#: The claims the notebook prints: MQA's accuracy is at least ``MQA_GAP`` below MHA's (measured:
#: 0.11 to 0.15), and 4 heads of keys and values are within ``GQA_TOLERANCE`` of MHA's (measured:
#: 0.003 to 0.005 above it).
MQA_GAP, GQA_TOLERANCE = 0.05, 0.02
#: The model size of ``TinyTransformer`` (its default).
D_MODEL = 32


def grouped_attention(num_kv_heads: int) -> type[MultiHeadAttention]:
    """The class ``train_tiny`` builds as ``attention(d_model, num_heads)``: the course's
    ``MultiHeadAttention`` with ``num_kv_heads`` heads of keys and values."""
    num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)

    class GroupedQueryAttention(MultiHeadAttention):
        def __init__(self, d_model: int, num_heads: int) -> None:
            super().__init__(d_model, num_heads, num_kv_heads=num_kv_heads)

    GroupedQueryAttention.__name__ = GroupedQueryAttention.__qualname__ = f"GroupedQueryAttention{num_kv_heads}"
    return GroupedQueryAttention


@dataclass(frozen=True)
class SharingRun:
    """One trained setting.

    Attributes:
        num_kv_heads: H_kv.
        accuracy: the share of held-out positions predicted right (256 sequences).
        loss: the held-out cross-entropy (nats per position).
        cache_numbers: the numbers one token adds to the layer's cache: 2 x H_kv x D.
        model: the trained model.
    """

    num_kv_heads: int
    accuracy: float
    loss: float
    cache_numbers: int
    model: TinyTransformer


@torch.no_grad()
def _held_out_loss(model: TinyTransformer, task: str) -> float:
    batch = held_out_batch(task, 256, seq_len=model.seq_len)
    with torch_threads(1):
        logits, _ = model(batch.tokens)  # (B, L, C)
    return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE).item()


def train_with_kv_heads(num_kv_heads: int, *, task: str = TASK, seq_len: int = SEQ_LEN,
                        num_heads: int = NUM_HEADS, steps: int = STEPS, seed: int = 0) -> SharingRun:
    """Train notebook 08's tiny model with ``num_kv_heads`` heads of keys and values, and
    measure it on the held-out batch.

    Args:
        num_kv_heads: H_kv, a divisor of ``num_heads``.
        task: one of ``attn.lessons.trained.tasks.TASKS``.
        seq_len: L, the length of every sequence (training and held out).
        num_heads: H, a divisor of d_model = 32.
        steps: optimiser steps (``train_tiny``'s Adam, batches of 64).
        seed: the init's and the batches' seed (the same for every H_kv).

    Returns:
        A ``SharingRun``.
    """
    check_task(task)
    num_heads = check_positive_int("num_heads", num_heads)
    if D_MODEL % num_heads:
        raise ValueError(f"num_heads: expected a divisor of d_model={D_MODEL}, got {num_heads}")
    num_kv_heads = check_num_kv_heads(num_kv_heads, num_heads)
    steps = check_positive_int("steps", steps)
    run = train_tiny(task, steps=steps, seed=seed, num_heads=num_heads, seq_len=seq_len,
                     attention=grouped_attention(num_kv_heads), snapshot_every=steps)
    model = run.model
    return SharingRun(num_kv_heads, accuracy(model, task), _held_out_loss(model, task),
                      2 * num_kv_heads * (D_MODEL // num_heads), model)


def sharing_costs(*, task: str = TASK, seq_len: int = SEQ_LEN, kv_heads: tuple[int, ...] = KV_HEADS,
                  num_heads: int = NUM_HEADS, steps: int = STEPS, seed: int = 0) -> list[SharingRun]:
    """``train_with_kv_heads`` for each H_kv of ``kv_heads``, same seed and steps: 7 to 8 s for
    the four of the lesson on one thread (measured on a 2-core machine shared with other jobs)."""
    if not isinstance(kv_heads, (tuple, list)) or not kv_heads:
        raise TypeError(f"kv_heads: expected a non-empty tuple of ints, got {kv_heads!r}")
    return [train_with_kv_heads(n, task=task, seq_len=seq_len, num_heads=num_heads, steps=steps, seed=seed)
            for n in kv_heads]
