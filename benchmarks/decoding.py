"""Decoding: the time of one generation step, with and without a KV cache, against T.

A step produces position T + 1 of a 2-layer causal decoder (E = 128, 4 heads, B = 1,
``attn.decoding.Decoder``, fast path off: the teaching path returns weights like the notebook):

* ``cache``: the new position alone, attending to the T cached keys and values;
* ``recompute``: the whole prefix of T + 1 positions again, the last row kept.

Both give the same numbers (tests/attn/test_decoding.py). Time is the median of several steps, the
two methods taking turns. Target: at T = 4096 the cached step is at least 20x cheaper.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ._common import RESULTS, machine, median, say, table, write_json

LENGTHS = (128, 256, 512, 1024, 2048, 4096)
CONFIG = {"E": 128, "H": 4, "N": 2, "B": 1}
TARGET_RATIO = 20.0


def measure(T: int, rounds: int) -> dict[str, float]:
    import torch

    from attn.decoding import Decoder, step_cost

    E, H, N, B = CONFIG["E"], CONFIG["H"], CONFIG["N"], CONFIG["B"]
    torch.manual_seed(0)
    decoder = Decoder(E, H, N).eval()
    prefix = torch.randn(B, T + 1, E)
    with torch.inference_mode():
        caches = decoder.new_caches()
        decoder(prefix[:, :T], caches)  # the T earlier positions, cached once (not timed)
        times: dict[str, list[float]] = {"cache": [], "recompute": []}
        for _ in range(rounds):
            kept = [(c.key, c.value) for c in caches]
            t0 = time.perf_counter()
            decoder(prefix[:, T:], caches)  # one new position
            times["cache"].append(time.perf_counter() - t0)
            for c, (k, v) in zip(caches, kept):  # back to T positions for the next round
                c.key, c.value = k, v
            t0 = time.perf_counter()
            decoder(prefix)  # all T + 1 positions again
            times["recompute"].append(time.perf_counter() - t0)
    cost = step_cost(T, E, N)
    return {"T": T, "cache_ms": 1e3 * median(times["cache"]),
            "recompute_ms": 1e3 * median(times["recompute"]),
            "cache_macs": cost.with_cache, "recompute_macs": cost.without_cache}


def run(quick: bool = False, results: Path = RESULTS, threads: int | None = None) -> dict[str, Any]:
    import torch

    if threads:
        torch.set_num_threads(threads)
    lengths = (32, 64) if quick else LENGTHS
    rows = []
    say("\n== Decoding: one generation step, with and without a KV cache ==")
    for T in lengths:
        r = measure(T, rounds=3 if quick or T >= 2048 else 7)
        r["ratio"] = r["recompute_ms"] / r["cache_ms"]
        rows.append(r)
        say(f"T={T:>5}: cache {r['cache_ms']:8.2f} ms, recompute {r['recompute_ms']:9.1f} ms, "
            f"x{r['ratio']:.0f}")
    tbl = table(["T", "cached step ms", "recompute ms", "× faster", "cached MACs", "recompute MACs"],
                [[r["T"], f"{r['cache_ms']:.2f}", f"{r['recompute_ms']:.1f}", f"{r['ratio']:.0f}",
                  f"{r['cache_macs']:,}", f"{r['recompute_macs']:,}"] for r in rows])
    last = rows[-1]
    target = (f"T={last['T']}: cached step {last['ratio']:.0f}x cheaper than recomputing "
              f"(target >= {TARGET_RATIO:.0f}x: {'met' if last['ratio'] >= TARGET_RATIO else 'missed'})")
    say(tbl + "\n" + target)
    payload = {"machine": machine(), "config": CONFIG, "rows": rows, "table": tbl, "target": target}
    if not quick:
        write_json("decoding", payload, results)
    return payload
