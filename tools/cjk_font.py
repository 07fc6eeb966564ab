"""Rebuild the course's Chinese font: a subset of Noto Sans CJK SC (SIL OFL, LICENSE-OFL.txt).

    python -m tools.cjk_font [--source /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc]

The pictures draw their Chinese words (the examples' tokens; in the Chinese edition, every
title, label and readout) with src/attn/drawing/fonts/NotoSansCJKsc-course-subset.otf. The whole font
is 16 MB in Debian's fonts-noto-cjk (apt-get install fonts-noto-cjk); the subset keeps the
characters the course draws:

- every character the shipped subset already has (the tokens of attn.examples among them);
- printable ASCII, and the signs the pictures use (− × · √ → ← ≈ ≤ ≥ ² ...);
- every character of the Chinese catalogue (src/attn/locale/zh/LC_MESSAGES/attn.po);
- every character of the Chinese edition's training text (notebook 13's Tang poems): its
  explorer labels the characters the shipped model reads and writes.

Run it after the catalogue gains characters; tests/attn/test_catalogue.py fails until then.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

from attn.lessons.language_model.corpus import load_text
from tools.catalogue import po_path, read

ROOT = Path(__file__).resolve().parent.parent
FONT = ROOT / "src" / "attn" / "drawing" / "fonts" / "NotoSansCJKsc-course-subset.otf"
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
FAMILY = "Noto Sans CJK SC"
SIGNS = "−×·√→←↔≈≠≤≥±²³¹⁴…–—‖°′∈ΔΣθαβγλσπ⏎␣"


def characters_needed() -> set[str]:
    """Every character the subset must have (see the module's docstring)."""
    chars = set(map(chr, TTFont(FONT).getBestCmap())) if FONT.exists() else set()
    chars |= {chr(c) for c in range(0x20, 0x7F)} | set(SIGNS)
    for message in read(po_path("zh"), "zh"):
        chars |= set(message.id) | set(message.string or "")
    chars |= set(load_text("zh"))
    return {c for c in chars if c.isprintable()}


def source_font(path: Path) -> TTFont:
    """The Simplified Chinese face of a Noto Sans CJK collection (or a single font file)."""
    if path.suffix.lower() != ".ttc":
        return TTFont(path)
    for font in TTCollection(path).fonts:
        if font["name"].getDebugName(1) == FAMILY:
            return font
    raise ValueError(f"--source: expected a collection with the face {FAMILY!r}, got none in {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cjk_font", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    args = parser.parse_args(argv)
    if not args.source.exists():
        print(f"{args.source} not found: apt-get install fonts-noto-cjk, or give --source", file=sys.stderr)
        return 1
    wanted = characters_needed()
    font = source_font(args.source)
    have = set(map(chr, font.getBestCmap()))
    options = subset.Options()
    options.layout_features = ["kern", "liga", "locl", "vert"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in wanted & have))
    subsetter.subset(font)
    font.recalcTimestamp = False  # the same characters give the same bytes
    font.save(FONT)
    lacking = sorted(wanted - have)
    print(f"{FONT.relative_to(ROOT)}: {len(wanted & have)} characters, {FONT.stat().st_size:,} bytes"
          + (f"; not in {FAMILY}: {''.join(lacking)!r}" if lacking else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
