"""attn.lessons.chapter_check: every number the chapter prints for its worked example, checked."""
import numpy as np
import pytest

from attn.examples import CHAPTER_PRINTED
from attn.lessons.chapter_check import check_chapter, format_check, format_summary, renormalised_printed_weights
from attn.lessons.worked_example import STEPS, printed, worked_steps


def test_every_printed_number_is_checked():
    checks = check_chapter()
    assert tuple(checks) == STEPS == tuple(CHAPTER_PRINTED)
    for step in CHAPTER_PRINTED:
        assert checks[step].printed.shape == np.asarray(CHAPTER_PRINTED[step]).shape
    assert sum(c.printed.size for c in checks.values()) == 6 * 3 + 1 + 6 + 9 * 3 + 6



def test_discrepancies_found():
    checks = check_chapter()
    right = worked_steps()
    # Q: only row 2, column 2 is wrong (printed 2, X[1] @ W_Q gives 1)
    assert checks["Q"].wrong == ((1, 1),)
    assert right["Q"][1, 1].item() == 1 and printed("Q")[1, 1].item() == 2
    # K, V, sqrt(2) ~ 1.41, K^T are right
    for step in ("K", "V", "sqrt(d_k)", "K^T"):
        assert checks[step].ok, step
    # QK^T and scaled: row 2 wrong, but consistent with the printed (wrong) Q
    for step in ("QK^T", "scaled"):
        assert {i for i, _ in checks[step].wrong} == {1}
        assert checks[step].inconsistent == ()
    # weights: rows 1 and 2 wrong AND not the softmax of the printed scaled scores
    assert {i for i, _ in checks["weights"].wrong} == {0, 1}
    assert {i for i, _ in checks["weights"].inconsistent} == {0, 1}
    # output: rows 1 and 2 wrong but they follow from the printed weights
    assert {i for i, _ in checks["output"].wrong} == {0, 1}
    assert checks["output"].inconsistent == ()
    # row 3 (uniform) is right everywhere
    for step in ("QK^T", "scaled", "weights", "output"):
        assert all(i != 2 for i, _ in checks[step].wrong)



def test_tolerance_is_what_decides():
    assert len(check_chapter(atol=10.0)["weights"].wrong) == 0
    assert len(check_chapter(atol=0.0)["scaled"].wrong) > 2  # 2.83 is a rounding of 2.828...
    with pytest.raises(ValueError, match="atol: expected a number >= 0"):
        check_chapter(atol=-1)



def test_renormalised_printed_weights_match_softmax_of_printed_scores():
    r = renormalised_printed_weights()
    assert r["max_abs_diff"].item() < 0.01  # proportional to the right softmax, to rounding
    raw = (printed("weights") - r["softmax_of_printed_scaled"]).abs().max().item()
    assert raw > 0.1  # but not equal to it



def test_formatting_marks_disagreements():
    checks = check_chapter()
    text = format_check(checks["Q"])
    assert "2.00*" in text and "(1,1)" in text
    assert "*" not in format_check(checks["K"]).split("\n", 2)[2]
    summary = format_summary(checks)
    assert summary.splitlines()[-1].split()[1:] == ["58", "15"]
