"""The Chinese edition: every English notebook has a Chinese twin that runs the same code,
uses 00's glossary for its terms, and shows the learner Chinese (docs/translating.md)."""
from __future__ import annotations

import ast
import html
import keyword
import re
from pathlib import Path

import nbformat
import pytest

from tools import twins

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = twins.english_notebooks()
CHINESE = sorted(p for p in twins.ZH.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
GLOSSARY_NOTEBOOK = twins.NOTEBOOKS / "00_start_here.ipynb"
CJK = re.compile(r"[\u3400-\u9fff]")


def _name(path: Path) -> str:
    return str(path.relative_to(twins.NOTEBOOKS))


@pytest.mark.parametrize("english", ENGLISH, ids=_name)
def test_the_chinese_twin_runs_the_same_code(english):
    assert twins.drift(english) == []


def test_every_chinese_notebook_has_an_english_one():
    orphans = [p for p in CHINESE if (twins.NOTEBOOKS / p.relative_to(twins.ZH)) not in ENGLISH]
    assert orphans == [], orphans


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
    assert twins.drift(pair([first_en, "# NBVAL_IGNORE_OUTPUT\nx"], [first_zh, "x"]))
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


# --- 00's glossary is the single source of the Chinese terms -----------------------------

def glossary() -> list[tuple[list[str], str]]:
    """(English forms, Chinese term) of every row of 00's glossary tables."""
    rows = []
    for cell in nbformat.read(GLOSSARY_NOTEBOOK, as_version=4).cells:
        if cell.cell_type != "markdown" or "| English | 中文 |" not in cell.source:
            continue
        for line in cell.source.splitlines():
            parts = [p.strip() for p in line.strip().strip("|").split("|")]
            if len(parts) < 2 or parts[0] in ("English", "") or set(parts[0]) <= set("- "):
                continue
            english = re.sub(r"\([^)]*\)", "", parts[0])
            forms = [re.sub(r"^to ", "", f.strip()) for f in english.split(",") if f.strip()]
            rows.append((forms, parts[1]))
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
    cells = nbformat.read(path, as_version=4).cells
    return "\n".join(c.source for c in cells if c.cell_type == "markdown")


def test_the_glossary_is_read():
    rows = glossary()
    assert len(rows) > 100
    assert (["multi-head attention"], "多头注意力") in rows
    assert (["causal mask"], "因果掩码") in rows


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

# Names a Chinese text writes in Latin letters: libraries, models, papers, code.
NAMES = {
    "PyTorch", "NumPy", "JupyterLab", "Jupyter", "Transformer", "FlashAttention", "RoPE",
    "MiniLM", "BERT", "GPT", "RNN", "LSTM", "SDPA", "Adam", "GELU", "ReLU", "LayerNorm",
    "softmax", "CLS", "SEP", "PAD", "KV", "CPU", "GPU", "torch", "ipywidgets", "attn",
    "nan", "inf", "min", "max", *keyword.kwlist,
}
# PyTorch's own error messages, which 05 shows as they are (what a learner will meet), and a
# Python value's repr in quotes ('zeros'): code, not prose.
TORCH_MESSAGES = re.compile(r"batch1 must be a 3D tensor|view size is not compatible.*instead\."
                            r"|value cannot be converted to type \S+ without overflow"
                            r"|shape '\[[^]]*\]' is invalid for input of size \d+"
                            r"|The size of tensor \w \(\d+\) must match the size of tensor \w \(\d+\) at "
                            r"non-singleton dimension \d+|'[^'\n]*'")
# An error's message stays in English (docs/translating.md: as PyTorch's do), and the English
# of a term follows it in brackets: 梯度消失（vanishing gradient）.
ERROR_LINE = re.compile(r"^.*\b[A-Z][A-Za-z]*(?:Error|Exception)\b.*$", re.M)
GLOSS = re.compile(r"（[^（）]*）")


def text_outputs(path: Path) -> list[tuple[int, str]]:
    """(cell number, text) of every stored stream, text/plain and text/html output."""
    out = []
    for k, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                out.append((k, output.text))
            for mime in ("text/plain", "text/html"):
                data = output.get("data", {}).get(mime)
                if data:
                    text = "".join(data) if isinstance(data, list) else data
                    if mime == "text/html":
                        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
                    out.append((k, text))
    return out


def code_names(path: Path) -> set[str]:
    """The words of a notebook's code: its names, and its strings of data.

    The English sentences given to ``tr``/``mark`` are not data: they are what the
    catalogue translates, so their words are not allowed in a Chinese output.
    """
    cells = nbformat.read(path, as_version=4).cells
    source = "\n".join(code_only for c in cells if c.cell_type == "code"
                       for code_only in ["\n".join(ln for ln in c.source.splitlines()
                                                    if not ln.lstrip().startswith(("%", "!")))])
    tree = ast.parse(source)
    sentences = {id(node.args[0]) for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and node.args
                 and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("tr", "mark")}
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in sentences:
            words |= set(re.findall(r"[A-Za-z]+", node.value))
    return {w for name in words for w in [name, *re.findall(r"[A-Za-z]+", name)]}


ENGLISH_PHRASE = re.compile(r"[A-Za-z]{2,}(?:[ ,;:'’-]+[A-Za-z]{2,})+")


def english_phrases(text: str, allowed: set[str]) -> list[str]:
    """Runs of two or more English words not all of which are ``allowed`` names."""
    found = []
    for match in ENGLISH_PHRASE.finditer(text):
        words = re.findall(r"[A-Za-z]+", match.group())
        if not all(w in allowed for w in words):
            found.append(match.group())
    return found


def test_english_phrases_are_found():
    assert english_phrases("largest difference < 1e-12: True", set()) == ["largest difference"]
    assert english_phrases("最大差值 < 1e-12：True", {"True"}) == []
    assert english_phrases("形状 torch.Size([2, 5, 16])", {"torch", "Size"}) == []
    assert english_phrases("the cat sat", {"the"}) == ["the cat sat"]
    assert GLOSS.sub("", "梯度消失（vanishing gradient）") == "梯度消失"
    assert ERROR_LINE.sub("", "报错：\nValueError: query: expected 3 dims\n结束") == "报错：\n\n结束"


def test_sentences_given_to_tr_are_not_names(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        'scores = 1\nprint(tr("largest difference {d}", d=scores))\ntokens = ["the", "cat"]')])
    nbformat.write(nb, tmp_path / "x.ipynb")
    names = code_names(tmp_path / "x.ipynb")
    assert {"scores", "the", "cat", "tokens", "d"} <= names
    assert "largest" not in names and "difference" not in names


@pytest.mark.parametrize("chinese", CHINESE, ids=lambda p: str(p.relative_to(twins.ZH)))
def test_a_chinese_notebook_shows_no_english_sentence(chinese):
    allowed = NAMES | code_names(chinese)
    leaks = [f"cell {k}: {phrase!r}" for k, text in text_outputs(chinese)
             for phrase in english_phrases(TORCH_MESSAGES.sub("", GLOSS.sub("", ERROR_LINE.sub("", text))), allowed)]
    assert leaks == [], f"{chinese.relative_to(ROOT)}: English in its outputs"
