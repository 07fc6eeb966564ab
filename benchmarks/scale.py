"""Attention at scale on the CPU: time and peak memory of a causal multi-head forward pass.

Memory: every configuration runs in a fresh subprocess (``python -m benchmarks.scale --worker
JSON``), so that one configuration's memory cannot hide in another's. The worker runs one tiny
pass (library set-up), resets the peak resident set size (writes 5 to /proc/self/clear_refs,
Linux), runs the first full forward pass and reads VmHWM; the figure is VmHWM minus VmRSS just
before the pass: the growth of the process's peak memory caused by that pass (inputs and
weights excluded). Where clear_refs is not allowed it falls back to
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (a peak that cannot be reset, so the set-up may
hide part of it; the JSON says which was used).

Time: one subprocess per length (``--timing JSON``) builds every method, runs one warm-up
round, then timed rounds in turns (method 1, 2, ..., 7, method 1, 2, ...) under
``torch.inference_mode`` until about ``BUDGET_S`` seconds (3 to 7 rounds); the median per
method is reported. Taking turns makes a change in the machine's load hit every method alike,
which keeps the ratios steadier than the times on a shared machine.

Methods for the layer (B, L, E) -> (B, L, E), all with the weights of one
``attn.MultiHeadAttention(E, H)``:

* ``sdpa``: the reference: the same four projections around a bare
  ``F.scaled_dot_product_attention(q, k, v, is_causal=True)``;
* ``sdpa_mask``: the same with a bool (L, L) causal mask instead of ``is_causal``;
* ``fast``: ``MultiHeadAttention(x, causal=True, need_weights=False)`` (SDPA with
  ``is_causal=True`` inside), compared with ``sdpa``;
* ``fast_mask``: ``MultiHeadAttention(x, mask=causal_mask(L), need_weights=False)``, the fast
  path given an explicit mask, compared with ``sdpa_mask``;
* ``teaching``: ``MultiHeadAttention(x, mask=causal_mask(L))``, which returns the weights;
* ``torch_weights`` / ``torch_fast``: ``nn.MultiheadAttention`` with the same weights,
  ``need_weights=True`` (per-head weights) / ``False`` (``is_causal=True`` hint);
* ``blockwise``: ``attn.blockwise.blockwise_multi_head_attention(causal=True)``.

Lengths: 128 to 2048 for every method, and 4096 for the methods that never hold the
(B, H, L, L) weights (``LIGHT_METHODS``); at 4096 one copy of those weights would take 6 GiB.

Course sizes (``course_sizes``): the teaching path against ``nn.MultiheadAttention`` at the
shapes the notebooks use (the chapter's layer, the tiny trained model's batch, one MiniLM layer
on a sentence, a toy sentence), all with a causal mask and the per-head weights, in this
process: a forward pass under ``torch.inference_mode`` (where ``nn.MultiheadAttention`` in eval
mode runs its fused C++ kernel) and a training step (forward and backward with autograd, both
modules in train mode, where ``nn.MultiheadAttention`` runs its Python path). Each figure is the
median of ``COURSE_ROUNDS`` batches of about 20 ms of calls, the two modules taking turns: at
0.2 ms a call, one batch's time moves by a third from one batch to the next on this machine.

The teaching path's target against ``nn.MultiheadAttention(need_weights=True)`` (``teaching_target``):
at the smallest course shapes (E = ``SMALL_E``, an inference forward pass, where torch's one
fused kernel takes a fraction of a millisecond, so a ratio mostly measures the fixed cost of the
teaching path's twenty-odd small operations) at most ``TEACHING_MAX_EXTRA_MS`` more per call;
everywhere else (larger E, training steps, the layer rows up to ``TEACHING_MAX_L``) at most
``TEACHING_MAX_RATIO`` times its time. Each row is reported against the bound that applies,
with met or MISSED.

Methods for one head (1, 1, L, D), the memory check at long L: ``naive``
(``attn.functional.scaled_dot_product_attention``, holds the (L, L) weights), ``blockwise``
(``attn.blockwise.blockwise_attention``), ``sdpa`` (PyTorch's fused kernel).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

from ._common import machine, median, say, table, write_json

LAYER_METHODS = ("sdpa", "sdpa_mask", "fast", "fast_mask", "teaching", "torch_weights", "torch_fast",
                 "blockwise")
HEAD_METHODS = ("naive", "blockwise", "sdpa")
#: Methods that never hold the (B, H, L, L) weights: run at the extra, longer lengths too.
LIGHT_METHODS = ("sdpa", "sdpa_mask", "fast", "fast_mask", "blockwise")
BLOCK = {"block_size": 256, "query_block_size": 512}  # a good pair on this machine
#: The teaching path's speed targets against nn.MultiheadAttention(need_weights=True): at most
#: TEACHING_MAX_EXTRA_MS more per call at E = SMALL_E in an inference forward pass, at most
#: TEACHING_MAX_RATIO times its time elsewhere, up to L = TEACHING_MAX_L (no target above).
TEACHING_MAX_RATIO = 1.5
TEACHING_MAX_EXTRA_MS = 0.3
SMALL_E = 32
TEACHING_MAX_L = 128
BUDGET_S = 60.0  # timed rounds per length stop after about this many seconds
COURSE_ROUNDS = 31  # batches of calls per module, shape and mode in course_sizes


# --- the worker (one configuration, in its own process) ----------------------------------------

def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _layer_fn(method: str, L: int, B: int, E: int, H: int):
    import torch
    import torch.nn.functional as F

    from attn.blockwise import blockwise_multi_head_attention
    from attn.masks import causal_mask, to_torch_mha_mask
    from attn.modules import MultiHeadAttention

    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H, bias=True).eval()
    x = torch.randn(B, L, E)  # (B, L, E)
    mask = causal_mask(L)  # (L, L) bool, True = may attend

    def reference(attn_mask=None):
        q = mha.split_heads(mha.W_q(x))  # (B, L, E) -> (B, H, L, D)
        k = mha.split_heads(mha.W_k(x))
        v = mha.split_heads(mha.W_v(x))
        if attn_mask is None:
            heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, L, D)
        else:
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return mha.W_o(mha.merge_heads(heads))  # (B, H, L, D) -> (B, L, E)

    if method == "sdpa":
        return lambda: reference()
    if method == "sdpa_mask":
        return lambda: reference(mask)
    if method == "fast":
        return lambda: mha(x, causal=True, need_weights=False)[0]
    if method == "fast_mask":
        return lambda: mha(x, mask=mask, need_weights=False)[0]
    if method == "teaching":
        return lambda: mha(x, mask=mask)[0]
    if method in ("torch_weights", "torch_fast"):
        torch_mha = mha.to_torch().eval()
        blocked = to_torch_mha_mask(mask)  # True = blocked, nn.MultiheadAttention's convention
        if method == "torch_weights":
            return lambda: torch_mha(x, x, x, attn_mask=blocked, need_weights=True,
                                     average_attn_weights=False)[0]
        return lambda: torch_mha(x, x, x, attn_mask=blocked, need_weights=False, is_causal=True)[0]
    if method == "blockwise":
        return lambda: blockwise_multi_head_attention(mha, x, causal=True, **BLOCK)
    raise ValueError(f"method: expected one of {LAYER_METHODS}, got {method!r}")


def _head_fn(method: str, L: int, D: int, causal: bool):
    import torch
    import torch.nn.functional as F

    from attn.blockwise import blockwise_attention
    from attn.functional import scaled_dot_product_attention
    from attn.masks import causal_mask

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, L, D, generator=g) for _ in range(3))  # (1, 1, L, D)
    if method == "naive":
        mask = causal_mask(L) if causal else None  # the naive path needs the (L, L) mask too
        return lambda: scaled_dot_product_attention(q, k, v, mask)[0]
    if method == "blockwise":
        return lambda: blockwise_attention(q, k, v, causal=causal, block_size=512)
    if method == "sdpa":
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    raise ValueError(f"method: expected one of {HEAD_METHODS}, got {method!r}")


def run_worker(cfg: dict[str, Any]) -> dict[str, Any]:
    """One configuration's peak memory (the first pass), then ``repeats`` timed passes."""
    import torch

    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])

    def build(L: int):
        if cfg["kind"] == "layer":
            return _layer_fn(cfg["method"], L, cfg["B"], cfg["E"], cfg["H"])
        return _head_fn(cfg["method"], L, cfg["D"], cfg["causal"])

    with torch.inference_mode():
        build(16)()  # one-off library set-up (thread pool, BLAS buffers) outside the figures
        fn = build(cfg["L"])
        reset = _reset_peak()
        before_rss = _status_kib("VmRSS")
        before_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        out = fn()
        first = time.perf_counter() - t0
        peak = _status_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        del out
        times = []
        for _ in range(cfg.get("repeats", 0)):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
            del out
    return {
        **cfg,
        "first_s": first,
        "times_s": times,
        "median_s": median(times) if times else first,
        "peak_growth_mib": max(0, peak - before_rss) / 1024,
        "memory_method": "VmHWM after clear_refs" if reset else "ru_maxrss",
        "baseline_rss_mib": before_rss / 1024,
        "baseline_maxrss_mib": before_max / 1024,
    }


