"""Every number the prose states is one a cell printed; each lesson's central claims stay printed.

Two checks over the committed notebooks (their stored outputs are what nbval re-computes):

* every decimal number in a notebook's markdown (0.48, 10.73, 2.36; integers are too often
  constants such as 512 or 10000) appears in that notebook's stored outputs, so a number in the
  text cannot drift away from the cell that computes it; the Chinese notebooks too
  (docs/translating.md), whose prose is written anew, not copied;
* every lesson marks its claims, the printed lines that carry its argument, in the cells that
  print them (the metadata ``"claims"``; ``python -m tools.claims`` lists and marks them), and
  its Chinese twin marks the same cells with its own lines. A re-execution that changes a
  claimed line fails here, which sends whoever changed it back to the prose that relies on it.
"""
from __future__ import annotations

import ast
import difflib
import json
import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest

from tools import claims
from tools.execute import output_ignored

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks" / "solutions").glob("*.ipynb"))
#: The Chinese edition: the same notebooks under notebooks/zh/.
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks" / "zh" / "solutions").glob("*.ipynb"))

#: A decimal number standing alone: not part of a word, a version, an exponent or a LaTeX group.
#: (ASCII letters only: a Chinese character beside a number, 约0.5, does not hide it.)
DECIMAL = re.compile(r"(?<![A-Za-z0-9_.^{\\])-?\d+\.\d+(?![A-Za-z0-9_.}])")

def notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def printed(nb: dict) -> str:
    """Everything the stored outputs show as text: streams, text/plain and text/html."""
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            for kind in ("text/plain", "text/html"):
                parts.append("".join(data.get(kind, "")))
    return "\n".join(parts)


