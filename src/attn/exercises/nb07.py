"""Checkers for notebook 07 (efficiency). Each returns a ``Feedback``; none reveals the answer.

1. ``check_weights_bytes``: bytes of one layer's attention weights for a batch (WEIGHTS_*).
2. ``check_online_softmax``: a learner's ``online_softmax(blocks) -> (m, l)``, fed a ``BlockStream``.
3. ``check_causal_pairs``: blocks a causal blockwise pass computes (CAUSAL_*).
"""
from __future__ import annotations

import math
from typing import Any, Iterator

import torch

from ..blockwise import OnlineSoftmax, causal_blocks
from ..language import mark, tr
from ._base import Feedback, Hints, Refused, as_function, as_whole_number, checker, softmax_switched_off

__all__ = [
    "WEIGHTS_B", "WEIGHTS_H", "WEIGHTS_L",
    "CAUSAL_L", "CAUSAL_QUERY_BLOCK", "CAUSAL_KEY_BLOCK",
    "BlockStream", "ONLINE_SOFTMAX_HINTS",
    "check_weights_bytes", "check_online_softmax", "check_causal_pairs",
]

#: Exercise 1: a batch of WEIGHTS_B sequences of WEIGHTS_L tokens, WEIGHTS_H heads, float32.
WEIGHTS_B, WEIGHTS_H, WEIGHTS_L = 8, 12, 2048
#: Exercise 3: L = S = CAUSAL_L, query blocks of CAUSAL_QUERY_BLOCK, key blocks of CAUSAL_KEY_BLOCK.
CAUSAL_L, CAUSAL_QUERY_BLOCK, CAUSAL_KEY_BLOCK = 1024, 256, 128


@checker
def check_weights_bytes(answer: Any) -> Feedback:
    """Exercise 1: bytes of the (B, H, L, L) float32 weights, B=WEIGHTS_B, H=WEIGHTS_H, L=WEIGHTS_L."""
    if answer is None:
        return Feedback(False, tr("Replace None with a number of bytes."))
    n = as_whole_number("answer", answer)
    B, H, L = WEIGHTS_B, WEIGHTS_H, WEIGHTS_L
    expected = B * H * L * L * 4
    if n == expected:
        return Feedback(True, tr("That is {gib:.1f} GiB for the weights of one layer alone.",
                                 gib=expected / 2**30))
    if n == expected // 4:
        return Feedback(False, tr("That counts entries; each float32 entry takes 4 bytes."))
    if n in (L * L * 4, H * L * L * 4, B * L * L * 4, L * L):
        return Feedback(False, tr("There is one L x L matrix per head and per sequence in the batch."))
    if n in (B * H * L * 4, B * H * L * L * 8, B * H * L * L * 2):
        return Feedback(False, tr("Count L x L entries per matrix, at 4 bytes each (float32)."))
    return Feedback(False, tr("Multiply: sequences x heads x queries x keys x bytes per float32."))


def _cases() -> list[tuple[torch.Tensor, int]]:
    g = torch.Generator().manual_seed(7)
    rows = [torch.randn(n, generator=g, dtype=torch.float64) * 3 for n in (1, 5, 9, 16)]
    rising = torch.linspace(-2.0, 6.0, 11, dtype=torch.float64)  # the maximum moves every block
    falling = rising.flip(0)  # the maximum is in the first block: the last block's max is not the row's
    huge = torch.tensor([1000.0, 1001.0, 999.0, 1003.0, 998.0], dtype=torch.float64)
    cases = [(r, b) for r in rows for b in (1, 2, 3, 4, 100)]
    return (cases + [(rising, b) for b in (1, 2, 3, 5)] + [(falling, b) for b in (2, 4)]
            + [(huge, b) for b in (1, 2, 3)])


class BlockStream:
    """The scores of one row, handed out one block at a time, as a stream too long to hold.

    Iterate over it once (``for block in blocks:``); each block is a 1-D float64 tensor of at
    most ``block_size`` scores (the last one may be shorter). A block is yours only until you
    ask for the next one: then the stream overwrites it with NaN, as a reader reuses its
    buffer. So a function that keeps the blocks to read them again later, which is what a
    two-pass softmax must do (the maximum of all the scores first, then the exps), computes
    with NaN; and a second ``for`` over the stream gets no blocks at all.

    Args:
        scores: (S,), the row.
        block_size: scores per block.
    """

    def __init__(self, scores: torch.Tensor, block_size: int) -> None:
        self._scores = scores.detach().clone()
        self._block_size = block_size
        self.passes = 0  # how many times a for loop started over the stream
        self.handed_out = 0  # how many blocks were handed out

    def __iter__(self) -> Iterator[torch.Tensor]:
        self.passes += 1
        if self.passes > 1:
            return
        previous = None
        for j0 in range(0, len(self._scores), self._block_size):
            if previous is not None:
                previous.fill_(float("nan"))  # the reader reuses its buffer
            previous = self._scores[j0:j0 + self._block_size].clone()  # (Sb,)
            self.handed_out += 1
            yield previous


