"""The teacher's chain (docs/teaching.md, "Assignments"): write the assignments, grade two submissions.

It runs in the teacher's venv (``.venv-teacher``: nbgrader, from requirements-teacher.txt,
beside the course's packages), which ``make test`` makes; without it the tests skip, saying
so, and under CI (CI=true) fail instead.

1. ``make assignments`` (tools/assignments.py) writes every assignment; each student version keeps the code of
   each exercise as the course notebook has it, and holds neither a worked solution nor a check.
2. Two students hand in one assignment (``GRADED``): ``right`` with the worked solutions,
   ``partial`` with only the first exercise answered (the others as handed out). ``make grade``
   (nbgrader's autograde, then export) grades both: grades.csv gives ``right`` full marks and
   ``partial`` less. Grading executes each notebook handed in, so one assignment stands for
   all: 05, whose checker of one class is called by several exercise cells (the hardest case
   for tools/assignments.py). That every worked solution passes its check, in every notebook,
   strict nbval shows on the solutions notebooks, whose stored outputs say "Correct", and
   ``test_every_worked_solution_is_the_solutions_notebooks_own`` shows that the assignments'
   worked solutions are those.
"""
from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import nbformat
import pytest

from _support import REPO, unavailable

TEACHER = REPO / ".venv-teacher"
TEACHER_PYTHON = TEACHER / "bin" / "python"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
GRADED = ("05_pytorch_implementation",)


pytestmark = pytest.mark.slow  # nbgrader makes the student versions and grades them


def make(target: str, course: Path, timeout: float = 1800) -> subprocess.CompletedProcess:
    """`make <target>` of docs/teaching.md on the course folder `course`, without remaking the venvs
    (-o: `make test` has just made them)."""
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed",
                           "-o", ".venv-teacher/.installed", target, f"ASSIGNMENTS={course}"],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


def graded_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if "nbgrader" in c.metadata]


def answers(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


def worked(source_cell: nbformat.NotebookNode) -> str:
    """The worked solution of an answer cell of the source version (between nbgrader's marks)."""
    return source_cell.source.partition(BEGIN)[2].partition(END)[0].strip()


def course_nb_text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    if not TEACHER_PYTHON.exists():
        unavailable("the teacher's venv .venv-teacher is missing: run `make teacher` (`make test` does)")
    root = tmp_path_factory.mktemp("course")
    r = make("assignments", root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return root


def assignments(course: Path) -> list[str]:
    names = sorted(p.name for p in (course / "source").iterdir())
    assert names, "no assignment written"
    return names


def read(course: Path, kind: str, name: str) -> nbformat.NotebookNode:
    return nbformat.read(course / kind / name / f"{name}.ipynb", as_version=4)


def test_every_notebook_with_solutions_is_an_assignment(course):
    expected = sorted(p.name.removesuffix("_solutions.ipynb")
                      for p in (REPO / "notebooks" / "solutions").glob("[0-9][0-9]_*_solutions.ipynb"))
    assert assignments(course) == expected
    for name in expected:
        assert (course / "release" / name / f"{name}.ipynb").is_file(), name


def test_student_versions_keep_the_exercises_and_hide_solutions_and_checks(course):
    for name in assignments(course):
        source, release = read(course, "source", name), read(course, "release", name)
        course_nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
        course_lines = {line.strip() for c in course_nb.cells for line in c.source.splitlines()}
        # the same cells, nbgrader's in the same places
        assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in source.cells] == \
               [c.metadata.get("nbgrader", {}).get("grade_id") for c in release.cells], name
        assert len(answers(source)) >= 1, name
        for src, rel in zip(graded_cells(source), graded_cells(release)):
            meta = src.metadata.nbgrader
            if meta["solution"]:
                # the student gets the exercise's code as the course notebook has it ...
                # (empty when the cell only calls the checker on a class an earlier cell builds:
                # 05 checks its learner's SelfAttention again once masks are added)
                code = src.metadata.attn.exercise_code
                assert code.strip() in course_nb_text(course_nb), (name, code)
                assert rel.source.strip() == code.strip(), (name, meta["grade_id"])
                # ... and no line of the worked solution that the course notebook does not show
                hidden = {line.strip() for line in worked(src).splitlines()} - course_lines - {""}
                assert hidden, (name, meta["grade_id"], "a solution that the course shows already")
                assert not hidden & {line.strip() for line in rel.source.splitlines()}
            else:
                assert meta["points"] == 1 and meta["locked"], (name, meta)
                assert "check_" in src.source, (name, src.source)
                assert "check_" not in rel.source, (name, rel.source)
        text = nbformat.writes(release)
        assert BEGIN not in text and "HIDDEN TESTS" not in text, name
        assert all(not c.get("outputs") for c in release.cells if c.cell_type == "code"), name


def test_autograde_gives_the_worked_solutions_full_marks_and_a_partial_answer_less(course):
    expected = {}
    assert set(GRADED) <= set(assignments(course)), GRADED
    for name in GRADED:
        source, release = read(course, "source", name), read(course, "release", name)
        worked_answers = [worked(c) for c in answers(source)]
        expected[name] = len(worked_answers)
        # a student who replaced the exercise's code by the worked solution
        for student, n_answered in (("right", len(worked_answers)), ("partial", 1)):
            nb = read(course, "release", name)
            for cell, answer in zip(answers(nb), worked_answers[:n_answered]):
                cell.source = answer
            folder = course / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{name}.ipynb")

    r = make("grade", course)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(f)}

    for name, n in expected.items():
        right, partial = rows[(name, "right")], rows[(name, "partial")]
        assert float(right["max_score"]) == n, (name, right)
        assert float(right["score"]) == n, f"{name}: the worked solutions got {right['score']} of {n}"
        # the first answer earns its own check, and more only where later checks test the same
        # thing (05 checks one class at two steps of its build); never full marks
        got = float(partial["score"])
        assert 1 <= got and (got < n or n == 1), f"{name}: one answer of {n} got {partial['score']}"
    for name in set(assignments(course)) - set(GRADED):  # nothing handed in: nothing earned
        assert all(float(row["score"]) == 0 for (a, _), row in rows.items() if a == name), name


def test_every_worked_solution_is_the_solutions_notebooks_own(course):
    """Each answer's worked solution is code of the solutions notebook, which strict nbval runs
    (its checks print "Correct"): the assignments that are not graded above rest on that."""
    for name in assignments(course):
        solutions = nbformat.read(REPO / "notebooks" / "solutions" / f"{name}_solutions.ipynb", as_version=4)
        solution_code = course_nb_text(solutions)
        for cell in answers(read(course, "source", name)):
            for line in worked(cell).splitlines():
                assert line in solution_code.splitlines(), (name, line)


def test_nbgrader_stays_out_of_the_learners_lab():
    """nbgrader adds menus to every JupyterLab that has it: not in .venv nor in Binder's image."""
    import importlib.util
    import sys

    assert importlib.util.find_spec("nbgrader") is None, "nbgrader is importable in the course's venv"
    for requirements in ("requirements.txt", "binder/requirements.txt"):
        assert "nbgrader" not in (REPO / requirements).read_text().lower(), requirements
    r = subprocess.run([str(Path(sys.executable).parent / "jupyter"), "labextension", "list"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    listing = r.stdout + r.stderr
    assert "@jupyter-widgets/jupyterlab-manager" in listing, listing  # the listing works
    assert "nbgrader" not in listing, listing
