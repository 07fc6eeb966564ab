"""attn.lessons.language_model: the vendored texts, a model of learner-style blocks that learns,
a leaking causal mask caught, cached generation equal to uncached, and the shipped weights."""
import math

import pytest
import torch
from _learner_classes import Block, GeluPackageBlock, PostLNOnly, block_with

import attn
from attn.lessons.language_model.corpus import (HELD_OUT_SHARE, TEXTS, Vocabulary, load_corpus, load_text,
                                                random_windows, text_files)
from attn.lessons.language_model.generation import (distribution_after, generate, generate_text,
                                                    next_char_probabilities, step_times)
from attn.lessons.language_model.model import CharLM, build_char_lm
from attn.lessons.language_model.shipped import load_shipped, shipped_record, weights_folder
from attn.lessons.language_model.training import (LEAK_FLOOR, future_leaks, held_out_loss, learning_rate,
                                                  looks_like_a_leak, train_char_lm)
from attn.language import language

LANGUAGES = sorted(TEXTS)
SMALL = {"d_model": 32, "num_heads": 2, "num_layers": 1, "context": 32}


class PeeksAhead(CharLM):
    """The planted bug: a causal mask one diagonal too wide, so position t sees t + 1."""

    def mask(self, length):
        return attn.causal_mask(length, offset=1)


# ---- the texts ------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_text_ships_with_its_source_and_licence(lang):
    files = text_files(lang)
    readme = files["README.md"].read_text(encoding="utf-8")
    licence = files["LICENSE"].read_text(encoding="utf-8")
    assert "public domain" in readme and "https://github.com/" in readme
    assert "commit" in readme and "What was" in readme  # the source's version, and what was cut
    assert "MIT License" in licence and "Permission is hereby granted" in licence
    text = load_text(lang)
    assert 300_000 < len(text.encode("utf-8")) < 600_000
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_the_course_language_chooses_the_text():
    with language("zh"):
        assert load_corpus().language == "zh" and "，" in load_text()
    with language("en"):
        assert load_corpus().language == "en" and load_text().startswith("First Citizen:")
    with pytest.raises(ValueError, match="language: expected one of"):
        load_corpus("fr")
    with pytest.raises(TypeError, match="language: expected a language code"):
        load_corpus(1)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_vocabulary_ids_follow_code_points_and_round_trip(lang):
    corpus = load_corpus(lang)
    vocab = corpus.vocab
    assert list(vocab.chars) == sorted(set(load_text(lang)))
    assert vocab == Vocabulary.from_text(load_text(lang)[::-1])  # the order never depends on the text's
    n = len(corpus.train) + len(corpus.held_out)
    assert n == len(load_text(lang)) and len(corpus.held_out) == round(n * HELD_OUT_SHARE)
    piece = load_text(lang)[1000:1200]
    assert vocab.decode(vocab.encode(piece)) == piece
    assert torch.equal(corpus.train[1000:1200], vocab.encode(piece))


def test_vocabulary_errors_name_the_argument():
    vocab = Vocabulary.from_text("abc")
    with pytest.raises(ValueError, match="text: expected characters of the vocabulary .* got 'z'"):
        vocab.encode("abz")
    with pytest.raises(TypeError, match="text: expected a str, got list"):
        vocab.encode(["a"])
    with pytest.raises(ValueError, match=r"ids: expected ids in 0\.\.2"):
        vocab.decode([0, 3])


def test_random_windows_are_the_text_and_its_next_characters():
    data = torch.arange(100)
    x, y = random_windows(data, 4, 10, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 10)
    assert torch.equal(y, x + 1)  # on arange, the next character is the next number
    again, _ = random_windows(data, 4, 10, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again, x)
    with pytest.raises(ValueError, match="data: expected more than context=100 ids"):
        random_windows(data, 4, 100, generator=torch.Generator())
    with pytest.raises(TypeError, match="generator: expected a torch.Generator, got int"):
        random_windows(data, 4, 10, generator=0)


