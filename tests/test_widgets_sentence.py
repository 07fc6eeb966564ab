"""The sentence explorer (attn.widgets.sentence): its pure function and its controls."""
import numpy as np
import pytest
import torch

from attn.examples import CHAPTER_XUEXI_ROW, SENTENCE, SENTENCE_GLOSS
from attn.handbuilt.sentence import toy_attention
from attn.widgets.sentence import SentenceRow, sentence_explorer, sentence_row


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


def test_explorer_word_dropdown_moves_everything():
    ex = sentence_explorer()
    dropdown = ex.controls["word"]
    assert [v for _, v in dropdown.options] == list(SENTENCE)
    seen_images, seen_readouts = set(), set()
    for word in SENTENCE:
        dropdown.value = word
        assert ex.state == sentence_row(word, score_scale=ex.controls["score_scale"].value)
        assert f"New vector of {word}" in ex.readout.value
        assert ex.image.value[:8] == b"\x89PNG\r\n\x1a\n"
        seen_images.add(ex.image.value)
        seen_readouts.add(ex.readout.value)
    assert len(seen_images) == len(SENTENCE) and len(seen_readouts) == len(SENTENCE)
    dropdown.value = "学习"
    assert "chapter (illustrative)" in ex.readout.value
    dropdown.value = "在"
    assert "chapter (illustrative)" not in ex.readout.value


def test_explorer_scale_slider_across_its_range():
    ex = sentence_explorer("大学")
    slider = ex.controls["score_scale"]
    values = np.arange(slider.min, slider.max + slider.step / 2, slider.step)
    images, tops = [], []
    for v in values:
        slider.value = float(v)
        assert ex.state.score_scale == pytest.approx(v)
        images.append(ex.image.value)
        tops.append(ex.state.top_weight)
    assert len(set(images)) == len(values)
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
