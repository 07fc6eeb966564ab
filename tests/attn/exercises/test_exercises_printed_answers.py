"""No exercise can be passed by copying what its notebook prints (issue 32 §2, review §3).

For every exercise of notebooks 01-13 whose answer is numbers (one number, a vector, a matrix, a
dict of numbers or of shapes, or a function that is one formula), the answers a learner could copy
are read from the committed notebook itself (its stored outputs and its prose), so that this test
keeps up with the notebooks as they change:

* the numbers printed in runs along one line (a vector, a dict's slots in order, a flattened
  matrix), as matrices of printed rows, after a dict's key (``head_dim: 2``), and alone; a whole
  number below 100 alone is no sign of copying (every notebook prints such sizes and indices),
  so an exercise whose answer is one reads it off its table instead;
* every formula of the prose (a LaTeX sum of products of the lessons' symbols), evaluated at the
  exercise's sizes, or made a function of the exercise's arguments (04's summary count);
* what a table gives for an exercise that picks from a grid the notebook prints whole (02: where
  the gradient halves with the table's 16 keys) or asks for a point between a table's rows (01).

Each is fed to the exercise's checker, which must refuse it. The checkers whose answers are not
numbers (functions, classes, names) are set aside, each with its reason, and a test checks that
every checker an English notebook calls is either listed or set aside.
"""
from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import torch

from attn.exercises import nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb10, nb11, nb12, nb13

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = ROOT / "notebooks"

#: A number as notebooks print it: 3, -0.25, 1e-05, 10,588,160 (thousands), -inf.
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:inf\b|(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)")
#: A row as tensors and lists print it: the numbers (or True/False) between one pair of brackets.
ROW = re.compile(r"\[([^\[\]]*)\]")
#: A shape as it is printed: (2, 5, 6, 6).
SHAPE = re.compile(r"\((\d+(?:, \d+)+)\)")
#: How many slot-by-slot combinations a dict's answer is fed at most (beyond, runs and fills only).
PRODUCT_CAP = 20_000


# ---- what a notebook prints ----------------------------------------------------------------------

@dataclass
class Printed:
    """The text a learner reads in one notebook: each stored output and each markdown cell."""

    blocks: list[str]
    markdown: list[str]

    def lines(self) -> Iterator[str]:
        for block in self.blocks + self.markdown:
            yield from block.splitlines()

    def numbers(self) -> set[float]:
        return {n for line in self.lines() for n in numbers_in(line)}

    def significant(self) -> set[float]:
        """The printed numbers but the small whole ones (below 100), which every notebook prints as
        sizes, indices and counts: alone, such a number is no sign of a copied answer."""
        return {n for n in self.numbers() if abs(n) != float("inf") and (abs(n) >= 100 or not n.is_integer())}

    def labelled(self, label: str) -> tuple[set[float], set[tuple[int, ...]]]:
        """The numbers and the shapes printed after ``label`` on one line (``head_dim: 2``,
        ``weights: (2, 5, 6, 6)``)."""
        after = re.compile(rf"(?<![\w\"']){re.escape(str(label))}(?![\w\"'])[^\n]{{0,24}}")
        numbers, shapes = set(), set()
        for line in self.lines():
            for m in after.finditer(line):
                shape = SHAPE.search(m.group(0))
                if shape:
                    shapes.add(tuple(int(v) for v in shape.group(1).split(", ")))
                found = numbers_in(m.group(0)[len(str(label)):])
                numbers |= set(found[:1])
        return numbers, shapes

    def runs(self, k: int) -> set[tuple[float, ...]]:
        """Every k numbers printed next to each other on one line."""
        found = set()
        for line in self.lines():
            nums = numbers_in(line)
            found |= {tuple(nums[i:i + k]) for i in range(len(nums) - k + 1)}
        return found

    def matrices(self, rows: int, cols: int) -> set[tuple[tuple[float, ...], ...]]:
        """Every ``rows`` consecutive printed rows of ``cols`` numbers within one output or cell."""
        found = set()
        for block in self.blocks + self.markdown:
            printed_rows = [r for r in (row_numbers(m) for m in ROW.findall(block)) if len(r) == cols]
            found |= {tuple(printed_rows[i:i + rows]) for i in range(len(printed_rows) - rows + 1)}
        return found

    def shapes(self, dims: int) -> set[tuple[int, ...]]:
        return {tuple(int(v) for v in m.split(", ")) for block in self.blocks + self.markdown
                for m in SHAPE.findall(block) if m.count(",") == dims - 1}


def numbers_in(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(line.replace("−", "-"))]


