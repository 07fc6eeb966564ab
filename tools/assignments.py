"""Write the course's exercises as nbgrader assignments, then their student versions.

For every course notebook ``notebooks/NN_name.ipynb`` that has worked solutions
(``notebooks/solutions/NN_name_solutions.ipynb``), this writes an nbgrader *source* notebook,
``<course>/source/NN_name/NN_name.ipynb``, and runs ``nbgrader generate_assignment``, which
writes the *student version*, ``<course>/release/NN_name/NN_name.ipynb``: the course notebook
with each exercise's answer to fill in and its check hidden until grading.

Nothing is marked by hand in the course notebooks; the assignments follow them as they change,
by these rules:

* **An exercise** is a code cell of the course notebook whose last statement calls one of the
  checkers of ``attn.exercises.nbNN`` (a public function named ``check_*``), as
  ``nbNN.check_x(answer)`` or ``check_x(answer)``. Every checker of the module must be called by
  exactly one cell; otherwise the script stops and names the checker.
* **Its worked solution** is the first code cell of the solutions notebook whose last statement
  calls the same checker, together with the code cells before it back to the previous
  exercise's solution (they compute what it uses). Cells whose every line the course notebook
  has too (imports, seeds) and other calls of checkers are left out.

Each exercise becomes two nbgrader cells:

1. the **answer** (an autograded-answer cell): the worked solution, between ``### BEGIN
   SOLUTION`` and ``### END SOLUTION``, so that the source version runs as the solutions
   notebook does; the student version has, instead, the exercise's code as the course notebook
   has it, without its check (``answer = None  # your code here``). The cell carries that code
   in its metadata (``attn.exercise_code``), and a step that this script adds to nbgrader's
   ``generate_assignment`` (in the course folder's ``nbgrader_config.py``) puts it in place of
   the solution;
2. the **check** (an autograded-tests cell, 1 point, locked): the checker's call, which must
   return a correct ``Feedback``, between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN
   TESTS``; the student version shows only a comment in its place.

Usage (from the repository's root; ``make assignments`` runs it in the teacher's venv)::

    python tools/assignments.py [--course DIR] [NN_name ...]

``--course`` is nbgrader's course folder (default ``assignments/``); with no names, every
notebook with solutions becomes an assignment.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
DEFAULT_COURSE = REPO / "assignments"
SCHEMA_VERSION = 3  # nbgrader's cell metadata schema (nbgrader 0.9)
CHECK_COMMENT = "# Graded: this exercise's check runs when your notebook is graded."

# nbgrader's settings for the course folder: the step that gives each answer cell of the student
# version the exercise's own code, right after nbgrader clears the solutions; two minutes per
# cell when grading (notebook 08 trains a small model).
NBGRADER_CONFIG = '''\
# Written by tools/assignments.py (the course's `make assignments`).
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor


class ExerciseCode(NbGraderPreprocessor):
    """In the student version, an answer cell holds the exercise's code as the course notebook
    has it (its metadata attn.exercise_code), where nbgrader left an empty stub."""

    def preprocess_cell(self, cell, resources, index):
        code = cell.metadata.pop("attn", {}).get("exercise_code")
        if code is not None:
            cell.source = code
        return cell, resources


c = get_config()  # noqa: F821 (defined by nbgrader when it reads this file)
c.CourseDirectory.course_id = "attn"
c.ClearSolutions.code_stub = {"python": ""}
steps = list(GenerateAssignment.class_traits()["preprocessors"].default())
steps.insert(steps.index(ClearSolutions) + 1, ExerciseCode)
c.GenerateAssignment.preprocessors = steps
c.Execute.timeout = 120
'''


class ExerciseRuleError(RuntimeError):
    """The rule that finds exercises or their solutions did not match the notebooks."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: the checker it calls, the course cell's code without the call, the
    call itself (source text) and the worked solution's code."""

    checker: str
    starter: str
    check_call: str
    solution: str


