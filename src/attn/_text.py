"""Fixed-width text tables that line up in Chinese too.

A Chinese character takes two columns of a monospaced font (a notebook's output), a Latin
letter one; ``str.ljust`` counts characters, so a column of Chinese headers would come out too
wide. These pad by columns instead; for English text they are ``str.ljust`` and ``str.rjust``.
"""
from __future__ import annotations

import unicodedata

__all__ = ["width", "ljust", "rjust"]


def width(text: str) -> int:
    """The columns ``text`` takes in a monospaced font: 2 per wide (CJK) character, else 1."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def ljust(text: str, columns: int) -> str:
    """``text`` padded on the right with spaces to ``columns`` columns (never cut)."""
    return text + " " * max(columns - width(text), 0)


def rjust(text: str, columns: int) -> str:
    """``text`` padded on the left with spaces to ``columns`` columns (never cut)."""
    return " " * max(columns - width(text), 0) + text
