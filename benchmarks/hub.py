"""A JupyterHub class on this machine: memory per learner, Run All with N learners, control moves.

The hub is the one of tests/delivery/test_hub.py (``tests/_hub.py``: JupyterHub, configurable-http-proxy,
SimpleLocalProcessSpawner, each learner's server from this venv, ``OMP_NUM_THREADS=1`` as the
hub configuration of docs/teaching.md sets, nbgitpuller cloning a snapshot of this working
tree into each home). The learners are driven by ``KernelClient``: through the hub's proxy, it opens the
notebook's session and speaks the kernel protocol over the websocket JupyterLab uses, so the
server side of a class is all on this machine, as on a real hub, while the browsers' own work
(drawing the page, decoding each picture) is not: on a real class it runs on each learner's
machine. ``benchmarks/browser.py`` measures that part on its own.

Figures:

- memory per learner: the single-user server plus its kernel, resident (RSS) and proportional
  (PSS: shared pages divided among the processes sharing them) set sizes, at idle (server
  started, notebook 08 open, nothing run) and after Run All of notebook 08, one learner alone;
- Run All of notebook 06 with N learners at once (fresh kernels, every code cell in order);
- then rounds of control moves, all N learners at once (one step of the explorer's ``heads``
  slider each, as when the teacher says "now move it"): from the message leaving the learner's
  client to the explorer's new picture arriving back through the proxy;
- the largest N whose every learner got the new picture within 300 ms, in the median round
  (the machine's other jobs can slow one round; the worst move is kept too).

The machine may be shared: each figure records the load average around it.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ._common import machine, median, p95, say, table, write_json

ROOT = Path(__file__).resolve().parent.parent
CLASS_SIZES = (1, 5, 10, 20)
MOVE_TARGET_MS = 300.0
ROUNDS = 7  # rounds of moves per class size, all learners at once in each
MEMORY_NOTEBOOK = "notebooks/08_trained_heads.ipynb"
RUN_ALL_NOTEBOOK = "notebooks/06_visualization.ipynb"
SLIDER = "heads"  # the explorer's slider each learner moves (the first slider if none is named so)
MIB = 2**20


def _hub_module():
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import _hub  # noqa: PLC0415 - the hub test's machinery, shared

    return _hub


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _peak_rss_kib(pid: int) -> int:
    """The process's peak resident set size so far (VmHWM), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1])


