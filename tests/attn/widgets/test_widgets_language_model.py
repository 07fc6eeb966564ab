"""The language-model explorer of notebook 13 (attn.widgets.language_model): its pure function,
and its picture."""
import numpy as np
import pytest
import torch
from _pictures import box, cell, near, pixels

from attn.language import language
from attn.lessons.language_model.corpus import load_corpus
from attn.lessons.language_model.generation import generate
from attn.lessons.language_model.heads import TEXT_PATTERNS, causal_maps, name_heads
from attn.lessons.language_model.shipped import load_shipped
from attn.widgets.language_model import (PROMPTS, SHOWN, TEMPERATURES, TOP_KS, char_label, language_model_explorer,
                                         lm_view, prompts)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_prompts_start_a_speech_or_a_poem_of_the_held_out_text(lang):
    corpus = load_corpus(lang)
    held = corpus.vocab.decode(corpus.held_out)
    found = prompts(lang)
    assert len(found) == len(set(found)) == PROMPTS
    for p in found:
        assert "\n\n" + p in held  # right after a blank line, in text the model never trained on
        if lang == "zh":
            assert p.endswith("，") and "\n" not in p and len(p) in (6, 8)  # half a line of five or seven
        else:
            assert len(p) == 16 and p.split("\n")[0].endswith(":")  # a speaker's name, then the speech


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_view_is_the_models_own_continuation_distribution_and_maps(lang):
    v = lm_view(1, 0.8, 10, 2, 3, language=lang)
    corpus, model = load_corpus(lang), load_shipped(lang)
    assert v.text.startswith(v.prompt) and v.written == len(v.text) - len(v.prompt) > 0
    # the continuation is what generate writes with the explorer's seed
    again = generate(model, corpus.vocab.encode(v.prompt)[None], v.written, strategy="sample", temperature=0.8,
                     top_k=10, generator=torch.Generator().manual_seed(0))
    assert corpus.vocab.decode(again[0]) == v.text
    # the bars: the likeliest characters, before the cut in decreasing order; top-k renormalises
    assert len(v.top_chars) == SHOWN and np.all(np.diff(v.before_cut) <= 0)
    assert v.kept == 10
    kept = v.after_cut > 0
    assert kept[:10].all() and not kept[10:].any()
    np.testing.assert_allclose(v.after_cut[:10], v.before_cut[:10] / v.before_cut[:10].sum(), rtol=1e-4)
    # the maps are the model's causal maps on the text, and the names are measured on them
    maps = causal_maps(model, corpus.vocab, v.text)
    np.testing.assert_allclose(v.maps, maps.numpy(), atol=1e-6)
    assert list(v.names) == name_heads(maps, v.text)
    assert v.chosen.layer == 1 and v.chosen.head == 2  # block 2, head 3, 0-based


def test_top_k_of_one_writes_greedily_whatever_the_temperature():
    texts = {lm_view(0, t, 1, language="en").text for t in TEMPERATURES}
    assert len(texts) == 1
    v = lm_view(0, 1.0, 1, language="en")
    model, corpus = load_shipped("en"), load_corpus("en")
    greedy = generate(model, corpus.vocab.encode(v.prompt)[None], v.written)
    assert corpus.vocab.decode(greedy[0]) == v.text
    assert v.kept == 1 and v.after_cut[0] == 1


def test_view_errors_name_the_argument():
    with pytest.raises(ValueError, match=f"prompt: expected an int in 0..{PROMPTS - 1}"):
        lm_view(PROMPTS)
    with pytest.raises(ValueError, match="temperature: expected one of"):
        lm_view(0, 0.7)
    with pytest.raises(TypeError, match="top_k: expected an int"):
        lm_view(0, 1.0, 10.0)
    with pytest.raises(ValueError, match="top_k: expected one of"):
        lm_view(0, 1.0, 7)
    with pytest.raises(ValueError, match="layer: expected an int in 1..4"):
        lm_view(0, 1.0, 10, 5)
    with pytest.raises(ValueError, match="head: expected an int in 1..4"):
        lm_view(0, 1.0, 10, 1, 0)


def test_labels_show_a_space_and_a_newline():
    assert [char_label(c) for c in "a \n，"] == ["a", "␣", "⏎", "，"]


def test_the_explorer_draws_the_chosen_head_and_frames_it_among_all():
    with language("en"):
        ex = language_model_explorer(prompt=0, temperature=1.0, top_k=10, layer=1, head=3)
    v = ex.state
    big = ex.maps["head"]
    L = len(v.text)
    np.testing.assert_allclose(big.cells.values, v.maps[0, 2])
    assert big.labels.x_strings == [char_label(c) for c in v.text]
    # the causal mask: every cell above the diagonal is grey, the diagonal is not
    px = pixels(ex)

    def colour(i, j):  # the middle pixel of cell (i, j)
        c = cell(px, big.ax, L, L, i, j)
        return c[c.shape[0] // 2, c.shape[1] // 2]

    grey = np.array([128, 128, 128])
    assert np.abs(colour(0, L - 1) - grey).sum() < 10
    assert np.abs(colour(5, 5) - grey).sum() > 30
    # the strongest cell of the chosen head is darker than its weakest visible one
    weights = np.where(np.tril(np.ones((L, L), dtype=bool)), v.maps[0, 2], np.nan)
    strong = np.unravel_index(np.nanargmax(weights), (L, L))
    weak = np.unravel_index(np.nanargmin(weights), (L, L))
    assert colour(*strong).sum() + 150 < colour(*weak).sum()
    orange = np.array([255, 127, 14])

    def framed():
        return [key for key, view in ex.maps.items() if key != "head"
                and (np.abs(box(pixels(ex), view.ax) - orange).sum(-1) < 40).mean() > 0.05]

    assert framed() == ["1.3"]
    ex.controls["layer"].value, ex.controls["head"].value = 4, 2
    assert framed() == ["4.2"]
    np.testing.assert_allclose(big.cells.values, ex.state.maps[3, 1])


def test_the_bars_follow_top_k_and_the_readout_says_what_it_keeps():
    def blue_bars(ex):  # how many bars are drawn in blue (runs of rows with blue pixels)
        blue = near(box(pixels(ex), ex.bars["kept"].axes, inset=2), (31, 119, 180), tol=30).any(1)
        return int(np.sum(blue[1:] & ~blue[:-1]) + blue[0])

    with language("en"):
        ex = language_model_explorer(top_k=1)
        assert ex.state.kept == 1 and "greedily" in ex.readout.value
        assert blue_bars(ex) == 1
        ex.controls["top_k"].value = 3
        assert ex.state.kept == 3 and blue_bars(ex) == 3
        assert "top-k keeps 3 of the 63 characters" in ex.readout.value
        assert f"“{char_label(ex.state.top_chars[0])}”" in ex.readout.value


def test_the_readout_names_the_heads_that_clear_the_bar():
    with language("en"):
        ex = language_model_explorer()
    named = [n for n in ex.state.names if n.pattern]
    assert named, "the shipped English model names at least one head on the first prompt"
    for n in named:
        assert f"block {n.layer + 1}, head {n.head + 1}: {TEXT_PATTERNS[n.pattern]} (score {n.score:.2f}" in ex.readout.value
    unnamed = next(n for n in ex.state.names if not n.pattern)
    assert f"block {unnamed.layer + 1}, head {unnamed.head + 1}:" not in ex.readout.value
    with language("zh"):
        zh = language_model_explorer()
    assert "文本" in zh.readout.value and zh.state.language == "zh"
