"""The package's layers are its folders, and every import runs downhill.

``src/attn`` holds at its top the mechanism (the files a learner opens to see attention) and
its ground (input checks, language, examples, threads). Everything else sits in a folder named
for its layer. A file may import its own folder and the folders below it, nothing else; the
order is ``FLOORS`` below, and a new folder must be placed in it before any test passes.

CONTRIBUTING.md's section on the package tells the folders' story: every public module is
named there, and every ``attn.…`` path it names resolves. And each module reads in one
sitting: at most ``MOST_LINES`` lines.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "attn"
TOP = ""  # the files at the top of src/attn: the mechanism and its ground
# Each folder (a subpackage of attn), and the folders it may import besides itself.
FLOORS = {
    TOP: set(),
    "lessons": {TOP},
    "exercises": {TOP, "lessons"},
    "drawing": {TOP, "lessons"},
    "widgets": {TOP, "lessons", "drawing"},
}
# The ground: what the mechanism stands on. It imports nothing of attn but the ground.
GROUND = {"_checks", "_text", "language", "threads", "examples"}


def module_name(path: Path) -> list[str]:
    parts = ["attn", *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_attn_modules(path: Path) -> set[str]:
    """The ``attn`` modules a file imports (relative imports resolved), as "attn.x.y"."""
    name = module_name(path)
    here = name if path.name == "__init__.py" else name[:-1]
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


def floor_of(module: str) -> str:
    """The folder a module ("attn.x.y") sits in: TOP for attn itself and the files beside it."""
    parts = module.split(".")[1:]
    if parts and (PACKAGE / parts[0] / "__init__.py").is_file():
        return parts[0]
    return TOP


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_folder_of_the_package_has_its_place_in_the_order():
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(FLOORS) - {TOP}, (
        "a folder of src/attn is not in FLOORS (or FLOORS names one that is gone): place it "
        "in the order, with the folders it may import")


@pytest.mark.parametrize("path", package_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_file_imports_only_its_folder_and_the_folders_below(path):
    floor = floor_of(".".join(module_name(path)))
    allowed = FLOORS[floor] | {floor}
    up = {m: floor_of(m) for m in imported_attn_modules(path) if m != "attn"}
    bad = sorted(m for m, f in up.items() if f not in allowed)
    assert not bad, (f"src/attn/{path.relative_to(PACKAGE)} ({floor or 'the top of attn'}) imports "
                     f"from a layer above or beside it: {bad}; it may import "
                     f"{sorted(f or 'the top of attn' for f in allowed)}")


@pytest.mark.parametrize("stem", sorted(GROUND))
def test_the_ground_imports_only_the_ground(stem):
    imported = {m.split(".")[1] for m in imported_attn_modules(PACKAGE / f"{stem}.py") if m != "attn"}
    assert imported <= GROUND, f"attn.{stem} is ground, but imports {sorted(imported - GROUND)}"


def package_section() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index("## The package `attn`")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def public_modules() -> set[str]:
    """Every public module and subpackage of attn (no part starting with "_"), as "attn.x.y"."""
    names = {".".join(module_name(p)) for p in package_files()}
    return {n for n in names if n != "attn" and not any(part.startswith("_") for part in n.split("."))}


def test_contributing_names_every_public_module_of_the_package():
    section = package_section()
    named = set(re.findall(r"`(attn(?:\.\w+)+)`", section))
    # a row may name a folder's files by their short names: `attn.lessons.cost`: `counts`, ...
    words = set(re.findall(r"`([\w.]+)`", section))
    missing = sorted(m for m in public_modules()
                     if m not in named and not (m.rsplit(".", 1)[1] in words and m.rsplit(".", 1)[0] in named)
                     and not (re.fullmatch(r"attn\.exercises\.nb\d\d", m) and "attn.exercises.nbNN" in named))
    assert missing == [], "in src/attn but not named in CONTRIBUTING.md's section on the package"


def test_every_attn_path_in_contributing_resolves():
    for path in sorted(set(re.findall(r"`(attn(?:\.\w+)+)`", package_section()))):
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


#: Each module readable in one sitting (issue 31): the most lines a module of src/attn may have.
MOST_LINES = 450


@pytest.mark.parametrize("path", package_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_reads_in_one_sitting(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, (f"src/attn/{path.relative_to(PACKAGE)} has {lines} lines, over "
                                 f"{MOST_LINES}: split it by idea, into modules named for what they hold")
