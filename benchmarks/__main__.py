"""``python -m benchmarks`` (``make bench``): run every benchmark, print tables, write JSON.

    python -m benchmarks                    # all parts, full sizes (several minutes)
    python -m benchmarks --only scale       # one part: latency, browser, course, scale, decoding, kv_heads, hub, site or app
    python -m benchmarks --quick            # tiny sizes, no browser, no hub, no site, no app: checks that the code runs
    python -m benchmarks --threads 1        # latency and scale with one torch thread

Results: benchmarks/results/<part>.json (machine description included).
The tables of docs/performance.md from them: ``python -m benchmarks.report --write``; the hub's
figures in docs/teaching.md: ``python -m benchmarks.hub --write-docs``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from . import course, decoding, kv_heads, latency, scale
from ._common import RESULTS, machine, say

PARTS = ("latency", "browser", "course", "scale", "decoding", "kv_heads", "hub", "site", "app")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", choices=PARTS,
                   help="run only this part (repeatable); default: all")
    p.add_argument("--quick", action="store_true", help="tiny sizes and few moves: a smoke test")
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the JSON files")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads for latency and scale (default: torch's; results go to "
                        "<part>_threads<N>.json)")
    args = p.parse_args(argv)
    parts = args.only or [p for p in PARTS if not (args.quick and p in ("browser", "hub", "site", "app"))]
    info = machine()
    say(f"Machine: {info['cpu']} ({info['cpu_count']} cores), {info.get('memory_gib', '?')} GiB, "
        f"torch {info['torch']} ({info['torch_threads']} threads), CUDA: {info['cuda']}, "
        f"load average {info['load_average'][0]:.2f}")
    t0 = time.perf_counter()
    if "latency" in parts:
        latency.run(quick=args.quick, results=args.results, threads=args.threads)
    if "browser" in parts:
        from . import browser

        browser.run(quick=args.quick, results=args.results)
    if "course" in parts:
        course.run(quick=args.quick, results=args.results)
    if "scale" in parts:
        scale.run(quick=args.quick, results=args.results, threads=args.threads)
    if "decoding" in parts:
        decoding.run(quick=args.quick, results=args.results, threads=args.threads)
    if "kv_heads" in parts:
        kv_heads.run(quick=args.quick, results=args.results, threads=args.threads)
    if "hub" in parts:
        from . import hub

        hub.run(quick=args.quick, results=args.results)
    if "site" in parts:
        from . import site

        site.run(quick=args.quick, results=args.results)
    if "app" in parts:
        from . import app

        app.run(quick=args.quick, results=args.results)
    say(f"\nDone in {time.perf_counter() - t0:.0f} s; JSON in {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