def _memory(pids: list[int]) -> dict[str, float]:
    """RSS, PSS, USS and peak RSS (VmHWM) of the processes, each added up, in MiB."""
    import psutil

    out = {"rss_mib": 0.0, "pss_mib": 0.0, "uss_mib": 0.0, "peak_rss_mib": 0.0}
    for pid in pids:
        info = psutil.Process(pid).memory_full_info()
        out["rss_mib"] += info.rss / MIB
        out["pss_mib"] += info.pss / MIB
        out["uss_mib"] += info.uss / MIB
        out["peak_rss_mib"] += _peak_rss_kib(pid) / 1024
    return {k: round(v, 1) for k, v in out.items()}


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes have used so far, added up (children not counted)."""
    import psutil

    total = 0.0
    for pid in pids:
        t = psutil.Process(pid).cpu_times()
        total += t.user + t.system
    return total


def _hub_pids(hub) -> list[int]:
    """The hub and the proxy (the hub's child that is not a learner's server)."""
    import psutil

    hub_proc = psutil.Process(hub.proc.pid)
    return [hub_proc.pid] + [c.pid for c in hub_proc.children()
                             if "configurable-http-proxy" in " ".join(c.cmdline())]


def _slider(client) -> str:
    sliders = client.sliders()
    if not sliders:
        raise RuntimeError(f"{client.user}: {client.path} showed no slider")
    named = [c for c in sliders if client.models[c].get("description") == SLIDER]
    return (named or sliders)[0]


def _memory_figures(hub, mod, origin: Path, user: str, token: str) -> dict[str, Any]:
    """One learner alone: server + kernel at idle, then after Run All of notebook 08."""
    client = mod.KernelClient(hub, user, f"{mod.FOLDER}/{MEMORY_NOTEBOOK}", token=token)
    try:
        client.execute("pass")  # the kernel is up and answering
        time.sleep(2)
        server, kernel = client.process_ids()
        idle = {"server": _memory([server]), "kernel": _memory([kernel]),
                "total": _memory([server, kernel]), "load_average": _load()}
        seconds, errors = client.run_notebook(hub.clone(user) / MEMORY_NOTEBOOK)
        if errors:
            raise RuntimeError(f"{MEMORY_NOTEBOOK}: {errors}")
        time.sleep(2)
        after = {"server": _memory([server]), "kernel": _memory([kernel]),
                 "total": _memory([server, kernel]), "run_all_s": round(seconds, 1),
                 "load_average": _load()}
    finally:
        client.shutdown()
    return {"notebook": MEMORY_NOTEBOOK, "idle": idle, "after_run_all": after}


def _class_figures(hub, mod, users: list[str], tokens: dict[str, str], rounds: int) -> dict[str, Any]:
    """N learners at once: Run All of notebook 06 in fresh kernels, then rounds of moves."""
    n = len(users)
    load_before = _load()
    clients = {}
    with ThreadPoolExecutor(max_workers=n) as pool:
        for user, c in zip(users, pool.map(
                lambda u: mod.KernelClient(hub, u, f"{mod.FOLDER}/{RUN_ALL_NOTEBOOK}", token=tokens[u]),
                users)):
            clients[user] = c
        for c in clients.values():
            c.execute("pass")
        learner_pids = [pid for c in clients.values() for pid in c.process_ids()]
        hub_pids = _hub_pids(hub)
        start = threading.Barrier(n)

        def run_all(user):
            start.wait()
            return clients[user].run_notebook(hub.clone(user) / RUN_ALL_NOTEBOOK)

        cpu0 = (_cpu_seconds(learner_pids), _cpu_seconds(hub_pids))
        t0 = time.perf_counter()
        runs = dict(zip(users, pool.map(run_all, users)))
        wall = time.perf_counter() - t0
        cpu_run = (_cpu_seconds(learner_pids) - cpu0[0], _cpu_seconds(hub_pids) - cpu0[1])
        errors = {u: e for u, (_, e) in runs.items() if e}
        if errors:
            raise RuntimeError(f"{RUN_ALL_NOTEBOOK} failed: {errors}")
        seconds = [s for s, _ in runs.values()]
        load_after_run = _load()

        sliders = {u: _slider(c) for u, c in clients.items()}
        rounds_ms: list[list[float]] = []  # per round, every learner's move
        go = threading.Barrier(n)

        def move(user):
            go.wait()
            return clients[user].move(sliders[user]) * 1000

        cpu_moves = 0.0
        for _ in range(rounds):
            cpu0 = _cpu_seconds(learner_pids) + _cpu_seconds(hub_pids)
            rounds_ms.append(list(pool.map(move, users)))
            cpu_moves += _cpu_seconds(learner_pids) + _cpu_seconds(hub_pids) - cpu0
            time.sleep(0.5)
        load_after_moves = _load()
    pids = []
    for c in clients.values():
        pids += list(c.process_ids())
    memory = _memory(pids)
    for c in clients.values():
        c.shutdown()
    moves_ms = [ms for r in rounds_ms for ms in r]
    slowest = [max(r) for r in rounds_ms]  # each round: the last learner to see the picture
    return {
        "learners": n,
        "run_all_s": {"median": round(median(seconds), 1), "max": round(max(seconds), 1),
                      "wall": round(wall, 1)},
        "moves": len(moves_ms),
        "move_ms": {"median": round(median(moves_ms), 1), "p95": round(p95(moves_ms), 1),
                    "max": round(max(moves_ms), 1)},
        "slowest_per_round_ms": [round(ms, 1) for ms in slowest],
        # Served: in the median round, every learner's move was under the target (a round
        # slowed by the machine's other jobs does not decide alone; the worst is kept above).
        "served": median(slowest) < MOVE_TARGET_MS,
        # CPU time (user + system) of the learners' servers and kernels, and of hub + proxy:
        # what the class costs the machine, whatever else runs on it.
        "cpu_s": {"run_all_per_learner": round(cpu_run[0] / n, 2),
                  "run_all_hub_and_proxy": round(cpu_run[1], 2),
                  "per_move_ms": round(1000 * cpu_moves / len(moves_ms), 1)},
        "memory_after_run_all": {**memory, "per_learner_pss_mib": round(memory["pss_mib"] / n, 1),
                                 "per_learner_rss_mib": round(memory["rss_mib"] / n, 1)},
        "load_average": {"before": load_before, "after_run_all": load_after_run,
                         "after_moves": load_after_moves},
    }


def _sizes_to_measure(sizes: tuple[int, ...], done: list[dict[str, Any]], search: int):
    """The given class sizes in order; then up to ``search`` more, each halving the gap between
    the largest size whose every move was under the target and the next size, which was not."""
    yield from sizes
    for _ in range(search):
        ok = sorted(r["learners"] for r in done if r.get("served"))
        bad = sorted(r["learners"] for r in done if not r.get("served"))
        above = [b for b in bad if ok and b > ok[-1]]
        if not ok or not above or above[0] - ok[-1] <= 1:
            return
        yield (ok[-1] + above[0]) // 2


def run(*, quick: bool = False, results=None, sizes: tuple[int, ...] = CLASS_SIZES,
        rounds: int = ROUNDS, search: int = 2) -> dict[str, Any]:
    say("\n== A JupyterHub class on this machine (memory, Run All, control moves) ==")
    payload: dict[str, Any] = {"machine": machine(), "skipped": None}
    mod = _hub_module()
    reason = mod.hub_unavailable(browser=False)
    if quick:
        sizes, rounds, search = (1,), 1, 0
    if reason:
        payload["skipped"] = reason
        say(f"  skipped: {reason}")
        write_json("hub", payload, **({"results": results} if results else {}))
        return payload
    payload.update({"sizes": list(sizes), "rounds": rounds, "move_target_ms": MOVE_TARGET_MS,
                    "memory_notebook": MEMORY_NOTEBOOK, "run_all_notebook": RUN_ALL_NOTEBOOK,
                    "slider": SLIDER, "omp_num_threads": 1,
                    "driver": "KernelClient over the hub's proxy (no browser on this machine)"})
    users = [f"learner-{i}" for i in range(1, max(sizes) + 1)]
    tmp = tempfile.mkdtemp(prefix="attn-hub-bench-")  # kept when a figure fails: its log
    failed = False
    origin = mod.course_origin(Path(tmp) / "git")
    with mod.running_hub(Path(tmp) / "hub", users, environment={"OMP_NUM_THREADS": "1"}) as hub:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=4) as pool:  # logins in small waves
            list(pool.map(hub.start_server, users))
        tokens = {u: hub.user_token(u) for u in users}
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda u: hub.git_pull(u, tokens[u], origin), users))
        payload["start_and_pull_s"] = {"learners": len(users), "seconds": round(time.perf_counter() - t0, 1),
                                       "load_average": _load()}
        say(f"  {len(users)} servers started and the course pulled in "
            f"{payload['start_and_pull_s']['seconds']} s (load {_load()})")
        payload["memory"] = _memory_figures(hub, mod, origin, users[0], tokens[users[0]])
        m = payload["memory"]
        say(f"  one learner, {MEMORY_NOTEBOOK}: idle {m['idle']['total']['pss_mib']:.0f} MiB PSS "
            f"({m['idle']['total']['rss_mib']:.0f} RSS), after Run All "
            f"{m['after_run_all']['total']['pss_mib']:.0f} MiB PSS "
            f"({m['after_run_all']['total']['rss_mib']:.0f} RSS)")
        payload["classes"] = []
        for n in _sizes_to_measure(sizes, payload["classes"], search):
            try:
                row = _class_figures(hub, mod, users[:n], tokens, rounds)
            except Exception as e:  # noqa: BLE001 - recorded: a class this machine did not serve
                failed = True
                payload["classes"].append({"learners": n, "error": f"{type(e).__name__}: {e}",
                                           "load_average": _load(), "log": str(hub.log)})
                say(f"  {n:>2} learners: FAILED ({type(e).__name__}: {e}); log kept: {hub.log}")
                write_json("hub", payload, **({"results": results} if results else {}))
                break
            payload["classes"].append(row)
            say(f"  {n:>2} learners: Run All {row['run_all_s']['median']} s median, "
                f"{row['run_all_s']['max']} s max; moves {row['move_ms']['median']} ms median, "
                f"{row['move_ms']['max']} ms max; {row['memory_after_run_all']['per_learner_pss_mib']} "
                f"MiB PSS per learner; load {row['load_average']}")
            write_json("hub", payload, **({"results": results} if results else {}))
    if not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    # The largest class size measured whose every move was under the target, every smaller
    # size measured passing too.
    served = 0
    for r in sorted(payload["classes"], key=lambda r: r["learners"]):
        if not r.get("served"):
            break
        served = r["learners"]
    payload["largest_class_served"] = served
    strict = 0  # the same with every move of every round under the target
    for r in sorted(payload["classes"], key=lambda r: r["learners"]):
        if "error" in r or r["move_ms"]["max"] >= MOVE_TARGET_MS:
            break
        strict = r["learners"]
    payload["largest_class_every_move"] = strict
    payload["machine_after"] = {"load_average": list(os.getloadavg())}
    payload["estimated_largest_class_alone"] = estimate_largest_class(payload)
    payload["table"] = report_table(payload)
    say(figures_block(payload))
    write_json("hub", payload, **({"results": results} if results else {}))
    return payload


def estimate_largest_class(payload: dict[str, Any]) -> int | None:
    """Learners a machine with this many cores, all its own, serves with every move under the
    target, by a simple model: with N learners moving at once, the last picture arrives after
    the median move of one learner alone plus (N - 1) moves' CPU time shared by the cores."""
    one = next((r for r in payload.get("classes", []) if r["learners"] == 1 and "error" not in r), None)
    rows = [r for r in payload.get("classes", []) if "error" not in r]
    if one is None or not rows:
        return None
    cpu_ms = median([r["cpu_s"]["per_move_ms"] for r in rows])
    cores = payload["machine"]["cpu_count"]
    return 1 + int((payload["move_target_ms"] - one["move_ms"]["median"]) * cores // cpu_ms)


def figures_block(payload: dict[str, Any]) -> str:
    """The figures of a class that the teaching guide shows (docs/teaching.md, between
    <!-- hub:start --> and <!-- hub:end -->; a test checks that it shows this text)."""
    m, info = payload["memory"], payload["machine"]
    rows = [r for r in payload["classes"] if "error" not in r]
    before = [r["load_average"]["before"] for r in rows]  # other jobs only: the class is idle
    idle, after = m["idle"], m["after_run_all"]
    cpu_run = median([r["cpu_s"]["run_all_per_learner"] for r in rows])
    cpu_move = median([r["cpu_s"]["per_move_ms"] for r in rows])
    one = next(r for r in rows if r["learners"] == 1)
    kernel_06 = one["memory_after_run_all"]["rss_mib"] - idle["server"]["rss_mib"]
    per_learner_pss = median([r["memory_after_run_all"]["per_learner_pss_mib"] for r in rows])
    per_core = int((payload["move_target_ms"] - one["move_ms"]["median"]) // cpu_move)
    lines = [
        f"**A class on one machine** ({info['cpu']}, {info['cpu_count']} cores, "
        f"{info.get('memory_gib', '?')} GiB, {info['time'][:16].replace('T', ' ')}; "
        f"`python -m benchmarks --only hub`): the hub of `tests/delivery/test_hub.py`, each learner driven "
        f"through the hub's proxy over the kernel websocket a browser uses (the browsers' own "
        f"drawing is not on this machine), one OpenMP thread per kernel. Load average "
        f"{min(before):.1f} to {max(before):.1f} before each class started (on this 2-core machine "
        f"any figure above 2 is other work, or the previous class's still settling; the table's "
        f"last column adds what the class itself ran), "
        f"{idle['load_average']:.1f} during the memory figures.",
        "",
        f"- Memory per learner, server + kernel (RSS): {idle['total']['rss_mib']:.0f} MiB at idle "
        f"(server {idle['server']['rss_mib']:.0f}, kernel {idle['kernel']['rss_mib']:.0f}); "
        f"{after['total']['rss_mib']:.0f} MiB after Run All of notebook 08 "
        f"({after['total']['pss_mib']:.0f} MiB PSS, peak {after['total']['peak_rss_mib']:.0f} MiB RSS).",
        f"- CPU per learner: Run All of notebook 06 costs {cpu_run:.1f} CPU-seconds; one control "
        f"move {cpu_move:.0f} CPU-ms (kernel, server, hub and proxy together).",
        f"- Largest class measured whose every learner saw the new picture within "
        f"{payload['move_target_ms']:.0f} ms in the median round of moves (every smaller size "
        f"measured too): {payload['largest_class_served']} learners"
        f"{' (the largest size tried)' if payload['largest_class_served'] == max(r['learners'] for r in rows) else ''}, "
        f"{payload['largest_class_every_move']} with every move of every round within it; "
        f"on {info['cpu_count']} cores of its own, the model (one learner's median move plus the "
        f"others' CPU time shared by the cores) gives {estimate_largest_class(payload)}.",
        "",
        report_table(payload),
        "",
        "**The sizing rule** from these figures:",
        "",
        f"- memory: {after['total']['rss_mib'] / 1024:.2f} GiB per learner (notebook 08 run), plus "
        f"{kernel_06 / 1024:.2f} GiB for each further notebook whose kernel is left running "
        f"(notebook 06's, after Run All); on one machine, where the learners share the libraries' "
        f"pages, {per_learner_pss / 1024:.2f} GiB per learner (PSS) with notebook 06 open;",
        f"- CPU: N learners moving a control at once on P cores get their pictures after about "
        f"{one['move_ms']['median']:.0f} ms + N × {cpu_move:.0f} ms / P: keep N / P at "
        f"{per_core} or below for every move under {payload['move_target_ms']:.0f} ms; N learners "
        f"pressing Run All of notebook 06 together wait about {cpu_run:.1f} s × N / P.",
    ]
    return "\n".join(lines)


def report_table(payload: dict[str, Any]) -> str:
    """The table of the class figures (a test checks that docs/teaching.md shows this one)."""
    rows = []
    for r in payload["classes"]:
        if "error" in r:
            rows.append([r["learners"], "failed", "", "", "", "", "no", "", f"{r['load_average']:.1f}"])
            continue
        rows.append([r["learners"], r["run_all_s"]["median"], r["run_all_s"]["max"],
                     r["move_ms"]["median"], f"{median(r['slowest_per_round_ms']):.1f}",
                     r["move_ms"]["max"], "yes" if r["served"] else "no",
                     r["memory_after_run_all"]["per_learner_pss_mib"],
                     f"{r['load_average']['before']:.1f} / {r['load_average']['after_moves']:.1f}"])
    return table(["learners at once", "Run All 06, s (median)", "Run All 06, s (max)",
                  "move, ms (median)", "slowest learner, ms (median round)", "move, ms (max)",
                  "all < 300 ms (median round)",
                  "MiB per learner (PSS)", "load average before / after"], rows)


PAGE = ROOT / "docs" / "teaching.md"  # the page that shows the class figures


def write_page(payload: dict[str, Any], page: Path = PAGE) -> None:
    """Replace the block between <!-- hub:start --> and <!-- hub:end --> of ``page``.

    Raises:
        ValueError: ``page`` has no such block.
    """
    text = page.read_text(encoding="utf-8")
    start, end = "<!-- hub:start -->", "<!-- hub:end -->"
    if start not in text or end not in text:
        raise ValueError(f"{page}: no {start} ... {end} block")
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    page.write_text(f"{head}{start}\n{figures_block(payload)}\n{end}{tail}", encoding="utf-8")



if __name__ == "__main__":  # python -m benchmarks.hub --sizes 1,5,10,20 --rounds 5
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchmarks.hub", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, CLASS_SIZES)),
                    help="class sizes, comma-separated (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of moves per size")
    ap.add_argument("--search", type=int, default=2, help="extra sizes to bisect the largest class")
    ap.add_argument("--results", type=Path, default=None, help="folder for hub.json")
    ap.add_argument("--write-docs", "--write-readme", dest="write_docs", action="store_true",
                    help=f"only write the figures of {PAGE.relative_to(ROOT)} from "
                         "benchmarks/results/hub.json (--write-readme: its old name)")
    a = ap.parse_args()
    if a.write_docs:
        import json

        write_page(json.loads((ROOT / "benchmarks" / "results" / "hub.json").read_text()))
        raise SystemExit(0)
    run(sizes=tuple(int(x) for x in a.sizes.split(",")), rounds=a.rounds, search=a.search,
        **({"results": a.results} if a.results else {}))
