"""Handouts: one PDF per notebook and language, printed by headless Chromium from the website.

    make handouts          # builds the website first, then writes build/handouts/NN_topic.pdf
                           # (English) and build/handouts/zh/NN_topic.pdf (中文)

Each notebook page of build/site/ (the English site and the Chinese one in build/site/zh/) is
served on 127.0.0.1, opened in Debian's Chromium (as the browser tests drive it, tools/lab.py),
left to render (the explorers from their saved state, the math by MathJax), then printed to A4
with its backgrounds. Chinese text needs a CJK font on the machine: Debian's fonts-noto-cjk
(``apt-get install fonts-noto-cjk``); without one the build stops and says so, rather than
printing empty boxes.
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
from tools.site import EDITIONS, OUT as SITE, REPO, edition_of, notebook_pages, wait_rendered

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


def handout_pages() -> list[str]:
    """Every notebook page of the site, in both languages, as its path under build/site/
    without .html: ``00_start_here``, ..., ``zh/00_start_here``, ..."""
    return [e.prefix + name for e in EDITIONS.values() for name in notebook_pages(e.code)]


def pdf_name(page: str) -> str:
    """A page's PDF, one flat folder per language: ``solutions/02_qkv_solutions`` ->
    ``02_qkv_solutions.pdf``, ``zh/solutions/02_qkv_solutions`` -> ``zh/02_qkv_solutions.pdf``."""
    return edition_of(page).prefix + Path(page).name + ".pdf"


def print_page(page: object, path: Path) -> Path:
    """Print a page of the site, open and rendered in a browser (a Playwright page), to ``path``:
    A4 with its backgrounds, laid out by the print style sheet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page.pdf(path=str(path), **PDF_OPTIONS)
    return path


def print_pages(browser: object, url: str, out: Path, pages: list[str] | None = None) -> dict[str, Path]:
    """Print each notebook page (``handout_pages()``, or ``pages``) of the site served at
    ``url`` with ``browser`` (a Playwright browser) into ``out``; returns page -> PDF path."""
    reason = cjk_font_missing()
    if reason:
        raise RuntimeError(f"handouts: {reason}")
    written = {}
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    try:
        for name in pages or handout_pages():
            page.goto(f"{url}{name}.html", wait_until="load")
            wait_rendered(page)
            written[name] = print_page(page, out / pdf_name(name))
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
    parser = argparse.ArgumentParser(description="Print one PDF per notebook and language from build/site/.")
    parser.add_argument("--site", type=Path, default=SITE)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    missing = [args.site / e.prefix / "index.html" for e in EDITIONS.values()
               if not (args.site / e.prefix / "index.html").is_file()]
    if missing:
        print(f"{', '.join(map(str, missing))} not found: build the website first (make site)", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    written = print_handouts(args.site, args.out)
    for edition in EDITIONS.values():
        pdfs = [path for page, path in written.items() if edition_of(page) == edition]
        size = sum(p.stat().st_size for p in pdfs)
        print(f"handouts ({edition.code}): {len(pdfs)} PDFs in {args.out / edition.prefix} ({size / 2**20:.1f} MiB)")
    print(f"handouts: {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
