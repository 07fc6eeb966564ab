"""Slide metadata (tools/slides.py): the rule, and every notebook carrying it.

If a notebook fails here, run ``make slides`` (``python -m tools.slides``) and commit the
notebooks: the script only writes metadata, so nbval needs no re-execution.
"""
from __future__ import annotations

import json

import pytest

from tools import slides

PATHS = slides.notebook_paths()


def _md(text):
    return {"cell_type": "markdown", "source": text, "metadata": {}}


def _code(text, tags=()):
    return {"cell_type": "code", "source": text, "metadata": {"tags": list(tags)} if tags else {}, "outputs": []}


@pytest.mark.parametrize("cell, kind", [
    (_md("# 02 · Queries\n\ntext"), "slide"),
    (_md("## 3. The five steps"), "slide"),
    (_md("  ## Summary"), "slide"),
    (_md("### A detail"), "subslide"),
    (_md("**Exercise 1.** Write ..."), "subslide"),
    (_md("#hashtag is not a heading"), "subslide"),
    (_code("scaling_explorer()", ["nbval-ignore-output"]), "subslide"),
    (_code("print(torch.__version__)  # versions", ["nbval-ignore-output"]), "skip"),
    (_code("scaling_explorer()"), "-"),
    (_code("x = 1"), "-"),
    (_code("# a comment\nx"), "-"),
])
def test_the_rule(cell, kind):
    assert slides.slide_type(cell) == kind


def test_the_script_is_idempotent_and_only_touches_metadata():
    nb = {"cells": [_code("import attn"), _md("## A"), _code("x")], "metadata": {"kernelspec": {}}}
    once = slides.with_slides(nb)
    assert slides.with_slides(once) == once
    assert [c["metadata"]["slideshow"]["slide_type"] for c in once["cells"]] == ["slide", "slide", "-"]
    assert [c["source"] for c in once["cells"]] == [c["source"] for c in nb["cells"]]
    assert once["metadata"]["rise"] == slides.RISE and once["metadata"]["kernelspec"] == {}
    assert nb["cells"][0]["metadata"] == {}  # the argument is not changed


@pytest.mark.parametrize("path", PATHS, ids=lambda p: str(p.relative_to(slides.NOTEBOOKS)))
def test_notebook_has_the_slide_metadata_of_the_rule(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    expected = slides.with_slides(nb)
    wrong = [(i, c.get("metadata", {}).get("slideshow"), e["metadata"]["slideshow"])
             for i, (c, e) in enumerate(zip(nb["cells"], expected["cells"]))
             if c.get("metadata", {}).get("slideshow") != e["metadata"]["slideshow"]]
    assert wrong == [] and nb["metadata"].get("rise") == slides.RISE, (
        f"{path.name}: slide metadata differs from tools/slides.py's rule (run `make slides`): "
        f"{wrong[:5]}, rise={nb['metadata'].get('rise')}")
    kinds = [c["metadata"]["slideshow"]["slide_type"] for c in nb["cells"]]
    assert kinds[0] == "slide" and sum(k in ("slide", "subslide") for k in kinds) >= 2, f"{path.name}: {kinds}"
