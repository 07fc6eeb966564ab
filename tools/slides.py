"""Slide metadata for every notebook, so that jupyterlab-rise presents it as a talk.

    python -m tools.slides            # write the metadata into notebooks/**/*.ipynb
    python -m tools.slides --check    # exit 1 and list the notebooks whose metadata differs

One idea per slide, by a rule on each cell's source (never by hand, so that the slides follow
the notebooks when they change; running it twice changes nothing):

- a markdown cell that opens with a level-1 or level-2 heading (``#``, ``##``) starts a new
  slide: the notebook's title, each numbered section, Summary, Exercises;
- any other markdown cell starts a sub-slide (below the section's slide): in the course a
  markdown cell is one idea, a paragraph and its formula, and the code cells after it show it;
- a code cell that displays an explorer (it carries the cell tag ``nbval-ignore-output``, as
  every widget cell does) starts a sub-slide of its own, so the live explorer fills the screen;
- the versions cell (that tag and "version") is skipped in the talk;
- every other code cell stays on the slide of the text above it (``-``).

The notebook also gets RISE settings: start at the beginning, scroll within a tall slide.
Only metadata changes: sources and outputs are untouched, so nbval needs no re-execution.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

from tools.execute import output_ignored

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
RISE = {"scroll": True, "start_slideshow_at": "beginning"}
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
_HEADING = re.compile(r"#{1,2}\s")


def slide_type(cell: dict) -> str:
    """The slideshow type the rule gives a notebook cell (a dict as in the .ipynb JSON)."""
    source = "".join(cell.get("source", ""))
    if cell.get("cell_type") == "markdown":
        return "slide" if _HEADING.match(source.lstrip()) else "subslide"
    if cell.get("cell_type") == "code" and output_ignored(cell):
        return "skip" if "version" in source.lower() else "subslide"
    return "-"


def notebook_paths() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def with_slides(nb: dict) -> dict:
    """A copy of the notebook JSON with the slide metadata of the rule (first cell: a slide)."""
    out = json.loads(json.dumps(nb))
    for i, cell in enumerate(out["cells"]):
        kind = "slide" if i == 0 else slide_type(cell)
        cell.setdefault("metadata", {})["slideshow"] = {"slide_type": kind}
    out.setdefault("metadata", {})["rise"] = dict(RISE)
    return out


def _write(path: Path, nb: dict) -> None:
    # As Jupyter writes notebooks (nbformat's layout, final newline), so that a diff shows
    # the metadata lines only.
    path.write_text(nbformat.writes(nbformat.from_dict(nb)) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Set (or --check) the slide metadata of every notebook.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook differs")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/**/*.ipynb)")
    args = parser.parse_args(argv)
    differ = []
    for path in args.paths or notebook_paths():
        nb = json.loads(path.read_text(encoding="utf-8"))
        new = with_slides(nb)
        if new == nb:
            continue
        differ.append(path)
        if not args.check:
            _write(path, new)
    verb = "differ from the rule" if args.check else "updated"
    print(f"{len(differ)} notebook(s) {verb}" + "".join(f"\n  {p}" for p in differ))
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
