"""Shared helpers: machine description, statistics, tables, JSON output."""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What the numbers were measured on (load average included: the machine may be shared)."""
    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "load_average": list(os.getloadavg()),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        info["cpu"] = names[0] if names else platform.processor()
    except OSError:
        info["cpu"] = platform.processor()
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        info["memory_gib"] = round(kb / 2**20, 1)
    except (OSError, StopIteration):
        pass
    return info


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def p95(xs: Sequence[float]) -> float:
    """The 95th percentile (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(0.95 * len(s))) - 1))]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (pastes into the guides in docs/ as it is)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    sep = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([fmt(cells[0]), sep] + [fmt(r) for r in cells[1:]])


def write_json(name: str, payload: dict[str, Any], results: Path = RESULTS) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def say(*args: Any) -> None:
    print(*args, flush=True)
    sys.stdout.flush()