def run_timing(cfg: dict[str, Any]) -> dict[str, Any]:
    """Every method at one length, in turns (round-robin), so that a change in the machine's
    load hits them all alike. One warm-up round, then rounds until ``BUDGET_S`` seconds or
    ``max_rounds`` (at least ``min_rounds``). Returns method -> seconds per pass."""
    import torch

    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    L, B, E, H = cfg["L"], cfg["B"], cfg["E"], cfg["H"]
    methods = cfg["methods"]
    times: dict[str, list[float]] = {m: [] for m in methods}
    with torch.inference_mode():
        _layer_fn(methods[0], 16, B, E, H)()  # one-off library set-up
        fns = {m: _layer_fn(m, L, B, E, H) for m in methods}
        t0 = time.perf_counter()
        for m in methods:
            fns[m]()  # warm-up round
        per_round = time.perf_counter() - t0
        rounds = int(min(cfg["max_rounds"], max(cfg["min_rounds"], BUDGET_S // max(per_round, 1e-9))))
        for _ in range(rounds):
            for m in methods:
                t0 = time.perf_counter()
                out = fns[m]()
                times[m].append(time.perf_counter() - t0)
                del out
    return {"L": L, "rounds": rounds, "warmup_round_s": per_round, "times_s": times,
            "median_s": {m: median(t) for m, t in times.items()},
            "min_s": {m: min(t) for m, t in times.items()}}


# --- the parent ---------------------------------------------------------------------------------

def _spawn(cfg: dict[str, Any], timeout: float, flag: str = "--worker") -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.scale", flag, json.dumps(cfg)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        return {**cfg, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {**cfg, "error": (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def accuracy(B: int = 2, L: int = 300, E: int = 96, H: int = 4) -> dict[str, float]:
    """Largest |difference| between the blockwise paths and SDPA (float32), in this process."""
    import torch
    import torch.nn.functional as F

    from attn.blockwise import blockwise_attention, blockwise_multi_head_attention
    from attn.modules import MultiHeadAttention

    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H, bias=True).eval()
    x = torch.randn(B, L, E)
    with torch.inference_mode():
        q = mha.split_heads(mha.W_q(x))
        k = mha.split_heads(mha.W_k(x))
        v = mha.split_heads(mha.W_v(x))
        ref = mha.W_o(mha.merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
        got = blockwise_multi_head_attention(mha, x, causal=True, **BLOCK)
        core_ref = F.scaled_dot_product_attention(q, k, v)
        core = blockwise_attention(q, k, v, block_size=128)
    return {"layer_causal_max_abs_diff": (got - ref).abs().max().item(),
            "core_max_abs_diff": (core - core_ref).abs().max().item(),
            "shape": [B, L, E, H]}


def long_accuracy(L: int, D: int = 64) -> float:
    """blockwise vs SDPA at one long head (computed in a subprocess-free, small-memory way)."""
    import torch
    import torch.nn.functional as F

    from attn.blockwise import blockwise_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, L, D, generator=g) for _ in range(3))
    with torch.inference_mode():
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        got = blockwise_attention(q, k, v, causal=True, block_size=512)
    return (got - ref).abs().max().item()


#: (label, B, L, E, H): shapes from the notebooks.
COURSE_SIZES = (
    ("the chapter's layer (05)", 2, 10, 512, 8),
    ("the tiny model's batch (08)", 64, 10, 32, 2),
    ("a MiniLM layer, one sentence (08)", 1, 16, 384, 12),
    ("a toy sentence (04)", 1, 10, 32, 2),
)


def course_sizes(*, quick: bool = False, threads: int | None = None) -> list[dict[str, Any]]:
    """Teaching path / nn.MultiheadAttention(need_weights=True) at the course's own shapes."""
    import torch

    from attn.masks import causal_mask, to_torch_mha_mask
    from attn.modules import MultiHeadAttention

    if threads:
        torch.set_num_threads(threads)
    rows = []
    for label, B, L, E, H in COURSE_SIZES:
        torch.manual_seed(0)
        ours = MultiHeadAttention(E, H, bias=True)
        theirs = ours.to_torch()
        x = torch.randn(B, L, E)  # (B, L, E)
        mask = causal_mask(L)  # (L, L), True = may attend
        blocked = to_torch_mha_mask(mask)  # True = blocked, nn.MultiheadAttention's convention

        def forward_ours():
            return ours(x, mask=mask)[0]

        def forward_theirs():
            return theirs(x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False)[0]

        def step(forward):
            def run_step():
                forward().sum().backward()
            return run_step

        row = {"label": label, "B": B, "L": L, "E": E, "H": H}
        for mode in ("inference", "training"):
            ours.train(mode == "training")
            theirs.train(mode == "training")
            if mode == "inference":
                pair = {"teaching": forward_ours, "torch_weights": forward_theirs}
            else:
                pair = {"teaching": step(forward_ours), "torch_weights": step(forward_theirs)}
            with torch.inference_mode(mode == "inference"):
                per_call = {name: [] for name in pair}
                t0 = time.perf_counter()
                pair["teaching"]()  # warm-up, and the size of one batch of calls
                calls = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-7)))
                for _ in range(2 if quick else COURSE_ROUNDS):
                    for name, fn in pair.items():
                        t0 = time.perf_counter()
                        for _ in range(calls):
                            fn()
                        per_call[name].append((time.perf_counter() - t0) / calls)
            for name, times in per_call.items():
                row[f"{mode}_{name}_us"] = median(times) * 1e6
            row[f"{mode}_ratio"] = row[f"{mode}_teaching_us"] / row[f"{mode}_torch_weights_us"]
            row[f"{mode}_extra_ms"] = (row[f"{mode}_teaching_us"] - row[f"{mode}_torch_weights_us"]) / 1e3
        rows.append(row)
        say(f"  {label:36s} forward {row['inference_teaching_us']:8.0f} us vs "
            f"{row['inference_torch_weights_us']:8.0f} us ({teaching_verdict(row, 'inference')}); "
            f"training step {row['training_teaching_us']:8.0f} us vs "
            f"{row['training_torch_weights_us']:8.0f} us ({teaching_verdict(row, 'training')})")
    return rows