# ---- the model and its training ---------------------------------------------------------------

@pytest.mark.parametrize("block", [Block, PostLNOnly, GeluPackageBlock],
                         ids=["chapter layer, forward(x, mask)", "article layer, post-LN only", "package layer"])
def test_a_model_of_learner_style_blocks_learns_the_text(block):
    corpus = load_corpus("en")
    model = build_char_lm(len(corpus.vocab), block=block, **SMALL)
    assert future_leaks(model) == []
    run = train_char_lm(model, corpus.train, steps=40, batch_size=16, lr=1e-2)
    assert run.losses[0] > math.log(len(corpus.vocab)) - 0.5  # it starts near the uniform guess
    assert sum(run.losses[-5:]) / 5 < run.losses[0] - 1.0  # and falls
    assert not looks_like_a_leak(run.losses)
    assert held_out_loss(model, corpus.held_out) < math.log(len(corpus.vocab)) - 0.8


def test_training_is_repeatable_and_leaves_the_global_state_alone():
    corpus = load_corpus("en")
    before = torch.random.get_rng_state()
    threads = torch.get_num_threads()
    runs = [train_char_lm(build_char_lm(len(corpus.vocab), seed=3, dropout=0.1, **SMALL), corpus.train,
                          steps=3, batch_size=4, seed=5) for _ in range(2)]
    assert runs[0].losses == runs[1].losses
    assert all(torch.equal(a, b) for a, b in zip(runs[0].model.parameters(), runs[1].model.parameters()))
    assert torch.equal(torch.random.get_rng_state(), before) and torch.get_num_threads() == threads
    assert not runs[0].model.training


def test_a_causal_mask_that_sees_the_next_character_is_named():
    corpus = load_corpus("en")
    leaky = PeeksAhead(len(corpus.vocab), **SMALL)
    assert future_leaks(leaky, length=8) == [(t, t + 1) for t in range(7)]  # exactly the next one
    torch.manual_seed(0)
    honest_losses = train_char_lm(CharLM(len(corpus.vocab), **SMALL), corpus.train, steps=120, batch_size=16,
                                  lr=1e-2).losses
    torch.manual_seed(0)
    leaky_losses = train_char_lm(PeeksAhead(len(corpus.vocab), **SMALL), corpus.train, steps=120,
                                 batch_size=16, lr=1e-2).losses
    assert looks_like_a_leak(leaky_losses) and not looks_like_a_leak(honest_losses)
    assert sum(leaky_losses[-10:]) / 10 < LEAK_FLOOR < 1.5 < sum(honest_losses[-10:]) / 10


def test_a_block_that_drops_the_mask_sees_the_whole_future():
    model = build_char_lm(20, block=block_with("mask not passed"), **SMALL)
    leaks = future_leaks(model, length=6)
    assert set(leaks) == {(t, s) for s in range(1, 6) for t in range(s)}  # every earlier position


def test_looks_like_a_leak_reads_the_last_losses():
    assert looks_like_a_leak([4.0] * 50 + [0.3] * 10)
    assert not looks_like_a_leak([0.3] * 50 + [1.2] * 10)
    with pytest.raises(TypeError, match="losses: expected a non-empty list of losses"):
        looks_like_a_leak([])
    with pytest.raises(ValueError, match="floor: expected a positive number"):
        looks_like_a_leak([1.0], floor=0)


def test_learning_rate_warms_up_then_decays_to_a_tenth():
    assert learning_rate(5, 100, 1.0, warmup=10) == 0.5
    assert learning_rate(50, 100, 1.0, warmup=10) == 1.0
    assert learning_rate(10, 100, 1.0, warmup=10, decay=True) == 1.0
    assert learning_rate(100, 100, 1.0, warmup=10, decay=True) == pytest.approx(0.1)


