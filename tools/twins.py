"""The English notebooks and their Chinese twins run the same code (docs/translating.md).

    python -m tools.twins            list every pair whose code has drifted apart; exit 1 if any
    python -m tools.twins --carry    copy the English code into each drifted Chinese cell

The twin of notebooks/X.ipynb is notebooks/zh/X.ipynb. Their code cells, in order, are equal
once comments, docstrings and blank lines are removed; the first code cell may differ only in
the language it sets (``set_language("en")`` or ``set_language("zh")``). A learner reads the
comments and the docstrings of an exercise's scaffold, so the Chinese twin writes them in
Chinese. A code cell's tags (``nbval-ignore-output``) are part of its
code. ``--carry`` overwrites a drifted Chinese cell with the English one (its Chinese comments
and docstrings go: translate them again) and clears its outputs; the notebook must then be
re-executed.

The module also reads what a learner of a notebook reads as text (``prose``, ``outputs``),
for the tests that hold the Chinese edition to its glossary and its layout.
"""
from __future__ import annotations

import argparse
import ast
import html
import io
import re
import sys
import tokenize
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
ZH = NOTEBOOKS / "zh"
#: The notebook whose glossary fixes the words of the Chinese edition (its twin holds the same tables).
GLOSSARY = NOTEBOOKS / "00_start_here.ipynb"
SET_LANGUAGE = re.compile(r"""set_language\(\s*["'](en|zh)["']\s*\)""")


def english_notebooks() -> list[Path]:
    """Every English notebook: notebooks/ and notebooks/solutions/, not the Chinese edition."""
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb")
                  if p.relative_to(NOTEBOOKS).parts[0] != "zh" and ".ipynb_checkpoints" not in p.parts)


def twin(path: Path) -> Path:
    """The Chinese twin of an English notebook."""
    return ZH / path.relative_to(NOTEBOOKS)


#: What a docstring becomes in ``code_only``: its text is prose, translated in a Chinese twin.
DOCSTRING = '"""..."""'


def docstrings(python: str) -> list[tuple[int, int, int, int]]:
    """(first line, first column, last line, end column) of each docstring of ``python``: the
    string that opens a module, a class or a function. Lines count from 1, as ``ast`` does;
    none when the code does not parse."""
    try:
        tree = ast.parse(python)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.append((first.lineno, first.col_offset, first.end_lineno, first.end_col_offset))
    return found


def code_prose(source: str) -> list[str]:
    """What a learner reads as text inside a code cell: each comment and each docstring."""
    lines = source.splitlines()
    python = "\n".join("pass" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines) + "\n"
    try:
        found = [tok.string.lstrip("#").strip() for tok in tokenize.generate_tokens(io.StringIO(python).readline)
                 if tok.type == tokenize.COMMENT]
        tree = ast.parse(python)
    except (SyntaxError, tokenize.TokenError):
        return []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node)
            if text:
                found.append(text)
    return found


def code_only(source: str) -> str:
    """``source`` without its comments, blank lines and trailing spaces, each docstring written
    ``DOCSTRING``.

    IPython's ``%`` and ``!`` lines are kept as they are (they are not Python).
    """
    lines = source.splitlines()
    magic = {i for i, ln in enumerate(lines) if ln.lstrip().startswith(("%", "!"))}
    python = "\n".join("pass" if i in magic else ln for i, ln in enumerate(lines)) + "\n"
    kept = [list(ln) for ln in python.splitlines()]
    for tok in tokenize.generate_tokens(io.StringIO(python).readline):
        if tok.type == tokenize.COMMENT:
            (row, start), (_, end) = tok.start, tok.end
            kept[row - 1][start:end] = [" "] * (end - start)
    rows = [lines[i] if i in magic else "".join(chars).rstrip() for i, chars in enumerate(kept)]
    for first, start, last, end in reversed(docstrings(python)):  # from the last: the rows above stay put
        before = rows[first - 1].encode()[:start].decode()  # ast counts columns in UTF-8 bytes
        after = rows[last - 1].encode()[end:].decode()
        rows[first - 1:last] = [before + DOCSTRING + after]
    return "\n".join(row for row in rows if row.strip())


def code_cells(path: Path) -> list[nbformat.NotebookNode]:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def drift(english: Path) -> list[str]:
    """How the Chinese twin of ``english`` differs in its code (an empty list: not at all)."""
    chinese = twin(english)
    name = english.relative_to(NOTEBOOKS)
    if not chinese.exists():
        return [f"{name}: no Chinese twin at {chinese.relative_to(ROOT)}"]
    en, zh = code_cells(english), code_cells(chinese)
    if len(en) != len(zh):
        return [f"{name}: {len(en)} code cells in English, {len(zh)} in Chinese"]
    found = []
    for k, (a, b) in enumerate(zip(en, zh)):
        code_a, code_b = code_only(a.source), code_only(b.source)
        if k == 0:
            languages = SET_LANGUAGE.findall(code_a), SET_LANGUAGE.findall(code_b)
            if languages != (["en"], ["zh"]):
                found.append(f"{name}: the first code cell must set the language once, 'en' in English and "
                             f"'zh' in Chinese; found {languages[0]} and {languages[1]}")
            code_a, code_b = SET_LANGUAGE.sub("set_language()", code_a), SET_LANGUAGE.sub("set_language()", code_b)
        if code_a != code_b:
            found.append(f"{name}: code cell {k + 1} (id {a.get('id')}) differs from its twin (id {b.get('id')})")
        if a.metadata.get("tags", []) != b.metadata.get("tags", []):
            found.append(f"{name}: code cell {k + 1}'s tags differ: {a.metadata.get('tags', [])} and "
                         f"{b.metadata.get('tags', [])}")
    return found


