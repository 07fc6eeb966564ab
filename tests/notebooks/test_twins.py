"""The Chinese edition: every English notebook has a Chinese twin that runs the same code,
uses 00's glossary for its terms, and shows the learner Chinese, laid out for Chinese: tables
padded by display width, Chinese quotes, no space between two Chinese characters
(docs/translating.md). tests/test_glossary.py holds it to one word for each idea."""
from __future__ import annotations

import ast
import html
import keyword
import re
from pathlib import Path

import nbformat
import pytest

from attn import _text as attn_text
from tools import twins

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = twins.english_notebooks()
CHINESE = twins.chinese_notebooks()
CJK = re.compile(r"[\u3400-\u9fff]")


def _name(path: Path) -> str:
    return str(path.relative_to(twins.NOTEBOOKS))


@pytest.mark.parametrize("english", ENGLISH, ids=_name)
def test_the_chinese_twin_runs_the_same_code(english):
    found = twins.drift(english)
    assert found == [], ("\n".join(found) + f"\nGive {_name(twins.twin(english))} the English code cells and tags: "
                         f"python -m tools.twins --carry copies them (then translate their comments and docstrings "
                         f"again), and re-execute: python -m tools.execute {english.stem.removesuffix('_solutions')}")


def test_every_chinese_notebook_has_an_english_one():
    orphans = [p for p in CHINESE if (twins.NOTEBOOKS / p.relative_to(twins.ZH)) not in ENGLISH]
    assert orphans == [], (f"{[str(p.relative_to(twins.ROOT)) for p in orphans]}: no English notebook of that name: "
                           f"name each Chinese notebook after its English original (notebooks/zh/X.ipynb for "
                           f"notebooks/X.ipynb), or remove it")


