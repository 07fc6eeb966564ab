"""The English notebooks and their Chinese twins run the same code (docs/translating.md).

    python -m tools.twins            list every pair whose code has drifted apart; exit 1 if any
    python -m tools.twins --carry    copy the English code into each drifted Chinese cell

The twin of notebooks/X.ipynb is notebooks/zh/X.ipynb. Their code cells, in order, are equal
once comments and blank lines are removed; the first code cell may differ only in the
language it sets (``set_language("en")`` or ``set_language("zh")``). A code cell's tags and
nbval directives (``# NBVAL_IGNORE_OUTPUT``) are part of its code. ``--carry`` overwrites a
drifted Chinese cell with the English one (its Chinese comments go: translate them again) and
clears its outputs; the notebook must then be re-executed.
"""
from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
ZH = NOTEBOOKS / "zh"
SET_LANGUAGE = re.compile(r"""set_language\(\s*["'](en|zh)["']\s*\)""")
DIRECTIVE = re.compile(r"#\s*(NBVAL_\w+|PYTEST_VALIDATE_IGNORE_OUTPUT)")


def english_notebooks() -> list[Path]:
    """Every English notebook: notebooks/ and notebooks/solutions/, not the Chinese edition."""
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb")
                  if p.relative_to(NOTEBOOKS).parts[0] != "zh" and ".ipynb_checkpoints" not in p.parts)


def twin(path: Path) -> Path:
    """The Chinese twin of an English notebook."""
    return ZH / path.relative_to(NOTEBOOKS)


def code_only(source: str) -> str:
    """``source`` without its comments, blank lines and trailing spaces; its directives kept.

    IPython's ``%`` and ``!`` lines are kept as they are (they are not Python).
    """
    lines = source.splitlines()
    magic = {i for i, ln in enumerate(lines) if ln.lstrip().startswith(("%", "!"))}
    python = "\n".join("pass" if i in magic else ln for i, ln in enumerate(lines)) + "\n"
    kept = [list(ln) for ln in python.splitlines()]
    for tok in tokenize.generate_tokens(io.StringIO(python).readline):
        if tok.type == tokenize.COMMENT and not DIRECTIVE.match(tok.string):
            (row, start), (_, end) = tok.start, tok.end
            kept[row - 1][start:end] = [" "] * (end - start)
    out = []
    for i, chars in enumerate(kept):
        line = lines[i] if i in magic else "".join(chars).rstrip()
        if line.strip():
            out.append(line)
    return "\n".join(out)


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
