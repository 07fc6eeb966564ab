"""App mode (``make app NB=...``, Voilà): from opening the page to the first explorer picture.

For each lesson measured, Voilà serves (a) the whole lesson, as ``make app`` did before issue 33,
and (b) the app page that ``tools.app`` makes of it (its explorers only); Chromium opens the
page and the clock runs from ``page.goto`` until the first explorer picture (the widget
``<img>``) is decoded and on screen. Each form is opened ``RUNS`` times, by a fresh Voilà (a
fresh kernel each time, as a teacher's ``make app`` starts one). Target: the app page under
``TARGET_S`` seconds.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from ._common import machine, median, say, table, write_json

TARGET_S = 10.0
RUNS = 2
LESSONS = ("02_qkv", "06_visualization")
# The first explorer picture, decoded and laid out (a widget Image of an explorer).
_PICTURE_SHOWN = """() => { const i = document.querySelector('.attn-explorer img.widget-image');
  return !!i && i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().height > 0; }"""


def first_picture_seconds(notebook: Path, browser: Any, timeout: float = 180) -> float:
    """Seconds from opening the Voilà page of ``notebook`` to its first explorer picture shown."""
    from tools.lab import VIEWPORT, running_voila

    with tempfile.TemporaryDirectory(prefix="attn-app-") as work, running_voila(notebook, Path(work)) as url:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        try:
            t0 = time.monotonic()
            page.goto(url, timeout=timeout * 1000)
            page.wait_for_function(_PICTURE_SHOWN, timeout=timeout * 1000, polling=50)
            return time.monotonic() - t0
        finally:
            context.close()


def run(*, quick: bool = False, results: Path | None = None, runs: int = RUNS) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tools import app
    from tools.lab import LAUNCH_ARGS

    lessons = LESSONS[:1] if quick else LESSONS
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(**LAUNCH_ARGS)
        try:
            for name in lessons:
                forms = {"whole lesson": app.NOTEBOOKS / f"{name}.ipynb", "app page": app.write_app(name)}
                for form, path in forms.items():
                    seconds = [first_picture_seconds(path, browser) for _ in range(1 if quick else runs)]
                    rows.append({"notebook": name, "form": form, "seconds": seconds, "median_s": median(seconds)})
                    say(f"app mode, {name}, {form}: first explorer picture after "
                        f"{', '.join(f'{s:.1f}' for s in seconds)} s")
        finally:
            browser.close()
    say(table(["notebook", "served", "to the first explorer picture (s)", "target"],
              [[r["notebook"], r["form"], ", ".join(f"{s:.1f}" for s in r["seconds"]),
                f"< {TARGET_S:.0f} s" if r["form"] == "app page" else ""] for r in rows]))
    payload = {"machine": machine(), "target_s": TARGET_S, "rows": rows}
    if results is not None:
        write_json("app", payload, results)
    return payload


if __name__ == "__main__":
    run(results=None)
