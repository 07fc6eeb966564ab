"""Notebook 00's map and glossary against the lessons themselves.

The map and its total are written from the lessons (python -m tools.lesson sync, tools/lesson.py):
the test checks that they are what the notebooks say. Every lesson must link to its solutions and
to the next lesson, in both languages; every glossary term must appear
beside its English name in some lesson (the course's promise: "the notebooks give each term
beside its English name where it first comes up").
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import lesson

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if not p.name.startswith("00_"))


def cells(path: Path, kind: str = "markdown") -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def start_here() -> list[str]:
    return cells(NOTEBOOKS / "00_start_here.ipynb")


def test_the_generated_tables_are_what_the_notebooks_say():
    """00's map and total, the READMEs' notebook tables and the teaching guides' Binder and time
    tables are written from the notebooks by tools/lesson.py; each names its file and line."""
    stale = lesson.sync(ROOT, check=True)
    assert not stale, "\n".join(map(str, stale))


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_states_its_title_time_and_summary(path):
    lesson.read_lesson(path.stem, ROOT)  # raises LessonError, saying what to write where


def _last_lines(path: Path) -> str:
    return f"{path.relative_to(ROOT)}, its last cell"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_links_its_solutions_and_the_next_lesson(path):
    text = "\n".join(cells(path))
    solutions = NOTEBOOKS / "solutions" / f"{path.stem}_solutions.ipynb"
    assert solutions.exists(), f"no solutions notebook for {path.name}: python -m tools.lesson new writes one"
    assert f"](solutions/{solutions.name})" in text, \
        f"{_last_lines(path)}: write 'Worked solutions: [solutions/{solutions.name}](solutions/{solutions.name}).'"
    later = [p for p in LESSONS if p.name > path.name]
    if later:
        title = lesson.read_lesson(later[0].stem, ROOT).title["en"]
        assert re.search(rf"Next: \[[^\]]+\]\({re.escape(later[0].name)}\)", text), \
            f"{_last_lines(path)}: write the line 'Next: [{later[0].stem[:2]} {title}]({later[0].name})'"
        zh = NOTEBOOKS / "zh" / path.name
        zh_title = lesson.read_lesson(later[0].stem, ROOT).title["zh"]
        assert re.search(rf"下一课：\[[^\]]+\]\({re.escape(later[0].name)}\)", "\n".join(cells(zh))), \
            f"{_last_lines(zh)}: write the line '下一课：[{later[0].stem[:2]} {zh_title}]({later[0].name})'"


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
