"""Grouped-query attention and a sliding window: what the KV cache holds, and one decoding step.

One attention layer, ``attn.MultiHeadAttention(512, 8, num_kv_heads=H_kv)`` (E = 512, H = 8
query heads, D = 64, B = 1, float32, the fast path: ``need_weights=False``), after T positions,
for H_kv = 8 (multi-head), 2 (grouped-query) and 1 (multi-query) heads of keys and values,
with a cache that keeps every position (``attn.KVCache()``) and with one that keeps the last
W = 1024 (``attn.KVCache(window=1024)``, sliding-window attention):

* cache MiB: the keys and values the cache holds after T positions, read from its tensors:
  2 * min(T, W) * H_kv * D numbers of 4 bytes (the formula is checked in every row);
* step ms, fastest ms: the median and the shortest time of one decoding step (the new
  position's projections, appending to the cache, attending to every kept key) over 41 steps
  after one untimed step, the six configurations of one T taking turns step by step (so that
  a busy moment of a shared machine falls on all of them alike; the shortest time is the
  least disturbed by one).

The cache is filled by appending random keys and values directly, not by T forward steps: a
step's time does not depend on what the cached numbers are, only on how many there are.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ._common import RESULTS, machine, median, say, table, write_json

LENGTHS = (1024, 4096, 16384)
KV_HEADS = (8, 2, 1)  # multi-head, grouped-query, multi-query
WINDOW = 1024
STEPS = 41  # timed steps per configuration and length
CONFIG = {"E": 512, "H": 8, "B": 1, "dtype": "float32", "kv_heads": list(KV_HEADS), "window": WINDOW}
NAMES = {8: "MHA", 2: "GQA", 1: "MQA"}


def prepare(T: int, num_kv_heads: int, window: int | None, E: int = 512, H: int = 8, B: int = 1):
    """A layer and its cache after T positions: (B, H_kv, T, D) random keys and values,
    appended directly (not timed)."""
    import torch

    from attn import KVCache, MultiHeadAttention

    torch.manual_seed(0)
    layer = MultiHeadAttention(E, H, num_kv_heads=num_kv_heads).eval()
    D = E // H
    cache = KVCache(layer, window=window)
    g = torch.Generator().manual_seed(1)
    with torch.inference_mode():
        cache.append(torch.randn(B, num_kv_heads, T, D, generator=g),
                     torch.randn(B, num_kv_heads, T, D, generator=g), module=layer)
    return layer, cache


def measure(T: int, window: int, steps: int, E: int = 512, H: int = 8, B: int = 1) -> list[dict[str, Any]]:
    """Every configuration at T positions: the cache's bytes, and the median time of ``steps``
    decoding steps (after one untimed), the configurations taking turns step by step."""
    import torch

    configs = [(h, w) for w in (None, window) for h in KV_HEADS]
    setups = {c: prepare(T, *c, E=E, H=H, B=B) for c in configs}
    rows = {}
    for (h, w), (layer, cache) in setups.items():
        D = E // H
        rows[h, w] = {"T": T, "kv_heads": h, "window": w, "kept": cache.kept,
                      "cache_bytes": (cache.key.numel() + cache.value.numel()) * cache.key.element_size(),
                      "formula_bytes": 2 * B * min(T, w or T) * h * D * 4, "steps": steps}
    x = torch.randn(B, steps + 1, E, generator=torch.Generator().manual_seed(2))
    times: dict[tuple[int, int | None], list[float]] = {c: [] for c in configs}
    with torch.inference_mode():
        for s in range(steps + 1):  # the first step of each is a warm-up, not timed
            for c, (layer, cache) in setups.items():
                t0 = time.perf_counter()
                layer(x[:, s:s + 1], cache=cache, need_weights=False)  # one new position
                times[c].append(time.perf_counter() - t0)
    for c in configs:
        rows[c]["step_ms"] = 1e3 * median(times[c][1:])
        rows[c]["fastest_ms"] = 1e3 * min(times[c][1:])
    return [rows[c] for c in configs]


def _window(w: int | None) -> str:
    return "all" if w is None else str(w)


def run(quick: bool = False, results: Path = RESULTS, threads: int | None = None) -> dict[str, Any]:
    import torch

    if threads:
        torch.set_num_threads(threads)
    lengths, window = ((64, 256), 128) if quick else (LENGTHS, WINDOW)
    say("\n== KV heads: the cache's bytes and one decoding step, MHA / GQA / MQA, with and without a window ==")
    rows = []
    for T in lengths:
        for r in measure(T, window, steps=2 if quick else STEPS):
            rows.append(r)
            say(f"T={T:>5} {NAMES[r['kv_heads']]} (kv heads {r['kv_heads']}) window {_window(r['window']):>4}: "
                f"cache {r['cache_bytes'] / 2**20:7.2f} MiB, step {r['step_ms']:7.2f} ms "
                f"(fastest {r['fastest_ms']:.2f})")
    tbl = table(["T", "attention", "kv heads", "window", "positions kept", "cache MiB", "step ms", "fastest ms"],
                [[r["T"], NAMES[r["kv_heads"]], r["kv_heads"], _window(r["window"]), r["kept"],
                  f"{r['cache_bytes'] / 2**20:.2f}", f"{r['step_ms']:.2f}", f"{r['fastest_ms']:.2f}"]
                 for r in rows])
    by = {(r["T"], r["kv_heads"], r["window"]): r for r in rows}
    T = lengths[-1]
    mha, mqa, win = by[(T, 8, None)], by[(T, 1, None)], by[(T, 8, window)]
    summary = [
        f"cache bytes = 2 · min(T, W) · H_kv · D · 4 in every row: "
        f"{'yes' if all(r['cache_bytes'] == r['formula_bytes'] for r in rows) else 'NO'}",
        f"T={T}: MQA's cache is {mha['cache_bytes'] / mqa['cache_bytes']:.0f}x smaller than MHA's "
        f"({mqa['cache_bytes'] / 2**20:.2f} MiB against {mha['cache_bytes'] / 2**20:.2f} MiB); its step takes "
        f"{mqa['step_ms']:.2f} ms against {mha['step_ms']:.2f} (median), {mqa['fastest_ms']:.2f} against "
        f"{mha['fastest_ms']:.2f} (fastest)",
        f"T={T}: a window of {window} keeps {win['kept']} positions, {win['cache_bytes'] / 2**20:.2f} MiB for "
        f"MHA whatever T; its step takes {win['step_ms']:.2f} ms (median), {win['fastest_ms']:.2f} (fastest)",
    ]
    say(tbl + "\n" + "\n".join(summary))
    payload = {"machine": machine(), "config": {**CONFIG, "lengths": list(lengths), "window": window},
               "rows": rows, "table": tbl, "summary": summary}
    if not quick:
        write_json("kv_heads", payload, results)
    return payload