def _state(scores: torch.Tensor, block_size: int, rule: str = "online") -> tuple[float, float]:
    """(m, l) after the last block by the online rule (``OnlineSoftmax``), or by a classic slip.

    rule: "online" (right), "no_rescale" (l adds each block's sum as it is), "flipped"
    (l times exp(new max - old max)), "block_max" (m is the block's max, not the running one),
    "last_block" (l keeps only the last block's sum), "no_shift" (exp of the raw scores).
    """
    if rule == "online":
        state = OnlineSoftmax((1,), 1, dtype=scores.dtype)
        for j0 in range(0, len(scores), block_size):
            block = scores[j0:j0 + block_size]  # (Sb,)
            state.update(block[None, :], block.new_zeros(len(block), 1))  # (1, Sb), (Sb, Ev=1)
        return state.running_max.item(), state.running_sum.item()
    m, l = -math.inf, 0.0
    for j0 in range(0, len(scores), block_size):
        block = scores[j0:j0 + block_size]  # (Sb,)
        block_max = block.max().item()
        m_new = block_max if rule == "block_max" else max(m, block_max)
        exps = torch.exp(block if rule == "no_shift" else block - m_new).sum().item()
        if rule in ("no_rescale", "no_shift"):
            l = l + exps
        elif rule == "last_block":
            l = exps
        elif rule == "flipped":
            l = (l * math.exp(m_new - m) if l else 0.0) + exps
        else:  # block_max: rescaled by the (wrong) m
            l = (l * math.exp(m - m_new) if l else 0.0) + exps
        m = m_new
    return m, l


def _blocks(scores: torch.Tensor, block_size: int) -> list[torch.Tensor]:
    """The row's blocks as a plain list (no overwriting, read as often as wanted)."""
    return [scores[j0:j0 + block_size].clone() for j0 in range(0, len(scores), block_size)]


def _run(fn: Any, blocks: Any) -> tuple[float, float]:
    """The learner's (m, l) for ``blocks``, run with every library softmax off.

    Raises:
        Refused: the function is not written yet, raised, or did not return two numbers.
    """
    try:
        with softmax_switched_off(tr("the online softmax builds the weights itself: no library softmax")):
            got = fn(blocks)
    except NotImplementedError:
        raise Refused(tr("Not implemented yet: write the body of online_softmax(blocks) in "
                         "place of the `raise NotImplementedError` line."))
    except Exception as e:  # the learner's code: report, do not raise
        raise Refused(tr("Your function raised {error}: {message}", error=type(e).__name__, message=e))
    try:
        m, l = got
        return float(m), float(l)
    except (TypeError, ValueError, RuntimeError):
        raise Refused(tr("Return two numbers, (m, l): the running maximum and the running sum "
                         "after the last block; got {kind}.", kind=type(got).__name__))


def _right_on_kept_blocks(fn: Any, scores: torch.Tensor, block_size: int, want: tuple[float, float]) -> bool:
    """Whether ``fn`` gives the right (m, l) when the blocks come as a plain list, kept and
    re-readable (what a two-pass softmax needs)."""
    try:
        return _same(_run(fn, _blocks(scores, block_size)), want)
    except Refused:
        return False


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b))


#: The tiers of ``check_online_softmax`` (``ONLINE_SOFTMAX_HINTS.reset()`` starts again).
ONLINE_SOFTMAX_HINTS = Hints()


