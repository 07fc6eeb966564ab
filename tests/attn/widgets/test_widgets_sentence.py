"""The sentence explorer (attn.widgets.sentence): its pure function and its controls."""
import numpy as np
import pytest
import torch
from _pictures import box, cell, changed, near, pixels

from attn.examples import CHAPTER_XUEXI_ROW, SENTENCE, SENTENCE_GLOSS
from attn.lessons.handbuilt.sentence import toy_attention, toy_scores
from attn.widgets.sentence import STEP_NAMES, SentenceRow, sentence_explorer, sentence_row

ORANGE = (255, 127, 14)  # tab:orange, the frame of the picked row


@pytest.mark.parametrize("i", range(len(SENTENCE)))
@pytest.mark.parametrize("scale", [0.0, 1.0, 2.5])
def test_row_matches_the_toy(i, scale):
    r = sentence_row(SENTENCE[i], score_scale=scale)
    out, w = toy_attention(score_scale=scale)
    assert isinstance(r, SentenceRow)
    assert r.index == i and r.gloss == SENTENCE_GLOSS[i]
    np.testing.assert_allclose(r.weights, w[i].numpy())
    np.testing.assert_allclose(r.matrix, w.numpy())
    np.testing.assert_allclose(r.output, out[i].numpy())
    # the row's computation, step by step: scores, exp, weight = exp / sum, output = sum of parts
    np.testing.assert_allclose(r.scores, toy_scores(score_scale=scale)[i].numpy())
    np.testing.assert_allclose(r.exps, np.exp(r.scores))
    np.testing.assert_allclose(np.array(r.exps) / r.exp_sum, r.weights)
    np.testing.assert_allclose(np.sum(r.parts, axis=0), r.output, atol=1e-12)
    assert r.row_sum == pytest.approx(1.0)
    assert r.top_weight == pytest.approx(max(r.weights))
    assert r.top_word == SENTENCE[int(np.argmax(r.weights))]


def test_chapter_row_only_for_xuexi():
    assert sentence_row("学习").chapter == CHAPTER_XUEXI_ROW
    assert all(sentence_row(w).chapter is None for w in SENTENCE if w != "学习")


def test_gloss_is_accepted():
    assert sentence_row("studies") == sentence_row("学习")


def test_zero_scale_is_uniform():
    r = sentence_row("小明", score_scale=0.0)
    np.testing.assert_allclose(r.weights, np.full(6, 1 / 6))


@pytest.mark.parametrize("word, exc, match", [
    ("北京大学", ValueError, "word: expected one of"),
    (3, TypeError, "word: expected a str"),
])
def test_bad_word(word, exc, match):
    with pytest.raises(exc, match=match):
        sentence_row(word)


def test_bad_scale():
    with pytest.raises(ValueError, match="score_scale"):
        sentence_row("学习", score_scale=-0.5)


def _framed_rows(ex) -> list[int]:
    """Rows of the "all rows" map whose cells carry the orange frame, read from the picture."""
    px, ax = pixels(ex), ex.maps["all rows"].ax
    return [i for i in range(6) if near(cell(px, ax, 6, 6, i, 2), ORANGE, tol=30).mean() > 0.02]


def test_explorer_word_dropdown_frames_the_picked_row_and_computes_it():
    ex = sentence_explorer()
    dropdown = ex.controls["word"]
    assert [v for _, v in dropdown.options] == list(SENTENCE)
    panels = {name: view.ax for name, view in ex.maps.items()}
    before = {name: box(pixels(ex), ax) for name, ax in panels.items()}
    for i, word in enumerate(SENTENCE):
        dropdown.value = word
        assert ex.state == sentence_row(word, score_scale=ex.controls["score_scale"].value)
        assert _framed_rows(ex) == [i], word  # the frame sits on the picked word's row
        assert f"New vector of {word}" in ex.readout.value
        row = ex.maps["row"]
        assert row.labels.y_strings == list(STEP_NAMES)
        assert row.cells.text.strings[2] == [f"{w:.2f}" for w in ex.state.weights]
        now = {name: box(pixels(ex), ax) for name, ax in panels.items()}
        if word != "学习":  # the default: nothing moved yet
            for name in panels:  # the frame, the row's computation and the new vector all move
                assert changed(before[name], now[name]), (word, name)
        before = now
    dropdown.value = "学习"
    assert "chapter (illustrative)" in ex.readout.value
    assert ex.maps["row"].cells.text.strings[3] == [f"{v:.2f}" for v in CHAPTER_XUEXI_ROW]
    dropdown.value = "在"
    assert "chapter (illustrative)" not in ex.readout.value
    assert ex.maps["row"].cells.blocked[3].all()  # no chapter row for 在: grey


def test_explorer_scale_slider_changes_every_panel():
    ex = sentence_explorer("大学")
    slider = ex.controls["score_scale"]
    values = np.arange(slider.min, slider.max + slider.step / 2, slider.step)
    panels = [view.ax for view in ex.maps.values()]
    seen, tops = [], []
    for v in values:
        slider.value = float(v)
        assert ex.state.score_scale == pytest.approx(v)
        seen.append([box(pixels(ex), ax) for ax in panels])
        tops.append(ex.state.top_weight)
    for a, b in zip(seen, seen[1:]):
        assert all(changed(x, y) for x, y in zip(a, b))  # every panel, at every notch
    # larger scores, more peaked rows: the largest weight never shrinks
    assert all(b >= a - 1e-12 for a, b in zip(tops, tops[1:]))
    slider.value = 0.0
    assert "every weight is 1/6" in ex.readout.value


def test_explorer_builds_once_and_blits():
    ex = sentence_explorer()
    fig = ex.fig
    for word in SENTENCE:
        ex.controls["word"].value = word
    assert ex.fig is fig
    assert ex.full_redraws == 1  # the one at construction; every move is blitted
