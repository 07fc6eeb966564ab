"""Input checks shared by the package: each raises ValueError/TypeError naming the argument."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


def shape_str(t: Tensor) -> str:
    return str(tuple(t.shape))


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcasting of shapes, or None if they do not broadcast.

    (``torch.broadcast_shapes`` imports torch.fx and sympy on first use: seconds, not micro-
    seconds, the first time a notebook calls attention.)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*(((1,) * (ndim - len(s))) + tuple(s) for s in shapes)):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def check_tensor(name: str, t: object) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    return t


def check_float(name: str, t: object) -> Tensor:
    t = check_tensor(name, t)
    if not t.is_floating_point():
        raise TypeError(
            f"{name}: expected a floating-point tensor (float32 or float64), got dtype {t.dtype}"
        )
    return t


def check_rank(name: str, t: Tensor, ranks: tuple[int, ...] | int, legend: str) -> Tensor:
    ranks = (ranks,) if isinstance(ranks, int) else ranks
    if t.dim() not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise ValueError(f"{name}: expected {want} dims {legend}, got shape {shape_str(t)}")
    return t


def check_min_rank(name: str, t: Tensor, rank: int, legend: str) -> Tensor:
    if t.dim() < rank:
        raise ValueError(f"{name}: expected at least {rank} dims {legend}, got shape {shape_str(t)}")
    return t


def check_bool_mask(name: str, mask: object, target: tuple[int, ...], legend: str) -> Tensor:
    """A mask must be a bool tensor that broadcasts to `target` (True = may attend)."""
    mask = check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name}: expected a bool tensor (True = may attend), got dtype {mask.dtype}"
        )
    if broadcast_shapes(tuple(mask.shape), tuple(target)) != tuple(target):
        raise ValueError(
            f"{name}: expected a shape broadcastable to {legend} = {tuple(target)}, "
            f"got shape {shape_str(mask)}"
        )
    return mask


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected a positive int, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return value


def check_same_dtype(names: tuple[str, ...], tensors: tuple[Tensor, ...]) -> None:
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        got = ", ".join(f"{n}={t.dtype}" for n, t in zip(names, tensors))
        raise TypeError(f"{'/'.join(names)}: expected one dtype, got {got}")


def check_qkv(query: object, key: object, value: object) -> torch.Size:
    """Check query (..., L, E), key (..., S, E), value (..., S, Ev); return the broadcast batch shape."""
    query = check_float("query", query)
    key = check_float("key", key)
    value = check_float("value", value)
    check_min_rank("query", query, 2, "(..., L, E)")
    check_min_rank("key", key, 2, "(..., S, E)")
    check_min_rank("value", value, 2, "(..., S, Ev)")
    check_same_dtype(("query", "key", "value"), (query, key, value))
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"key: expected feature size E={query.shape[-1]} to match query {shape_str(query)}, "
            f"got shape {shape_str(key)}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"value: expected S={key.shape[-2]} rows to match key {shape_str(key)}, "
            f"got shape {shape_str(value)}"
        )
    batch = broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    if batch is None:
        raise ValueError(
            f"query/key/value: expected batch dims that broadcast, got shapes "
            f"{shape_str(query)}, {shape_str(key)}, {shape_str(value)}"
        )
    return torch.Size(batch)


def check_scale(scale: object, E: int) -> float:
    """None -> 1/sqrt(E); otherwise a positive finite number."""
    if scale is None:
        return 1.0 / math.sqrt(E)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale: expected a positive float or None, got {type(scale).__name__}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale: expected a positive finite float, got {scale}")
    return float(scale)


# ---- scalars -------------------------------------------------------------------------------


def check_bool(name: str, value: object) -> bool:
    """A flag must be a real bool: ``bias="yes"`` or ``need_weights=0`` is a mistake."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool (True or False), got {type(value).__name__} {value!r}")
    return value


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """An int (not a bool) in ``low..high`` (both ends included, either may be None)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{name}: expected an int in {lo}..{hi}, got {value}")
    return value


def check_number(name: str, value: object, *, positive: bool = False,
                 non_negative: bool = False) -> float:
    """A finite real number (int or float, not a bool), optionally > 0 or >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name}: expected a positive number, got {value}")
    if non_negative and value < 0:
        raise ValueError(f"{name}: expected a number >= 0, got {value}")
    return value


def check_choice(name: str, value: object, choices: Sequence[object]) -> object:
    """One of a fixed set of values (a task name, a pattern name, a method name)."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


# ---- tensors and arrays --------------------------------------------------------------------


def to_numpy(name: str, t: object, *, ndim: int | tuple[int, ...] | None = None,
             dtype: type | None = float) -> np.ndarray:
    """A tensor, array or nested list as a NumPy array (a copy for tensors: detached, on the
    CPU), optionally checked for its number of dims."""
    if isinstance(t, Tensor):
        arr = t.detach().cpu().numpy()
        arr = arr if dtype is None else arr.astype(dtype)
    else:
        try:
            arr = np.asarray(t) if dtype is None else np.asarray(t, dtype=dtype)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name}: expected a tensor or array of numbers, got {type(t).__name__}") from err
    if ndim is not None:
        ndims = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in ndims:
            want = " or ".join(str(d) for d in ndims)
            raise ValueError(f"{name}: expected {want} dims, got shape {tuple(arr.shape)}")
    return arr