def teaching_target(E: int, mode: str) -> tuple[str, float]:
    """The bound on the teaching path against nn.MultiheadAttention(need_weights=True) at
    model size E in ``mode`` ("inference" or "training"): ("extra_ms", TEACHING_MAX_EXTRA_MS)
    at E = SMALL_E in inference, ("ratio", TEACHING_MAX_RATIO) elsewhere."""
    if E == SMALL_E and mode == "inference":
        return "extra_ms", TEACHING_MAX_EXTRA_MS
    return "ratio", TEACHING_MAX_RATIO


def teaching_verdict(row: dict[str, Any], mode: str) -> str:
    """One course-size row in ``mode`` against the bound that applies, e.g. "+0.21 ms per call
    (target <= +0.3 ms: met)" or "1.16x (target <= 1.5x: MISSED)"."""
    kind, bound = teaching_target(row["E"], mode)
    if kind == "extra_ms":
        extra = (row[f"{mode}_teaching_us"] - row[f"{mode}_torch_weights_us"]) / 1e3
        return (f"{extra:+.2f} ms per call (target <= +{bound} ms: "
                f"{'met' if extra <= bound else 'MISSED'})")
    ratio = row[f"{mode}_ratio"]
    return f"{ratio:.2f}x (target <= {bound}x: {'met' if ratio <= bound else 'MISSED'})"


