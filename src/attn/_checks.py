"""Input checks shared by the package: each raises ValueError/TypeError naming the argument."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


def shape_str(t: Tensor) -> str:
    return str(tuple(t.shape))


def broadcast_or_none(*shapes: Sequence[int]) -> torch.Size | None:
    """The shape that ``shapes`` broadcast to, or None if they do not broadcast.

    Computed by ``torch.broadcast_tensors`` on empty tensors on torch's meta device (shapes
    only, no memory, no arithmetic). ``torch.broadcast_shapes`` gives the same answer, but
    its first call in a process imports sympy and ``torch.fx``: 0.4 s of CPU on a quiet machine
    here, 3-5 s under load, added to the first attention call of every notebook. On the meta
    device the first call takes under a millisecond and each later one about 15 microseconds,
    so equal shapes (the usual case: every attention call inside a module) skip it.
    """
    shapes = [tuple(s) for s in shapes]
    if not shapes:
        return torch.Size()
    if all(s == shapes[0] for s in shapes):  # nothing to broadcast
        return torch.Size(shapes[0])
    try:
        empties = [torch.empty(s, device="meta") for s in shapes]
        return torch.broadcast_tensors(*empties)[0].shape
    except RuntimeError:
        return None


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


def check_bool_tensor(name: str, mask: object, *, convention: str = "True = may attend") -> Tensor:
    """A bool tensor; the message recalls which value means what."""
    mask = check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name}: expected a bool tensor ({convention}), got dtype {mask.dtype}")
    return mask


def check_bool_mask(name: str, mask: object, target: Sequence[int], legend: str,
                    *, device: torch.device | None = None) -> Tensor:
    """A mask must be a bool tensor that broadcasts to `target` (True = may attend), on
    `device` if one is given."""
    mask = check_bool_tensor(name, mask)
    try:
        mask.expand(tuple(target))  # a view: raises if the mask does not broadcast to target
    except RuntimeError:
        raise ValueError(
            f"{name}: expected a shape broadcastable to {legend} = {tuple(target)}, "
            f"got shape {shape_str(mask)}"
        ) from None
    if device is not None and mask.device != device:
        raise ValueError(f"{name}: expected device {device} (the inputs' device), got {mask.device}")
    return mask


def check_mask_reading(name: str, mask: Tensor, batch: Sequence[int], L: int) -> None:
    """A 2-D mask is read as (L, S), one mask for every sequence. When the batch has as many
    sequences as there are queries (B = L > 1, B the first batch dim), a (B, S) mask of one row
    per sequence (key padding) has that shape too and would be read as (L, S) without a word:
    ValueError, saying how to write each meaning. (With B != L that mistake already fails to
    broadcast.)"""
    if mask.dim() == 2 and len(batch) > 0 and batch[0] == L > 1 and mask.shape[0] == L:
        raise ValueError(
            f"{name}: expected a mask of 3 or 4 dims when the batch has as many sequences as queries "
            f"(B = L = {L}), got shape {shape_str(mask)}, which reads as (L, S), one mask for every "
            f"sequence, and as (B, S), one row per sequence: write {name}[None], (1, L, S), for one mask "
            f"for the whole batch, or attn.padding_mask(lengths, S), (B, 1, 1, S), for one row per sequence")


def check_token_ids(name: str, tokens: object, *, max_len: int, vocab_size: int) -> Tensor:
    """A batch of token ids: a long tensor (B, L) with L <= max_len and ids in 0..vocab_size-1."""
    tokens = check_tensor(name, tokens)
    check_rank(name, tokens, 2, "(B, L)")
    if tokens.dtype != torch.long:
        raise TypeError(f"{name}: expected dtype torch.long, got {tokens.dtype}")
    if tokens.shape[1] > max_len:
        raise ValueError(f"{name}: expected at most L={max_len} positions, got shape {shape_str(tokens)}")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(f"{name}: expected ids in 0..{vocab_size - 1}, got "
                         f"{tokens.min().item()}..{tokens.max().item()}")
    return tokens


def check_positive_int(name: str, value: object) -> int:
    """An int >= 1 (a NumPy integer too, as ``check_int`` takes one; not a bool), returned as a
    Python int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected a positive int, got {type(value).__name__} {value!r}")
    value = int(value)
    if value <= 0:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return value