def checker_call(source: str) -> tuple[str, str, str] | None:
    """If the cell's last statement calls a ``check_*`` function, return (checker name, the code
    before that statement, the statement's source); else None.

    >>> checker_call("answer = 1\\nnb01.check_x(answer)")
    ('check_x', 'answer = 1', 'nb01.check_x(answer)')
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics (%matplotlib): not an exercise cell
        return None
    if not tree.body:
        return None
    last = tree.body[-1]
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)):
        return None
    func = last.value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if not name.startswith("check_"):
        return None
    lines = source.splitlines()
    before = "\n".join(lines[: last.lineno - 1]).rstrip()
    call = "\n".join(lines[last.lineno - 1 : last.end_lineno]).strip()
    return name, before, call


def checkers_of(number: str, course_nb: nbformat.NotebookNode | None = None) -> list[str]:
    """The public checkers (``check_*``) of ``attn.exercises.nb<number>``, in order; for a lesson
    without a module of its own (one written with ``python -m tools.lesson new``, which calls the
    checkers of ``attn.exercises.general``), the checkers its exercise cells call, in order."""
    try:
        module = importlib.import_module(f"attn.exercises.nb{number}")
    except ModuleNotFoundError:
        calls = [checker_call(c.source) for c in (course_nb.cells if course_nb else []) if c.cell_type == "code"]
        return list(dict.fromkeys(hit[0] for hit in calls if hit))
    names = getattr(module, "__all__", None) or dir(module)
    return [n for n in names if n.startswith("check_") and callable(getattr(module, n))]


def find_exercises(course_nb: nbformat.NotebookNode, solutions_nb: nbformat.NotebookNode,
                   checkers: list[str], where: str) -> list[tuple[int, Exercise]]:
    """(cell index in the course notebook, Exercise) for every exercise, in notebook order.

    A checker may be called by several exercise cells (notebook 05 checks one class at two
    steps of its build): the k-th call in the course notebook pairs with the k-th worked
    solution of that checker, or with its last one when the solutions notebook solves it once
    (05's solutions hold the complete class, which passes both steps). Raises ExerciseRuleError when a checker of the module has no
    exercise cell, or an exercise cell has no worked solution."""
    found: list[tuple[int, str, str, str]] = []  # (cell index, checker, code before, the call)
    for index, cell in enumerate(course_nb.cells):
        if cell.cell_type != "code":
            continue
        hit = checker_call(cell.source)
        if hit is None or hit[0] not in checkers:
            continue
        found.append((index, *hit))
    missing = [name for name in checkers if name not in {f[1] for f in found}]
    if missing:
        raise ExerciseRuleError(
            f"{where}: no exercise cell calls {missing} (an exercise is a code cell whose last "
            "statement calls a checker of attn.exercises)")

    course_lines = {line.strip() for c in course_nb.cells if c.cell_type == "code"
                    for line in c.source.splitlines()}
    solutions: dict[str, list[str]] = {}  # checker -> its worked solutions, in order
    pending: list[str] = []  # code cells since the previous solution
    for cell in solutions_nb.cells:
        if cell.cell_type != "code":
            continue
        hit = checker_call(cell.source)
        if hit is None:
            lines = {line.strip() for line in cell.source.splitlines()} - {""}
            if lines - course_lines:  # not only what the course notebook runs too (imports)
                pending.append(cell.source.strip())
            continue
        name, before, _ = hit
        solutions.setdefault(name, []).append("\n\n".join(pending + ([before] if before else [])))
        pending = []

    exercises, seen, unsolved = [], {}, []
    for index, name, before, call in found:
        k = seen.get(name, 0)
        seen[name] = k + 1
        worked = solutions.get(name, [])
        solution = worked[min(k, len(worked) - 1)] if worked else ""
        if not solution.strip():
            unsolved.append(name)
            continue
        grade_id = name if k == 0 else f"{name}_{k + 1}"
        exercises.append((index, Exercise(grade_id, before, call, solution)))
    if unsolved:
        raise ExerciseRuleError(f"{where}: the solutions notebook has no worked solution "
                                f"(a code cell ending with the checker's call) for {unsolved}")
    return exercises


def answer_source(exercise: Exercise) -> str:
    return f"### BEGIN SOLUTION\n{exercise.solution}\n### END SOLUTION"


def check_source(exercise: Exercise) -> str:
    return (f"{CHECK_COMMENT}\n### BEGIN HIDDEN TESTS\nfeedback = {exercise.check_call}\n"
            "assert feedback.correct, repr(feedback)\n### END HIDDEN TESTS")


def nbgrader_metadata(grade_id: str, *, solution: bool, grade: bool) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": grade, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = 1
    return {"nbgrader": meta}


def source_notebook(name: str) -> nbformat.NotebookNode:
    """The nbgrader source version of notebooks/<name>.ipynb (e.g. name = "02_qkv")."""
    number = name.split("_", 1)[0]
    course_path = NOTEBOOKS / f"{name}.ipynb"
    solutions_path = SOLUTIONS / f"{name}_solutions.ipynb"
    course_nb = nbformat.read(course_path, as_version=4)
    solutions_nb = nbformat.read(solutions_path, as_version=4)
    checkers = checkers_of(number, course_nb)
    if not checkers:
        raise ExerciseRuleError(f"{course_path.name}: no exercise calls a checker (attn.exercises.nb{number} or "
                                f"attn.exercises.general): end an exercise cell with a check_* call")
    exercises = dict(find_exercises(course_nb, solutions_nb, checkers,
                                    where=str(course_path.relative_to(REPO))))
    cells = []
    for index, cell in enumerate(course_nb.cells):
        if index not in exercises:
            cells.append(cell)
            continue
        exercise = exercises[index]
        metadata = nbgrader_metadata(f"{exercise.checker}_answer", solution=True, grade=False)
        metadata["attn"] = {"exercise_code": exercise.starter}
        cells.append(nbformat.v4.new_code_cell(answer_source(exercise), metadata=metadata))
        cells.append(nbformat.v4.new_code_cell(
            check_source(exercise),
            metadata=nbgrader_metadata(exercise.checker, solution=False, grade=True)))
    course_nb.cells = cells
    return course_nb


def assignment_names() -> list[str]:
    """NN_name of every course notebook with a solutions notebook, in order."""
    names = [p.stem for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
             if (SOLUTIONS / f"{p.stem}_solutions.ipynb").exists()]
    if not names:
        raise ExerciseRuleError(f"no notebook in {NOTEBOOKS} has a solutions notebook in {SOLUTIONS}")
    return names


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: this interpreter's bin/ first on PATH, so that the
    kernels nbgrader starts to grade run this Python (which sees the course's packages), and
    so does the `alembic` that nbgrader runs."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def check_release(source: nbformat.NotebookNode, release_path: Path) -> None:
    """Raise ExerciseRuleError unless the student version has each exercise's code in its
    answer cells, and neither solutions nor checks (nbgrader only logs a broken config file,
    and then writes its default stubs)."""
    release = nbformat.read(release_path, as_version=4)
    expected = [(c.metadata.nbgrader["grade_id"], c.metadata.get("attn", {}).get("exercise_code"))
                for c in source.cells if "nbgrader" in c.metadata]
    got = [(c.metadata.nbgrader["grade_id"], c.source.strip()) for c in release.cells
           if "nbgrader" in c.metadata]
    if len(got) != len(expected):
        raise ExerciseRuleError(f"{release_path}: {len(got)} nbgrader cells, expected {len(expected)}")
    for (grade_id, code), (got_id, text) in zip(expected, got):
        wrong = (grade_id != got_id or "BEGIN SOLUTION" in text or "HIDDEN TESTS" in text
                 or (code is not None and text != code.strip())
                 or (code is None and text != CHECK_COMMENT))
        if wrong:
            raise ExerciseRuleError(f"{release_path}: cell {grade_id} of the student version is "
                                    f"not what was expected: {text!r}")


def build(course: Path, names: list[str]) -> list[Path]:
    """Write the source notebooks and the student versions; return the student versions."""
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG, encoding="utf-8")
    released = []
    for name in names:
        source_path = course / "source" / name / f"{name}.ipynb"
        source_path.parent.mkdir(parents=True, exist_ok=True)
        source = source_notebook(name)
        nbformat.write(source, source_path)
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force"],
                       cwd=course, env=nbgrader_env(), check=True)
        release_path = course / "release" / name / f"{name}.ipynb"
        check_release(source, release_path)
        released.append(release_path)
    return released


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="assignments to write (default: all), e.g. 02_qkv")
    parser.add_argument("--course", type=Path, default=DEFAULT_COURSE,
                        help="nbgrader's course folder (default: assignments/)")
    args = parser.parse_args(argv)
    known = assignment_names()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"names: expected some of {known}, got {unknown}")
    try:
        released = build(args.course.resolve(), args.names or known)
    except ExerciseRuleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in released:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
