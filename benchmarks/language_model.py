"""Notebook 13's character-level language model: generating with and without the KV cache,
and the training run the notebook affords.

* generation: the shipped model of each language (``attn.lessons.language_model.shipped``: 4
  blocks, E = 128, H = 4, float32, one thread), one generation step after T characters
  (``attn.lessons.language_model.generation.step_times``: the fastest of 5 runs), with a KV
  cache (the new character only, against T cached positions) and without (all T + 1
  characters again); characters per second = 1 / the step's time; the ratio of the blocks'
  multiply-adds counted by ``attn.decoding.step_cost`` beside the measured ratio (the
  embedding and the read-out, the same either way, are left out of the count);
* training: the run of ``shipped.NOTEBOOK`` (its sizes and steps, seed 0, one thread) on each
  language's text, its wall-clock time against the notebook's budget of 30 s, and its loss.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from ._common import RESULTS, machine, say, table, write_json

LENGTHS = (16, 64, 127)
LANGUAGES = ("en", "zh")
REPEATS = 5
NOTEBOOK_BUDGET_S = 30.0


def generation_rows(language: str, lengths: tuple[int, ...], repeats: int, quick: bool) -> list[dict[str, Any]]:
    """One row per T: the step's time with and without a cache, and the counted ratio."""
    from attn.decoding import step_cost
    from attn.lessons.language_model.corpus import load_corpus
    from attn.lessons.language_model.generation import step_times
    from attn.lessons.language_model.model import build_char_lm
    from attn.lessons.language_model.shipped import load_shipped

    if quick:  # an untrained small model: the code runs, the numbers mean little
        model = build_char_lm(len(load_corpus(language).vocab), d_model=32, num_heads=2, num_layers=1, context=32)
    else:
        model = load_shipped(language)
    times = step_times(model, list(lengths), repeats=repeats)
    E, N = model.d_model, len(model.blocks)
    rows = []
    for T, cached, uncached in zip(times.lengths, times.with_cache, times.without_cache):
        cost = step_cost(T, E, N)
        rows.append({"language": language, "T": T, "with_cache_ms": 1e3 * cached, "without_cache_ms": 1e3 * uncached,
                     "chars_per_s_with": 1 / cached, "chars_per_s_without": 1 / uncached,
                     "measured_ratio": uncached / cached, "counted_ratio": cost.without_cache / cost.with_cache})
    return rows


def notebook_training(language: str, quick: bool) -> dict[str, Any]:
    """The notebook's training run on ``language``'s text: seconds and losses."""
    from attn.lessons.language_model.corpus import load_corpus
    from attn.lessons.language_model.model import build_char_lm
    from attn.lessons.language_model.shipped import NOTEBOOK
    from attn.lessons.language_model.training import held_out_loss, train_char_lm

    corpus = load_corpus(language)
    settings = dict(NOTEBOOK["training"], **({"steps": 3} if quick else {}))
    model = build_char_lm(len(corpus.vocab), seed=settings["seed"], **NOTEBOOK["model"])
    t0 = time.perf_counter()
    run = train_char_lm(model, corpus.train, **settings)
    seconds = time.perf_counter() - t0
    return {"language": language, "steps": settings["steps"], "seconds": seconds,
            "uniform_loss": math.log(len(corpus.vocab)), "first_loss": run.losses[0],
            "last_loss": sum(run.losses[-10:]) / len(run.losses[-10:]),
            "held_out_loss": held_out_loss(model, corpus.held_out)}


def run(quick: bool = False, results: Path = RESULTS, threads: int | None = None) -> dict[str, Any]:
    # threads: not used; generation and training run on one thread, as in the notebook
    lengths, repeats = ((4, 16), 1) if quick else (LENGTHS, REPEATS)
    say("\n== Language model (notebook 13): a generation step with and without the KV cache; the notebook's run ==")
    rows = [r for language in LANGUAGES for r in generation_rows(language, lengths, repeats, quick)]
    for r in rows:
        say(f"{r['language']} T={r['T']:>3}: with cache {r['with_cache_ms']:6.2f} ms "
            f"({r['chars_per_s_with']:6.0f} chars/s), without {r['without_cache_ms']:6.2f} ms "
            f"({r['chars_per_s_without']:6.0f} chars/s)")
    tbl = table(["text", "T", "with cache ms", "chars/s", "without ms", "chars/s ", "measured ratio",
                 "counted ratio"],
                [[r["language"], r["T"], f"{r['with_cache_ms']:.2f}", f"{r['chars_per_s_with']:.0f}",
                  f"{r['without_cache_ms']:.2f}", f"{r['chars_per_s_without']:.0f}", f"{r['measured_ratio']:.1f}",
                  f"{r['counted_ratio']:.1f}"] for r in rows])
    training = [notebook_training(language, quick) for language in LANGUAGES]
    train_tbl = table(["text", "steps", "seconds", "budget s", "first loss", "last loss", "held-out loss",
                       "uniform loss"],
                      [[t["language"], t["steps"], f"{t['seconds']:.1f}", f"{NOTEBOOK_BUDGET_S:.0f}",
                        f"{t['first_loss']:.2f}", f"{t['last_loss']:.2f}", f"{t['held_out_loss']:.2f}",
                        f"{t['uniform_loss']:.2f}"] for t in training])
    longest = max(lengths)
    at = [r for r in rows if r["T"] == longest]
    summary = [f"T={longest}, {r['language']}: the cache makes a step {r['measured_ratio']:.1f}x faster "
               f"({r['chars_per_s_with']:.0f} against {r['chars_per_s_without']:.0f} characters per second); "
               f"the blocks' multiply-adds shrink {r['counted_ratio']:.0f}x" for r in at]
    summary += [f"the notebook's training run ({t['steps']} steps) took {t['seconds']:.1f} s on {t['language']} "
                f"(budget {NOTEBOOK_BUDGET_S:.0f} s): "
                f"{'within' if t['seconds'] <= NOTEBOOK_BUDGET_S else 'OVER'}" for t in training]
    say(tbl + "\n\n" + train_tbl + "\n" + "\n".join(summary))
    payload = {"machine": machine(), "config": {"lengths": list(lengths), "repeats": repeats, "quick": quick},
               "rows": rows, "training": training, "table": tbl, "training_table": train_tbl, "summary": summary}
    if not quick:
        write_json("language_model", payload, results)
    return payload
