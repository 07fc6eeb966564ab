"""Notebook 00's map and glossary against the lessons themselves.

The map must list every lesson with its real title and time, and its total must be their sum;
every lesson must link to its solutions and to the next lesson; every glossary term must appear
beside its English name in some lesson (the course's promise: "the notebooks give each term
beside its English name where it first comes up").
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if not p.name.startswith("00_"))
TIME = re.compile(r"\*\*Estimated time:\*\* (\d+) minutes")


def cells(path: Path, kind: str = "markdown") -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def start_here() -> list[str]:
    return cells(NOTEBOOKS / "00_start_here.ipynb")


def map_rows() -> dict[str, tuple[str, int]]:
    """notebook file -> (title, minutes), from 00's map table."""
    text = next(c for c in start_here() if c.startswith("## The map"))
    rows = {}
    for m in re.finditer(r"^\| \[\d\d\]\(\./(\S+?\.ipynb)\) \| (.+?) \| .+? \| (\d+) min \|$", text, re.M):
        rows[m.group(1)] = (m.group(2), int(m.group(3)))
    return rows


def test_there_are_lessons():
    assert len(LESSONS) >= 9


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_map_lists_the_lesson_with_its_title_and_time(path):
    first = cells(path)[0]
    title = first.splitlines()[0].lstrip("# ").strip()
    title = re.sub(r"^\d\d · ", "", title)
    m = TIME.search(first)
    assert m, f"{path.name}: its first cell has no '**Estimated time:** N minutes'"
    rows = map_rows()
    assert path.name in rows, f"00's map does not list {path.name}"
    assert rows[path.name] == (title, int(m.group(1)))


def test_the_map_lists_nothing_else_and_its_total_is_the_sum():
    rows = map_rows()
    assert set(rows) == {p.name for p in LESSONS}
    total = sum(minutes for _, minutes in rows.values())
    text = next(c for c in start_here() if c.startswith("## The map"))
    m = re.search(r"\*\*In all: about (\d+) minutes \((\d+) h (\d\d) min\)\*\*", text)
    assert m, "00's map states no total time"
    assert int(m.group(1)) == total and int(m.group(2)) * 60 + int(m.group(3)) == total


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_links_its_solutions_and_the_next_lesson(path):
    text = "\n".join(cells(path))
    solutions = NOTEBOOKS / "solutions" / f"{path.stem}_solutions.ipynb"
    assert solutions.exists(), f"no solutions notebook for {path.name}"
    assert f"](solutions/{solutions.name})" in text, f"{path.name} does not link {solutions.name}"
    later = [p for p in LESSONS if p.name > path.name]
    if later:
        assert re.search(rf"Next: \[[^\]]+\]\({re.escape(later[0].name)}\)", text), \
            f"{path.name} has no 'Next: [...]({later[0].name})' link"


def glossary() -> list[tuple[str, str]]:
    text = next(c for c in start_here() if c.startswith("## Glossary"))
    pairs = []
    for m in re.finditer(r"^\| (.+?) \| (.+?) \| .+? \|$", text, re.M):
        english, chinese = m.group(1), m.group(2)
        if english in ("English", "---") or set(english) <= {"-", " "}:
            continue
        pairs.append((english, chinese))
    return pairs


def _alternatives(english: str) -> list[list[str]]:
    """'to decay, to fade' -> [['decay'], ['fade']]; 'worked (detailed) example' -> [['worked', 'example']]."""
    plain = re.sub(r"\([^)]*\)", " ", english)
    alts = []
    for alt in re.split(r",|/", plain):
        words = [w for w in re.findall(r"[A-Za-z√]+", alt) if w.lower() not in {"to", "the", "a", "of", "an"}]
        if words:
            alts.append(words)
    return alts


def _beside(text: str, chinese: str, english: str, window: int = 90) -> bool:
    for m in re.finditer(re.escape(chinese), text):
        before = text[max(0, m.start() - window): m.start()].lower()
        for words in _alternatives(english):
            if all(w.lower()[: max(4, len(w) - 2)] in before for w in words):
                return True
    return False


LESSON_TEXT = {p.name: "\n".join(cells(p)) for p in LESSONS}


@pytest.mark.parametrize("english,chinese", glossary(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_glossary_term_appears_beside_its_english_in_a_lesson(english, chinese):
    where = [name for name, text in LESSON_TEXT.items() if _beside(text, chinese, english)]
    assert where, f"{chinese} ({english}) never appears right after its English name in a lesson"


def test_the_glossary_test_can_fail():
    assert not _beside("the weights are summed (加权求和)", "加权求和", "dot product")
    assert _beside("a weighted sum (加权求和)", "加权求和", "weighted sum")


def test_the_glossary_lists_each_term_once():
    terms = [chinese for _, chinese in glossary()]
    assert len(terms) == len(set(terms)), sorted({t for t in terms if terms.count(t) > 1})