def test_drift_is_found(tmp_path, monkeypatch):
    """A changed line, a changed language, a lost directive and a comment-only change."""
    def pair(en_cells, zh_cells):
        for folder, cells in ((tmp_path, en_cells), (tmp_path / "zh", zh_cells)):
            folder.mkdir(exist_ok=True)
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
            nbformat.write(nb, folder / "01_x.ipynb")
        return tmp_path / "01_x.ipynb"

    monkeypatch.setattr(twins, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(twins, "ZH", tmp_path / "zh")
    first_en, first_zh = 'import attn\nset_language("en")', 'import attn\nset_language("zh")'
    assert twins.drift(pair([first_en, "x = 1  # one"], [first_zh, "x = 1  # 一"])) == []
    assert twins.drift(pair([first_en, "x = 1"], [first_zh, "x = 2"]))
    assert twins.drift(pair([first_en, "x = 1"], [first_en, "x = 1"]))
    assert twins.drift(pair([first_en, "x", "y"], [first_zh, "x"]))


def test_tag_drift_is_found_and_carried(tmp_path, monkeypatch):
    """Cells whose code is the same and whose tags differ: a drift, and ``carry`` copies them."""
    monkeypatch.setattr(twins, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(twins, "ZH", tmp_path / "zh")
    first = {"en": 'import attn\nset_language("en")', "zh": 'import attn\nset_language("zh")'}

    def write(language, tags):
        folder = tmp_path / "zh" if language == "zh" else tmp_path
        folder.mkdir(exist_ok=True)
        cells = [nbformat.v4.new_code_cell(first[language]), nbformat.v4.new_code_cell("x = 1")]
        if tags is not None:
            cells[1].metadata["tags"] = tags
        nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / "01_x.ipynb")

    english = tmp_path / "01_x.ipynb"
    for en_tags, zh_tags in ((["raises-exception"], None), (None, ["hide-input"]),
                             (["hide-input"], ["raises-exception"])):
        write("en", en_tags)
        write("zh", zh_tags)
        assert twins.drift(english) == [
            f"01_x.ipynb: code cell 2's tags differ: {en_tags or []} and {zh_tags or []}"]
        assert twins.carry(english) == 1
        assert twins.drift(english) == []
    write("en", ["hide-input"])
    write("zh", ["hide-input"])
    assert twins.drift(english) == [] and twins.carry(english) == 0


def test_a_docstring_is_prose_and_a_string_is_code(tmp_path, monkeypatch):
    """A learner reads an exercise's docstring, so its twin writes it in Chinese; a string that is
    data (a task's name, a sentence for ``tr``) is code, the same in both."""
    def pair(en_code, zh_code):
        for folder, code in ((tmp_path, en_code), (tmp_path / "zh", zh_code)):
            folder.mkdir(exist_ok=True)
            first = f'import attn\nset_language("{"zh" if folder.name == "zh" else "en"}")'
            cells = [nbformat.v4.new_code_cell(first), nbformat.v4.new_code_cell(code)]
            nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / "01_x.ipynb")
        return tmp_path / "01_x.ipynb"

    monkeypatch.setattr(twins, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(twins, "ZH", tmp_path / "zh")
    en = 'def f(x):\n    """The mean of x.\n\n    Args:\n        x: (L,).\n    """\n    return x.mean()  # one'
    zh = 'def f(x):\n    """x 的均值。\n\n    参数：\n        x：(L,)。\n    """\n    return x.mean()  # 一'
    assert twins.drift(pair(en, zh)) == []
    assert twins.drift(pair(en, zh.replace("x.mean()", "x.sum()")))
    assert twins.drift(pair('print("neighbours")', 'print("相邻计数")'))
    assert twins.drift(pair('def f():\n    return """text"""', 'def f():\n    return """文字"""'))


# --- 00's glossary is the single source of the Chinese terms -----------------------------

def glossary() -> list[tuple[list[str], str]]:
    """(English forms, Chinese term) of every row of 00's tables of the sources' terms and of the
    course's own terms (the tables with a column saying where a term is used)."""
    rows = []
    for table in twins.glossary_tables():
        for row in table:
            if "used by" not in row and "first used in" not in row:
                continue
            english = re.sub(r"\([^)]*\)", "", row["English"])
            forms = [re.sub(r"^to ", "", f.strip()) for f in english.split(",") if f.strip()]
            rows.append((forms, row["中文"]))
    return rows


# English words of the glossary that the notebooks also use in another sense, where the
# Chinese rightly has another word: (notebook or "*", English form) -> the other sense.
OTHER_SENSES = {
    ("*", "object"): "a Python object (对象), not the object of a sentence",
    ("*", "subject"): "the subject of a study, not of a sentence",
    ("*", "keywords"): "Python's keyword arguments (关键字参数)",
    ("*", "feature"): "a feature of a tool or of the course",
}


def prose(path: Path) -> str:
    return "\n".join(source for _, source in twins.prose(path))


def test_the_glossary_is_read():
    rows = glossary()
    layout = ("notebooks/00_start_here.ipynb: the glossary's tables are read as | English | 中文 | ... | with a "
              "column 'used by' or 'first used in'; keep that layout")
    assert len(rows) > 100, f"{layout}: read {len(rows)} rows"
    for term in ((["multi-head attention"], "多头注意力"), (["causal mask"], "因果掩码"), (["dropout"], "暂退法")):
        assert term in rows, f"{layout}: the row of {term[0][0]} ({term[1]}) was not read"


@pytest.mark.parametrize("english", ENGLISH, ids=_name)
def test_the_chinese_twin_uses_the_glossary_terms(english):
    if not twins.twin(english).exists():
        pytest.fail(f"no Chinese twin of {_name(english)}")
    text_en, text_zh = prose(english).lower(), prose(twins.twin(english))
    lacking = []
    for forms, chinese in glossary():
        for form in forms:
            if (("*", form) in OTHER_SENSES or (_name(english), form) in OTHER_SENSES
                    or not re.search(rf"\b{re.escape(form.lower())}s?\b", text_en)):
                continue
            if chinese not in text_zh:
                lacking.append(f"{form!r} -> {chinese}")
            break
    assert lacking == [], f"{_name(english)}: its English prose uses these terms, its Chinese twin lacks them"


# --- what a learner reads in a Chinese notebook's outputs is Chinese ---------------------
#
# A word shown to the learner as a label (a task's name, a pattern's, a method's, a step of a
# trace) is text, translated, even when the same word also names something in the code: 08 once
# printed "neighbours -> 对角线" and 04 "Q split into heads", because their words were names of
# the notebook's code. So a Chinese output may write a Latin word only as a name (NAMES), as a
# unit or a function of maths, as an argument of the code that prints it (strength, width), or
# as code: joined to code by a dot, a bracket, a quote or an underscore, a class or its repr
# (KVCache(positions=10, ...)), a name printed with its value ("weights: (5, 5)").

# Names a Chinese text writes in Latin letters: libraries, models, papers, code, units, maths.
NAMES = {
    "PyTorch", "NumPy", "JupyterLab", "Jupyter", "Transformer", "FlashAttention", "RoPE",
    "MiniLM", "BERT", "GPT", "RNN", "LSTM", "SDPA", "Adam", "GELU", "ReLU", "LayerNorm",
    "softmax", "CLS", "SEP", "PAD", "KV", "CPU", "GPU", "torch", "ipywidgets", "attn",
    "min", "max", "autograd", "gradcheck", "WordPiece",
    "MiB", "KiB", "GiB", "FLOPs", "MACs", "tanh", "exp", "log", "sin", "cos", "sqrt",
    "Llama", "Mistral", "Falcon",  # models' names (notebook 14's table)
    *keyword.kwlist,
}
# PyTorch's own error messages, which 05 shows as they are (what a learner will meet), and a
# Python value's repr in quotes ('zeros'): code, not prose.
TORCH_MESSAGES = re.compile(r"batch1 must be a 3D tensor|view size is not compatible.*instead\."
                            r"|value cannot be converted to type \S+ without overflow"
                            r"|shape '\[[^]]*\]' is invalid for input of size \d+"
                            r"|The size of tensor \w \(\d+\) must match the size of tensor \w \(\d+\) at "
                            r"non-singleton dimension \d+|'[^'\n]*'")
# The English of a term follows it in brackets: 梯度消失（vanishing gradient）.
GLOSS = re.compile(r"（[^（）]*）")
# A message about bad input, the house's "argument: expected ..., got ...", which a checker may
# quote: it stays in English, as PyTorch's do.
BAD_INPUT = re.compile(r"\b\w+: expected [^（）\n]*?, got [^（），。\n]*")
# A class's repr, KVCache(positions=10, key shape=(1, 4, 10, 8)): code.
REPR = re.compile(r"\b[A-Z]\w*\((?:[^()\n]|\([^()\n]*\))*\)")
# A number that is none: nan and inf as Python, NumPy, torch and pandas print them (NaN, -Inf),
# in any case.
NOT_A_NUMBER = {"nan", "inf", "infinity"}
# An object's repr with its address, <torch._C.Generator object at 0x7f...>: no prose (a bare
# torch.manual_seed(0) shows it; tests/notebooks/test_notebooks.py asks for it to go).
ADDRESS = re.compile(r"<[^<>\n]* at 0x[0-9a-fA-F]+>")
# A Latin word standing alone: not joined to code by a dot, a bracket, a quote, an underscore...
LATIN_WORD = re.compile(r"(?<![A-Za-z0-9_.'\"`\[\]=\\^/+-])[A-Za-z]{2,}(?![A-Za-z0-9_.'\"`\[\](=\\^/-])")
# An argument of a call, f(x): code. A word in brackets after a space, 小明 (Xiaoming): English.
CALL_ARGUMENT = re.compile(r"[A-Za-z0-9_\])]\($")


def arguments(path: Path) -> set[str]:
    """The names of the arguments a notebook's code passes or takes (``strength=``, ``width``):
    the learner types them, so an output may show them as they are."""
    source = "\n".join(ln for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"
                       for ln in c.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def english_words(text: str, allowed: set[str]) -> list[str]:
    """The Latin words of ``text`` that a Chinese learner reads as English: standing alone, not
    ``allowed``, not nan or inf, not a class name or an acronym (a capital inside), not a name printed with
    its value (``weights: (5, 5)``, ``n = 8``) or as an operand (``weights @ V``)."""
    for code in (twins.ERROR_LINE, GLOSS, BAD_INPUT, TORCH_MESSAGES, ADDRESS, REPR):
        text = code.sub(" ", text)
    found = []
    for match in LATIN_WORD.finditer(text):
        word = match.group()
        if (word in allowed or word.lower() in NOT_A_NUMBER or re.search(r".[A-Z]", word)
                or CALL_ARGUMENT.search(text[:match.start()])
                or re.match(r"\)? *[:=@]", text[match.end():])):  # weights: (5, 5); a module's (tok): Embedding
            continue
        found.append(word)
    return found


def test_english_words_are_found():
    assert english_words("largest difference < 1e-12: True", NAMES) == ["largest", "difference"]
    assert english_words("最大差值 < 1e-12：True", NAMES) == []
    assert english_words("neighbours -> 对角线：数出 1 的个数", {"task"}) == ["neighbours"]
    assert english_words("    naive：斜率 1.94\n     sdpa：斜率 1.00", set()) == ["naive", "sdpa"]
    assert english_words("Q split into heads   (1, 2, 6, 4)", set()) == ["split", "into", "heads"]
    assert english_words("形状 torch.Size([2, 5, 16])，tasks['neighbours']，split_heads(q)", set()) == []
    assert english_words("weights: (5, 5) = (n, n)；width 0，查询 0", {"width"}) == []
    assert english_words("output = weights @ V：正确；weights V", set()) == ["weights"]
    assert english_words("小明 (Xiaoming) 在 (at)；split_heads(q)，softmax(scaled)", set()) == ["Xiaoming", "at"]
    assert english_words("TinyTransformer(\n  (tok): Embedding(10, 32)\n  (mlp): Sequential(", set()) == []
    assert english_words("KVCache(positions=10, key shape=(1, 4, 10, 8))；梯度消失（vanishing gradient）",
                         set()) == []
    assert english_words("报错：\nValueError: query: expected 3 dims\n结束", set()) == []
    assert english_words("会停下：d_model: expected a multiple of num_heads=5, got 12（还试过）", set()) == []
    assert english_words("查询 0：NaN, NaN；Nan；inf, -inf, Inf, -Inf, Infinity", set()) == []
    assert english_words("<torch._C.Generator object at 0x7f3a2c1d0b10>", set()) == []


def test_the_arguments_of_the_code_are_read(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        '%matplotlib inline\ndef f(x, width=0):\n    return g(x, strength=1)\nprint(tr("largest {d}", d=1))')])
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert arguments(tmp_path / "x.ipynb") == {"x", "width", "strength", "d"}


