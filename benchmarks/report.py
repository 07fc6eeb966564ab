"""``python -m benchmarks.report``: the performance guide's tables, from the results JSON.

The section of ``docs/performance.md`` between the markers ``<!-- bench:start -->`` and
``<!-- bench:end -->`` is this module's output for ``benchmarks/results/*.json``; ``--write``
replaces it in place, so the guide never shows a figure that a benchmark run did not print.
A part whose JSON is missing is left out with a note.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from ._common import RESULTS, table

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "performance.md"  # the page that shows the tables
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def _load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _machine(m: dict[str, Any]) -> str:
    load = m.get("load_average") or [float("nan")]
    return (f"{m.get('cpu', '?')}, {m.get('cpu_count', '?')} cores, {m.get('memory_gib', '?')} GiB, "
            f"torch {m.get('torch', '?')}, {m.get('time', '?')[:16].replace('T', ' ')} UTC, "
            f"load average {load[0]:.2f} at the start")


def latency_section(d: dict[str, Any]) -> str:
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in d["rows"]:
        by.setdefault((r["explorer"], r["control"]), {})[r["scenario"]] = r
    rows = []
    for (explorer, control), runs in by.items():
        cells = []
        for scenario in ("default", "largest"):
            r = runs.get(scenario)
            cells.append(f"{r['median_ms']:.1f} / {r['p95_ms']:.1f}" if r and "median_ms" in r else "-")
        worst = max((r["median_ms"] for r in runs.values() if "median_ms" in r), default=None)
        ok = "-" if worst is None else ("yes" if worst <= d["target_median_ms"] else "no")
        sizes = runs.get("largest", {}).get("sizes") or {}
        rows.append([explorer, control, *cells, ", ".join(f"{k}={v}" for k, v in sizes.items()) or "-", ok])
    medians = [r["median_ms"] for r in d["rows"] if "median_ms" in r]
    head = (f"**Live controls, kernel side**: from a control's new value to the new PNG ready for "
            f"the browser, median / p95 ms over {d['moves_per_control']} moves per control, at the "
            f"notebooks' default sizes and with every size control at its largest "
            f"({_machine(d['machine'])}). All {len(medians)} medians lie between "
            f"{min(medians):.1f} and {max(medians):.1f} ms; target ≤ {d['target_median_ms']:.0f} ms.")
    return head + "\n\n" + table(
        ["explorer", "control", "default", "largest", "largest sizes", f"≤ {d['target_median_ms']:.0f} ms"], rows)


def browser_section(d: dict[str, Any]) -> str:
    if d.get("skipped"):
        return f"**Live controls, in the browser**: not measured ({d['skipped']})."
    rows = [r for r in d["rows"] if "median_ms" in r]
    medians = sorted(r["median_ms"] for r in rows)
    mid = medians[len(medians) // 2] if medians else float("nan")
    over = [r for r in rows if r["median_ms"] > 100]
    head = (f"**Live controls, in the browser** (real JupyterLab in Chromium, `tools/lab.py`): "
            f"from the first input event (key press, click, option chosen; Enter for a text box) "
            f"to the first frame after the new picture was decoded, median / p95 ms, up to "
            f"{d.get('moves_per_control', '?')} moves per control, each after the previous one "
            f"settled ({_machine(d['machine'])}). Median of the {len(rows)} control medians: "
            f"{mid:.0f} ms; {len(over)} of {len(rows)} above the 100 ms target.")
    body = table(["notebook", "control", "moves", "median ms", "p95 ms"],
                 [[r["notebook"].removesuffix(".ipynb"), r["control"], r["moves"],
                   f"{r['median_ms']:.0f}", f"{r['p95_ms']:.0f}"] for r in rows])
    errors = [r for r in d["rows"] if "median_ms" not in r]
    if errors:
        body += "\n\nNot measured: " + "; ".join(
            f"{r['notebook']} {r['control']} ({r.get('error', 'no move')})" for r in errors) + "."
    return head + "\n\n" + body


def course_section(d: dict[str, Any]) -> str:
    t = d["targets_s"]
    runs = len((d.get("course") or {}).get("runs_s", [None]))
    whole = "in one run" if runs == 1 else f"in one run, {runs} times, the median shown"
    head = (f"**Course run time**: `python -m pytest --nbval -q <notebook>` in a fresh process "
            f"(pytest's start, the kernel's, every cell, every comparison), one notebook at a time, "
            f"then the course's notebooks {whole} ({_machine(d['machine'])}). Targets: "
            f"≤ {t['notebook']:.0f} s per notebook, ≤ {t['course']:.0f} s for the course.")
    return head + "\n\n" + d["table"]


def scale_section(d: dict[str, Any]) -> str:
    c = d["config"]
    head = (f"**Attention at scale**: forward pass of causal multi-head attention, B={c['B']}, "
            f"E={c['E']}, H={c['H']}, time (median of 3–7 rounds, methods taking turns) and growth "
            f"of the process's peak memory (a fresh process per figure), each also as a ratio to "
            f"`sdpa` measured in the same run ({_machine(d['machine'])}). `sdpa`: the module's "
            f"projections around `F.scaled_dot_product_attention(is_causal=True)`; `sdpa_mask`: "
            f"the same given a bool mask; `fast`: `attn.MultiHeadAttention(x, causal=True, "
            f"need_weights=False)`; `fast_mask`: the same given `mask=causal_mask(L)`; "
            f"`teaching`: `attn.MultiHeadAttention(x, mask=causal_mask(L))`, which returns the "
            f"per-head weights; `torch_weights` / `torch_fast`: `nn.MultiheadAttention` with the "
            f"same weights, with per-head weights / `need_weights=False`; `blockwise`: "
            f"`attn.blockwise` (online softmax over blocks of keys).")
    s = d["summary"]
    t = c.get("teaching_target")  # results written before the two bounds have none
    bounds = ("" if t is None else
              f" Target: at most {t['extra_ms']} ms more per call than torch at E = {t['small_E']} "
              f"in inference, where a call of its fused kernel is so short that a ratio would mostly "
              f"measure the teaching path's fixed cost per operation; at most {t['ratio']}× its "
              f"time elsewhere.")
    return (head + "\n\n" + s["layer_table"]
            + "\n\nOne head, B=1, D=64, at long L: the naive path holds the L × L matrix; "
              "the blockwise path never does.\n\n" + s["head_table"]
            + ("\n\nThe course's own sizes: the teaching path against `nn.MultiheadAttention("
               "need_weights=True)` with a causal mask, per call (median of "
               f"{d['config'].get('course_rounds', 7)} batches of about 20 ms, the two taking "
               "turns): a forward pass in inference mode, where torch runs its fused C++ "
               "kernel, and a training step (forward and backward), where it runs its Python "
               "path." + bounds + "\n\n" + s["course_table"] if s.get("course_table") else "")
            + "\n\nTargets:\n\n" + "\n".join(f"- {line}" for line in s["targets"]))


def decoding_section(d: dict[str, Any]) -> str:
    c = d["config"]
    head = (f"**Decoding**: one generation step of a {c['N']}-layer causal decoder (E={c['E']}, "
            f"H={c['H']}, B={c['B']}, `attn.decoding.Decoder`), median ms, with a KV cache (the new "
            f"position only) and recomputing the whole prefix; multiply-adds counted by "
            f"`attn.decoding.step_cost` ({_machine(d['machine'])}).")
    return head + "\n\n" + d["table"] + "\n\n- " + d["target"]


def kv_heads_section(d: dict[str, Any]) -> str:
    c = d["config"]
    steps = d["rows"][0]["steps"] if d["rows"] else "?"
    head = (f"**KV heads and a window**: one decoding step of `attn.MultiHeadAttention({c['E']}, {c['H']}, "
            f"num_kv_heads=H_kv)` (B={c['B']}, {c['dtype']}, `need_weights=False`) after T positions, for MHA, "
            f"GQA and MQA (H_kv = {' / '.join(map(str, c['kv_heads']))}), with a cache that keeps every "
            f"position and with `attn.KVCache(window={c['window']})`: the keys and values the cache holds, "
            f"and the step's median and shortest time over {steps} steps, the six configurations of each T "
            f"taking turns; the cache filled by appending random keys and values "
            f"(`benchmarks/kv_heads.py`, {_machine(d['machine'])}).")
    return head + "\n\n" + d["table"] + "\n\n" + "\n".join(f"- {line}" for line in d["summary"])


def site_section(d: dict[str, Any]) -> str:
    t = d["targets"]
    head = (f"**The website's explorers without a kernel** (`benchmarks/site.py`, {_machine(d['machine'])}): "
            f"`make site`'s work took {d['build_cold_s']:.0f} s from an empty cache of explorer states "
            f"and {d['build_cached_s']:.0f} s with it (target < {t['make_site_s']:.0f} s); the site is "
            f"{d['site_mb']:.1f} MB, {d['live_mb']:.1f} MB of them explorer states (target ≤ {t['site_mb']:.0f} MB).")
    if d.get("skipped"):
        return head + f" Browser part skipped: {d['skipped']}."
    big = d["largest_first_load"]
    head += (f" The largest first load of a notebook page is {big['page']}'s, {big['first_load_mb']:.2f} MB "
             f"(target < {t['page_first_load_mb']:.0f} MB). A move, from the keydown to the first frame "
             f"after the new picture is on the page, in Chromium from a local static server with every "
             f"other request refused ({d['refused']} refused), {d['moves_per_control']} moves per control; "
             f"the slowest control's median is {d['slowest_median_ms']:.1f} ms (target ≤ {t['move_median_ms']:.0f} ms).")
    return head + "\n\n" + d["table"]


SECTIONS = (("latency", latency_section), ("browser", browser_section),
            ("course", course_section), ("scale", scale_section), ("decoding", decoding_section),
            ("kv_heads", kv_heads_section), ("site", site_section))


def render(results: Path = RESULTS) -> str:
    parts = []
    for name, fn in SECTIONS:
        d = _load(results, name)
        parts.append(fn(d) if d else f"*({name}: no results yet; run `make bench`.)*")
    return "\n\n".join(parts)


def write_page(page: Path, text: str) -> None:
    """Replace the block between ``START`` and ``END`` of the Markdown file ``page`` by ``text``.

    Raises:
        ValueError: ``page`` has no such block.
    """
    s = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(s):
        raise ValueError(f"page: expected the markers {START} ... {END} in {page}, found none")
    page.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", s), encoding="utf-8")



def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--write", action="store_true",
                   help=f"replace the tables in {PAGE.relative_to(ROOT)} in place")
    args = p.parse_args(argv)
    text = render(args.results)
    if args.write:
        write_page(PAGE, text)
    else:
        print(text)


if __name__ == "__main__":
    main()
