"""Heading order of every notebook (lessons and worked solutions): one H1, no skipped level.

A screen reader lists a page by its headings and jumps between them by level; JupyterLab's
table of contents, the website's page outline and the handouts' PDF outline are built from
them too. So each notebook has exactly one H1, its title, in its first markdown cell, and
going down a level never skips one (an H2 followed by an H4 hides the H4 from a reader who
moves by H3). Headings are markdown ``#`` lines outside code fences and HTML ``<h1>``-``<h6>``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HTML = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE | re.DOTALL)


def headings(markdown: str) -> list[tuple[int, str]]:
    """(level, text) of each heading of a markdown cell, in order: ``#`` lines and HTML
    ``<hN>...</hN>`` elements (each on one line), outside code fences."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    for line in markdown.splitlines():
        m = _FENCE.match(line)
        if fence is not None:  # inside a fence until one of the same kind, at least as long
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            found.append((len(atx.group(1)), (atx.group(2) or "").strip()))
            continue
        found += [(int(h.group(1)), re.sub(r"<[^>]+>", "", h.group(2)).strip()) for h in _HTML.finditer(line)]
    return found


def notebook_headings(path: Path) -> list[tuple[int, int, str]]:
    """(markdown cell index, level, text) of every heading of the notebook at ``path``."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(i, level, text) for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "markdown"
            for level, text in headings("".join(cell["source"]))]


def order_problems(found: list[tuple[int, int, str]], first_markdown: int) -> list[str]:
    """What is wrong with a notebook's headings (empty if nothing): not one H1, an H1 outside
    the first markdown cell, a first heading that is not the H1, a skipped level."""
    problems = []
    h1 = [(i, text) for i, level, text in found if level == 1]
    if len(h1) != 1:
        problems.append(f"expected exactly one H1, got {len(h1)}: {h1}")
    problems += [f"cell {i}: the H1 {text!r} is not in the first markdown cell ({first_markdown})"
                 for i, text in h1 if i != first_markdown]
    if found and found[0][1] != 1:
        problems.append(f"cell {found[0][0]}: the first heading {found[0][2]!r} is an H{found[0][1]}, not the H1")
    for (_, prev, _), (i, level, text) in zip(found, found[1:]):
        if level > prev + 1:
            problems.append(f"cell {i}: H{prev} -> H{level} skips a level at {text!r}")
    return problems


@pytest.mark.parametrize("path", PATHS, ids=[str(p.relative_to(NOTEBOOKS)) for p in PATHS])
def test_one_h1_and_no_skipped_level(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    first_markdown = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown")
    problems = order_problems(notebook_headings(path), first_markdown)
    assert problems == [], f"{path.relative_to(NOTEBOOKS)}: " + "; ".join(problems)


def test_every_notebook_is_checked():
    lessons = [p for p in PATHS if p.parent == NOTEBOOKS]
    solutions = [p for p in PATHS if p.parent.name == "solutions"]
    assert len(lessons) >= 12, f"only {len(lessons)} notebooks found in notebooks/: PATHS in tests/notebooks/test_headings.py misses some"
    assert len(solutions) >= 11, (f"only {len(solutions)} solutions found under notebooks/: PATHS in "
                                  f"tests/notebooks/test_headings.py misses some")


@pytest.mark.parametrize("markdown, expected", [
    ("# Title\n\nText\n## Part", [(1, "Title"), (2, "Part")]),
    ("```python\n# a comment, not a heading\n```\n### Real", [(3, "Real")]),
    ("~~~\n# inside\n~~~\n#no space is not a heading\n    # indented code", []),
    ("<h2>An <em>HTML</em> heading</h2>\n#### After", [(2, "An HTML heading"), (4, "After")]),
    ("## Closed ##", [(2, "Closed")]),
])
def test_headings_reads_markdown_and_html(markdown, expected):
    assert headings(markdown) == expected


def test_order_problems_names_each_fault():
    assert order_problems([(0, 1, "T"), (3, 2, "A"), (4, 3, "B"), (5, 2, "C")], 0) == []
    assert "H2 -> H4" in " ".join(order_problems([(0, 1, "T"), (3, 2, "A"), (4, 4, "B")], 0))
    assert "exactly one H1, got 2" in " ".join(order_problems([(0, 1, "T"), (3, 1, "U")], 0))
    assert "not in the first markdown cell" in " ".join(order_problems([(2, 1, "T")], 0))
    assert "not the H1" in " ".join(order_problems([(0, 2, "A"), (1, 1, "T")], 0))
