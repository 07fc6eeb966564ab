"""What depth does to a stack of Transformer blocks: the size of the activations and of the
gradients, block by block, with and without residual connections, post-LN against pre-LN.

A stack of N blocks (``attn.TransformerBlock``) at its initialisation, in float64, with one
seeded batch of random tokens. For each l = 0 (the input) .. N, x_l is what block l + 1
reads (the residual stream after block l):

    post-LN (the 2017 paper):  x = norm1(x + sa(x));        x = norm2(x + ff(x))
    pre-LN (GPT-2 onward):     x = x + sa(norm1(x));        x = x + ff(norm2(x))
    without residuals:         the same, with "x +" left out

A pre-LN stack ends with one more LayerNorm (GPT-2's ``ln_f``): its stream is never normalised
otherwise. The loss is the dot product of the stack's output with a fixed random direction G
(the same for every setting), so that d loss / d output = G, and autograd gives d loss / d x_l.
Three numbers per l:

* ``activation``: the root mean square (RMS) of x_l, the size of one number of the stream;
* ``gradient``: the RMS of d loss / d x_l, the gradient that reaches block l + 1's input
  (``gradient_ratio``: at the input over at the top);
* ``spread``: how far apart the tokens of a sequence still are, ||x_l - mean over tokens|| /
  ||x_l|| (1: nothing in common; 0: every token holds the same vector, the "rank collapse" of
  Dong et al. 2021, "Attention is not all you need").

The blocks of a deeper stack extend those of a shallower one (block k is the k-th block made
after ``torch.manual_seed(seed)``), so the activations of depth N are the first N + 1 of any
deeper stack; the gradients are not (they come back from each stack's own top).

Shape legend: B sequences, L tokens, E = d_model, N blocks.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_bool, check_int
from ..block import TransformerBlock
from ..threads import torch_threads

__all__ = ["D_MODEL", "HEADS", "D_FF", "TOKENS", "BATCH", "MAX_DEPTH", "StackProfile",
           "stack_blocks", "run_stack", "stack_profile", "token_spread"]

#: The sizes of every block of the stack, and of the batch it reads.
D_MODEL, HEADS, D_FF = 32, 4, 128
TOKENS, BATCH = 16, 4
#: The deepest stack measured.
MAX_DEPTH = 48


@dataclass(frozen=True)
class StackProfile:
    """The sizes through one stack, each an array of N + 1 numbers (l = 0, the input, .. N).

    Attributes:
        depth: N; norm_first: True for pre-LN, False for post-LN; residual: with the
            residual connections (False: each sub-layer's output replaces x).
        activation: RMS of x_l.
        gradient: RMS of d loss / d x_l.
        spread: ||x_l - its mean over the tokens|| / ||x_l||, per l.
    """

    depth: int
    norm_first: bool
    residual: bool
    activation: np.ndarray
    gradient: np.ndarray
    spread: np.ndarray

    @property
    def gradient_ratio(self) -> float:
        """RMS of the gradient reaching the input over the RMS of the one leaving the top,
        gradient[0] / gradient[N]: above 1 when it grows on the way down, below 1 when it
        shrinks. A ratio, not the input's gradient alone, because stacks hand their tops
        different gradients (a pre-LN stack's last LayerNorm divides by the size of its stream)."""
        return float(self.gradient[0] / self.gradient[-1])


@lru_cache(maxsize=2, typed=True)
def _all_blocks(seed: int) -> tuple[TransformerBlock, ...]:
    """MAX_DEPTH blocks made one after the other from ``seed`` (float64, eval mode)."""
    with torch.random.fork_rng(devices=[]):  # the learner's RNG is left as it was
        torch.manual_seed(seed)
        blocks = [TransformerBlock(D_MODEL, HEADS, D_FF).double().eval() for _ in range(MAX_DEPTH)]
    for block in blocks:
        block.requires_grad_(False)  # only the stream's gradient is measured
    return tuple(blocks)


def stack_blocks(depth: int, *, seed: int = 0) -> list[TransformerBlock]:
    """The first ``depth`` blocks of the seeded stack (shared: do not train them).

    Their placement of the norms is chosen by ``run_stack``, not by their ``norm_first``.
    """
    check_int("depth", depth, low=1, high=MAX_DEPTH)
    check_int("seed", seed, low=0)
    return list(_all_blocks(seed)[:depth])


def run_stack(blocks: list[TransformerBlock], x: Tensor, *, norm_first: bool,
              residual: bool = True) -> list[Tensor]:
    """The stream through ``blocks``: [x_0 = x, x_1, ..., x_N], each (B, L, E).

    With ``residual=True`` each step is ``TransformerBlock.forward`` with the chosen placement
    (a test checks it); with ``residual=False`` the sub-layers' outputs replace x.
    """
    check_bool("norm_first", norm_first)
    check_bool("residual", residual)
    stream = [x]
    for b in blocks:
        if norm_first:  # pre-LN: the norm on the branch, the stream untouched
            a = b.attention_sublayer(b.norm1(x), None, False)  # (B, L, E)
            x = x + a if residual else a
            f = b.feed_forward(b.norm2(x))  # (B, L, E)
            x = x + f if residual else f
        else:  # post-LN: the norm after the add
            a = b.attention_sublayer(x, None, False)
            x = b.norm1(x + a if residual else a)
            f = b.feed_forward(x)
            x = b.norm2(x + f if residual else f)
        stream.append(x)
    return stream


def token_spread(x: Tensor) -> Tensor:
    """||x - its mean over the tokens|| / ||x|| for x (B, L, E) -> a 0-dim tensor: 0 when
    every token of each sequence holds the same vector."""
    centred = x - x.mean(dim=1, keepdim=True)  # (B, L, E)
    return centred.norm() / x.norm()


def stack_profile(depth: int, *, norm_first: bool, residual: bool = True, seed: int = 0) -> StackProfile:
    """Activations, gradients and the tokens' spread through a seeded stack of ``depth``
    blocks (see the module's docstring), at initialisation.

    Args:
        depth: N, 1..MAX_DEPTH.
        norm_first: True: pre-LN (with a last LayerNorm on top); False: post-LN.
        residual: False leaves out every residual connection.
        seed: seeds the blocks (the input and the loss direction G use seed + 1).

    Returns:
        A ``StackProfile`` (cached: its arrays are read-only).
    """
    check_int("depth", depth, low=1, high=MAX_DEPTH)  # before the cache, where True == 1
    check_int("seed", seed, low=0)
    check_bool("norm_first", norm_first)
    check_bool("residual", residual)
    return _stack_profile(depth, norm_first, residual, seed)


@lru_cache(maxsize=256, typed=True)
def _stack_profile(depth: int, norm_first: bool, residual: bool, seed: int) -> StackProfile:
    """``stack_profile`` for checked arguments."""
    blocks = stack_blocks(depth, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(BATCH, TOKENS, D_MODEL, generator=g, dtype=torch.float64)  # (B, L, E)
    G = torch.randn(BATCH, TOKENS, D_MODEL, generator=g, dtype=torch.float64)  # d loss / d output
    final = nn.LayerNorm(D_MODEL, dtype=torch.float64) if norm_first else nn.Identity()
    with torch_threads(1), torch.enable_grad():
        x.requires_grad_(True)
        stream = run_stack(blocks, x, norm_first=norm_first, residual=residual)
        for t in stream[1:]:
            t.retain_grad()
        loss = (final(stream[-1]) * G).sum()
        loss.backward()
    arrays = {
        "activation": [t.detach().pow(2).mean().sqrt().item() for t in stream],
        "gradient": [t.grad.pow(2).mean().sqrt().item() for t in stream],
        "spread": [token_spread(t.detach()).item() for t in stream],
    }
    frozen = {}
    for name, values in arrays.items():
        a = np.array(values)
        a.setflags(write=False)  # cached and shared
        frozen[name] = a
    return StackProfile(depth, norm_first, residual, **frozen)