def test_positions_by_name_or_by_the_learners_function():
    by_name = build_char_lm(10, seed=1, **SMALL)
    by_function = build_char_lm(10, seed=1, positions=attn.positions.sinusoidal, **SMALL)
    tokens = torch.tensor([[1, 2, 3, 4]])
    torch.testing.assert_close(by_name(tokens), by_function(tokens), atol=0, rtol=0)
    learned = build_char_lm(10, positions="learned", **SMALL)
    assert "pos.weight" in learned.state_dict() and "position_codes" not in by_name.state_dict()
    with pytest.raises(ValueError, match="positions: expected one of"):
        CharLM(10, positions="rotary")
    with pytest.raises(ValueError, match=r"positions: expected the function to return float codes .* got shape"):
        CharLM(10, context=8, positions=lambda length, d: torch.zeros(length, d + 1))


def test_model_errors_name_the_argument():
    model = build_char_lm(10, **SMALL)
    with pytest.raises(ValueError, match=r"tokens: expected ids in 0\.\.9"):
        model(torch.tensor([[0, 10]]))
    with pytest.raises(ValueError, match="tokens: expected at most L=32 positions"):
        model(torch.zeros(1, 33, dtype=torch.long))
    with pytest.raises(TypeError, match="caches: expected a list of 1 attn.KVCache"):
        model(torch.zeros(1, 3, dtype=torch.long), caches=[None])
    with pytest.raises(TypeError, match="block_class: expected an nn.Module class"):
        CharLM(10, block=attn.TransformerBlock(8, 2, 8))
    with pytest.raises(ValueError, match="cache: expected blocks that take a KV cache"):
        build_char_lm(10, block=Block, **SMALL).new_caches()
    with pytest.raises(TypeError, match="model: expected an attn.lessons.language_model.CharLM"):
        train_char_lm(torch.nn.Linear(2, 2), torch.arange(10), steps=1)


# ---- generation -------------------------------------------------------------------------------

def _double_model(lang="en"):
    return build_char_lm(len(load_corpus(lang).vocab), seed=2, **SMALL).double()


@pytest.mark.parametrize("options", [
    {"strategy": "greedy"},
    {"strategy": "sample", "temperature": 1.0},
    {"strategy": "sample", "temperature": 0.7, "top_k": 5},
    {"strategy": "sample", "temperature": 1.3, "top_p": 0.9},
], ids=["greedy", "sample", "top-k", "top-p"])
def test_cached_generation_equals_uncached_token_for_token(options):
    model = _double_model()
    prompt = load_corpus("en").vocab.encode("ROMEO:\n")[None].repeat(2, 1)  # (2, 7)
    outs = []
    for cache in (True, False):
        g = torch.Generator().manual_seed(7) if options["strategy"] == "sample" else None
        outs.append(generate(model, prompt, 24, generator=g, cache=cache, **options))
    assert outs[0].shape == (2, 31) and torch.equal(outs[0][:, :7], prompt)
    assert torch.equal(outs[0], outs[1])


def test_a_learners_blocks_generate_without_a_cache():
    model = build_char_lm(10, block=Block, seed=0, **SMALL)
    prompt = torch.tensor([[1, 2]])
    assert generate(model, prompt, 5, cache=False).shape == (1, 7)
    with pytest.raises(ValueError, match="cache: expected blocks that take a KV cache .* generate with cache=False"):
        generate(model, prompt, 5)


def test_generation_errors_name_the_argument():
    model = _double_model()
    prompt = torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match=r"steps: expected at most context - prompt length = 32 - 2 = 30, got 31"):
        generate(model, prompt, 31)
    with pytest.raises(TypeError, match="generator: expected a seeded torch.Generator to sample, got NoneType"):
        generate(model, prompt, 3, strategy="sample")
    with pytest.raises(ValueError, match="strategy: expected 'sample' with a temperature, top_k or top_p"):
        generate(model, prompt, 3, top_k=3)
    with pytest.raises(ValueError, match="strategy: expected one of"):
        generate(model, prompt, 3, strategy="beam")
    with pytest.raises(ValueError, match=r"top_p: expected a probability in \(0, 1\], got 1.5"):
        generate(model, prompt, 3, strategy="sample", top_p=1.5, generator=torch.Generator())
    with pytest.raises(ValueError, match="prompt: expected 2 dims"):
        generate(model, torch.tensor([1, 2]), 3)


