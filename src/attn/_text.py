"""Fixed-width text that lines up, and wraps, in Chinese too.

A Chinese character takes two columns of a monospaced font (a notebook's output), a Latin
letter one; ``str.ljust`` counts characters, so a column of Chinese headers would come out too
wide. These pad by columns instead; for English text they are ``str.ljust`` and ``str.rjust``.
"""
from __future__ import annotations

import unicodedata

__all__ = ["width", "ljust", "rjust", "wrap"]


def width(text: str) -> int:
    """The columns ``text`` takes in a monospaced font: 2 per wide (CJK) character, else 1."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def ljust(text: str, columns: int) -> str:
    """``text`` padded on the right with spaces to ``columns`` columns (never cut)."""
    return text + " " * max(columns - width(text), 0)


def rjust(text: str, columns: int) -> str:
    """``text`` padded on the left with spaces to ``columns`` columns (never cut)."""
    return " " * max(columns - width(text), 0) + text


def wrap(text: str, columns: int) -> str:
    """``text`` with every line broken so that none takes more than ``columns`` columns (a
    printed line no wider than the page). A line breaks after its last space that fits, so
    English words stay whole; a line of Chinese, or a word longer than ``columns``, breaks
    between characters. The text's own line breaks are kept.
    """
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 2:
        raise ValueError(f"columns: expected an int >= 2 (a wide character takes two), got {columns!r}")
    out = []
    for line in text.split("\n"):
        while width(line) > columns:
            cut, used = 0, 0
            while width(line[cut]) + used <= columns:  # the most characters that fit
                used += width(line[cut])
                cut += 1
            space = line.rfind(" ", 0, cut + 1)
            if space > 0:  # break at the space, which is dropped
                out.append(line[:space])
                line = line[space + 1:]
            else:
                out.append(line[:cut])
                line = line[cut:]
        out.append(line)
    return "\n".join(out)
