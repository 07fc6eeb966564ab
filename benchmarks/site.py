"""The website's explorers without a kernel: build time, size, first load, and a move's latency.

1. ``make site``'s work (``tools.site.build``) twice: from an empty cache of explorer states
   (``tools.live_states``: every state drawn), then again with the cache filled (what a build
   after an edit costs where no explorer changed). Target: under 3 minutes on 2 cores.
2. The built site's size in all (target: at most 150 MB), and each notebook page's first load:
   the bytes of the page and of every file it loads until it is rendered, as the browser's
   Resource Timing counts them (target: under 3 MB).
3. In Chromium, from a local static server, with every request outside it refused: on every
   explorer of both languages, each control moved by the keyboard (slider: arrow keys, then End
   and Home; drop-down: ArrowDown / ArrowUp; toggle buttons: Enter on the next button; check
   box: Space), 10 moves each; a move's time runs from the keydown to the first frame after the
   new picture is on the page (site/_static/attn-live.js's event ``attn-live-shown``).
   Target: median at most 50 ms for every control.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from ._common import machine, median, p95, say, table, write_json

TARGET_MOVE_MS = 50.0
TARGET_SITE_MB = 150.0
TARGET_PAGE_MB = 3.0
TARGET_BUILD_S = 180.0
MOVES = 10

# Keydown -> the first frame after the explorer showed the new picture.
_PROBE = """(figure) => {
  window.attnMoves = [];
  let t0 = null;
  document.addEventListener('keydown', () => { t0 = performance.now(); }, true);
  figure.addEventListener('attn-live-shown', () => {
    const start = t0;
    requestAnimationFrame(() => window.attnMoves.push(performance.now() - start));
  });
}"""
_FIRST_LOAD = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return [nav, ...performance.getEntriesByType('resource')].reduce((s, e) => s + (e.encodedBodySize || 0), 0);
}"""


