"""Every number the prose states is one a cell printed; each lesson's central claims stay printed.

Two checks over the committed notebooks (their stored outputs are what nbval re-computes):

* every decimal number in a notebook's markdown (0.48, 10.73, 2.36; integers are too often
  constants such as 512 or 10000) appears in that notebook's stored outputs, so a number in the
  text cannot drift away from the cell that computes it;
* ``CLAIMS`` lists, per lesson, the printed lines that carry the lesson's argument, the way
  ``test_course_map`` keeps the titles. A re-execution that changes one of them fails here,
  which sends whoever changed it back to the prose that relies on it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks" / "solutions").glob("*.ipynb"))

#: A decimal number standing alone: not part of a word, a version, an exponent or a LaTeX group.
DECIMAL = re.compile(r"(?<![\w.^{\\])-?\d+\.\d+(?![\w.}])")

#: lesson -> printed lines (or parts of lines) that carry its argument.
CLAIMS: dict[str, list[str]] = {
    "01_intuition.ipynb": [
        "largest weight: 学习 (studies), 0.40",
        "RNN: distance 31 is 10.4 powers of ten below distance 0",
        "self-attention: largest change beyond the permutation < 1e-12: True",
        "RNN:            largest change beyond the permutation = 0.97",
    ],
    "02_qkv.ipynb": [
        "unscaled ‖J‖ is largest at d_k = 4; it falls at every larger d_k of the grid: True",
        "additive / scaled: 9.9x the operations, 64x the largest tensor",
        "scaled   largest weight 0.194",
    ],
    "03_worked_example.ipynb": [
        "all             58    15",
        "largest difference between the two: 0.0061",
        "every difference within the rounding carried: True",
    ],
    "04_multi_head.ipynb": [
        "two heads: error left below 1 % of the target's variance: True",
        "equal at n = 2 * d_model = 1024: True",
        "parameters, 8 heads / chapter's single head: 1.3333",
        "the sum over heads of head_i W_i^O is the output (no bias, as in the chapter): True",
    ],
    "05_pytorch_implementation.ipynb": [
        "d_model = 512: without biases 1,048,576, with biases 1,050,624, difference 2,048 = 4 x 512",
        "exp(-1e9) in float64: 0.0",
        "raised at once for 8 of 10 lengths; ran silently for L = [5, 10]",
        "SDPA, query 0: zeros",
        "nn.MultiheadAttention, train mode, need_weights=False, gradient on , query 0: out_proj's bias",
        "nn.MultiheadAttention, eval  mode, need_weights=False, gradient off, query 0: NaN",
    ],
    "06_visualization.ipynb": [
        "aligned pair (cosine 1) scores strength * sqrt(d_k) = 4.00",
        "s = 1.0: e^s / (e^s + e^-s + 6) = 0.299; the table's weight on itself at d_k = 4: 0.299",
    ],
    "07_efficiency.ipynb": [
        "4096   2,147,483,648       67,108,864   64.0 MiB",
        "equal: True True",
        "causal block pairs computed: 16 of 21",
        "output alone: 256.0 KiB + one float per row: 4.0 KiB | the n x n weights: 4.0 MiB",
    ],
    "08_trained_heads.ipynb": [
        "solved (held-out accuracy > 0.95): True",
        "every layer uses the course's attention: True",
    ],
    "09_positions.ipynb": [
        "pair 0 turns 3,162 times faster than the last pair at d = 16, 9,647 times at d = 512",
        "PE[p] R_k^T equals PE[p + k] for every p, for k = 1, 5 and 37 (largest difference < 1e-12): True",
        "RoPE: largest spread of the score over all 63 offsets < 1e-12: True",
        "the same token + codes, through W_q and W_k: largest spread over the offsets = 10.07",
        "codes alone (x = 0), through W_q and W_k:    largest spread over the offsets = 10.73",
    ],
    "10_cross_attention_and_decoding.ipynb": [
        "self-attention is the case M = X: True",
        "prefill + 6 cached steps vs the full causal pass: largest difference < 1e-12: True",
        "numbers in the caches: 131,072; 2 * N * T * E = 131,072",
    ],
    "11_backward.ipynb": [
        "every row of dS sums to [0. 0. 0.]",
        "dQ against autograd: largest difference < 1e-12: True",
        "gradcheck, a fully masked row: True",
        "NaN entries in the value gradient: 30 of 30",
    ],
}


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_decimal_in_the_prose_is_printed_by_a_cell(path):
    nb = notebook(path)
    out = printed(nb)
    missing = [f"cell {i}: {number}" for i, number in prose_decimals(nb) if number not in out]
    assert not missing, f"{path.name}: the prose states numbers no cell prints: {missing}"


def test_every_lesson_has_claims():
    lessons = {p.name for p in NOTEBOOKS if p.parent.name == "notebooks" and not p.name.startswith("00_")}
    assert set(CLAIMS) == lessons


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_the_lesson_still_prints_its_claims(name):
    out = printed(notebook(ROOT / "notebooks" / name))
    missing = [claim for claim in CLAIMS[name] if claim not in out]
    assert not missing, f"{name}: these claims are no longer printed: {missing}"


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
            assert cell["cell_type"] == "code"
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
