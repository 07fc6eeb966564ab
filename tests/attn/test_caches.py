"""A cached function answers 4.0 as it answers 4: ``functools.lru_cache`` takes 4 and 4.0 (and
True and 1) for the same key unless ``typed=True``, so a cached function that refuses a float
would return a result cached for the int, and its check would run only when nothing was cached.
Every cache in the package is typed."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attn.widgets.masks import masked_map

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "attn"


def untyped_caches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
            for d in node.decorator_list:
                func = d.func if isinstance(d, ast.Call) else d
                name = getattr(func, "id", getattr(func, "attr", ""))
                typed = isinstance(d, ast.Call) and any(
                    k.arg == "typed" and isinstance(k.value, ast.Constant) and k.value.value is True for k in d.keywords)
                if name in ("lru_cache", "cache") and not typed:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    return found


def test_every_cache_of_a_function_with_arguments_is_typed():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in untyped_caches(path)]
    assert not found, f"write @lru_cache(maxsize=..., typed=True) (functools.cache is untyped): {found}"


def test_a_float_is_refused_after_the_int_was_cached():
    masked_map("causal", 4, "-inf")
    with pytest.raises(TypeError, match="length"):
        masked_map("causal", 4.0, "-inf")