def carry(english: Path) -> int:
    """Copy ``english``'s drifted code cells into its twin; the number of cells copied."""
    chinese = twin(english)
    nb = nbformat.read(chinese, as_version=4)
    zh = [c for c in nb.cells if c.cell_type == "code"]
    en = code_cells(english)
    if len(en) != len(zh):
        raise ValueError(f"{chinese}: {len(zh)} code cells against {len(en)}: add or remove cells by hand")
    copied = 0
    for k, (a, b) in enumerate(zip(en, zh)):
        source = SET_LANGUAGE.sub('set_language("zh")', a.source) if k == 0 else a.source
        if code_only(source) != code_only(b.source) or a.metadata.get("tags", []) != b.metadata.get("tags", []):
            b.source, b.outputs, b.execution_count = source, [], None
            b.metadata["tags"] = list(a.metadata.get("tags", []))
            copied += 1
    if copied:
        nbformat.write(nb, chinese)
    return copied


# --- what a learner reads as text ----------------------------------------------------------

def chinese_notebooks() -> list[Path]:
    """Every notebook of the Chinese edition: notebooks/zh/ and notebooks/zh/solutions/."""
    return sorted(p for p in ZH.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def prose(path: Path) -> list[tuple[int, str]]:
    """(cell index, source) of every markdown cell of a notebook."""
    cells = nbformat.read(path, as_version=4).cells
    return [(k, c.source) for k, c in enumerate(cells) if c.cell_type == "markdown"]


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def outputs(path: Path) -> list[tuple[int, str]]:
    """(cell index, text) of every stored output a learner reads: a stream (a cell's consecutive
    streams of one name joined, as the notebook shows them), a text/plain or text/html result
    (its tags removed), and a figure's text alternative (``show_figure``'s ``alt``). A figure's
    text/plain (``<Figure size ...>``) is not shown, so it is left out; nor is an explorer's (its
    picture's text alternative, ``Explorer.alt_text``: the readout, read in the live explorer)."""
    found = []
    for k, cell in enumerate(nbformat.read(path, as_version=4).cells):
        stream = None
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                if stream == output.name:
                    found[-1] = (k, found[-1][1] + output.text)
                else:
                    found.append((k, output.text))
                stream = output.name
                continue
            stream = None
            data = output.get("data", {})
            alt = output.get("metadata", {}).get("image/png", {}).get("alt")
            if alt:
                found.append((k, alt))
            if data.get("text/plain") and "image/png" not in data and _WIDGET_VIEW not in data:
                found.append((k, data["text/plain"]))
            if data.get("text/html"):
                found.append((k, html.unescape(re.sub(r"<[^>]+>", " ", data["text/html"]))))
    return found


#: What a markdown cell holds that is not prose: code spans and blocks, formulas, link targets,
#: HTML tags. ``words`` writes ``CODE`` for each, so that a test of the prose reads only the
#: sentences (and sees no space where a formula stood between two words).
NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)\s]*\)|<[^>\n]+>", re.S)


#: A line that shows an error: its message stays in English (docs/translating.md), as PyTorch's do.
ERROR_LINE = re.compile(r"^.*\b[A-Z][A-Za-z]*(?:Error|Exception)\b.*$", re.M)


CODE = "§"


def words(markdown: str) -> str:
    """The sentences of a markdown cell: ``markdown`` with ``CODE`` for each part ``NOT_PROSE``."""
    return NOT_PROSE.sub(CODE, markdown)


def is_glossary(markdown: str) -> bool:
    """Whether a markdown cell is 00's glossary: it holds a table headed ``| English | 中文 |``."""
    return "| English | 中文 |" in markdown


def glossary_tables(path: Path = GLOSSARY) -> list[list[dict[str, str]]]:
    """Every table of 00's glossary (``is_glossary``): for each, its rows as {column header: cell}."""
    tables: list[list[dict[str, str]]] = []
    for _, source in prose(path):
        if not is_glossary(source):
            continue
        header: list[str] | None = None
        for line in source.splitlines():
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
                tables.append([])
            elif not set("".join(cells)) <= set("-: "):
                tables[-1].append(dict(zip(header, cells)))
    return tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.twins", description=__doc__.split("\n\n")[0])
    parser.add_argument("--carry", action="store_true", help="copy the English code into drifted Chinese cells")
    args = parser.parse_args(argv)
    problems = []
    for path in english_notebooks():
        found = drift(path)
        if found and args.carry and twin(path).exists() and "code cells in English" not in found[0]:
            print(f"{twin(path).relative_to(ROOT)}: {carry(path)} cells carried over; re-execute it")
            found = drift(path)
        problems += found
    print("\n".join(problems) if problems else f"{len(english_notebooks())} pairs: the same code")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