def row_numbers(row: str) -> tuple[float, ...]:
    """A printed row's numbers, True/False as 1/0; () if it holds anything else."""
    items = [t for t in re.split(r"[,\s]+", row.strip()) if t]
    try:
        return tuple(1.0 if t == "True" else 0.0 if t == "False" else float(t) for t in items)
    except ValueError:
        return ()


def printed(name: str) -> Printed:
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    blocks, markdown = [], []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            markdown.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain", "")
            blocks.append("".join(text))
    return Printed(blocks, markdown)


# ---- the formulas of a notebook's prose ------------------------------------------------------------

#: A symbol of the lessons as the prose writes it: d_ and its subscript, or one letter.
SYMBOL = re.compile(r"d_\{?\\?(?:text|mathrm)?\{?(model|ff|k|v)\}?\}?|([a-zA-Z])")
#: A token of a formula: a number, a symbol (one letter, not the start of a word, or d_ with its
#: subscript), a power, a product sign, a plus or a bracket.
TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|d_\{?\\?(?:text|mathrm)?\{?(?:model|ff|k|v)\}?\}?"
                   r"|[a-zA-Z](?!(?!d_)[a-zA-Z{])"
                   r"|\^\{?\d+\}?|\\cdot|·|\\times|[+()])")


def formulas(p: Printed) -> list[tuple[str, str]]:
    """Every side of every ``$...$`` of the prose that is a sum of products of numbers and symbols,
    as (the LaTeX, a Python expression over the symbols' names d_model, d_ff, d_k, d_v, n, h ...)."""
    found = []
    for text in p.markdown:
        for span in re.findall(r"\$\$?([^$]+)\$\$?", text):
            for side in re.split(r"=|\\approx|<|>|\\le|\\ge", span):
                expression = python_formula(side)
                if expression is not None:
                    found.append((side.strip(), expression))
    return found


def python_formula(latex: str) -> str | None:
    """``4nd_{model}^2 + 2n^2d_{model}`` -> ``4*n*d_model**2+2*n**2*d_model``; None if the LaTeX is
    more than numbers, symbols, powers, products, sums and brackets, or holds no symbol."""
    text, out, pos, previous = latex.replace("\\,", " ").strip(), [], 0, None
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if m is None:
            return None
        token, pos = m.group(1), m.end()
        if token.startswith("^"):
            out.append("**" + token.strip("^{}"))
            previous = "factor"
            continue
        if token in ("\\cdot", "·", "\\times"):
            out.append("*")
            previous = "op"
            continue
        if token == "+":
            out.append("+")
            previous = "op"
            continue
        symbol = SYMBOL.fullmatch(token)
        if symbol is None:
            piece = token  # a number or a bracket
        elif symbol.group(1):
            piece = "d_" + symbol.group(1)  # d_{model}, d_\text{model} -> d_model; d_k -> d_k
        else:
            piece = symbol.group(2)
        if previous == "factor" and piece != ")":
            out.append("*")
        out.append(piece)
        previous = "op" if piece == "(" else "factor"
    expression = "".join(out)
    return expression if re.search(r"[a-zA-Z]", expression.replace("**", "")) else None


def evaluate(expression: str, values: dict[str, Any]) -> list[float]:
    """``expression`` at the exercise's sizes: a symbol given a list (``n`` where a learner could
    read either of two sizes) gives one value for each; [] if a symbol has no size."""
    names = set(re.findall(r"[a-zA-Z_]+", expression))
    if not names <= set(values):
        return []
    options = [[(name, v) for v in (values[name] if isinstance(values[name], list) else [values[name]])]
               for name in sorted(names)]
    found = []
    for binding in itertools.product(*options):
        try:
            found.append(float(eval(expression, {"__builtins__": {}}, dict(binding))))  # noqa: S307 - our own parse
        except (SyntaxError, ZeroDivisionError, TypeError):
            pass
    return found


# ---- the exercises ---------------------------------------------------------------------------------

@dataclass
class Exercise:
    """One exercise: its notebook, checker, and the form of its answer.

    ``form``: "number"; ("vector", k); ("matrix", rows, cols, dtype); ("dict", {key: "number" or
    ("shape", dims)}); ("function", (argument, ...)). ``symbols``: the prose's symbols at the
    exercise's sizes (for a number) or as the function's arguments (for a function).
    """

    notebook: str
    number: int
    check: Callable[[Any], Any]
    form: Any
    symbols: dict[str, Any] = field(default_factory=dict)
    read_off: Callable[[Printed], list[Any]] | None = None
    choices: bool = False  # the answer is one of a grid the notebook prints whole: only its read-off counts

    def __str__(self) -> str:
        return f"{self.notebook[:2]}-{self.number}-{self.check.__name__}"


