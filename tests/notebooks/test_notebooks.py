"""Hygiene of the committed notebooks, read from their JSON (nbval checks their outputs).

The second half is the portability scan: strict nbval compares every stored output that is not
tagged ``nbval-ignore-output`` with what the learner's machine prints, so no such output may
hold what changes from one CPU to the next: a number at round-off scale, a signed zero, a time,
or anything computed from a clock (``make portable`` runs strict nbval under other kernels and
thread counts; this scan finds the kinds of output that those settings may not happen to move).
"""
import ast
import json
import re
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tools.execute import IGNORE_TAG, output_ignored, stable_form

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
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
    badly_named = [p.name for p in TOP if not re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name)]
    assert TOP and not badly_named, (f"notebooks/: name each notebook NN_topic.ipynb (two digits, then lower-case "
                                     f"words joined by _): rename {badly_named}")
    numbers = [int(p.name[:2]) for p in TOP]
    assert numbers == list(range(len(TOP))), (f"notebooks/: the lessons are numbered {numbers}; number them "
                                              f"00, 01, ... {len(TOP) - 1:02d} with no gap and no number twice")
    solutions = {p.name for p in (NB_DIR / "solutions").glob("*.ipynb")}
    wanted = {solutions_of(p).name for p in LESSONS}
    assert solutions <= wanted, (f"notebooks/solutions/: {sorted(solutions - wanted)} solve no lesson: rename each "
                                 f"NN_topic_solutions.ipynb after its lesson, or remove it")


def solutions_of(lesson: Path) -> Path:
    """notebooks/02_qkv.ipynb -> notebooks/solutions/02_qkv_solutions.ipynb (zh/ -> zh/solutions/)."""
    return lesson.parent / "solutions" / lesson.name.replace(".ipynb", "_solutions.ipynb")


# --- what every lesson has ------------------------------------------------------------------------
#
# One rule per assertion, in both languages: the first code cell imports attn and the first code
# cells seed the random generators; an explorer; exercises checked through attn.exercises, under
# an Exercises heading; a Summary heading; a solutions notebook beside it.

LESSONS_BOTH = LESSONS + sorted(p for p in (NB_DIR / "zh").glob("*.ipynb") if not p.name.startswith("00_"))
HEADING = {"Summary": r"Summary|小结", "Exercises": r"Exercises|练习"}
#: Lessons whose exercises sit in their sections, each after the step it asks for, under no
#: Exercises heading of their own: lesson -> why.
EXERCISES_IN_THE_SECTIONS = {
    "05_pytorch_implementation": "the build is the exercise: each section's checker (nb05.check_...) follows its step",
}