@pytest.mark.parametrize("chinese", CHINESE, ids=lambda p: str(p.relative_to(twins.ZH)))
def test_a_chinese_notebook_shows_no_english_word(chinese):
    name = str(chinese.relative_to(twins.ZH))
    allowed = NAMES | arguments(chinese)
    shown: dict[str, list[int]] = {}
    for k, text in twins.outputs(chinese):
        for word in english_words(text, allowed):
            shown.setdefault(word, []).append(k)
    leaks = {f"{word} (cells {sorted(set(cells))})" for word, cells in shown.items()}
    assert not leaks, f"{name}: English in its outputs: {sorted(leaks)}"


@pytest.mark.parametrize("chinese", CHINESE, ids=lambda p: str(p.relative_to(twins.ZH)))
def test_a_chinese_notebook_comments_its_code_in_chinese(chinese):
    """A comment or a docstring is prose the learner reads: in a Chinese notebook it is Chinese
    (code names and shapes may stand in it, # (B, L, E))."""
    allowed = NAMES | arguments(chinese)
    english = [(k, text) for k, cell in enumerate(nbformat.read(chinese, as_version=4).cells)
               if cell.cell_type == "code" for text in twins.code_prose(cell.source)
               if english_words(SHAPE.sub(" ", text), allowed) and not re.search(r"[\u3400-\u9fff]", text)]
    assert not english, (f"{chinese.relative_to(twins.ZH)}: comments or docstrings in English, translate them "
                         f"in the Chinese notebook: {[(k, t[:60]) for k, t in english]}")