def test_next_char_probabilities_temperature_top_k_top_p():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0], dtype=torch.float64)
    torch.testing.assert_close(next_char_probabilities(logits), torch.softmax(logits, -1))
    torch.testing.assert_close(next_char_probabilities(logits, temperature=0.5), torch.softmax(2 * logits, -1))
    top2 = next_char_probabilities(logits, top_k=2)
    torch.testing.assert_close(top2, torch.cat([torch.softmax(logits[:2], -1), torch.zeros(2, dtype=torch.float64)]))
    p = torch.softmax(logits, -1)  # 0.644, 0.237, 0.087, 0.032
    nucleus = next_char_probabilities(logits, top_p=0.85)  # 0.644 < 0.85 <= 0.644 + 0.237: two kept
    torch.testing.assert_close(nucleus, torch.cat([p[:2] / p[:2].sum(), torch.zeros(2, dtype=torch.float64)]))
    assert torch.equal(next_char_probabilities(logits, top_p=0.5) > 0, torch.tensor([True, False, False, False]))
    with pytest.raises(ValueError, match="temperature: expected a positive number"):
        next_char_probabilities(logits, temperature=0)
    with pytest.raises(ValueError, match=r"top_k: expected an int in 1\.\.inf, got 0"):
        next_char_probabilities(logits, top_k=0)


def test_distribution_after_a_prompt_is_the_models_next_character():
    corpus = load_corpus("en")
    model = _double_model()
    probs = distribution_after(model, corpus.vocab, "To be", top_k=3)
    logits = model(corpus.vocab.encode("To be")[None])[0, -1]
    assert (probs > 0).sum() == 3 and set(probs.topk(3).indices.tolist()) == set(logits.topk(3).indices.tolist())
    assert generate_text(model, corpus.vocab, "To be", 4).startswith("To be") and len(
        generate_text(model, corpus.vocab, "To be", 4)) == 9


def test_step_times_are_measured_at_each_length():
    times = step_times(_double_model().float(), [4, 16], repeats=1)
    assert times.lengths == [4, 16]
    assert all(t > 0 for t in times.with_cache + times.without_cache)
    assert times.chars_per_second(cache=True) > 0
    with pytest.raises(ValueError, match=r"lengths: expected an int in 1\.\.31, got 32"):
        step_times(_double_model(), [32])


# ---- the shipped weights ----------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_shipped_weights_load_and_predict_held_out_text_far_better_than_uniform(lang):
    corpus = load_corpus(lang)
    model = load_shipped(lang)
    assert (weights_folder() / f"{lang}.pt").stat().st_size < 5_000_000
    record = shipped_record(lang)
    assert record["model"] == model.config and record["command"].endswith(f"--language {lang}")
    uniform = math.log(len(corpus.vocab))
    loss = held_out_loss(model, corpus.held_out, windows=16)
    assert loss < uniform - 2.0  # nats per character: en 4.14 -> below 2.14; zh 8.32 -> below 6.32
    assert abs(loss - record["held_out_loss_float16_weights"]) < 0.5  # 16 windows of the 64 recorded
    assert future_leaks(model) == []


# ---- what the heads attend to ------------------------------------------------------------------

def test_text_patterns_mark_the_cells_a_reader_names():
    from attn.lessons.language_model.heads import text_patterns
    text = "ab,\ncd."  # two lines: "ab," and "cd."
    p = text_patterns(text)
    assert p["previous"][5].nonzero().flatten().tolist() == [4]
    assert p["itself"][5].nonzero().flatten().tolist() == [5]
    assert p["line start"][6].nonzero().flatten().tolist() == [4] and p["line start"][1].tolist()[0]
    assert p["same line"][6].nonzero().flatten().tolist() == [4, 5, 6]
    assert p["previous line"][5].nonzero().flatten().tolist() == [1]  # "d" sits under "b"
    assert not p["previous line"][:4].any()  # the first line has none before it
    assert p["punctuation"][6].nonzero().flatten().tolist() == [2, 6]
    assert not any(m.triu(1).any() for m in p.values())  # no pattern looks ahead
    with pytest.raises(TypeError, match="text"):
        text_patterns("")


