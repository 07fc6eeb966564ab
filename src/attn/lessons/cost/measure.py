"""What attention costs, measured at sizes that run in seconds (notebook 07).

(The exact counts, multiply-adds and the bytes of the (L, S) weights, are
``attn.lessons.cost.counts.attention_cost``.) Measuring comes in two kinds:

* memory: ``TensorMemoryMeter`` watches every tensor that torch functions return while it is
  active, and every tensor autograd saves for the backward pass, and keeps the peak of the
  bytes alive at once. It counts tensors, not the process's memory, so its numbers are exact
  and the same on every run (a kernel's private scratch space, e.g. inside SDPA, is not seen:
  only the tensors it returns and saves);
* time: ``time_curve`` runs each method a few times per length and keeps the fastest run
  (the least disturbed by other programs), on one thread by default.

Shape legend: L queries, S keys, E = d_k, Ev = d_v, H heads, B batch.
"""
from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.graph import saved_tensors_hooks
from torch.overrides import TorchFunctionMode

from ..._checks import check_choice, check_number, check_positive_int
from ...blockwise import blockwise_attention
from ...functional import scaled_dot_product_attention
from ...threads import torch_threads

__all__ = [
    "format_bytes",
    "TensorMemoryMeter",
    "peak_tensor_bytes",
    "METHODS",
    "best_time",
    "time_curve",
    "memory_curve",
    "fit_slope",
    "BackwardMemory",
    "backward_memory",
]


def format_bytes(n: int | float) -> str:
    """Bytes in binary units: 4194304 -> '4.0 MiB'."""
    n = check_number("n", n, non_negative=True)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


# --- measuring memory -----------------------------------------------------------------------

def _tensors(tree: Any) -> Iterator[Tensor]:
    """The tensors in a function's arguments or result (nested in tuples, lists and dicts)."""
    if isinstance(tree, Tensor):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


class TensorMemoryMeter(TorchFunctionMode):
    """Peak bytes of the tensors that torch functions create while the meter is active.

    The meter is a public ``torch.overrides.TorchFunctionMode``: it sees every torch function
    called (``@``, ``softmax``, ``F.scaled_dot_product_attention``, ...) and what it returns,
    and, through ``torch.autograd.graph.saved_tensors_hooks``, every tensor autograd saves for
    the backward pass. Each new tensor is counted once per storage (a view shares its base's
    storage and adds nothing); a storage stops counting when it is freed. Tensors that existed
    before (the inputs) are not counted, nor memory a function uses inside and frees before it
    returns.

    Attributes:
        peak: the most bytes alive at once since the meter started.
        now: bytes alive now.
        total: bytes allocated in all (freed or not).

    Example:
        >>> with TensorMemoryMeter() as meter:
        ...     out = f(q, k, v)
        >>> meter.peak
    """

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[int, int] = {}  # id of a storage -> its bytes
        self._inputs: set[int] = set()  # storages of the call being run: not new
        self._saved = saved_tensors_hooks(self._pack, lambda t: t)
        self.now = 0
        self.peak = 0
        self.total = 0

    def __enter__(self) -> "TensorMemoryMeter":
        self._saved.__enter__()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self._saved.__exit__(*exc)

    def _free(self, key: int) -> None:
        self.now -= self._live.pop(key, 0)

    def _count(self, t: Tensor) -> None:
        storage = t.untyped_storage()
        key = id(storage)
        if key in self._inputs or key in self._live or storage.nbytes() == 0:
            return
        self._live[key] = storage.nbytes()
        self.now += storage.nbytes()
        self.total += storage.nbytes()
        self.peak = max(self.peak, self.now)
        weakref.finalize(storage, self._free, key)

    def _pack(self, t: Tensor) -> Tensor:
        self._count(t)  # a tensor kept for the backward pass
        return t

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        inputs = {id(t.untyped_storage()) for t in _tensors((args, kwargs))}
        outer, self._inputs = self._inputs, inputs
        try:
            out = func(*args, **(kwargs or {}))
        finally:
            self._inputs = outer
        for t in _tensors(out):
            if id(t.untyped_storage()) not in inputs:
                self._count(t)
        return out