def halving_in_the_table(p: Printed) -> list[int]:
    """02: the first d_k of section 5's table (16 keys per query) whose unscaled ‖J‖ is below
    half the scaled one, read from the printed rows ``d | var var | w w | J J``."""
    rows = [numbers_in(line) for line in p.lines() if line.count("|") == 3 and len(numbers_in(line)) == 7]
    halved = [int(r[0]) for r in rows if r[5] < 0.5 * r[6]]
    return halved[:1]


def hundredfold_in_the_table(p: Printed) -> list[int]:
    """01: the first distance of section 4's printed profile (``distance | RNN, log10 | attention,
    log10``) where the RNN's gradient is two powers of ten below distance 0's."""
    rows = [numbers_in(line) for line in p.lines() if line.count("|") == 2 and len(numbers_in(line)) == 3]
    return [int(d) for d, rnn, _ in rows if rows and rnn < rows[0][1] - 2][:1]


SIZES_02 = {"d_k": nb02.VARIANCE_SETUP["d_k"]}
E12, F12, H12 = nb12.BASE["d_model"], nb12.BASE["d_ff"], nb12.BASE["num_heads"]
EXERCISES = [
    Exercise("01_intuition", 2, nb01.check_path_counts,
             ("dict", {k: "number" for k in ("rnn_steps", "attention_steps", "rnn_path", "attention_path")}),
             {"n": nb01.PATH_N, "L": nb01.PATH_N}),
    Exercise("01_intuition", 4, nb01.check_rnn_decay_distance, "number", read_off=hundredfold_in_the_table),
    Exercise("02_qkv", 1, nb02.check_shapes,
             ("dict", {k: ("shape", 2) for k in ("Q", "K", "V", "scores", "weights", "output")})),
    Exercise("02_qkv", 2, nb02.check_attention_output, ("matrix", 4, 2, torch.float64)),
    Exercise("02_qkv", 3, nb02.check_score_variance, ("vector", 2), SIZES_02),
    Exercise("02_qkv", 4, nb02.check_half_gradient_d_k, "number", read_off=halving_in_the_table, choices=True),
    Exercise("03_worked_example", 1, nb03.check_projection_rows, ("matrix", 3, 2, torch.float64)),
    Exercise("03_worked_example", 2, nb03.check_softmax_row, ("vector", 3)),
    Exercise("03_worked_example", 3, nb03.check_output_row, ("vector", 2)),
    Exercise("04_multi_head", 2, nb04.check_param_count,
             ("dict", {h: "number" for h in nb04.PARAMS_QUESTION["heads"]}),
             {"d_model": nb04.PARAMS_QUESTION["d_model"]}),
    Exercise("04_multi_head", 3, nb04.check_layer_macs, ("function", ("n", "d_model", "num_heads", "d_k")),
             {"n": "n", "d_model": "d_model", "h": "num_heads", "d_k": "d_k", "d_v": "d_k"}),
    Exercise("04_multi_head", 4, nb04.check_softmax_entries, ("vector", 2),
             {"n": [nb04.SOFTMAX_QUESTION["queries"], nb04.SOFTMAX_QUESTION["keys"]],
              "L": nb04.SOFTMAX_QUESTION["queries"], "S": nb04.SOFTMAX_QUESTION["keys"],
              "h": nb04.SOFTMAX_QUESTION["num_heads"]}),
    Exercise("05_pytorch_implementation", 6, nb05.check_silent_case,
             ("dict", {"head_dim": "number", "weights": ("shape", 4), "output": ("shape", 3)})),
    Exercise("05_pytorch_implementation", 8, nb05.check_weight_shapes,
             ("dict", {"averaged": ("shape", 3), "per_head": ("shape", 4)})),
    Exercise("05_pytorch_implementation", 9, nb05.check_mha_causal_mask,
             ("matrix", nb05.MASK_LENGTH, nb05.MASK_LENGTH, torch.bool)),
    Exercise("06_visualization", 3, nb06.check_diagonal_weight, "number"),
    Exercise("07_efficiency", 1, nb07.check_weights_bytes, "number",
             {"n": nb07.WEIGHTS_L, "L": nb07.WEIGHTS_L, "B": nb07.WEIGHTS_B, "H": nb07.WEIGHTS_H}),
    Exercise("07_efficiency", 3, nb07.check_causal_pairs, "number"),
    Exercise("08_trained_heads", 1, nb08.check_previous_token_mask, ("matrix", 6, 6, torch.bool)),
    Exercise("08_trained_heads", 2, nb08.check_block_mask, ("matrix", 10, 10, torch.bool)),
    Exercise("08_trained_heads", 3, nb08.check_vertical_score, ("vector", 2)),
    Exercise("10_cross_attention_and_decoding", 1, nb10.check_cache_bytes, "number",
             {"N": nb10.LAYERS, "T": nb10.TOKENS, "E": nb10.D_MODEL, "d_model": nb10.D_MODEL, "B": nb10.BATCH}),
    Exercise("11_backward", 3, nb11.check_saved_bytes, "number",
             {"n": nb11.SAVED_L, "L": nb11.SAVED_L, "N": nb11.SAVED_L}),
    Exercise("12_transformer_block", 2, nb12.check_block_parameters, "number",
             {"d_model": E12, "d": E12, "d_ff": F12, "h": H12}),
    Exercise("13_language_model", 1, nb13.check_untrained_loss, "number"),
]