def test_an_even_head_scores_its_baseline_and_a_previous_character_head_is_named():
    from attn.lessons.language_model.heads import name_heads, text_patterns, uniform_score
    text = "to be, or not to be:\nthat is the question."
    L = len(text)
    even = torch.tril(torch.ones(L, L)) / torch.arange(1, L + 1)[:, None]
    previous = torch.zeros(L, L)
    previous[0, 0] = 1
    previous[torch.arange(1, L), torch.arange(L - 1)] = 1
    maps = torch.stack([even, previous])[None]  # (1, 2, L, L)
    names = name_heads(maps, text)
    assert names[0].pattern is None and names[1].pattern == "previous"
    assert names[1].score == pytest.approx(1.0)
    assert names[1].baseline == pytest.approx(uniform_score(text_patterns(text)["previous"]))
    with pytest.raises(ValueError, match="maps"):
        name_heads(maps[..., :-1, :-1], text)


def test_the_shipped_models_heads_are_measured_on_causal_maps():
    from attn.lessons.language_model.heads import causal_maps, name_heads
    with language("en"):
        model, corpus = load_shipped("en"), load_corpus("en")
        text = corpus.vocab.decode(corpus.held_out[:100])
        maps = causal_maps(model, corpus.vocab, text)  # (N, H, L, L)
    assert maps.shape == (4, 4, 100, 100) and maps.triu(1).abs().max() == 0
    assert any(h.pattern == "previous" for h in name_heads(maps, text))
    with pytest.raises(ValueError, match="context=128"):
        causal_maps(model, corpus.vocab, text * 2)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_passage_starts_a_speech_or_a_poem_of_the_held_out_text(lang):
    from attn.lessons.language_model.heads import passage
    corpus = load_corpus(lang)
    text = passage(corpus, 96)
    held = corpus.vocab.decode(corpus.held_out)
    assert len(text) == 96 and "\n\n" + text in held and held.index("\n\n" + text) == held.index("\n\n")
    with pytest.raises(TypeError, match="corpus"):
        passage(corpus.vocab)
    with pytest.raises(ValueError, match="length"):
        passage(corpus, 0)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_notebook_13s_head_names_are_no_near_tie(lang):
    """Section 8 of notebook 13 prints each head's best pattern, its score and an even head's (two
    decimals) and whether it is named (score >= 0.4 and >= 2 x the baseline). Another CPU computes
    the maps with other round-off (about 1e-6 here): every printed verdict and digit must be
    farther than that from its edge, or the checked output would change from machine to machine."""
    from attn.lessons.language_model.heads import causal_maps, name_heads, passage, text_patterns, uniform_score
    from attn.lessons.pattern_scores import pattern_score
    corpus, model = load_corpus(lang), load_shipped(lang)
    text = passage(corpus, 96)
    maps = causal_maps(model, corpus.vocab, text)
    named = name_heads(maps, text)
    scores = {name: pattern_score(maps, m) for name, m in text_patterns(text).items() if m.any()}
    base = {name: uniform_score(m) for name, m in text_patterns(text).items() if m.any()}
    edge = 1e-4  # a hundred times the round-off between CPUs
    for n in named:
        assert abs(n.score - 0.4) > edge and abs(n.score - 2 * n.baseline) > edge, n
        for value in (n.score, n.baseline):
            assert abs((value * 100) % 1 - 0.5) > edge * 100, f"{n}: {value} sits on a rounding edge"
        lifts = sorted((float(s[n.layer, n.head]) / base[name] for name, s in scores.items()), reverse=True)
        assert lifts[0] - lifts[1] > edge, f"{n}: two patterns tie for its best"