def check_float_dtype(name: str, dtype: object) -> torch.dtype:
    """A dtype argument for real numbers (codes, angles): a floating-point ``torch.dtype``.

    An integer dtype would truncate every sine and cosine to 0 or 1, and ``torch.bool``
    fails inside torch; both are refused here (TypeError)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name}: expected a torch.dtype such as torch.float64, "
                        f"got {type(dtype).__name__} {dtype!r}")
    if not dtype.is_floating_point:
        raise TypeError(f"{name}: expected a floating-point dtype (float32 or float64), got {dtype}")
    return dtype


def check_device(name: str, device: object) -> torch.device | None:
    """A device argument: None (torch's default), a ``torch.device`` or a string such as
    "cpu" or "cuda:0", which this machine must have. Returns a ``torch.device`` (or None).

    Refused before anything is built: a type other than these (TypeError), a string torch
    cannot read ("nonsense") and a device this machine does not have ("cuda:7" on a machine
    with one GPU or none) (ValueError). The test for the second is to ask torch for an empty
    tensor there, the one check that works for every kind of device.
    """
    if device is None:
        return None
    if isinstance(device, torch.device) and device.type == "cpu":  # the usual case: nothing to ask
        return device
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name}: expected a torch.device, a string such as 'cpu' or 'cuda:0', "
                        f"or None, got {type(device).__name__} {device!r}")
    try:
        device = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{name}: expected a device such as 'cpu' or 'cuda:0', got {device!r}") from None
    if device.type == "cpu":
        return device
    try:
        torch.empty(0, device=device)  # 0 bytes: only asks whether torch can use the device
    except (RuntimeError, AssertionError, NotImplementedError):  # AssertionError: "not compiled with CUDA"
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        have = "the CPU" + (f" and cuda:0..cuda:{gpus - 1}" if gpus else ", no GPU")
        raise ValueError(f"{name}: expected a device this machine has ({have}), got '{device}'") from None
    return device


def check_not_meta(name: str, t: Tensor, why: str) -> Tensor:
    """A tensor whose values are read (``why`` says what for) cannot be on the meta device,
    which keeps shapes only: ValueError here, not torch's "cannot copy out of meta tensor"."""
    if t.device.type == "meta":
        raise ValueError(f"{name}: expected a tensor with values ({why}), got one on the meta "
                         f"device, which keeps shapes only")
    return t


#: The most entries a tensor built by the package (a mask, a table of codes, a weight matrix, a
#: tensor of attention weights) may have: 2**28, that is 256 MiB of bools, 1 GiB of float32 or
#: 2 GiB of float64. A larger one is almost surely a mistake (a number of tokens or features in
#: the billions), and torch would fail deep inside, or fill the memory, before saying so.
MAX_ENTRIES = 2**28


def check_entries(name: str, shape: Sequence[int], legend: str, *, what: str = "table",
                  hint: str = "") -> None:
    """The tensor of shape ``shape`` about to be built (``what``: a table, a weight...) has at
    most ``MAX_ENTRIES`` entries (ValueError otherwise, before any memory is asked for; ``hint``
    ends the message, e.g. with what to do instead)."""
    shape = tuple(int(n) for n in shape)  # Python ints: a product of NumPy ints would overflow
    entries = math.prod(shape)
    if entries > MAX_ENTRIES:
        limit = f"2**{MAX_ENTRIES.bit_length() - 1} = {MAX_ENTRIES:,}"
        raise ValueError(f"{name}: expected a {legend} {what} of at most {limit} entries, "
                         f"got {legend} = {shape}, {entries:,} entries{hint}")


def check_same_dtype_and_device(names: Sequence[str], tensors: Sequence[Tensor]) -> None:
    """Tensors computed together must share one dtype (TypeError) and one device (ValueError)."""
    if len({t.dtype for t in tensors}) > 1:
        got = ", ".join(f"{n}={t.dtype}" for n, t in zip(names, tensors))
        raise TypeError(f"{'/'.join(names)}: expected one dtype, got {got}")
    if len({t.device for t in tensors}) > 1:
        got = ", ".join(f"{n}={t.device}" for n, t in zip(names, tensors))
        raise ValueError(f"{'/'.join(names)}: expected one device, got {got}")


def check_like_parameters(name: str, t: Tensor, p: Tensor) -> Tensor:
    """An input must have the dtype (TypeError) and device (ValueError) of a module's
    parameters; `p` is one of them (the course's modules keep them all on one dtype and device,
    since ``.to()`` moves them together)."""
    if t.dtype != p.dtype:
        raise TypeError(
            f"{name}: expected dtype {p.dtype} (the dtype of the module's parameters), got {t.dtype}"
        )
    if t.device != p.device:
        raise ValueError(
            f"{name}: expected device {p.device} (the device of the module's parameters), got {t.device}"
        )
    return t


def check_query_key(query: object, key: object, *, hint: str = "") -> tuple[Tensor, Tensor]:
    """query (..., L, E) and key (..., S, E): float tensors of one dtype and device, E >= 1."""
    query = check_float("query", query)
    key = check_float("key", key)
    check_min_rank("query", query, 2, "(..., L, E)")
    check_min_rank("key", key, 2, "(..., S, E)")
    if query.shape[-1] == 0:
        raise ValueError(f"query: expected feature size E >= 1, got shape {shape_str(query)}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"key: expected feature size E={query.shape[-1]} to match query {shape_str(query)}, "
            f"got shape {shape_str(key)}{hint}"
        )
    check_same_dtype_and_device(("query", "key"), (query, key))
    return query, key


def check_qkv(query: object, key: object, value: object) -> torch.Size:
    """Check query (..., L, E), key (..., S, E), value (..., S, Ev); return the broadcast batch shape."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_float(name, t)
    check_same_dtype_and_device(("query", "key", "value"), (query, key, value))
    query, key = check_query_key(query, key)
    check_min_rank("value", value, 2, "(..., S, Ev)")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"value: expected S={key.shape[-2]} rows to match key {shape_str(key)}, "
            f"got shape {shape_str(value)}"
        )
    batch = broadcast_or_none(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    if batch is None:
        raise ValueError(
            f"query/key/value: expected batch dims that broadcast, got shapes "
            f"{shape_str(query)}, {shape_str(key)}, {shape_str(value)}"
        )
    return batch


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
             dtype: type | None = float, legend: str = "") -> np.ndarray:
    """A tensor, array or nested list as a NumPy array (a copy for tensors: detached, on the
    CPU), optionally checked for its number of dims (``legend`` names them in the message,
    e.g. "(L, S)")."""
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
            legend = f" {legend}" if legend else ""
            raise ValueError(f"{name}: expected {want} dims{legend}, got shape {tuple(arr.shape)}")
    return arr