def prose_decimals(nb: dict) -> list[tuple[int, str]]:
    """(cell index, number) for each decimal number in a markdown cell."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            found += [(i, m.group()) for m in DECIMAL.finditer("".join(cell["source"]))]
    return found


def test_the_decimal_pattern():
    text = "0.48 to 0.53, $10^{-12}$, JupyterLab 4.6.6, x1.5, 2.83*, -0.07 and $\\sqrt{2}$ = 1.414"
    assert DECIMAL.findall(text) == ["0.48", "0.53", "2.83", "-0.07", "1.414"]
    assert DECIMAL.findall("距离 0 处为0.48到 0.53（约0.5倍），v1.2") == ["0.48", "0.53", "0.5"]


@pytest.mark.parametrize("path", NOTEBOOKS + ZH_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_every_decimal_in_the_prose_is_printed_by_a_cell(path):
    nb = notebook(path)
    out = printed(nb)
    missing = [f"cell {i}: {number}" for i, number in prose_decimals(nb) if number not in out]
    assert not missing, f"{path.name}: the prose states numbers no cell prints: {missing}"


# ---- a lesson's claims, marked in its cells ---------------------------------------------
#
# A claim is a line a code cell prints, listed in that cell's metadata "claims" (tools/claims.py
# lists a notebook's printed lines and marks them); the Chinese twin marks the same cells with
# its own printed lines.

#: The fewest claims a lesson marks (00_start_here, which argues nothing, marks none).
FEWEST_CLAIMS = 1
LESSONS_BOTH = [p for p in NOTEBOOKS + ZH_NOTEBOOKS
                if p.parent.name in ("notebooks", "zh") and not p.name.startswith("00_")]


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT))


def claim_problems(nb: dict, name: str) -> list[str]:
    """What is wrong with the claims a notebook marks: a claim its cell no longer prints (with the
    line the cell prints now that is most like it), a claim in a cell whose output nbval ignores."""
    problems = []
    for i, cell in claims.marked(nb):
        where = f"{name}, cell {i} (id {cell.get('id')})"
        if output_ignored(cell):
            problems.append(f"{where} is tagged nbval-ignore-output, so nothing re-checks its claims "
                            f"{claims.claims(cell)}: mark a line of a cell whose output nbval compares")
            continue
        lines = claims.printed_lines(cell)
        for claim in claims.claims(cell):
            if claim not in lines:
                now = difflib.get_close_matches(claim, lines, n=1, cutoff=0) or ["(nothing)"]
                problems.append(f"{where} no longer prints the claim {claim!r}; the line now printed is "
                                f"{now[0]!r}: update the claim in the cell's metadata \"claims\" or the prose "
                                f"that relies on it (python -m tools.claims {name} lists the lines and "
                                f"--mark CELL:LINE stores one)")
    return problems


def test_a_claim_not_printed_or_in_an_ignored_cell_is_found():
    def cell(printed_text, marked_lines, tags=()):
        return {"cell_type": "code", "id": "c", "metadata": {"claims": marked_lines, "tags": list(tags)},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": printed_text}]}
    nb = {"cells": [cell("ratio: 9.9x\nequal: True\n", ["equal: True"]),
                    cell("ratio: 9.8x\n", ["ratio: 9.9x"]),
                    cell("explorer\n", ["explorer"], tags=["nbval-ignore-output"]),
                    cell("equal: True, all\n", ["equal: True"])]}
    found = claim_problems(nb, "x.ipynb")
    assert [p.split(" (id")[0] for p in found] == ["x.ipynb, cell 1", "x.ipynb, cell 2", "x.ipynb, cell 3"]
    assert "the line now printed is 'ratio: 9.8x'" in found[0] and "nbval-ignore-output" in found[1]


def test_tools_claims_marks_a_printed_line_and_drops_a_stale_claim(tmp_path, capsys):
    import nbformat

    cell = nbformat.v4.new_code_cell("print(...)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="ratio: 9.9x\nequal: True\n")])
    cell.metadata["claims"] = ["ratio: 9.8x"]
    path = tmp_path / "x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    assert "* 0:1" not in claims.show(notebook(path)) and "no longer printed: 'ratio: 9.8x'" in claims.show(notebook(path))
    claims.main([str(path), "--mark", "0:1", "0:0"])
    assert notebook(path)["cells"][0]["metadata"]["claims"] == ["ratio: 9.9x", "equal: True"]
    claims.main([str(path), "--unmark", "0:0"])
    assert notebook(path)["cells"][0]["metadata"]["claims"] == ["equal: True"]
    with pytest.raises(SystemExit):
        claims.main([str(path), "--mark", "0:2"])
    assert "cell 0 prints no line 2" in capsys.readouterr().err


@pytest.mark.parametrize("path", LESSONS_BOTH, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_every_lesson_marks_its_claims(path):
    count = sum(len(claims.claims(c)) for _, c in claims.marked(notebook(path)))
    assert count >= FEWEST_CLAIMS, (
        f"{shown(path)} marks {count} claims, at least {FEWEST_CLAIMS} wanted: give the code cells that print "
        f"the lesson's central results the metadata \"claims\": [\"the line as printed\", ...] "
        f"(python -m tools.claims {shown(path)} lists each cell's printed lines; --mark CELL:LINE stores one; "
        f"the Chinese twin marks the same cells)")


@pytest.mark.parametrize("path", NOTEBOOKS + ZH_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_the_notebook_still_prints_its_claims(path):
    problems = claim_problems(notebook(path), shown(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if (ROOT / "notebooks" / "zh" / p.relative_to(ROOT / "notebooks")).exists()],
                         ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_the_chinese_twin_marks_the_same_cells(path):
    twin = ROOT / "notebooks" / "zh" / path.relative_to(ROOT / "notebooks")

    def counts(nb: dict) -> list[int]:  # the number of claims of each code cell, in order
        return [len(claims.claims(c)) for c in nb["cells"] if c["cell_type"] == "code"]
    en, zh = counts(notebook(path)), counts(notebook(twin))
    differ = [f"code cell {k + 1}: {a} in English, {b} in Chinese" for k, (a, b) in enumerate(zip(en, zh)) if a != b]
    assert not differ, (f"{shown(twin)} marks other claims than {shown(path)}: {differ}; mark the same cells, each "
                        f"with its own printed lines (python -m tools.claims {shown(twin)} --mark CELL:LINE)")


# ---- folded check cells ------------------------------------------------------------------
#
# A routine agreement ("same as torch.cat: True") next to a section's one idea buries it. Such
# lines go into one check cell per section, tagged "check" and folded (its source hidden in
# JupyterLab), which prints one line of claims beginning "checks:". A "same as ..." line may
# stay in an idea cell only where the prose before it announces the comparison.

ANNOUNCED = re.compile(r"agree|same|equal|check", re.I)


def sections(nb: dict) -> list[list[tuple[int, dict]]]:
    """The cells grouped by level-2 heading (## ...), with their indices."""
    groups: list[list[tuple[int, dict]]] = [[]]
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown" and re.search(r"^## ", "".join(cell["source"]), re.M):
            groups.append([])
        groups[-1].append((i, cell))
    return groups


def is_check(cell: dict) -> bool:
    return "check" in cell.get("metadata", {}).get("tags", [])


def cell_text(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


LESSONS = [p for p in NOTEBOOKS if p.parent.name == "notebooks"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_check_cells_are_folded_one_per_section_and_print_claims(path):
    nb = notebook(path)
    for group in sections(nb):
        checks = [(i, c) for i, c in group if is_check(c)]
        assert len(checks) <= 1, f"{path.name}: cells {[i for i, _ in checks]} are two check cells in one section"
        for i, cell in checks:
            assert cell["cell_type"] == "code", \
                f"{path.name} cell {i}: the tag check belongs to a code cell: remove it from this markdown cell"
            assert cell["metadata"].get("jupyter", {}).get("source_hidden") is True, \
                f"{path.name} cell {i}: a check cell is folded (metadata jupyter.source_hidden)"
            out = cell_text(cell)
            assert out.startswith("checks:") and "True" in out and "False" not in out, \
                f"{path.name} cell {i}: prints 'checks: ... True', got {out!r}"
            assert "assert" in "".join(cell["source"]), f"{path.name} cell {i}: asserts what it prints"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_a_routine_agreement_is_in_a_check_cell_or_announced(path):
    nb = notebook(path)
    cells = nb["cells"]
    unannounced = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code" or is_check(cell):
            continue
        lines = [l for l in cell_text(cell).splitlines() if l.startswith("same as ")]
        before = next(("".join(c["source"]) for c in reversed(cells[:i]) if c["cell_type"] == "markdown"), "")
        last_paragraph = before.strip().split("\n\n")[-1]
        if lines and not ANNOUNCED.search(last_paragraph):
            unannounced += [f"cell {i}: {l}" for l in lines]
    assert not unannounced, f"{path.name}: move these into the section's check cell: {unannounced}"


# ---- numbers in a figure's description ---------------------------------------------------
#
# A figure's text alternative (attn.drawing.figures.show_figure) is written in the cell that draws the
# figure, and a number typed into that sentence drifts away from the picture unnoticed (08 once
# said "head 7" where the scores pick head 6; 10 said "0.47 to 0.89" of a map showing 0.56 to
# 1.00). So a number the data decide is a field of the sentence, filled from the tensors. One
# written literally must be a stated bound ("> 0.95") or a number a cell prints, possibly rounded
# ("about 0.07" where a cell prints 0.068); a description never vouches for itself or another.

BOUND = re.compile(r"(?:[<>≤≥]=?|\b(?:below|above|at least|at most|within|under|than))\s*$", re.I)


def is_description(out: dict) -> bool:
    """An output that is a figure with its text alternative (show_figure's bundle)."""
    return "alt" in out.get("metadata", {}).get("image/png", {})


def shows_a_figure(cell: dict) -> bool:
    """A code cell that calls show_figure, directly or through a helper (06's show_heads)."""
    return cell["cell_type"] == "code" and ("show_figure(" in "".join(cell["source"])
                                            or any(map(is_description, cell.get("outputs", []))))


def tr_sentences(source: str) -> list[str]:
    """The English sentence of every tr("...") call in a cell's code (IPython's % lines left out)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    return [node.args[0].value for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tr" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]


def printed_numbers(nb: dict) -> set[str]:
    """The decimal numbers the cells print, leaving out figure descriptions and the outputs nbval
    ignores (nothing re-checks those)."""
    found = set()
    for cell in nb["cells"]:
        if output_ignored(cell):
            continue
        for out in cell.get("outputs", []):
            if not is_description(out):
                data = out.get("data", {})
                found.update(DECIMAL.findall("".join(out.get("text", "")) + "".join(data.get("text/plain", ""))
                                             + "".join(data.get("text/html", ""))))
    return found


def rounds_to(printed_number: str, number: str) -> bool:
    """printed_number, rounded to number's decimal places, is number (0.068 -> 0.07, 0.30 -> 0.3)."""
    places = Decimal(number).as_tuple().exponent  # -2 for 0.07
    if Decimal(printed_number).as_tuple().exponent > places:  # printed with fewer places than written
        return False
    return Decimal(printed_number).quantize(Decimal(1).scaleb(places), ROUND_HALF_EVEN) == Decimal(number)


def unbacked_figure_numbers(nb: dict) -> list[str]:
    """Each decimal number written into a figure's description that is no bound and no printed number."""
    printed_here = printed_numbers(nb)
    unbacked = []
    for i, cell in enumerate(nb["cells"]):
        if shows_a_figure(cell):
            for sentence in tr_sentences("".join(cell["source"])):
                for m in DECIMAL.finditer(sentence):
                    if not (BOUND.search(sentence[:m.start()]) or any(rounds_to(p, m.group()) for p in printed_here)):
                        unbacked.append(f"cell {i} ({cell.get('id')}): {m.group()}")
    return unbacked


def test_a_literal_number_in_a_figure_description_is_caught():
    def cell(cell_id, source, *outputs, tags=()):
        return {"cell_type": "code", "id": cell_id, "source": source, "outputs": list(outputs),
                "metadata": {"tags": list(tags)}}
    figure = {"output_type": "display_data", "metadata": {"image/png": {"alt": "0.47"}}, "data": {}}
    nb = {"cells": [
        cell("a", 'show_figure(fig, tr("A heatmap: rows, columns; 0.47 each, all below 0.5, about 0.07, '
                  '{w:.2f}.", w=w))', figure),
        cell("b", "print(x)", {"output_type": "stream", "text": "smallest weight: 0.068\n"}),
        cell("c", "explorer()", {"output_type": "stream", "text": "0.47\n"}, tags=["nbval-ignore-output"]),
        cell("d", 'show_figure(fig, tr("A line plot of y against n: 0.47 again, 0.068 exactly."))', figure),
    ]}
    assert unbacked_figure_numbers(nb) == ["cell 0 (a): 0.47", "cell 3 (d): 0.47"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_decimal_in_a_figure_description_is_a_bound_or_printed(path):
    unbacked = unbacked_figure_numbers(notebook(path))
    assert not unbacked, (f"{path.name}: fill these numbers from the data the figure is drawn from (a field "
                          f"of the tr() sentence, such as {{w:.2f}}), or print them: {unbacked}")


# ---- a measurement is reported by the cell that made it ----------------------------------
#
# The prose is the same on every machine; a timing is not. 02 once said "on the machine that
# saved this notebook ... a tanh cost more per element than a multiply", while the figure and its
# description, written by the same run, said the opposite. So the prose says nothing of the
# machine that saved the notebook: what a run measured is written by the cell that measured it,
# from the same variables, in an output nbval does not compare.

LANGUAGES = {"en": ROOT / "notebooks", "zh": ROOT / "notebooks" / "zh"}
EVERY_NOTEBOOK = [p for folder in LANGUAGES.values()
                  for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) + sorted((folder / "solutions").glob("*.ipynb"))]
SAVING_MACHINE = re.compile(r"machine that saved|on this machine|this machine's|保存本笔记本的那台机器|这台机器上|在本机上",
                            re.I)


def markdown(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_the_saving_machine_pattern():
    assert SAVING_MACHINE.search("On the machine that saved this notebook the additive form was slower")
    assert SAVING_MACHINE.search("要注意的是：在保存本笔记本的那台机器上，加性形式更慢")
    assert SAVING_MACHINE.search("and the clock on this machine agrees with it")
    assert not SAVING_MACHINE.search("measured on the machine that ran the notebook; yours may differ")


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_the_prose_reports_nothing_of_the_machine_that_saved_it(path):
    found = [m.group() for m in SAVING_MACHINE.finditer(markdown(notebook(path)))]
    assert not found, (f"{path.name}: the prose reports a measurement of the machine that saved it ({found}); let "
                       f"the cell that measured print it, from the same variables")


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_02s_timing_verdict_is_printed_from_the_run_not_typed(language):
    """02's timing cell writes whether a tanh cost more than a multiply or an add from
    ``tanh_dearer``, into the figure's description and into the line it prints, which must say
    the same; and no markdown cell types either verdict."""
    from attn.language import language as chosen, tr

    nb = notebook(LANGUAGES[language] / "02_qkv.ipynb")
    [timed] = [c for c in nb["cells"] if "tanh_dearer =" in "".join(c["source"])]
    assert output_ignored(timed), (f"notebooks/{'zh/' if language == 'zh' else ''}02_qkv.ipynb: the timing cell prints "
                                   f"what the clock measured: give it the tag nbval-ignore-output")
    described = "".join(o["metadata"]["image/png"]["alt"] for o in timed["outputs"] if is_description(o))
    said = "".join("".join(o.get("text", "")) for o in timed["outputs"] if o.get("output_type") == "stream")
    with chosen(language):
        verdicts = [tr("tanh cost more per element than a multiply or an add."),
                    tr("tanh cost no more per element than a multiply or an add.")]
    in_description = [v for v in verdicts if v in described]
    assert len(in_description) == 1 and in_description[0] in said, (
        f"02 ({language}): the timing cell's figure description ({described!r}) and printed line ({said!r}) must "
        f"each say one verdict of tanh_dearer, the same: write both from tanh_dearer in that cell")
    typed = [v for v in verdicts if v.rstrip(".。") in markdown(nb)]
    assert not typed, f"02 ({language}): the prose types a verdict of the clock: {typed}"


# ---- notebook 11's letters ---------------------------------------------------------------
#
# 11 names the score matrix S (as the FlashAttention paper does) and counts the keys with N; a
# shape or a size that counts the keys with S again, "(S, E)" or "L · S", reads as the scores.

KEYS_COUNTED_BY_S = re.compile(r"\(S,|, S\)|\\cdot S\b|·\s?S\b|L \* S\b")


def test_the_letters_pattern():
    assert KEYS_COUNTED_BY_S.findall("K: (S, E) keys; (L, N) @ (S, E); $L \\cdot S \\cdot 4$; L · S") == [
        "(S,", "(S,", "\\cdot S", "· S"]
    assert not KEYS_COUNTED_BY_S.search("S = scale * Q @ K.T, dS: (L, N), K: (N, E)")


@pytest.mark.parametrize("path", [folder / name for folder in LANGUAGES.values()
                                  for name in ("11_backward.ipynb", "solutions/11_backward_solutions.ipynb")],
                         ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_11_counts_the_keys_with_n_everywhere(path):
    cells = notebook(path)["cells"]
    found = [f"cell {i}: {m.group()}" for i, c in enumerate(cells) for m in KEYS_COUNTED_BY_S.finditer("".join(c["source"]))]
    assert not found, f"{path.name}: S is the score matrix in 11, N the number of keys: {found}"


# ---- the course's own terms, in Chinese where they first come up --------------------------
#
# Every English notebook gives the Chinese term beside the English one at first use (00's
# glossary). The table of the course's own terms says in which notebook each first comes up;
# that notebook's English prose carries the Chinese term (12 once gave none).

def own_terms() -> list[tuple[str, str, str]]:
    """(English, Chinese, notebook number) of each row of 00's table of the course's own terms."""
    text = markdown(notebook(ROOT / "notebooks" / "00_start_here.ipynb"))
    table = text.split("### The course's own terms", 1)[1]
    rows = []
    for line in table.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) >= 3 and parts[2].isdigit():
            rows.append((parts[0], parts[1], parts[2]))
    return rows


#: Terms a notebook names in passing before the one that introduces them gives their Chinese:
#: term -> (that notebook, why).
IN_PASSING = {"cross-attention": ("10", "05 names it once, in a table of call forms; 10 introduces it")}


def test_the_own_terms_table_is_read():
    rows = own_terms()
    assert ("causal mask", "因果掩码", "05") in rows and ("dropout", "暂退法", "12") in rows, (
        f"notebooks/00_start_here.ipynb: the table under '### The course's own terms' is read as rows "
        f"| English | 中文 | notebook number |; read {rows[:3]}...: keep that layout")


@pytest.mark.parametrize("english, chinese, first", own_terms(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_course_term_is_given_in_chinese_where_it_first_comes_up(english, chinese, first):
    introduced = IN_PASSING.get(english, (first,))[0]
    [path] = (ROOT / "notebooks").glob(f"{introduced}_*.ipynb")
    assert chinese in markdown(notebook(path)), f"{path.name} introduces {english!r}: give {chinese} beside it"


# ---- a size the prose states is printed, or written in the cell it introduces ------------
#
# 00 promises that every number in the text comes from a cell you can rerun and change. A size
# the prose states ("4 sequences of 16 random tokens", "64 sequences") must therefore be printed
# by a cell, or be a literal of the code cell right after the sentence (an argument, an
# assignment or a default you can change there). 12 once stated the sizes of a computation
# that ran inside the package, where no cell showed them.

SIZE = re.compile(r"(?<![\w.$^{])(\d[\d,]*) (?:random |held-out |Adam |single )?"
                  r"(sequences|heads|blocks|steps|tokens|seeds|pairs|positions|queries|keys)\b")

#: (notebook, phrase) stated in the prose and not yet printed: each says where its number is.
#: The test fails when one is printed, so that the entry is removed.
SIZES_NOT_YET_PRINTED = {
    ("04_multi_head.ipynb", "6 heads"): "a head count the exercise's checker holds",
    ("04_multi_head_solutions.ipynb", "6 heads"): "the same exercise",
    ("05_pytorch_implementation.ipynb", "10 tokens"): "the lengths the mask experiment loops over",
    ("06_visualization.ipynb", "8 heads"): "MiniLM's heads, said in the introduction",
    ("09_positions.ipynb", "512 tokens"): "BERT's position table, said in passing",
    ("09_positions_solutions.ipynb", "4 pairs"): "the sizes of an exercise's checker",
    ("10_cross_attention_and_decoding.ipynb", "5 steps"): "best_time's repeats, in the timed cell",
    ("10_cross_attention_and_decoding.ipynb", "12 positions"): "attn.widgets.decoding.POSITIONS, in its explorer",
    ("10_cross_attention_and_decoding.ipynb", "8 positions"): "the steps exercise 2's checker runs",
    ("11_backward.ipynb", "16 keys"): "gradient_sizes's n, in the cell before the sentence",
}


def int_literals(source: str) -> set[int]:
    """The ints a cell writes as a call's argument, an assignment's value or a default."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))

    def ints(node: ast.AST) -> set[int]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List)):
            return {v for e in node.elts for v in ints(e)}
        return set()

    found: set[int] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call):
            for value in [*node.args, *(k.value for k in node.keywords)]:
                found |= ints(value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            found |= ints(node.value)
        elif isinstance(node, ast.FunctionDef):
            for value in [*node.args.defaults, *node.args.kw_defaults]:
                found |= ints(value) if value is not None else set()
    return found


def unprinted_sizes(nb: dict) -> list[str]:
    """Each size phrase of the prose that no output prints and the next code cell does not write."""
    out, cells, missing = printed(nb), nb["cells"], []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        after = next((c for c in cells[i + 1:] if c["cell_type"] == "code"), None)
        written = int_literals("".join(after["source"])) if after else set()
        for m in SIZE.finditer("".join(cell["source"])):
            number, noun = m.groups()
            said = re.search(rf"(?<![\d.,]){re.escape(number)} (?:[\w-]+ ){{0,2}}{noun}", out)
            if not said and int(number.replace(",", "")) not in written:
                missing.append(m.group())
    return missing


def test_a_size_is_found_printed_or_written():
    def md(text):
        return {"cell_type": "markdown", "source": text}

    def code(text, printed_text=""):
        return {"cell_type": "code", "source": text, "outputs": [{"output_type": "stream", "text": printed_text}]}

    nb = {"cells": [md("fed 4 sequences of 16 random tokens, 200 Adam steps"),
                    code("for n in (4, 16):\n    run(n)", "blocks: 4\n"),
                    md("2 sequences, 3 heads and 64 sequences"),
                    code("q = torch.randn(2, 3, 5)\ndef f(heads=200, n=16): pass", "fed 64 random sequences\n"),
                    md("200 Adam steps")]}
    assert unprinted_sizes(nb) == ["4 sequences", "16 random tokens", "200 Adam steps", "200 Adam steps"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_size_the_prose_states_is_printed_or_written_in_the_next_cell(path):
    known = {phrase for (name, phrase) in SIZES_NOT_YET_PRINTED if name == path.name}
    missing = unprinted_sizes(notebook(path))
    assert set(missing) <= known, (f"{path.name}: print these sizes (or write them in the cell the sentence "
                                   f"introduces): {sorted(set(missing) - known)}")
    assert known <= set(missing), f"{path.name}: now printed, remove from SIZES_NOT_YET_PRINTED: {known - set(missing)}"
