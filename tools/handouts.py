"""Handouts: one PDF per notebook, printed by headless Chromium from the course website.

    make handouts          # builds the website first, then writes build/handouts/NN_topic.pdf

Each page of build/site/ is served on 127.0.0.1, opened in Debian's Chromium (as the browser
tests drive it, tools/lab.py), left to render (the explorers from their saved state, the
math by MathJax), then printed to A4 with its backgrounds. Chinese text needs a CJK font on
the machine: Debian's fonts-noto-cjk (``apt-get install fonts-noto-cjk``); without one the
build stops and says so, rather than printing empty boxes.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools.lab import LAUNCH_ARGS  # Debian's Chromium, as the browser tests drive it
from tools.serve import serving
from tools.site import OUT as SITE, REPO, notebook_pages, wait_rendered

OUT = REPO / "build" / "handouts"
PDF_OPTIONS = {"format": "A4", "print_background": True,
               "margin": {"top": "12mm", "bottom": "12mm", "left": "10mm", "right": "10mm"}}


def cjk_font_missing() -> str | None:
    """Why Chinese text would not render in print (no CJK font fontconfig knows), or None."""
    if not shutil.which("fc-list"):
        return "fc-list (fontconfig) not found"
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    if not fonts.strip():
        return "no font for Chinese is installed: apt-get install fonts-noto-cjk"
    return None


def pdf_name(page: str) -> str:
    """``solutions/02_qkv_solutions`` -> ``02_qkv_solutions.pdf`` (one flat folder of PDFs)."""
    return Path(page).name + ".pdf"


def print_pages(browser: object, url: str, out: Path, pages: list[str] | None = None) -> dict[str, Path]:
    """Print each notebook page of the site served at ``url`` with ``browser`` (a Playwright
    browser) into ``out``; returns page -> PDF path."""
    reason = cjk_font_missing()
    if reason:
        raise RuntimeError(f"handouts: {reason}")
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    try:
        for name in pages or notebook_pages():
            page.goto(f"{url}{name}.html", wait_until="load")
            wait_rendered(page)
            path = out / pdf_name(name)
            page.pdf(path=str(path), **PDF_OPTIONS)  # prints with the print style sheet
            written[name] = path
    finally:
        page.close()
    return written


def print_handouts(site: Path = SITE, out: Path = OUT, pages: list[str] | None = None) -> dict[str, Path]:
    """Serve the built ``site``, start Chromium, print each notebook page into ``out``."""
    from playwright.sync_api import sync_playwright

    with serving(site) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(**LAUNCH_ARGS)
        try:
            return print_pages(browser, url, out, pages)
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print one PDF per notebook from build/site/.")
    parser.add_argument("--site", type=Path, default=SITE)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"{args.site}/index.html not found: build the website first (make site)", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    written = print_handouts(args.site, args.out)
    size = sum(p.stat().st_size for p in written.values())
    print(f"handouts: {len(written)} PDFs in {args.out} ({size / 2**20:.1f} MiB, "
          f"{time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
