"""The test suite's own shape: what the tests share lives in helper modules (tests/_*.py,
tests/conftest.py), never in another test module, so that a test file can be read, run and
moved alone."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Test modules still importing other test modules, each with the reason why (none since issue 31:
# the checkers' tests take the language as a fixture instead of being replayed in Chinese).
NOT_YET: set[str] = set()


def imported_test_modules(path: Path) -> set[str]:
    """The test modules (``test_*``) that the file at ``path`` imports, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0].startswith("test_")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0].startswith("test_"):
                found.add(node.module)
    return found


def test_no_test_module_imports_another():
    importing = {p.name: sorted(imported_test_modules(p)) for p in sorted(TESTS.glob("test_*.py"))}
    importing = {name: found for name, found in importing.items() if found}
    assert set(importing) - NOT_YET == set(), (
        "a test module imports another (move what they share to a helper, tests/_*.py): "
        + "; ".join(f"{n} imports {importing[n]}" for n in sorted(set(importing) - NOT_YET)))
    assert NOT_YET <= set(importing), f"no longer importing test modules, take them off NOT_YET: {NOT_YET - set(importing)}"


def test_the_finder_sees_every_form_of_import(tmp_path):
    source = tmp_path / "test_x.py"
    source.write_text("import test_a\nimport test_b as b\nfrom test_c import d\nfrom _support import x\n"
                      "def f():\n    from test_e import g\nimport os\nfrom . import test_relative\n")
    assert imported_test_modules(source) == {"test_a", "test_b", "test_c", "test_e"}