def has_heading(path: Path, words: str) -> bool:
    return any(re.search(rf"^#+ .*\b(?:{words})", source(c), re.M) for c in cells(path) if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", LESSONS_BOTH, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_a_lesson_has_what_every_lesson_has(path):
    name, code = path.relative_to(NB_DIR.parent), [source(c) for c in code_cells(path)]
    assert code and re.search(r"^(?:import attn|from attn[ .])", code[0], re.M), (
        f"{name}: its first code cell imports the course's package: write `import attn` (and the lesson's "
        f"other imports) there")
    assert "manual_seed" in "\n".join(code[:3]), (
        f"{name}: seed the random generators in the first code cells: write `torch.manual_seed(0)` (and "
        f"`np.random.seed(0)` if it uses NumPy) in the imports cell")
    assert any(WIDGET_MIME in out.get("data", {}) for c in code_cells(path) for out in c.get("outputs", [])), (
        f"{name}: no cell shows an explorer: end a cell with the lesson's explorer from attn.widgets "
        f"(`from attn.widgets.masks import mask_explorer` ... `mask_explorer()`), tag it {IGNORE_TAG}, re-execute")
    assert re.search(r"^\s*(?:from attn\.exercises\b|import attn\.exercises\b)", "\n".join(code), re.M), (
        f"{name}: its exercises are checked through attn.exercises: write `from attn.exercises import nbNN` in "
        f"the imports cell and end each exercise's cell with its checker (`nbNN.check_...(answer)`); the "
        f"checkers live in src/attn/exercises/nbNN.py")
    assert has_heading(path, HEADING["Summary"]), (
        f"{name}: no Summary heading: end the lesson with a markdown cell `## Summary` (`## 小结` in Chinese) "
        f"that says what the lesson showed")
    if path.stem in EXERCISES_IN_THE_SECTIONS:
        assert not has_heading(path, HEADING["Exercises"]), (
            f"{name} has an Exercises heading now: remove {path.stem} from EXERCISES_IN_THE_SECTIONS in tests/notebooks/test_notebooks.py")
    else:
        assert has_heading(path, HEADING["Exercises"]), (
            f"{name}: no Exercises heading: put the exercises under a markdown cell `## Exercises` (`## 练习` "
            f"in Chinese), each `**Exercise N — ...**` followed by a code cell that calls its checker")
    solutions = solutions_of(path)
    assert solutions.exists(), (
        f"{name}: no solutions notebook: write {solutions.relative_to(NB_DIR.parent)}, the lesson's exercises "
        f"with worked answers (a copy of the lesson's exercises, the answers filled in; no explorer), and "
        f"execute it (python -m tools.execute {path.stem})")


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_saved_in_restart_and_run_all_order(path):
    counts = [c.get("execution_count") for c in code_cells(path)]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.relative_to(NB_DIR.parent)}: execution counts {counts}, not 1, 2, 3, ...: run it top to bottom in a "
        f"fresh kernel: python -m tools.execute {path.relative_to(NB_DIR.parent)}")


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_no_error_output_and_under_1_mb(path):
    assert path.stat().st_size < 1_000_000, (f"{path.relative_to(NB_DIR.parent)}: {path.stat().st_size:,} bytes, at most "
                                             f"1 MB: print less, or draw fewer or smaller pictures")
    for c in code_cells(path):
        for out in c.get("outputs", []):
            assert out["output_type"] != "error", (
                f"{path.relative_to(NB_DIR.parent)}: a cell stored the error {out.get('ename')}: {out.get('evalue')}: "
                f"fix the cell, then re-execute: python -m tools.execute {path.relative_to(NB_DIR.parent)}")
            if out["output_type"] == "stream":
                assert out["name"] != "stderr" or "Warning" not in "".join(out["text"]), \
                    (f"{path.relative_to(NB_DIR.parent)}: a warning in a stored output: "
                     f"{''.join(out['text'])[:200]!r}: remove its cause, then re-execute")


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_ignore_tag_only_on_widget_version_or_timing_cells(path):
    timing = timing_cells(path)
    for i, c in enumerate(cells(path)):
        if c["cell_type"] != "code" or not output_ignored(c):
            continue
        src = source(c)
        shows_widget = any(WIDGET_MIME in out.get("data", {}) for out in c.get("outputs", []))
        assert shows_widget or "version" in src or i in timing, \
            f"{path.name}: cell {i} is tagged {IGNORE_TAG} without a widget, a version or a timing:\n{src}"


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_a_learner_reads_no_test_plumbing(path):
    """nbval's directives are cell tags, never a comment the learner reads in the cell (nor the
    website, which shows the code)."""
    for i, c in enumerate(cells(path)):
        assert not re.search(r"NBVAL_|PYTEST_VALIDATE", source(c)), \
            f"{path.name}: cell {i} writes an nbval directive in its code: remove the line and give the " \
            f"cell the tag {IGNORE_TAG} (python -m tools.execute stores it as it is)"


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_stored_in_stable_form(path):
    """Stored as python -m tools.execute stores it: no cell timings, a cell's printed text in one
    output per stream, widget ids that do not change from run to run; so re-executing a notebook
    changes only what its code changed."""
    text = path.read_text(encoding="utf-8")
    assert text == stable_form(nbformat.reads(text, as_version=4), path), \
        f"{path.relative_to(NB_DIR.parent)} is not in stable form: re-execute it with " \
        f"python -m tools.execute {path.relative_to(NB_DIR.parent)}"


#: An object's repr with its address, <torch._C.Generator object at 0x7f3a...>: the value of a bare
#: call such as torch.manual_seed(0), different on every run.
ADDRESS = re.compile(r"<[^<>\n]* at 0x[0-9a-fA-F]+>")


def addresses(cell) -> list[str]:
    """The object reprs with an address that a code cell's outputs show."""
    texts = ["".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
             for out in cell.get("outputs", [])]
    return [m.group() for text in texts for m in ADDRESS.finditer(text)]


def test_an_address_is_found():
    cell = {"outputs": [{"output_type": "execute_result", "data": {"text/plain": "<torch._C.Generator at 0x7f3a2c>"}},
                        {"output_type": "stream", "text": "<Figure size 640x480 with 1 Axes>\n"}]}
    assert addresses(cell) == ["<torch._C.Generator at 0x7f3a2c>"]


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_no_output_shows_an_objects_address(path):
    found = [f"cell {i}: {shown}" for i, c in enumerate(cells(path)) for shown in addresses(c)]
    assert not found, (f"{path.relative_to(NB_DIR.parent)}: {found}: the value of a bare call, such as "
                       f"torch.manual_seed(0), shown with its address (another on every run): end that line with "
                       f"`;` or assign it (`_ = torch.manual_seed(0)`), then re-execute (python -m tools.execute "
                       f"{path.relative_to(NB_DIR.parent)})")


# --- portability: what a checked output may not print -------------------------------------------

def checked_cells(path):
    """(index in the JSON, cell, its text outputs) of every code cell whose output nbval compares."""
    found = []
    for i, c in enumerate(cells(path)):
        if c["cell_type"] != "code" or output_ignored(c):
            continue
        texts = ["".join(out["text"]) for out in c.get("outputs", []) if out["output_type"] == "stream"]
        texts += ["".join(out.get("data", {}).get(mime, "")) for out in c.get("outputs", [])
                  for mime in ("text/plain", "text/html")]
        found.append((i, c, [t for t in texts if t]))
    return found


NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
SCIENTIFIC = re.compile(r"[eE]([-+]?\d+)$")
# A number right after one of these is a stated bound ("< 1e-12: True"), not a measured value.
BOUND = re.compile(r"(?:[<>≤≥]=?|\b(?:below|under|above|than|within|to)|小于|低于|大于|高于|不超过|至|到)\s*$")


def round_off_numbers(text: str) -> list[str]:
    """Numbers printed in scientific notation at or below 1e-5 (float32's round-off is 1e-7 of a
    number's size, float64's 1e-16), and an exact zero printed that way (0.0e+00): the size of
    a difference that should be zero, which another CPU prints as 3e-17. A stated bound
    ("largest difference < 1e-12: True") is a claim, and passes."""
    found = []
    for match in NUMBER.finditer(text):
        number, exponent = match.group(), SCIENTIFIC.search(match.group())
        if BOUND.search(text[:match.start()]):
            continue
        if exponent and (int(exponent.group(1)) <= -5 or float(number) == 0):
            found.append(number)
    return found


def signed_zeros(text: str) -> list[str]:
    """-0, -0.0, -0.000, -0e+00: a zero whose sign is round-off (-1e-17 on one CPU, +1e-17 on another)."""
    return [n for n in NUMBER.findall(text) if n.startswith("-") and float(n) == 0]


TIME = re.compile(r"\d\s*(?:ns|µs|ms)\b|\d\s+(?:us|s|sec|seconds?|minutes?|min)\b|\d\s*(?:纳秒|微秒|毫秒|秒|分钟)")


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_no_checked_output_prints_round_off_a_signed_zero_or_a_time(path):
    problems = []
    for i, c, texts in checked_cells(path):
        for text in texts:
            problems += [f"cell {i}: round-off {n}" for n in round_off_numbers(text)]
            problems += [f"cell {i}: signed zero {n}" for n in signed_zeros(text)]
            problems += [f"cell {i}: a time {m!r}" for m in TIME.findall(text)]
    assert not problems, f"{path.name}: " + "; ".join(problems)


# A clock: a call to one of these names (attn.lessons.cost.measure's timers, the time module's clocks).
CLOCKS = {"best_time", "time_curve", "perf_counter", "perf_counter_ns", "monotonic", "process_time",
          "time", "timeit"}


def _called_names(node: ast.AST) -> set[str]:
    names = set()
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        f = call.func
        names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def _loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _receiver(node: ast.AST) -> str | None:
    """The variable an expression starts from: ``seconds`` in ``seconds["a"].append(...)``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def timing_cells(path) -> list[int]:
    """The code cells whose results come from a clock: they call a clock (or a function of the
    notebook that does), or read a variable that holds a time or something computed from one.
    Followed statement by statement through the notebook: an assignment whose value reads a clock
    or such a variable makes its targets timing variables, and so does a call on a variable
    (``seconds[n].append(best_time(f))``); an assignment of anything else frees its targets."""
    clocks, timed, found = set(CLOCKS), set(), []
    for i, c in enumerate(cells(path)):
        if c["cell_type"] != "code":
            continue
        tree = ast.parse(TransformerManager().transform_cell(source(c)))
        uses_clock = False
        for stmt in ast.walk(tree):
            if not isinstance(stmt, ast.stmt):
                continue
            if isinstance(stmt, ast.FunctionDef):  # a function of the notebook's that reads a clock
                if _called_names(stmt) & clocks:
                    clocks.add(stmt.name)
                continue
            value = stmt.iter if isinstance(stmt, ast.For) else getattr(stmt, "value", None)
            if value is None or not (_called_names(value) & clocks or _loaded_names(value) & timed):
                if isinstance(stmt, ast.Assign):  # alt = tr("..."): the name holds no time any more
                    timed -= {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                continue
            uses_clock = True
            targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
            timed |= {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and _receiver(value):
                timed.add(_receiver(value))  # seconds[n].append(best_time(f)): seconds holds times
        if uses_clock:
            found.append(i)
    return found


def test_a_name_given_a_new_value_holds_no_time(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in (
        "t = best_time(f)", "alt = f'{t:.2f} ms'\nshow(alt)", "alt = 'memory'\nshow(alt)", "show(t)")])
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert timing_cells(tmp_path / "x.ipynb") == [0, 1, 3]


FIGURE_REPR = re.compile(r"<Figure size [\d.]+x[\d.]+ with \d+ Axes>")


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(NB_DIR)))
def test_a_cell_that_reads_a_clock_prints_nothing_checked(path):
    """A timing, a comparison of timings or a verdict drawn from one ("a tanh takes twice as long
    as a multiply: True") differs between CPUs: such a cell draws its figure, or its output is
    excluded from the comparison (tagged nbval-ignore-output) beside a sentence on what holds anywhere."""
    checked = {i: (c, texts) for i, c, texts in checked_cells(path)}
    for i in timing_cells(path):
        if i in checked:
            c, texts = checked[i]
            printed = [t for t in texts if not FIGURE_REPR.fullmatch(t.strip())]
            assert not printed, f"{path.name}: cell {i} reads a clock and prints {printed} in a checked output:\n{source(c)}"
