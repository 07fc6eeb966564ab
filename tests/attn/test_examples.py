import torch

from attn import examples


def test_sentence_and_gloss_align():
    assert examples.SENTENCE == ("小明", "在", "北京", "大学", "学习", "人工智能")
    assert len(examples.SENTENCE_GLOSS) == len(examples.SENTENCE) == len(examples.CHAPTER_XUEXI_ROW)
    assert abs(sum(examples.CHAPTER_XUEXI_ROW) - 1) < 1e-12


def test_worked_example_shapes_and_fresh_copies():
    ex = examples.worked_example_inputs()
    assert ex["X"].shape == (3, 4) and ex["W_Q"].shape == ex["W_K"].shape == ex["W_V"].shape == (4, 2)
    ex["X"][0, 0] = 99
    assert examples.worked_example_inputs()["X"][0, 0] == 1
    assert examples.worked_example_inputs(torch.float32)["X"].dtype == torch.float32


def test_printed_claims_have_the_chapter_shapes():
    p = examples.CHAPTER_PRINTED
    for name, rows, cols in [("Q", 3, 2), ("K", 3, 2), ("V", 3, 2), ("sqrt(d_k)", 1, 1),
                             ("K^T", 2, 3), ("QK^T", 3, 3), ("scaled", 3, 3), ("weights", 3, 3),
                             ("output", 3, 2)]:
        assert len(p[name]) == rows and all(len(r) == cols for r in p[name])


def test_k_and_v_as_printed_are_right_and_q_row_2_is_not():
    ex = examples.worked_example_inputs()
    p = examples.CHAPTER_PRINTED
    assert torch.equal(ex["X"] @ ex["W_K"], torch.tensor(p["K"], dtype=torch.float64))
    assert torch.equal(ex["X"] @ ex["W_V"], torch.tensor(p["V"], dtype=torch.float64))
    Q = ex["X"] @ ex["W_Q"]
    printed_Q = torch.tensor(p["Q"], dtype=torch.float64)
    assert torch.equal(Q[[0, 2]], printed_Q[[0, 2]])
    assert not torch.equal(Q[1], printed_Q[1])


def test_sentence_phrases_and_the_two_sentence_input_line_up():
    assert len(examples.SENTENCE_PHRASES) == len(examples.SENTENCE)
    t = examples.TWO_SENTENCE_TOKENS
    assert len(t) == len(examples.TWO_SENTENCE_PHRASES) == len(examples.TWO_SENTENCE_SEGMENTS) == 12
    assert t[0] == "[CLS]" and t[1:7] == examples.SENTENCE and t[7] == t[-1] == "[SEP]"
    # the chapter's sentence keeps its phrases inside the two-sentence input (ids shifted by 1)
    assert [p - 1 for p in examples.TWO_SENTENCE_PHRASES[1:7]] == list(examples.SENTENCE_PHRASES)
    assert examples.TWO_SENTENCE_SEGMENTS == (0,) * 8 + (1,) * 4


def test_phrased_sentences_start_with_the_chapters():
    assert examples.PHRASED_SENTENCES["chapter"] == examples.SENTENCE
    for words in examples.PHRASED_SENTENCES.values():
        assert words and all(isinstance(w, str) and w for w in words)