def peak_tensor_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Peak bytes of tensors alive at once while ``fn(*args, **kwargs)`` runs (its result included).

    Runs without gradients and on one torch thread: the bytes do not depend on the number of
    threads, and on a busy machine one thread finishes sooner.
    """
    with torch.inference_mode(), torch_threads(1), TensorMemoryMeter() as meter:
        result = fn(*args, **kwargs)
        del result
    return meter.peak


# --- the methods compared -------------------------------------------------------------------

def _naive(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return scaled_dot_product_attention(q, k, v)[0]  # builds the (L, S) weights


def _blockwise(q: Tensor, k: Tensor, v: Tensor, block_size: int = 128) -> Tensor:
    return blockwise_attention(q, k, v, block_size=block_size)


def _sdpa(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q, k, v)


#: name -> f(q, k, v) -> output: the course's function that returns the (L, S) weights,
#: the blockwise one (block of 128 keys) and PyTorch's fused kernel.
METHODS: dict[str, Callable[[Tensor, Tensor, Tensor], Tensor]] = {
    "naive": _naive,
    "blockwise": _blockwise,
    "sdpa": _sdpa,
}


def _check_lengths(lengths: object) -> list[int]:
    if not isinstance(lengths, (list, tuple)) or not lengths:
        raise TypeError(f"lengths: expected a non-empty list of positive ints, got {lengths!r}")
    return [check_positive_int("lengths", n) for n in lengths]


def _check_methods(methods: object) -> list[str]:
    if isinstance(methods, str) or not isinstance(methods, (list, tuple)):
        raise TypeError(f"methods: expected a list of names from {sorted(METHODS)}, got {methods!r}")
    return [check_choice("methods", m, tuple(METHODS)) for m in methods]


def _qkv(L: int, d_k: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """One sequence, one head, in the (B, H, L, E) layout that PyTorch's fused kernels expect."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 1, L, d_k, generator=g) for _ in range(3))  # (1, 1, L, E) each
    return q, k, v


# --- measuring time -------------------------------------------------------------------------

def best_time(fn: Callable[[], Any], *, repeats: int = 5) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn()`` (after one warm-up call)."""
    check_positive_int("repeats", repeats)
    fn()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def time_curve(
    lengths: Sequence[int], *, d_k: int = 64, methods: Sequence[str] = tuple(METHODS),
    repeats: int = 5, block_size: int = 128, threads: int = 1, seed: int = 0,
) -> dict[str, list[float]]:
    """Seconds per call of each method at each length L (L queries, L keys, one head).

    Keeps the fastest of ``repeats`` runs. One thread by default: on a shared machine a
    second thread often waits for a busy core, and the curve would show the scheduler.
    The numbers vary from run to run; their growth with L does not. ``block_size`` is the
    blockwise method's (keys per block).
    """
    lengths, methods = _check_lengths(lengths), _check_methods(methods)
    check_positive_int("d_k", d_k)
    check_positive_int("block_size", block_size)
    out: dict[str, list[float]] = {m: [] for m in methods}
    with torch.inference_mode(), torch_threads(threads):
        for L in lengths:
            q, k, v = _qkv(L, d_k, seed)
            for m in methods:
                kwargs = {"block_size": block_size} if m == "blockwise" else {}
                out[m].append(best_time(lambda: METHODS[m](q, k, v, **kwargs), repeats=repeats))
    return out


def memory_curve(
    lengths: Sequence[int], *, d_k: int = 64, methods: Sequence[str] = tuple(METHODS),
    block_size: int = 128, threads: int = 1, seed: int = 0,
) -> dict[str, list[int]]:
    """Peak tensor bytes (``TensorMemoryMeter``) of each method at each length L, one head.

    Exact and the same on every run: the meter counts bytes of tensors, not time.
    """
    lengths, methods = _check_lengths(lengths), _check_methods(methods)
    check_positive_int("d_k", d_k)
    check_positive_int("block_size", block_size)
    out: dict[str, list[int]] = {m: [] for m in methods}
    with torch_threads(threads):
        for L in lengths:
            q, k, v = _qkv(L, d_k, seed)
            for m in methods:
                kwargs = {"block_size": block_size} if m == "blockwise" else {}
                out[m].append(peak_tensor_bytes(METHODS[m], q, k, v, **kwargs))
    return out


@dataclass(frozen=True)
class BackwardMemory:
    """What training costs in memory: bytes kept after the forward pass for the backward pass."""

    method: str
    node: str  # the name of the output's autograd node: which kernel ran
    kept_bytes: int  # new tensors alive after the forward pass: the output and what autograd saved


def backward_memory(method: str, L: int, *, d_k: int = 64, threads: int = 1, seed: int = 0) -> BackwardMemory:
    """Forward with gradients on, measured with ``TensorMemoryMeter``: what stays alive for the
    backward pass.

    The naive method keeps its (L, L) weights for the backward pass; a FlashAttention-style
    kernel keeps its output and one number per query row, and recomputes the rest. The inputs
    q, k, v are made before the meter starts, so they are not counted (every method keeps them).
    """
    (method,) = _check_methods([method])
    check_positive_int("L", L)
    q, k, v = (t.requires_grad_() for t in _qkv(L, d_k, seed))
    with torch_threads(threads), torch.enable_grad(), TensorMemoryMeter() as forward:
        out = METHODS[method](q, k, v)
        kept = forward.now
    return BackwardMemory(method, type(out.grad_fn).__name__, kept)


def fit_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Slope of the least-squares line through (log x, log y): y ~ c * x**slope."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"xs/ys: expected two lists of equal length >= 2, got {x.shape} and {y.shape}")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("xs/ys: expected positive numbers (they are put on log axes)")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