#: Checkers the English notebooks call whose answer is not numbers, or is a prediction that the next
#: cell runs and prints by design; each with its reason.
SET_ASIDE = {
    "check_chapter": "not an exercise: 03's audit of the chapter",
    "check_softmax_row@01": "a function; its formula is the lesson",
    "check_reversed_output": "a function",
    "check_head_queries": "a function",
    "check_self_attention": "a class", "check_multi_head_attention": "a class",
    "check_split_merge": "functions", "check_head_split_guard": "a function",
    "check_fully_masked_row": "names of outcomes, not numbers",
    "check_pattern_names": "names of patterns, not numbers",
    "check_vertical_qk": "Q and K that the learner designs: many answers are right",
    "check_online_softmax": "a function",
    "check_sinusoidal": "a function", "check_rope": "a function", "check_cached_step": "a function",
    "check_softmax_backward": "a function", "check_score_backward": "a function",
    "check_transformer_block": "a class", "check_decoder_block": "a class",
    "check_layer_norm": "a function; its formula is the lesson",
    "check_feed_forward_residual": "a prediction, one of three words, that the checker then runs",
    "check_top_k": "a function", "check_grouped_query_attention": "a function",
}


# ---- the answers a learner could copy ---------------------------------------------------------------

def copyable(ex: Exercise, p: Printed) -> list[Any]:
    """Every answer of the exercise's form that the notebook prints or its prose's formulas give."""
    form, found = ex.form, []
    numeric = ex.symbols and not (isinstance(form, tuple) and form[0] == "function")
    values = [v for _, f in formulas(p) for v in evaluate(f, ex.symbols)] if numeric else []
    pool = sorted(p.significant() | set(values))  # single numbers a learner could take for the answer
    if form == "number":
        found = [] if ex.choices else [int(v) if v.is_integer() else v for v in pool]
    elif form[0] == "vector":
        k = form[1]
        found = [list(r) for r in p.runs(k)] + [list(t) for t in itertools.product(values + [1.0], repeat=k)]
    elif form[0] == "matrix":
        _, rows, cols, dtype = form
        for m in p.matrices(rows, cols) | p.runs(rows * cols):
            t = torch.tensor(m, dtype=torch.float64).reshape(rows, cols)
            if dtype == torch.bool and not bool(((t == 0) | (t == 1)).all()):
                continue
            found.append(t.to(dtype))
    elif form[0] == "dict":
        found = dict_answers(form, p, pool)
    elif form[0] == "function":
        found = formula_functions(ex, p)
    if ex.read_off is not None:
        found += ex.read_off(p)
    return found


def dict_answers(form: Any, p: Printed, pool: list[float]) -> list[dict]:
    """A dict's answers: a line that prints its slots in order; each slot filled with what is
    printed after its key (and, for a few slots, with any printed shape or number of the pool)."""
    kinds = list(form[1].values())
    found = []
    width = sum(1 if kind == "number" else kind[1] for kind in kinds)
    for run in p.runs(width):  # a line that prints the slots in order
        if any(abs(v) == float("inf") or not v.is_integer() for v in run):
            continue
        it = iter(int(v) for v in run)
        found.append(dict(zip(form[1], [next(it) if kind == "number" else tuple(next(it) for _ in range(kind[1]))
                                        for kind in kinds])))
    labelled, anywhere = [], []
    for key, kind in form[1].items():
        numbers, shapes = p.labelled(key)
        if kind == "number":
            labelled.append(sorted(int(v) for v in numbers if v.is_integer()))
            anywhere.append(sorted(set(labelled[-1]) | {int(v) for v in pool if v.is_integer()}))
        else:
            labelled.append(sorted(s for s in shapes if len(s) == kind[1]))
            anywhere.append(sorted(set(labelled[-1]) | p.shapes(kind[1])))
    if all(kind == "number" for kind in kinds):  # the same printed number in every slot
        found += [dict.fromkeys(form[1], int(v)) for v in pool if v.is_integer()]
    for per_slot in (anywhere, labelled):
        if all(per_slot) and math.prod(len(options) for options in per_slot) <= PRODUCT_CAP:
            found += [dict(zip(form[1], c)) for c in itertools.product(*per_slot)]
            break
    return found