def run(
    *, quick: bool = False, results=None, repeats: int | None = None,
    lengths: list[int] | None = None, methods: tuple[str, ...] = LAYER_METHODS,
    extra_lengths: list[int] | None = None,
    head_methods: tuple[str, ...] = HEAD_METHODS, long_L: int | None = None,
    threads: int | None = None,
) -> dict[str, Any]:
    """All configurations; ``quick`` = tiny sizes (a smoke test, seconds)."""
    if quick:
        B, E, H, default_lengths, default_long, timeout = 2, 64, 4, [32, 64], 512, 120
        default_extra = []
        min_rounds, max_rounds = 1, 1
    else:
        B, E, H, default_lengths, default_long, timeout = 8, 768, 12, [128, 256, 512, 1024, 2048], 16384, 900
        default_extra = [4096]  # the weights alone would take 6 GiB per copy here
        min_rounds, max_rounds = 3, 7
    if repeats:
        min_rounds = max_rounds = repeats
    plan = [(L, tuple(methods)) for L in (lengths or default_lengths)]
    plan += [(L, tuple(m for m in methods if m in LIGHT_METHODS))
             for L in (default_extra if extra_lengths is None else extra_lengths)]
    long_L = long_L or default_long
    say(f"\n== Attention at scale, CPU: causal multi-head forward, B={B}, E={E}, H={H}"
        + (f", {threads} torch thread(s)" if threads else "") + " ==")
    rows = []
    for L, methods_here in plan:
        timing = _spawn({"L": L, "B": B, "E": E, "H": H, "methods": list(methods_here), "threads": threads,
                         "min_rounds": min_rounds, "max_rounds": max_rounds}, timeout, "--timing")
        for method in methods_here:
            cfg = {"kind": "layer", "method": method, "L": L, "B": B, "E": E, "H": H, "repeats": 0,
                   "threads": threads}
            r = _spawn(cfg, timeout)  # memory: a fresh process per configuration
            if "error" in timing:
                r.setdefault("error", "timing: " + timing["error"])
            elif "error" not in r:
                r.update(median_s=timing["median_s"][method], min_s=timing["min_s"][method],
                         times_s=timing["times_s"][method], rounds=timing["rounds"])
            rows.append(r)
            say(f"  L={L:5d} {method:13s} "
                + (r["error"] if "error" in r else
                   f"{r['median_s'] * 1e3:9.1f} ms (median of {r['rounds']})  "
                   f"peak +{r['peak_growth_mib']:8.1f} MiB"))
    say(f"\n== One head, B=1, D=64, L={long_L}: peak memory of the attention alone ==")
    heads = []
    for causal in (False, True):
        for method in head_methods:
            cfg = {"kind": "head", "method": method, "L": long_L, "D": 64, "causal": causal,
                   "repeats": 1, "threads": threads}
            r = _spawn(cfg, timeout)
            heads.append(r)
            say(f"  causal={causal!s:5s} {method:9s} "
                + (r["error"] if "error" in r else
                   f"{r['median_s'] * 1e3:9.1f} ms  peak +{r['peak_growth_mib']:8.1f} MiB"))
    say("\n== The course's own sizes: teaching path vs nn.MultiheadAttention(need_weights=True), "
        "causal mask ==")
    course = course_sizes(quick=quick, threads=threads)
    acc = accuracy()
    acc["long_causal_max_abs_diff"] = long_accuracy(long_L)
    acc["long_L"] = long_L
    payload = {"machine": machine(), "config": {"B": B, "E": E, "H": H, "threads": threads,
                                                "rounds": [min_rounds, max_rounds],
                                                "budget_s": BUDGET_S, "blockwise": BLOCK,
                                                "course_rounds": 2 if quick else COURSE_ROUNDS,
                                                "teaching_target": {"ratio": TEACHING_MAX_RATIO,
                                                                    "extra_ms": TEACHING_MAX_EXTRA_MS,
                                                                    "small_E": SMALL_E,
                                                                    "max_L": TEACHING_MAX_L}},
               "layer": rows, "head": heads, "course_sizes": course, "accuracy": acc}
    payload["summary"] = summarise(payload)
    say("\n" + payload["summary"]["layer_table"])
    say("\n" + payload["summary"]["course_table"])
    say("\n" + payload["summary"]["head_table"])
    say("\n" + "\n".join(payload["summary"]["targets"]))
    name = f"scale_threads{threads}" if threads else "scale"
    write_json(name, payload, **({"results": results} if results else {}))
    return payload