def _keys(kind: str, n: int, moves: int) -> list[str]:
    if kind == "slider":
        return (["ArrowRight"] * (moves - 2) + ["End", "Home"])[:moves]
    if kind == "select":
        return [("ArrowDown" if (k // max(n - 1, 1)) % 2 == 0 else "ArrowUp") for k in range(moves)]
    return [" "] * moves if kind == "checkbox" else ["Enter"] * moves


def _measure_explorer(page, figure, controls: list[dict], moves: int) -> list[dict]:
    rows = []
    figure.evaluate(_PROBE)
    for i, control in enumerate(controls):
        drawn = figure.locator(".attn-live-control").nth(i)
        n = len(control["labels"])
        lat = []
        for step, key in enumerate(_keys(control["kind"], n, moves)):
            before = figure.evaluate("() => window.attnMoves.length")
            if control["kind"] == "slider":
                drawn.locator("input").focus()
            elif control["kind"] == "select":
                drawn.locator("select").focus()
            elif control["kind"] == "toggle":
                buttons = drawn.locator("button:not([disabled])")
                pressed = [b == "true" for b in buttons.evaluate_all("(bs) => bs.map((b) => b.getAttribute('aria-pressed'))")]
                buttons.nth((pressed.index(True) + 1) % len(pressed) if True in pressed else 0).focus()
            else:
                drawn.locator("input").focus()
            shown = figure.evaluate("(f) => f.dataset.state")
            page.keyboard.press(key)
            try:
                page.wait_for_function("(n) => window.attnMoves.length > n", arg=before, timeout=3000)
            except Exception:
                if figure.evaluate("(f) => f.dataset.state") == shown:
                    continue  # the key moved nothing (a slider at its end, a select at its last)
                raise
            lat.append(figure.evaluate("() => window.attnMoves[window.attnMoves.length - 1]"))
        rows.append({"control": control["label"], "kind": control["kind"], "moves": len(lat),
                     **({"median_ms": median(lat), "p95_ms": p95(lat)} if lat else {})})
    return rows


def run(*, quick: bool = False, results=None, moves: int = MOVES) -> dict[str, Any]:
    from tools import live_states, site
    from tools.lab import LAUNCH_ARGS, VIEWPORT, browser_unavailable
    from tools.serve import serving

    say("\n== The website's explorers without a kernel ==")
    payload: dict[str, Any] = {"machine": machine(), "targets": {
        "move_median_ms": TARGET_MOVE_MS, "site_mb": TARGET_SITE_MB, "page_first_load_mb": TARGET_PAGE_MB,
        "make_site_s": TARGET_BUILD_S}}
    out = site.BUILD / "bench-site"
    if not quick:
        shutil.rmtree(live_states.CACHE, ignore_errors=True)
    t0 = time.perf_counter()
    site.build(out, log=lambda line: None)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    site.build(out, log=lambda line: None)
    warm = time.perf_counter() - t0
    size = site.folder_size(out)
    live_size = site.folder_size(out / site.LIVE)
    payload.update(build_cold_s=cold, build_cached_s=warm, site_mb=size / 1e6, live_mb=live_size / 1e6)
    say(f"  make site: {cold:.0f} s from an empty cache, {warm:.0f} s with it; the site: {size / 1e6:.1f} MB "
        f"({live_size / 1e6:.1f} MB of explorer states)")
    reason = browser_unavailable()
    if reason:
        payload["skipped"] = reason
        say(f"  browser part skipped: {reason}")
        write_json("site", payload, **({"results": results} if results else {}))
        return payload
    from playwright.sync_api import sync_playwright

    ids = live_states.all_ids()
    if quick:
        ids, moves = ids[:1], 2
    rows, pages = [], []
    with serving(out) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(**LAUNCH_ARGS)
        local = url.split("/")[2]
        refused = []
        for code, edition in site.EDITIONS.items():
            for name in site.notebook_pages(code):
                context = browser.new_context(viewport=VIEWPORT)
                page = context.new_page()
                page.route("**/*", lambda r: r.continue_() if r.request.url.split("/")[2] == local
                           else (refused.append(r.request.url), r.abort()))
                page.goto(f"{url}{edition.prefix}{name}.html", wait_until="load")
                site.wait_rendered(page)
                pages.append({"page": f"{edition.prefix}{name}", "first_load_mb": page.evaluate(_FIRST_LOAD) / 1e6})
                context.close()
            for ident, recipe in ids:
                context = browser.new_context(viewport=VIEWPORT)
                page = context.new_page()
                page.route("**/*", lambda r: r.continue_() if r.request.url.split("/")[2] == local
                           else (refused.append(r.request.url), r.abort()))
                page.goto(f"{url}{edition.prefix}{recipe.notebook}.html", wait_until="load")
                figure = page.locator(f"#live-{ident}")
                page.wait_for_function("(id) => document.getElementById(id).dataset.live === 'ready'",
                                       arg=f"live-{ident}")
                import json

                spec = json.loads(figure.locator("script.attn-live-spec").text_content())
                for row in _measure_explorer(page, figure, spec["controls"], moves):
                    row.update(explorer=ident, language=code)
                    rows.append(row)
                    say(f"  {ident:34s} {code} {row['control'][:22]:22s} "
                        + (f"median {row['median_ms']:5.1f} ms  p95 {row['p95_ms']:5.1f} ms" if "median_ms" in row else "no move"))
                context.close()
        browser.close()
    biggest = max(pages, key=lambda p: p["first_load_mb"])
    medians = [r["median_ms"] for r in rows if "median_ms" in r]
    payload.update(rows=rows, pages=pages, refused=len(refused), moves_per_control=moves,
                   largest_first_load=biggest, slowest_median_ms=max(medians) if medians else None)
    text = table(["explorer", "language", "control", "moves", "median ms", "p95 ms", f"≤ {TARGET_MOVE_MS:.0f} ms"],
                 [[r["explorer"], r["language"], r["control"], r["moves"],
                   f"{r['median_ms']:.1f}" if "median_ms" in r else "-",
                   f"{r['p95_ms']:.1f}" if "p95_ms" in r else "-",
                   ("yes" if r["median_ms"] <= TARGET_MOVE_MS else "no") if "median_ms" in r else "-"] for r in rows])
    payload["table"] = text
    say("\n" + text)
    say(f"\n  slowest control's median: {payload['slowest_median_ms']:.1f} ms (target ≤ {TARGET_MOVE_MS:.0f}); "
        f"largest first load: {biggest['page']} {biggest['first_load_mb']:.2f} MB (target < {TARGET_PAGE_MB:.0f}); "
        f"site {size / 1e6:.1f} MB (target ≤ {TARGET_SITE_MB:.0f}); requests refused: {len(refused)}")
    write_json("site", payload, **({"results": results} if results else {}))
    return payload


if __name__ == "__main__":  # python -m benchmarks.site [--moves N]
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks.site", description=__doc__.splitlines()[0])
    p.add_argument("--moves", type=int, default=MOVES)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    run(moves=a.moves, quick=a.quick)