def formula_functions(ex: Exercise, p: Printed) -> list[Callable[..., Any]]:
    """Each formula of the prose over the exercise's symbols, as a function of its arguments."""
    arguments, found = ex.form[1], []
    for _, f in formulas(p):
        names = set(re.findall(r"[a-zA-Z_]+", f))
        if names and names <= set(ex.symbols):
            body = f
            for symbol in sorted(names, key=len, reverse=True):
                body = re.sub(rf"\b{symbol}\b", ex.symbols[symbol], body)
            found.append(eval(f"lambda {', '.join(arguments)}: {body}", {"__builtins__": {}}))  # noqa: S307
    return found


def reset_hints() -> None:
    for hints in (nb01.REVERSED_OUTPUT_HINTS, nb04.PARAM_COUNT_HINTS, nb04.SOFTMAX_ENTRIES_HINTS):
        hints.reset()
    nb05.reset_hints()
    nb12.reset_hints()
    nb13.reset_hints()


@pytest.fixture(autouse=True)
def first_tier_hints():
    reset_hints()
    yield
    reset_hints()


# ---- the tests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ex", EXERCISES, ids=str)
def test_no_printed_answer_passes(ex):
    p = printed(ex.notebook)
    assert p.numbers(), f"{ex}: nothing read from the notebook"
    answers = copyable(ex, p)
    passed = [a for a in answers if ex.check(a).correct]
    assert not passed, f"{ex}: the notebook prints an answer that passes: {passed[:3]}"


def test_every_checker_a_notebook_calls_is_listed_or_set_aside():
    listed = {(ex.notebook[:2], ex.check.__name__) for ex in EXERCISES}
    for path in sorted(NOTEBOOKS.glob("[01][0-9]_*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                         if c["cell_type"] == "code")
        for name in set(re.findall(r"\b(check_\w+)\(", code)):
            key = (path.name[:2], name)
            assert key in listed or name in SET_ASIDE or f"{name}@{key[0]}" in SET_ASIDE, (
                f"{path.name} calls {name}: list it in EXERCISES, or set it aside with its reason")


def test_the_reading_finds_what_the_review_copied():
    """The review passed these by copying (review §3): the reading finds each of them."""
    p03 = printed("03_worked_example")
    assert (0.58, 0.14, 0.28) in p03.runs(3) and (1.0, 0.56) in p03.runs(2) and (0.0, 1.0) in p03.runs(2)
    assert halving_in_the_table(printed("02_qkv")) == [128]
    summary = dict(formulas(printed("04_multi_head")))
    assert summary.get("4nd_{model}^2 + 2n^2d_{model}") == "4*n*d_model**2+2*n**2*d_model", summary
    assert python_formula("2 \\cdot N \\cdot T \\cdot E") == "2*N*T*E"
    assert hundredfold_in_the_table(printed("01_intuition")) == [8]
    assert (2, 5, 6, 6) in printed("05_pytorch_implementation").shapes(4)
    assert {2} <= printed("05_pytorch_implementation").labelled("head_dim")[0]


def test_a_copied_answer_would_be_caught():
    """The machinery fails an exercise whose answer is printed: 03's chapter rows fed to a checker
    that accepts them, and 04's summary formula to one that accepts it."""
    p03 = printed("03_worked_example")
    accepts_printed = Exercise("03_worked_example", 2, lambda a: _Ok(list(a) == [0.58, 0.14, 0.28]), ("vector", 3))
    assert any(accepts_printed.check(a).correct for a in copyable(accepts_printed, p03))
    summary = Exercise("04_multi_head", 3, lambda f: _Ok(f(10, 512, 8, 64) == 10_588_160),
                       ("function", ("n", "d_model", "num_heads", "d_k")),
                       {"n": "n", "d_model": "d_model", "h": "num_heads", "d_k": "d_k"})
    assert any(summary.check(f).correct for f in copyable(summary, printed("04_multi_head")))


@dataclass
class _Ok:
    correct: bool