#: A shape written as a tuple of names, (batch, seq_len, d_model) or (Sb,): code, not English.
SHAPE = re.compile(r"(?<![\w\]])\((?:\s*[\w.*+-]+\s*,)*\s*[\w.*+-]*\s*,?\s*\)")


def test_comments_and_docstrings_are_read():
    code = 'def f(x):\n    """The mean."""\n    return x  # (B, L)\n%matplotlib inline\ny = 1  # one more'
    assert twins.code_prose(code) == ["(B, L)", "one more", "The mean."]
    assert SHAPE.sub(" ", "(batch, seq_len, d_model) (Sb,) (L, Ev)").split() == []
    assert SHAPE.sub(" ", "(written digit, source digit)") == "(written digit, source digit)"


EXERCISE_HEADING = {"en": re.compile(r"\*\*Exercise \d+(\.| —)"), "zh": re.compile(r"\*\*练习 \d+(。|——|：|:| )")}


@pytest.mark.parametrize("english", twins.english_notebooks(), ids=lambda p: str(p.relative_to(twins.NOTEBOOKS)))
def test_exercise_headings_match_in_both_editions(english):
    """An exercise's heading is written one way: "Exercise 1 — title" is "练习 1——标题", and
    "Exercise 1." is "练习 1。"."""
    form = {".": "。", " —": "——"}
    ours = [form[m.group(1)] for _, text in twins.prose(english) for m in EXERCISE_HEADING["en"].finditer(text)]
    theirs = [m.group(1) for _, text in twins.prose(twins.twin(english))
              for m in EXERCISE_HEADING["zh"].finditer(text)]
    assert theirs == ours, (f"{twins.twin(english).relative_to(twins.NOTEBOOKS)}: write each exercise's heading as "
                            f"its English twin does ({ours}): found {theirs}")


