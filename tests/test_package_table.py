"""CONTRIBUTING.md's tables of the package ``attn`` against the files of src/attn.

Every public module of src/attn (a name without a leading underscore) is in a table, every
module a table names exists, every public file of a listed subpackage is named in its row,
every backticked ``attn.…`` path resolves, and the layers only look down: the mechanism and
the lessons import nothing from the drawing.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "attn"
# The paragraph before each table says which layer it lists (its first word).
LAYERS = {"The mechanism": "mechanism", "The lessons'": "lessons", "Drawing": "drawing",
          "Infrastructure": "infrastructure"}


def package_section(text: str) -> str:
    start = text.index("## The package `attn`")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def tables(section: str) -> dict[str, dict[str, str]]:
    """layer -> {module (``attn.x``): the row's text}, from the tables of the section."""
    out: dict[str, dict[str, str]] = {}
    layer = None
    for line in section.splitlines():
        if not line.startswith("|"):
            if line.strip():
                layer = next((v for k, v in LAYERS.items() if line.startswith(k)), layer)
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`(attn(?:\.\w+)+)`", cells[0])
        if names:
            if layer is None:
                raise AssertionError(f"a table row before any layer's paragraph: {line}")
            for name in names:
                out.setdefault(layer, {})[name] = line
    return out


def public_modules(folder: Path) -> set[str]:
    """The public modules and subpackages directly in ``folder`` (names without "_")."""
    names = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir()
                                                     if (p / "__init__.py").is_file()}
    return {n for n in names if not n.startswith("_")}


def imported_attn_modules(path: Path) -> set[str]:
    """The ``attn`` modules a file imports (relative imports resolved), as "attn.x.y"."""
    parts = ["attn", *path.relative_to(PACKAGE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
        here = parts
    else:
        here = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found |= {module} | {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m == "attn" or m.startswith("attn.")}


@pytest.fixture(scope="module")
def listed() -> dict[str, dict[str, str]]:
    return tables(package_section((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")))


def test_every_layer_has_a_table(listed):
    assert set(listed) == set(LAYERS.values())


def test_every_module_of_the_package_is_listed_and_every_listed_one_exists(listed):
    rows = {name: row for layer in listed.values() for name, row in layer.items()}
    on_disk = {f"attn.{n}" for n in public_modules(PACKAGE)}
    assert sorted(on_disk - set(rows)) == [], "in src/attn but in no table of CONTRIBUTING.md"
    assert sorted(set(rows) - on_disk) == [], "in CONTRIBUTING.md's tables but not in src/attn"


def test_every_file_of_a_listed_subpackage_is_named_in_its_row(listed):
    for layer in listed.values():
        for name, row in layer.items():
            folder = PACKAGE / name.split(".", 1)[1]
            if not folder.is_dir():
                continue
            words = set(re.findall(r"`([\w.]+)`", row))
            for sub in sorted(public_modules(folder)):
                named = sub in words or f"{name}.{sub}" in words or (
                    re.fullmatch(r"nb\d\d", sub) and f"{name}.nbNN" in words)
                assert named, f"{name}.{sub} is not named in its row of CONTRIBUTING.md"


def test_every_attn_path_in_the_section_resolves():
    section = package_section((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    for path in sorted(set(re.findall(r"`(attn(?:\.\w+)+)`", section))):
        if path.endswith(".nbNN"):
            continue
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):  # the longest prefix that is a module ...
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:  # ... and the rest its attributes
                assert hasattr(obj, attr), f"`{path}` in CONTRIBUTING.md: no {attr} in {obj.__name__}"
                obj = getattr(obj, attr)
            break


def test_the_mechanism_and_the_lessons_import_nothing_from_the_drawing(listed):
    drawing = set(listed["drawing"])  # the explorers, and the checkers beside them (attn.exercises)
    below = {**listed["mechanism"], **listed["lessons"]}
    for name in sorted(below):
        target = PACKAGE / name.split(".", 1)[1]
        files = sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
        for path in files:
            bad = {m for m in imported_attn_modules(path)
                   if any(m == d or m.startswith(d + ".") for d in drawing)}
            assert not bad, f"{path.relative_to(ROOT)} ({name}) imports from the layer above it (drawing, explorers, checkers): {sorted(bad)}"