def _ratio(a: dict | None, b: dict | None, key: str) -> float | None:
    if not a or not b or "error" in a or "error" in b or not b[key]:
        return None
    return a[key] / b[key]


def summarise(payload: dict[str, Any]) -> dict[str, Any]:
    layer = {(r["L"], r["method"]): r for r in payload["layer"]}
    lengths = sorted({r["L"] for r in payload["layer"]})
    rows = []
    for L in lengths:
        ref = layer.get((L, "sdpa"))
        for m in LAYER_METHODS:
            r = layer.get((L, m))
            if r is None:
                continue
            if "error" in r:
                rows.append([L, m, r["error"], "", "", ""])
                continue
            rt, rm = _ratio(r, ref, "median_s"), _ratio(r, ref, "peak_growth_mib")
            rows.append([L, m, f"{r['median_s'] * 1e3:.1f}", f"{rt:.2f}" if rt else "-",
                         f"{r['peak_growth_mib']:.0f}", f"{rm:.1f}" if rm else "-"])
    layer_table = table(["L", "method", "median ms", "× sdpa", "peak MiB", "× sdpa"], rows)
    head = {(r["causal"], r["method"]): r for r in payload["head"]}
    hrows = []
    for causal in (False, True):
        ref = head.get((causal, "sdpa"))
        naive = head.get((causal, "naive"))
        for m in HEAD_METHODS:
            r = head.get((causal, m))
            if r is None or "error" in r:
                hrows.append([causal, m, (r or {}).get("error", "missing"), "", "", ""])
                continue
            rt, rn = _ratio(r, ref, "median_s"), _ratio(r, naive, "peak_growth_mib")
            hrows.append([causal, m, f"{r['median_s'] * 1e3:.0f}", f"{rt:.2f}" if rt else "-",
                          f"{r['peak_growth_mib']:.0f}", f"{rn:.3f}" if rn else "-"])
    head_table = table(["causal", "method", "ms", "× sdpa", "peak MiB", "× naive"], hrows)

    targets = []
    for L in lengths:
        fast = _ratio(layer.get((L, "fast")), layer.get((L, "sdpa")), "median_s")
        teach = _ratio(layer.get((L, "teaching")), layer.get((L, "torch_weights")), "median_s")
        if fast is not None:
            targets.append(f"L={L}: fast path (causal=True) / SDPA(is_causal) = {fast:.2f} (target <= 1.1: "
                           f"{'met' if fast <= 1.1 else 'MISSED'})")
        fast_mask = _ratio(layer.get((L, "fast_mask")), layer.get((L, "sdpa_mask")), "median_s")
        if fast_mask is not None:
            targets.append(f"L={L}: fast path (mask) / SDPA(attn_mask) = {fast_mask:.2f} (target <= 1.1: "
                           f"{'met' if fast_mask <= 1.1 else 'MISSED'})")
        if teach is not None:  # the target holds at the course's sizes, L <= 128, only
            verdict = (f"target <= {TEACHING_MAX_RATIO}: {'met' if teach <= TEACHING_MAX_RATIO else 'MISSED'}"
                       if L <= TEACHING_MAX_L else f"no target above L={TEACHING_MAX_L}")
            targets.append(f"L={L}: teaching / nn.MultiheadAttention(need_weights=True) = {teach:.2f} "
                           f"({verdict})")
    crows = [[r["label"], f"({r['B']}, {r['L']}, {r['E']}), H={r['H']}",
              f"{r['inference_teaching_us']:.0f} / {r['inference_torch_weights_us']:.0f}",
              teaching_verdict(r, "inference"),
              f"{r['training_teaching_us']:.0f} / {r['training_torch_weights_us']:.0f}",
              teaching_verdict(r, "training")] for r in payload.get("course_sizes", [])]
    course_table = table(["shape from", "(B, L, E)", "forward µs (ours / torch)", "forward against its target",
                          "training step µs (ours / torch)", "training step against its target"], crows)
    for r in payload.get("course_sizes", []):
        for mode in ("inference", "training"):
            kind, _ = teaching_target(r["E"], mode)
            versus = "-" if kind == "extra_ms" else "/"  # a difference in ms, or a ratio
            targets.append(f"{r['label']}, {mode}: teaching {versus} nn.MultiheadAttention(need_weights=True) "
                           f"= {teaching_verdict(r, mode)}")
    acc = payload["accuracy"]
    worst = max(acc["layer_causal_max_abs_diff"], acc["core_max_abs_diff"], acc["long_causal_max_abs_diff"])
    targets.append(f"blockwise vs SDPA max |diff| = {worst:.2e} (target <= 1e-5: "
                   f"{'met' if worst <= 1e-5 else 'MISSED'})")
    for causal in (False, True):
        rn = _ratio(head.get((causal, "blockwise")), head.get((causal, "naive")), "peak_growth_mib")
        if rn is not None:
            targets.append(f"L={acc['long_L']} causal={causal}: blockwise peak / naive peak = {rn:.3f} "
                           f"(target <= 0.1: {'met' if rn <= 0.1 else 'MISSED'})")
    return {"layer_table": layer_table, "head_table": head_table, "course_table": course_table,
            "targets": targets}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", help="run one configuration (JSON) and print the result as JSON")
    p.add_argument("--timing", help="time every method at one length (JSON), print JSON")
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch threads in every worker")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return
    if args.timing:
        print(json.dumps(run_timing(json.loads(args.timing))))
        return
    run(quick=args.quick, repeats=args.repeats, threads=args.threads)


if __name__ == "__main__":
    main()
