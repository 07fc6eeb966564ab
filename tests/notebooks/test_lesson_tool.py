"""tools/lesson.py and tools/lesson_new.py, in a copy of the repository's course files.

``sync`` writes the generated tables from the notebooks and ``--check`` names each stale place;
the Binder links come from site/_config.yml's ``repository: url:`` alone; ``new`` writes a
lesson that keeps the notebook tests' rules and registers it, or refuses a name with a named
error. The slow test executes the new lesson and runs the repository's notebook tests on the copy.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import lesson
from tools.execute import IGNORE_TAG
from tools.lesson_new import new_lesson

ROOT = Path(__file__).resolve().parents[2]
#: The course's notebooks today, and the lesson `new` would write next: the tests hold for a course
#: that has grown (a teacher's 13_my_topic) as for this one.
TOP = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LAST = TOP[-1].stem  # 12_transformer_block today
N = f"{int(LAST[:2]) + 1:02d}"  # the next number, "13" today
NEW = f"{N}_my_topic"
#: What sync and new read and write, and what the tools they run need.
COPIED = ["notebooks", "README.md", "README.zh.md", "docs", "site", "tools", "src", "tests",
          "conftest.py", "pyproject.toml", "deploy/hub/z2jh-config.yaml"]


@pytest.fixture
def course(tmp_path: Path) -> Path:
    for name in COPIED:
        source, dest = ROOT / name, tmp_path / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "node_modules"))
        elif source.exists():
            shutil.copy2(source, dest)
    return tmp_path


def set_repository(root: Path, url: str) -> None:
    config = root / "site" / "_config.yml"
    config.write_text(re.sub(r'(?m)^  url: .*$', f'  url: "{url}"', config.read_text(encoding="utf-8")),
                      encoding="utf-8")


def test_the_repository_is_in_sync():
    assert lesson.sync(ROOT, check=True) == []


def test_a_stale_table_is_named_with_its_file_line_and_command(course):
    path = lesson.notebook_path("02_qkv", "en", course)
    nb = nbformat.read(path, as_version=4)
    nb.metadata["attn"]["summary"] = "something else"
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    stale = [str(s) for s in lesson.sync(course, check=True)]
    assert any(s.startswith("README.md:") and "'notebooks'" in s and "python -m tools.lesson sync" in s
               for s in stale), stale
    assert any(s.startswith("notebooks/00_start_here.ipynb:") for s in stale), stale
    assert lesson.sync(course) and lesson.sync(course, check=True) == []
    assert "| `02_qkv` | something else |" in (course / "README.md").read_text(encoding="utf-8")


def test_a_time_that_differs_between_the_languages_is_refused(course):
    path = lesson.notebook_path("02_qkv", "zh", course)
    path.write_text(path.read_text(encoding="utf-8").replace("40 分钟", "41 分钟", 1), encoding="utf-8")
    with pytest.raises(lesson.LessonError, match=r"notebooks/zh/02_qkv.ipynb: its time is 41 minutes"):
        lesson.read_lesson("02_qkv", course)


def test_the_map_total_is_the_sum_of_the_lessons():
    lessons = lesson.course(ROOT)
    total = sum(x.minutes for x in lessons[1:])
    text = lesson.course_map(lessons, "en", ("", "main"))
    assert f"about {total} minutes ({total // 60} h {total % 60:02d} min)" in text


def test_without_an_address_no_page_links_binder(course):
    lesson.sync(course)
    for name in ("README.md", "README.zh.md", "docs/teaching.md", "docs/zh/teaching.md"):
        text = (course / name).read_text(encoding="utf-8")
        assert "mybinder.org/v2/" not in text and "OWNER/REPO/main" not in text, name
        assert "repository: url:" in text, f"{name}: no sentence says where to set the address"


def test_with_an_address_every_binder_link_carries_it(course):
    set_repository(course, "https://github.com/someone/attention-course")
    lesson.sync(course)
    readme, teaching = ((course / n).read_text(encoding="utf-8") for n in ("README.md", "docs/teaching.md"))
    links = re.findall(r"https://mybinder\.org/v2/gh/[^\s)]+", readme + teaching)
    assert len(links) >= 2 * len(TOP) and all(u.startswith("https://mybinder.org/v2/gh/someone/attention-course/main?")
                                        for u in links), links
    assert "voila/render/notebooks/02_qkv.ipynb" in readme and "lab/tree/notebooks/02_qkv.ipynb" in teaching
    zh = (course / "README.zh.md").read_text(encoding="utf-8")
    assert "someone/attention-course/main?urlpath=voila/render/notebooks/zh/02_qkv.ipynb" in zh


def test_an_address_that_is_not_github_is_refused(course):
    set_repository(course, "https://example.org/x")
    with pytest.raises(lesson.LessonError, match="repository: url: expected https://github.com/"):
        lesson.repository_url(course)


@pytest.mark.parametrize("name,error", [
    (LAST, "exists already"),
    (f"{int(N) + 1:02d}_too_far", f"the next is {N}_"),
    (f"{N}-My-Topic", "expected NN_name"),
])
def test_new_refuses_a_name_that_exists_or_breaks_the_numbering(course, name, error):
    with pytest.raises(lesson.LessonError, match=error):
        new_lesson(name, "T", "题", execute=False, root=course)
    assert not (course / "notebooks" / f"{NEW}.ipynb").exists()


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_new_writes_a_lesson_that_keeps_the_rules_and_registers_it(course):
    assert new_lesson(NEW, "My topic", "我的主题", execute=False, root=course) == 0
    en, zh = (lesson.notebook_path(NEW, lang, course) for lang in ("en", "zh"))
    facts = lesson.read_lesson(NEW, course)
    assert facts.title == {"en": "My topic", "zh": "我的主题"} and facts.minutes == 20
    assert lesson.sync(course, check=True) == []
    assert f"| [{N}](./{NEW}.ipynb) | My topic |" in (course / "notebooks/00_start_here.ipynb").read_text()
    for path, next_word in ((en, "Next: "), (zh, "下一课：")):
        previous = _cells(path.parent / f"{LAST}.ipynb")[-1]
        assert f"{next_word}[{N} " in "".join(previous["source"]) and f"({NEW}.ipynb)" in "".join(previous["source"])
        assert not re.search("This is the last notebook|这是最后一个笔记本", "".join(previous["source"]))
        cells = _cells(path)
        first, code = "".join(cells[0]["source"]), [c for c in cells if c["cell_type"] == "code"]
        assert "set_language(" in "".join(code[0]["source"]) and "manual_seed" in "".join(code[0]["source"])
        explorers = [c for c in code if "_explorer(" in "".join(c["source"])]
        assert len(explorers) == 1 and IGNORE_TAG in explorers[0]["metadata"].get("tags", [])
        headings = [ln for c in cells if c["cell_type"] == "markdown" for ln in "".join(c["source"]).splitlines()
                    if ln.startswith("## ")]
        assert {"## Summary", "## Exercises"} <= set(headings) or {"## 小结", "## 练习"} <= set(headings), headings
        assert "general.check_mask(answer" in "".join(code[-1]["source"])
        assert f"](solutions/{NEW}_solutions.ipynb)" in "".join(cells[-1]["source"])
        solutions = _cells(path.parent / "solutions" / f"{NEW}_solutions.ipynb")
        assert not any("_explorer" in "".join(c["source"]) for c in solutions), "solutions show no explorer"
        assert first.count("\n# ") == 0 and first.startswith(f"# {N} · ")
    strip = lambda c: re.sub(r"#.*", "", "".join(c["source"])).replace('"zh"', '"en"')  # noqa: E731
    assert [strip(c) for c in _cells(en) if c["cell_type"] == "code"] == \
           [strip(c) for c in _cells(zh) if c["cell_type"] == "code"], "the twins run the same code"


@pytest.mark.slow
def test_a_new_lesson_passes_the_notebook_tests(course):
    """The whole path of CONTRIBUTING's "Adding or changing a lesson": new (with execution),
    then the repository's notebook tests and strict nbval, run on the copy."""
    assert new_lesson(NEW, "My topic", "我的主题", execute=True, root=course) == 0
    files = [f"notebooks/{p}{NEW}.ipynb" for p in ("", "zh/")] + \
            [f"notebooks/{p}solutions/{NEW}_solutions.ipynb" for p in ("", "zh/")]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "tests/notebooks/", "-k", NEW, "--nbval", *files],
                         cwd=course, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]
    passed = int(re.search(r"(\d+) passed", run.stdout).group(1))
    assert passed > 50, run.stdout[-500:]  # the lesson's own tests ran, not a filter that kept none


def test_a_lesson_without_a_checker_module_of_its_own_is_still_an_assignment():
    """make assignments finds the exercises of a new lesson by the checkers its cells call."""
    from tools.assignments import checkers_of

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell('answer = None\ngeneral.check_mask(answer, kind="causal", length=6)')])
    assert checkers_of("99", nb) == ["check_mask"]
    assert "check_score_variance" in checkers_of("02", nb)  # a lesson's own module comes first