@checker
def check_online_softmax(fn: Any) -> Feedback:
    """Exercise 2: ``fn(blocks) -> (m, l)``, the online softmax of one row read block by block.

    How the blockwise computation is checked, not only its result: ``fn`` receives a
    ``BlockStream``, which hands out the row's blocks one at a time and overwrites each block
    with NaN as soon as the next one is asked for, and gives nothing to a second pass. ``fn``
    returns the running maximum m and the running sum l = sum_j exp(s_j - m) after the last
    block, and the checker compares them with ``attn.blockwise.OnlineSoftmax`` fed the same
    blocks. A plain two-pass softmax (keep the scores, take their maximum, then exp and sum)
    reads overwritten blocks or an empty second pass, so it is rejected although its formula
    is right. (Copying every block, with ``clone`` or ``tolist``, would defeat the stream: that
    is no slip but a different algorithm, and the exercise's text rules it out.)

    The rows have several lengths and block sizes, including ones that do not divide S, a
    maximum that rises block after block, one that falls, and scores near 1000 (exp overflows
    unless the running maximum is subtracted). Every library softmax is switched off while
    ``fn`` runs. A classic slip is recognised by its (m, l) (each computed by the slip's own
    rule) and gets its symptom, then on the next try with it where to look too
    (``ONLINE_SOFTMAX_HINTS``); no message gives the code.
    """
    hints = ONLINE_SOFTMAX_HINTS
    online_softmax = as_function(fn, "online_softmax(blocks)")
    for scores, b in _cases():
        stream = BlockStream(scores, b)
        pair = _run(online_softmax, stream)
        want = _state(scores, b)
        if _same(pair, want):
            continue
        S = len(scores)
        if stream.passes > 1 or any(math.isnan(x) for x in pair):
            if _right_on_kept_blocks(online_softmax, scores, b, want):
                return hints.wrong(
                    "two_pass", tr("Right only when the blocks can be kept and read again: your function "
                                   "goes over the scores twice (a two-pass softmax: the maximum first, then "
                                   "the sum), and a stream hands out each block once, overwritten when the "
                                   "next one arrives."),
                    where=tr("what you must keep from each block so that one pass is enough: two numbers"))
        if any(math.isnan(x) for x in pair):
            return hints.wrong(
                "nan", tr("Your (m, l) is NaN, even on blocks that are never overwritten: inf * 0 or "
                          "-inf - (-inf) somewhere (m starts at -inf)."),
                where=tr("the first block, when m is still -inf and l is 0"))
        if stream.handed_out < -(-S // b):
            return hints.wrong("stopped", tr("Your function stopped reading after {read} of the {blocks} "
                                             "blocks.", read=stream.handed_out, blocks=-(-S // b)),
                               where=tr("the loop over the blocks"))
        if any(math.isinf(x) for x in pair):
            return hints.wrong(
                "no_shift", tr("Your l is inf on scores near 1000: exp(1000) overflows float64."),
                where=tr("what is subtracted from the scores inside exp"))
        if not math.isclose(pair[0], want[0], rel_tol=1e-12):
            if math.isclose(pair[0], _state(scores, b, "block_max")[0], rel_tol=1e-12):
                return hints.wrong(
                    "block_max", tr("Your m is the last block's maximum, not the row's: it goes down "
                                    "when a later block has smaller scores."),
                    where=tr("how the new m is made from the old m and the block"))
            return hints.wrong("m", tr("For {S} scores in blocks of {b}, your m is not the largest score.",
                                       S=S, b=b),
                               where=tr("the value m starts from, and how each block updates it"))
        for rule, symptom, where in (
            ("no_rescale", mark("Right while the maximum stays in the first block, wrong when a later block "
                                "raises it: your l adds up sums taken against different maxima."),
             mark("what must happen to the l you have when m grows")),
            ("flipped", mark("Your l grows when the maximum rises, and it should shrink: the old sum is "
                             "rescaled the wrong way."), mark("the sign of the exponent that rescales l")),
            ("last_block", mark("Your l holds only the last block's sum: the earlier blocks are forgotten."),
             mark("the line that updates l: the old l must stay in it")),
            ("no_shift", mark("Your l sums exp(s), not exp(s - m): it overflows to inf for scores near "
                              "1000 (exp(1000) overflows float64)."),
             mark("what is subtracted from the scores inside exp")),
        ):
            if _same(pair, _state(scores, b, rule)):
                return hints.wrong(rule, tr(symptom), where=tr(where))
        return hints.wrong("other", tr("For {S} scores in blocks of {b}, your m is right but l is not the sum "
                                       "of exp(s - m) over the row.", S=S, b=b),
                           where=tr("the update of l, block by block: after each block, l should be the sum "
                                    "of exp(s - m) over the scores seen so far"))
    return Feedback(True, tr("Your (m, l) equals OnlineSoftmax's on every row and block size, and "
                             "exp(s - m) / l is the softmax. (The checker cannot see whether you copied "
                             "the blocks: with two numbers kept, m and l, it is one pass.)"))


@checker
def check_causal_pairs(answer: Any) -> Feedback:
    """Exercise 3: (query block, key block) pairs of a causal pass over L = S = CAUSAL_L."""
    if answer is None:
        return Feedback(False, tr("Replace None with a number of block pairs."))
    n = as_whole_number("answer", answer)
    L, bq, bk = CAUSAL_L, CAUSAL_QUERY_BLOCK, CAUSAL_KEY_BLOCK
    expected = causal_blocks(L, block_size=bk, query_block_size=bq)
    full = math.ceil(L / bq) * math.ceil(L / bk)
    if n == expected:
        return Feedback(True, tr("{skipped} of the {full} pairs lie wholly above the diagonal "
                                 "and are never computed.", skipped=full - expected, full=full))
    if n == full:
        return Feedback(False, tr("That is every pair: a key block whose first key comes after the query "
                                  "block's last query is skipped."))
    if n == full // 2:
        return Feedback(False, tr("Close, but the blocks on the diagonal are computed too (partly masked)."))
    return Feedback(False, tr("For each query block, count the key blocks that start before its last "
                              "query + 1, then add them up."))
