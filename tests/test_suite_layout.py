"""The test suite's own shape.

- Tests find their subject: ``tests/attn/`` mirrors the package (its top, then one folder per
  layer of src/attn), ``tests/notebooks/`` holds what the notebooks say (content, claims, twins,
  slides), ``tests/delivery/`` how the course reaches people (browser, website, hub, set-up,
  docs, benchmarks). Only this file stays at the top.
- What the tests share lives in helper modules (tests/_*.py, tests/conftest.py), never in
  another test module, so that a test file can be read, run and moved alone.
- No two test files share a name: pytest imports each by its name, from its folder.
"""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "src" / "attn"
SUBJECTS = {"attn", "notebooks", "delivery"}


def test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def imported_test_modules(path: Path) -> set[str]:
    """The test modules (``test_*``) that the file at ``path`` imports, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[-1].startswith("test_")}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[-1].startswith("test_"):
                found.add(node.module)
    return found


def test_no_test_module_imports_another():
    importing = {str(p.relative_to(TESTS)): sorted(imported_test_modules(p)) for p in test_files()}
    importing = {name: found for name, found in importing.items() if found}
    assert importing == {}, ("a test module imports another (move what they share to a helper, "
                             "tests/_*.py): " + "; ".join(f"{n} imports {f}" for n, f in importing.items()))


def test_the_finder_sees_every_form_of_import(tmp_path):
    source = tmp_path / "test_x.py"
    source.write_text("import test_a\nimport test_b as b\nfrom test_c import d\nfrom _support import x\n"
                      "def f():\n    from test_e import g\nimport os\nfrom . import helper\n"
                      "from .test_f import h\nimport attn.test_g\n")
    assert imported_test_modules(source) == {"test_a", "test_b", "test_c", "test_e", "test_f", "attn.test_g"}


def test_every_test_file_sits_in_its_subject():
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert top == [Path(__file__).name], f"test files at the top of tests/, not in a subject folder: {top}"
    folders = {p.relative_to(TESTS).parts[0] for p in test_files() if p.parent != TESTS}
    assert folders == SUBJECTS, f"expected the subject folders {sorted(SUBJECTS)}, got {sorted(folders)}"


def test_the_tests_of_the_package_mirror_its_folders():
    layers = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    mirrored = {p.name for p in (TESTS / "attn").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert mirrored == layers, (f"tests/attn/ should hold one folder per folder of src/attn, {sorted(layers)}; "
                                f"got {sorted(mirrored)}")


def test_no_two_test_files_share_a_name():
    seen: dict[str, list[str]] = {}
    for p in test_files():
        seen.setdefault(p.name, []).append(str(p.relative_to(TESTS)))
    assert {n: w for n, w in seen.items() if len(w) > 1} == {}
