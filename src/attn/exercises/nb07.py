"""Checkers for notebook 07 (efficiency). Each returns a ``Feedback``; none reveals the answer.

1. ``check_weights_bytes``: bytes of one layer's attention weights for a batch (WEIGHTS_*).
2. ``check_online_softmax``: a learner's ``online_softmax(scores, block_size)``.
3. ``check_causal_pairs``: blocks a causal blockwise pass computes (CAUSAL_*).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..blockwise import causal_blocks
from ._base import Feedback, as_whole_number, softmax_switched_off

__all__ = [
    "WEIGHTS_B", "WEIGHTS_H", "WEIGHTS_L",
    "CAUSAL_L", "CAUSAL_QUERY_BLOCK", "CAUSAL_KEY_BLOCK",
    "check_weights_bytes", "check_online_softmax", "check_causal_pairs",
]

#: Exercise 1: a batch of WEIGHTS_B sequences of WEIGHTS_L tokens, WEIGHTS_H heads, float32.
WEIGHTS_B, WEIGHTS_H, WEIGHTS_L = 8, 12, 2048
#: Exercise 3: L = S = CAUSAL_L, query blocks of CAUSAL_QUERY_BLOCK, key blocks of CAUSAL_KEY_BLOCK.
CAUSAL_L, CAUSAL_QUERY_BLOCK, CAUSAL_KEY_BLOCK = 1024, 256, 128


def check_weights_bytes(answer: Any) -> Feedback:
    """Exercise 1: bytes of the (B, H, L, L) float32 weights, B=WEIGHTS_B, H=WEIGHTS_H, L=WEIGHTS_L."""
    if answer is None:
        return Feedback(False, "Replace None with a number of bytes.")
    n = as_whole_number("answer", answer)
    if isinstance(n, Feedback):
        return n
    B, H, L = WEIGHTS_B, WEIGHTS_H, WEIGHTS_L
    expected = B * H * L * L * 4
    if n == expected:
        return Feedback(True, f"That is {expected / 2**30:.1f} GiB for the weights of one layer alone.")
    if n == expected // 4:
        return Feedback(False, "That counts entries; each float32 entry takes 4 bytes.")
    if n in (L * L * 4, H * L * L * 4, B * L * L * 4, L * L):
        return Feedback(False, "There is one L x L matrix per head and per sequence in the batch.")
    if n in (B * H * L * 4, B * H * L * L * 8, B * H * L * L * 2):
        return Feedback(False, "Count L x L entries per matrix, at 4 bytes each (float32).")
    return Feedback(False, "Multiply: sequences x heads x queries x keys x bytes per float32.")


def _cases() -> list[tuple[torch.Tensor, int]]:
    g = torch.Generator().manual_seed(7)
    rows = [torch.randn(n, generator=g, dtype=torch.float64) * 3 for n in (1, 5, 9, 16)]
    rising = torch.linspace(-2.0, 6.0, 11, dtype=torch.float64)  # the maximum moves every block
    huge = torch.tensor([1000.0, 1001.0, 999.0, 1003.0, 998.0], dtype=torch.float64)
    cases = [(r, b) for r in rows for b in (1, 2, 3, 4, 100)]
    return cases + [(rising, b) for b in (1, 2, 3, 5)] + [(huge, b) for b in (1, 2, 3)]


def check_online_softmax(fn: Any) -> Feedback:
    """Exercise 2: ``fn(scores (S,), block_size) -> weights (S,)`` by the online rule.

    Tested against ``torch.softmax`` on rows of several lengths and block sizes (including
    ones that do not divide S), a row whose maximum grows block after block, and scores near
    1000 (exp overflows unless the running maximum is subtracted). ``torch.softmax`` and
    friends are switched off while ``fn`` runs.
    """
    if fn is None:
        return Feedback(False, "Replace None with your function online_softmax(scores, block_size).")
    if not callable(fn):
        return Feedback(False, f"answer should be a function, got {type(fn).__name__}.")
    fails: list[tuple[int, int]] = []
    for scores, b in _cases():
        try:
            with softmax_switched_off("the online softmax must not call softmax on all the scores"):
                got = fn(scores.clone(), b)
        except Exception as e:  # the learner's code: report, do not raise
            return Feedback(False, f"Your function raised {type(e).__name__}: {e}")
        try:
            arr = np.asarray(got.detach().cpu().numpy() if hasattr(got, "detach") else got, dtype=float)
        except (TypeError, ValueError):
            return Feedback(False, f"Return the weights as a tensor, got {type(got).__name__}.")
        if arr.shape != tuple(scores.shape):
            return Feedback(False, f"For {len(scores)} scores, return {len(scores)} weights; "
                                   f"got shape {arr.shape}.")
        if not np.isfinite(arr).all():
            return Feedback(False, "Some weights are inf or NaN: exp of scores near 1000 overflows. "
                                   "Subtract the running maximum before exp.")
        if not np.allclose(arr, torch.softmax(scores, dim=0).numpy(), atol=1e-10, rtol=0):
            fails.append((len(scores), b))
    if not fails:
        return Feedback(True, "Same weights as the full softmax, one block at a time.")
    if all(b < S for S, b in fails):
        return Feedback(False, "Right when one block holds every score, wrong with several: when the "
                               "maximum grows, multiply the running sum by exp(old max - new max).")
    S, b = fails[0]
    return Feedback(False, f"Not equal to the softmax for {S} scores with block_size={b} (and "
                           f"{len(fails) - 1} more cases): keep a running max m and a running sum l; "
                           "at the end, weights = exp(scores - m) / l.")


def check_causal_pairs(answer: Any) -> Feedback:
    """Exercise 3: (query block, key block) pairs of a causal pass over L = S = CAUSAL_L."""
    if answer is None:
        return Feedback(False, "Replace None with a number of block pairs.")
    n = as_whole_number("answer", answer)
    if isinstance(n, Feedback):
        return n
    L, bq, bk = CAUSAL_L, CAUSAL_QUERY_BLOCK, CAUSAL_KEY_BLOCK
    expected = causal_blocks(L, block_size=bk, query_block_size=bq)
    full = math.ceil(L / bq) * math.ceil(L / bk)
    if n == expected:
        return Feedback(True, f"{full - expected} of the {full} pairs lie wholly above the diagonal "
                              "and are never computed.")
    if n == full:
        return Feedback(False, "That is every pair: a key block whose first key comes after the query "
                               "block's last query is skipped.")
    if n == full // 2:
        return Feedback(False, "Close, but the blocks on the diagonal are computed too (partly masked).")
    return Feedback(False, "For each query block, count the key blocks that start before its last "
                           "query + 1, then add them up.")
