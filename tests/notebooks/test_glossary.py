"""One word for each idea: the Chinese edition writes every term as notebook 00's glossary gives
it, and never with the other words its last column lists (docs/translating.md).

The glossary's tables with a column "not written" name, for each idea, the words a reader would
take for another idea: 本章 ("this notebook") for 教材 (the textbook), 热图 for 热力图, 检查函数
for 检查器, ``dropout`` for 暂退法. None may appear in what a Chinese learner reads: the prose of
every Chinese notebook, every line a Chinese notebook printed (its stored outputs and figure
descriptions), and every translation of the catalogue, from which the explorers, the checkers and
the printed lines take their words. A word of code is not a word of the prose (``nn.LayerNorm``,
``dropout=0.1``, ``"neighbours"``), and an English term may follow its Chinese in brackets:
暂退法（dropout）.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from tools import twins

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "src" / "attn" / "locale" / "zh" / "LC_MESSAGES" / "attn.po"
NOT_WRITTEN = {"en": "not written", "zh": "不写作"}

def recurring_words(path: Path = twins.GLOSSARY) -> list[tuple[str, str, tuple[str, ...]]]:
    """(English, 中文, the words not written) of every glossary row that names such words."""
    found = []
    for table in twins.glossary_tables(path):
        for row in table:
            column = next((NOT_WRITTEN[lang] for lang in NOT_WRITTEN if NOT_WRITTEN[lang] in row), None)
            if column and row[column] not in ("", "—"):
                found.append((row["English"], row["中文"], tuple(w.strip() for w in row[column].split(","))))
    return found


#: An English gloss in full-width brackets, with no Chinese in it: 暂退法（dropout）.
GLOSS = re.compile(r"（[^（）\u3400-\u9fff]*）")


def pattern(word: str) -> re.Pattern[str]:
    """Where ``word`` is written as a word of the text.

    A Chinese word anywhere. An English word standing alone, as written or capitalised (dropout,
    Dropout; not CLS for cls): not part of a name of code (``nn.Dropout``, ``dropout=0.1``,
    ``dropout(x)``, ``'block'``, ``memory-efficient``).
    """
    if re.search(r"[\u3400-\u9fff]", word):
        return re.compile(re.escape(word))
    forms = "|".join(re.escape(form) for form in dict.fromkeys((word, word[:1].upper() + word[1:])))
    return re.compile(rf"(?<![A-Za-z0-9_.\-'\"`/\\^+=\[])(?:{forms})(?![A-Za-z0-9_\-'\"`(\[=])")


def written(text: str, words: list[tuple[str, str, tuple[str, ...]]]) -> list[str]:
    """The words of ``words``' last column that ``text`` writes, each once, in the glossary's order."""
    without_glosses = GLOSS.sub(" ", text)
    found = []
    for _, _, others in words:
        for word in others:
            where = text if re.search(r"[\u3400-\u9fff]", word) else without_glosses
            if pattern(word).search(where) and word not in found:
                found.append(word)
    return found


WORDS = recurring_words()
#: A field of a catalogue sentence, such as {memory}: a name of the code, filled when shown.
FIELD = re.compile(r"\{[^{}]*\}")


def test_the_glossary_is_read():
    layout = ("notebooks/00_start_here.ipynb: the glossary's rows with a column 'not written' are read as "
              "| English | 中文 | ... | not written |, the words not written separated by commas; keep that layout")
    for row in (("heatmap", "热力图", ("热图",)),
                ("the chapter (the textbook, one of the two sources)", "教材", ("本章",)),
                ("dropout", "暂退法", ("dropout", "做暂退", "被暂退")),
                ("prerequisites", "先修知识", ("预备知识", "前置内容"))):
        assert row in WORDS, f"{layout}: the row of {row[1]} was not read as {row}"
    assert len(WORDS) > 25, f"{layout}: read {len(WORDS)} rows"


def test_the_chinese_glossary_is_the_english_one():
    """notebooks/zh/00 holds the same words, so that a Chinese reader finds them in Chinese."""
    zh = [(chinese, others) for _, chinese, others in recurring_words(twins.ZH / twins.GLOSSARY.name)]
    en = [(chinese, others) for _, chinese, others in WORDS]
    differ = [f"{a} against {b}" for a, b in zip(en, zh) if a != b] or [f"{len(en)} rows against {len(zh)}"]
    assert zh == en, (f"notebooks/zh/00_start_here.ipynb's glossary gives other words than notebooks/00_start_here.ipynb's "
                      f"(中文 and the words not written, row by row): {differ[:3]}: copy the English one's rows")


def test_a_word_not_written_is_found():
    assert written("Transformer 块在三处做暂退", WORDS) == ["做暂退"]
    assert written("两个 LayerNorm 各有一个增益；本章的热图", WORDS) == ["LayerNorm", "本章", "热图"]
    assert written("Dao et al., 2022；记忆（memory）；Dropout 之后", WORDS) == ["dropout", "et al."]
    assert written("暂退法（dropout）、nn.Dropout、dropout=0.1、nn.LayerNorm(4)、'block'、\"next\"、"
                   "省内存（memory-efficient）内核、tasks[\"neighbours\"]", WORDS) == []
    assert written("neighbours -> 对角线；naive：斜率；previous  最高", WORDS) == [
        "naive", "previous", "neighbours"]
    assert written("CLS 标签：第一个词元的标签；[CLS]", WORDS) == []


def _where(found: list[tuple[int, str]]) -> dict[str, list[int]]:
    cells: dict[str, list[int]] = {}
    for k, text in found:
        for word in written(text, WORDS):
            cells.setdefault(word, []).append(k)
    return cells


def _name(path: Path) -> str:
    return str(path.relative_to(twins.ZH))


@pytest.mark.parametrize("part", ["prose", "outputs"])
@pytest.mark.parametrize("path", twins.chinese_notebooks(), ids=_name)
def test_a_chinese_notebook_writes_one_word_for_each_idea(path, part):
    texts = ([(k, twins.words(source)) for k, source in twins.prose(path) if not twins.is_glossary(source)]
             if part == "prose"
             else [(k, twins.ERROR_LINE.sub(" ", text)) for k, text in twins.outputs(path)])
    cells = _where(texts)
    glossary = {word: chinese for _, chinese, others in WORDS for word in others}
    unexpected = {f"{word} (cells {cells[word]}): write {glossary[word]}" for word in cells}
    assert not unexpected, f"{_name(path)}, {part}: {sorted(unexpected)}"


def test_the_catalogue_writes_one_word_for_each_idea():
    """The explorers, the checkers and every printed line take their Chinese from the catalogue."""
    with open(CATALOGUE, "rb") as f:
        catalogue = read_po(f)
    glossary = {word: chinese for _, chinese, others in WORDS for word in others}
    found = [f"{m.id!r} -> {m.string!r}: {word} (write {glossary[word]})"
             for m in catalogue if m.id and isinstance(m.string, str)
             for word in written(FIELD.sub(" ", m.string), WORDS)]
    assert not found, f"{len(found)} translations:\n" + "\n".join(found)
