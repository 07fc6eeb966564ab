"""The message catalogues of the course's languages (docs/translating.md).

    python -m tools.catalogue                  extract, update and compile (after changing code)
    python -m tools.catalogue --fill zh.json   the same, taking translations from a JSON file
                                               ({"English sentence": "中文句子", ...})
    python -m tools.catalogue --check          say what is out of date or untranslated; exit 1 if any

The English sentences are the arguments of ``tr("...")`` and ``mark("...")`` (attn.language)
in the package, in the English notebooks (the Chinese ones run the same code) and in the
website's tools that write words of their own (``SITE_TOOLS``). They are
written to ``src/attn/locale/attn.pot``; each language's ``attn.po`` keeps its translations,
gains the new sentences (untranslated) and loses the ones no longer used; ``attn.mo`` is
compiled from it, and is what the package reads.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from attn.language import message_fields

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "attn"
LOCALE = PACKAGE / "locale"
POT = LOCALE / "attn.pot"
NOTEBOOKS = ROOT / "notebooks"
#: the website's tools that write sentences of their own (the notes of its live explorers)
SITE_TOOLS = (ROOT / "tools" / "live_states.py", ROOT / "tools" / "site.py")
#: the languages with a catalogue (English is the source text: it has none)
TRANSLATED = ("zh",)
#: the functions whose first argument is a sentence of the catalogue
KEYWORDS = ("tr", "mark")
FIXED_DATE = datetime(2026, 1, 1, tzinfo=timezone.utc)


def po_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / "attn.po"


def mo_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / "attn.mo"


def english_notebooks() -> list[Path]:
    """The English notebooks: every notebook under notebooks/ but the Chinese edition."""
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb")
                  if "zh" not in p.relative_to(NOTEBOOKS).parts and ".ipynb_checkpoints" not in p.parts)


def notebook_code(path: Path) -> str:
    """A notebook's code cells as one Python source (IPython's % and ! lines left out)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            lines = [ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
            cells.append("\n".join(lines))
    return "\n\n".join(cells)


def sentences_in(source: str, where: str) -> list[tuple[str, str]]:
    """(sentence, where) for every ``tr``/``mark`` call with a literal first argument.

    Raises:
        ValueError: a ``mark`` call whose argument is not a literal string (it marks nothing).
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name not in KEYWORDS:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append((first.value, where))
        elif name == "mark":
            raise ValueError(f"{where}:{node.lineno}: mark() needs a literal string, got {ast.unparse(first)}")
    return found


def extract() -> Catalog:
    """The catalogue template: every English sentence of the package and the notebooks."""
    pot = Catalog(project="attn", fuzzy=False)
    sources = [(p, p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))]
    sources += [(p, notebook_code(p)) for p in english_notebooks()]
    sources += [(p, p.read_text(encoding="utf-8")) for p in SITE_TOOLS]
    for path, source in sources:
        where = str(path.relative_to(ROOT))
        for message, place in sentences_in(source, where):
            flags = ["python-brace-format"] if fields(message) else []
            if message in pot:
                pot[message].locations.append((place, None))
            else:
                pot.add(message, locations=[(place, None)], flags=flags)
    return pot


def updated(language: str, pot: Catalog, fill: dict[str, str] | None = None) -> Catalog:
    """``language``'s catalogue for the sentences of ``pot``, keeping its translations."""
    old = read(po_path(language), language) if po_path(language).exists() else Catalog(locale=language)
    new = Catalog(locale=_babel_locale(language), project="attn", fuzzy=False)
    for message in pot:
        if not message.id:
            continue
        text = (fill or {}).get(message.id) or (old[message.id].string if message.id in old else "")
        new.add(message.id, text, locations=message.locations, flags=message.flags)
    return new


def problems(language: str) -> list[str]:
    """What is wrong with ``language``'s catalogue: stale, untranslated, fields that differ."""
    found = []
    pot = extract()
    if not POT.exists() or _ids(read(POT)) != _ids(pot):
        found.append(f"{POT.relative_to(ROOT)} is not what the code holds: run python -m tools.catalogue")
    po = read(po_path(language), language)
    missing = _ids(pot) - _ids(po)
    if missing:
        found.append(f"{language}: {len(missing)} sentences not in attn.po, e.g. {sorted(missing)[0]!r}")
    for message in po:
        if not message.id:
            continue
        if not message.string:
            found.append(f"{language}: untranslated: {message.id!r}")
        elif fields(message.id) != fields(message.string):
            found.append(f"{language}: fields differ: {message.id!r} has {sorted(fields(message.id))}, "
                         f"{message.string!r} has {sorted(fields(message.string))}")
        elif left_in_english(message.string, language):
            found.append(f"{language}: left in English: {message.id!r} is translated as {message.string!r} "
                         f"(English words {left_in_english(message.string, language)}; names of code "
                         f"go in CODE_WORDS)")
    if not mo_path(language).exists() or mo_path(language).read_bytes() != compiled(po):
        found.append(f"{mo_path(language).relative_to(ROOT)} is not compiled from attn.po: run python -m tools.catalogue")
    return found


#: Words a translation may keep in English: names of code, maths and libraries (a word with "_"
#: or a digit, such as d_k or head_i, is code too).
CODE_WORDS = {"softmax", "rowsum", "Concat", "MultiHead", "PyTorch", "SDPA", "tanh", "RNN", "CLS", "SEP",
              "cls", "inf", "gradcheck", "NaN", "RoPE", "exp", "max", "min"}
#: The script of each language of the course but English.
SCRIPTS = {"zh": re.compile(r"[\u4e00-\u9fff]")}


def left_in_english(text: str, language: str) -> list[str]:
    """The English words of a translation with nothing of its language's script (a sentence
    copied instead of translated): words of 3 letters or more outside ``{fields}``, but names
    of code. Empty when the translation is in its language, or holds only code."""
    if language not in SCRIPTS or SCRIPTS[language].search(text):
        return []
    bare = re.sub(r"\{[^{}]*\}", " ", text)
    return [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", bare)
            if len(w) >= 3 and w.isalpha() and w not in CODE_WORDS]


def fields(text: str) -> set[str]:
    """The names of the ``{fields}`` of a sentence (``{{`` is a literal brace): the fields that
    ``attn.language.tr`` requires, read the same way."""
    return set(message_fields(text))


def read(path: Path, language: str | None = None) -> Catalog:
    with open(path, "rb") as f:
        return read_po(f, locale=_babel_locale(language) if language else None)


def compiled(po: Catalog) -> bytes:
    """The .mo of ``po``. Its header's dates are fixed (the .po has none; Babel would put the
    current minute there), so that an unchanged catalogue compiles to the same bytes."""
    po.creation_date = po.revision_date = FIXED_DATE
    out = io.BytesIO()
    write_mo(out, po)
    return out.getvalue()


def write(catalog: Catalog, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = io.BytesIO()
    write_po(out, catalog, width=0, sort_output=True, include_lineno=False, omit_header=False)
    # The header's creation date changes at every run; leave it out, so that an unchanged
    # catalogue is an unchanged file.
    text = re.sub(rb'"(POT-Creation-Date|PO-Revision-Date): [^"]*\\n"\n', b"", out.getvalue())
    path.write_bytes(text)


def _ids(catalog: Catalog) -> set[str]:
    return {m.id for m in catalog if m.id}


def _babel_locale(language: str) -> str:
    return {"zh": "zh_Hans_CN"}.get(language, language)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.catalogue", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fill", action="extend", nargs="+", default=[], metavar="JSON",
                        help="translations to take, {English: translation}: one file or more")
    parser.add_argument("--language", default="zh", choices=TRANSLATED)
    parser.add_argument("--check", action="store_true", help="change nothing; list the problems")
    args = parser.parse_args(argv)
    if args.check:
        found = problems(args.language)
        print("\n".join(found) if found else f"{args.language}: the catalogue is complete and compiled")
        return 1 if found else 0
    fill: dict[str, str] = {}
    for name in args.fill:
        fill.update(json.loads(Path(name).read_text(encoding="utf-8")))
    pot = extract()
    write(pot, POT)
    po = updated(args.language, pot, fill)
    write(po, po_path(args.language))
    po = read(po_path(args.language), args.language)
    mo_path(args.language).write_bytes(compiled(po))
    untranslated = sum(1 for m in po if m.id and not m.string)
    print(f"{len(_ids(pot))} sentences; {args.language}: {untranslated} untranslated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