def test_a_citation_says_等人():
    slips = [(path.name, m.group()) for path in CHINESE for _, text in twins.prose(path)
             for m in re.finditer(r"[A-Z][a-z]+ 等(?!人)", text)]
    assert not slips, f"write “等人” after an author's name (Vaswani 等人): {slips}"


# --- a table lines up in Chinese ---------------------------------------------------------
#
# A Chinese character takes two columns of a monospaced font. A table padded by characters
# ({name:<19}, str.ljust, a tab after a Chinese word) lines its columns up in English and
# leaves them ragged in Chinese; attn._text pads by display width, and a catalogue sentence can
# pad with the full-width space ({task:　<4}). A column is padded by characters where its cells
# start (or end) at one character index on every row and not at one display column.

CELL = re.compile(r"\S+(?: \S+)*")  # a cell: words separated by single spaces


def layout(line: str, width: bool) -> list[tuple[int, int, str]]:
    """(start, end, text) of each cell of a line of a table, in display columns (``width``) or in
    characters. A cell ends at two spaces, a tab or a | (a cell of its own); a tab moves to the
    next multiple of 8."""
    size = attn_text.width if width else len
    cells, column = [], 0
    for piece in re.split(r"(\t|\|)", line):
        if piece == "\t":
            column = (column // 8 + 1) * 8
        elif piece == "|":
            cells.append((column, column + 1, "|"))
            column += 1
        else:
            cells += [(column + size(piece[:m.start()]), column + size(piece[:m.end()]), m.group())
                      for m in CELL.finditer(piece)]
            column += size(piece)
    return cells


def misaligned(lines: list[str]) -> list[int]:
    """The columns (0-based) of a table that do not line up in a monospaced font: a column whose
    cells start or end at one character index but at no one display column (padded by
    characters), and a | that stands in another display column than the | of the other lines
    (a header padded by eye)."""
    rows = [(layout(ln, False), layout(ln, True)) for ln in lines]
    ragged = set()
    for count in {len(chars) for chars, _ in rows}:
        same = [r for r in rows if len(r[0]) == count]
        for k in range(count if len(same) >= 2 else 0):
            by_chars = [len({chars[k][edge] for chars, _ in same}) == 1 for edge in (0, 1)]
            by_width = [len({widths[k][edge] for _, widths in same}) == 1 for edge in (0, 1)]
            if any(by_chars) and not any(by_width):
                ragged.add(k)
    bars = [[start for start, _, text in widths if text == "|"] for _, widths in rows]
    for count in {len(b) for b in bars if b}:
        same = [b for b in bars if len(b) == count]
        ragged |= {k for k in range(count) if len(same) >= 2 and len({b[k] for b in same}) > 1}
    return sorted(ragged)


def tables(text: str) -> list[list[str]]:
    """The blocks of two lines or more of ``text`` whose lines hold a column: two spaces between
    two cells, a tab or a |."""
    blocks, block = [], []
    for line in text.splitlines() + [""]:
        if re.search(r"\S(  +|\t| ?\| ?)\S", line):
            block.append(line)
        else:
            if len(block) >= 2:
                blocks.append(block)
            block = []
    return blocks


def test_a_table_padded_by_characters_is_found():
    by_chars = ["对角线  自身 0.68", "垂直   自身 0.12", "块状   自身 0.57"]
    by_width = ["对角线  自身 0.68", "垂直　  自身 0.12", "块状　  自身 0.57"]
    assert misaligned(by_chars) == [1]
    assert misaligned(by_width) == []
    assert misaligned(["小明\tXiaoming", "人工智能\tAI"]) == [1]
    assert misaligned(["块数 | 梯度", "       |  有残差", "     1 |  1.03"]) == [0]
    assert misaligned(["   n        乘加次数", "  128       2,097,152"]) == []
    assert misaligned(["head 3 (1.00)  x", "head 12 (0.17)  x"]) == []
    assert misaligned(["词元：    小明      北京", "分数：  -1.2040  -2.9957"]) == []  # ends line up
    assert tables("说明：\nA  1\nB  2\n\n单独一行  3") == [["A  1", "B  2"]]


@pytest.mark.parametrize("chinese", CHINESE, ids=lambda p: str(p.relative_to(twins.ZH)))
def test_a_chinese_table_is_padded_by_display_width(chinese):
    name = str(chinese.relative_to(twins.ZH))
    ragged = {k for k, text in twins.outputs(chinese) for block in tables(text) if misaligned(block)}
    assert not ragged, (f"{name}: cells {sorted(ragged)} print a table padded by characters: "
                        f"pad with attn._text.ljust/rjust, or with a full-width space in the catalogue")


# --- Chinese punctuation in Chinese prose ------------------------------------------------
#
# Chinese prose quotes with “” (‘’ inside), never ASCII " or '; a Chinese word quoted is
# written “学习”, not set off by spaces; no space stands between two Chinese characters (one
# space between Chinese and a Latin word or a number is the course's habit). Code spans,
# formulas and link targets are not prose (twins.words sets them apart).

HAN = r"[\u3400-\u9fff]"
#: An ASCII quote next to Chinese, or around a Chinese word.
ASCII_QUOTE = re.compile(rf"{HAN}[\"']|[\"']{HAN}")
#: A space between two Chinese characters. A sentence quoted as its tokens, “小明 在 北京”, keeps them.
CJK_SPACE = re.compile(rf"{HAN}[ \u3000]+(?:{HAN}|[（，。；：！？])")
QUOTED = re.compile(r"“[^“”]*”")


def punctuation_slips(markdown: str) -> list[str]:
    """ASCII quotes and spaces between two Chinese characters in the prose of a markdown cell,
    each with the Chinese characters beside it."""
    text = twins.words(markdown)
    found = [m.group() for m in ASCII_QUOTE.finditer(text)]
    found += [m.group() for m in CJK_SPACE.finditer(QUOTED.sub(twins.CODE, text))]
    return found


def test_punctuation_slips_are_found():
    assert punctuation_slips('它会"绕回来"，本笔记本 比它们多走一步') == ['会"', '来"', '本 比']
    assert punctuation_slips("写作“学习”；`\"x\"` 与 $a b$；3 个词元，d_k 为 64") == []
    assert punctuation_slips("“小明 在 北京”是三个词元") == []
    assert punctuation_slips("写成一对 （h 个头）") == ["对 （"]
    assert punctuation_slips("| 小明 | 在 |") == []


@pytest.mark.parametrize("chinese", CHINESE, ids=lambda p: str(p.relative_to(twins.ZH)))
def test_chinese_prose_has_chinese_quotes_and_no_space_between_chinese_characters(chinese):
    name = str(chinese.relative_to(twins.ZH))
    slips = {slip for _, source in twins.prose(chinese) if not twins.is_glossary(source)
             for slip in punctuation_slips(source)}
    assert not slips, f"{name}: write “”, no space between Chinese characters: {sorted(slips)}"
