"""Hygiene of the committed notebooks, read from their JSON (nbval checks their outputs)."""
import json
import re
from pathlib import Path

import pytest

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
ALL = sorted(p for p in NB_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
TOP = sorted(NB_DIR.glob("*.ipynb"))  # 00_start_here, then the lessons 01_, 02_, ...
LESSONS = [p for p in TOP if not p.name.startswith("00_")]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def code_cells(path):
    return [c for c in cells(path) if c["cell_type"] == "code" and source(c).strip()]


def test_the_course_has_its_notebooks():
    """NN_topic.ipynb numbered 00, 01, ... with no gap; a solutions notebook per lesson, no other."""
    assert TOP and all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name) for p in TOP), [p.name for p in TOP]
    assert [int(p.name[:2]) for p in TOP] == list(range(len(TOP)))
    solutions = {p.name for p in (NB_DIR / "solutions").glob("*.ipynb")}
    assert solutions == {p.name.replace(".ipynb", "_solutions.ipynb") for p in LESSONS}


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_saved_in_restart_and_run_all_order(path):
    counts = [c.get("execution_count") for c in code_cells(path)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: execution counts {counts}"


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_no_error_output_and_under_1_mb(path):
    assert path.stat().st_size < 1_000_000, f"{path.name}: {path.stat().st_size} bytes"
    for c in code_cells(path):
        for out in c.get("outputs", []):
            assert out["output_type"] != "error", f"{path.name}: error output {out.get('ename')}"
            if out["output_type"] == "stream":
                assert out["name"] != "stderr" or "Warning" not in "".join(out["text"]), \
                    f"{path.name}: a warning in a stored output"


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_ignore_marker_only_on_widget_or_version_cells(path):
    for c in code_cells(path):
        src = source(c)
        if "NBVAL_IGNORE_OUTPUT" not in src:
            continue
        shows_widget = any(WIDGET_MIME in out.get("data", {}) for out in c.get("outputs", []))
        assert shows_widget or "version" in src, f"{path.name}: marker on a cell without a widget:\n{src}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_structure(path):
    code = [source(c) for c in code_cells(path)]
    text = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")
    assert "import attn" in code[0] or "from attn" in code[0], "first code cell imports attn"
    assert "manual_seed" in "\n".join(code[:3]), "a seed in the first code cells"
    assert any(WIDGET_MIME in out.get("data", {}) for c in code_cells(path)
               for out in c.get("outputs", [])), "at least one live control"
    assert "attn.exercises" in "\n".join(code) or "from attn.exercises" in "\n".join(code)
    assert re.search(r"exercise", text, re.I) and re.search(r"summary", text, re.I)
    solution = NB_DIR / "solutions" / path.name.replace(".ipynb", "_solutions.ipynb")
    assert solution.exists(), f"missing {solution.name}"
