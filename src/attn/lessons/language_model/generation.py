"""Writing with a trained character model: one character at a time, with and without a KV cache.

After a prompt, the model's logits at the last position give a distribution over the next
character: p = softmax(logits / temperature). Four ways to choose from it:

* **greedy**: the most likely character, every time (a temperature of 0, in the limit);
* **temperature**: sample from p; below 1 the likely characters grow likelier, above 1 the
  distribution flattens towards the uniform;
* **top-k**: sample among the k likeliest characters only (the others get probability 0);
* **top-p** (nucleus sampling, Holtzman et al. 2019): sample among the fewest likeliest
  characters whose probabilities add up to at least p.

Each new character is run through the model and appended, and the next one is chosen. Without
a cache every step runs the whole text so far again; with one (``attn.KVCache``, notebook 10)
each block keeps the keys and values of the positions already seen, and a step runs the new
character only: the same logits (to round-off), for far less work per step as the text grows
(``attn.decoding.step_cost`` counts it; ``step_times`` measures it).

Shape legend: B batch, T characters so far, V vocabulary.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor

from ..._checks import check_choice, check_int, check_number, check_positive_int, check_rank, check_tensor
from ...threads import torch_threads
from .corpus import Vocabulary
from .model import CharLM

__all__ = ["STRATEGIES", "next_char_probabilities", "distribution_after", "generate", "generate_text",
           "StepTimes", "step_times"]

STRATEGIES = ("greedy", "sample")


def next_char_probabilities(logits: Tensor, *, temperature: float = 1.0, top_k: int | None = None,
                            top_p: float | None = None) -> Tensor:
    """The distribution a sampler draws from: softmax(logits / temperature), cut to the top k
    and then to the top p (each renormalised to sum to 1).

    Args:
        logits: (..., V) scores of the next character.
        temperature: > 0.
        top_k: None, or keep the k likeliest (k >= 1; ties with the k-th kept too).
        top_p: None, or keep the fewest likeliest whose probabilities reach p, 0 < p <= 1.

    Returns:
        (..., V) probabilities, zero outside what is kept.
    """
    logits = check_tensor("logits", logits)
    if not logits.is_floating_point() or logits.dim() < 1:
        raise TypeError(f"logits: expected a float tensor (..., V), got dtype {logits.dtype}, {logits.dim()} dims")
    temperature = check_number("temperature", temperature, positive=True)
    if top_k is not None:
        top_k = check_int("top_k", top_k, low=1)
    if top_p is not None:
        top_p = check_number("top_p", top_p, positive=True)
        if top_p > 1:
            raise ValueError(f"top_p: expected a probability in (0, 1], got {top_p}")
    scores = logits / temperature  # (..., V)
    if top_k is not None and top_k < scores.shape[-1]:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest score
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores, dim=-1)  # (..., V)
    if top_p is not None:
        sorted_p, order = probs.sort(dim=-1, descending=True)  # (..., V) each
        before = sorted_p.cumsum(-1) - sorted_p  # the probability of the likelier characters
        drop_sorted = before >= top_p  # already reached p without this one
        drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to the characters' order
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def _check_prompt(model: CharLM, prompt: object, steps: int) -> Tensor:
    prompt = check_tensor("prompt", prompt)
    check_rank("prompt", prompt, 2, "(B, T)")
    if prompt.shape[1] < 1:
        raise ValueError("prompt: expected at least one character, got 0")
    if prompt.shape[1] + steps > model.context:
        raise ValueError(f"steps: expected at most context - prompt length = {model.context} - "
                         f"{prompt.shape[1]} = {model.context - prompt.shape[1]}, got {steps}")
    return prompt


@torch.no_grad()
def generate(model: CharLM, prompt: Tensor, steps: int, *, strategy: str = "greedy", temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, generator: torch.Generator | None = None,
             cache: bool = True) -> Tensor:
    """Continue ``prompt`` by ``steps`` characters.

    Args:
        model: a ``CharLM`` (run in eval mode, on one thread; its mode is restored).
        prompt: (B, T0) long ids.
        steps: how many characters to add; T0 + steps <= the model's ``context``.
        strategy: "greedy" (the likeliest) or "sample" (drawn from ``next_char_probabilities``
            with ``temperature``, ``top_k``, ``top_p``, which greedy does not take).
        generator: a seeded ``torch.Generator``, required to sample: the same seed draws the
            same characters, with or without a cache.
        cache: True: one ``attn.KVCache`` per block, each step runs the new character only
            (every block an ``attn.TransformerBlock``); False: each step runs the whole text.

    Returns:
        (B, T0 + steps) long: the prompt and what followed it.
    """
    if not isinstance(model, CharLM):
        raise TypeError(f"model: expected an attn.lessons.language_model.CharLM, got {type(model).__name__}")
    steps = check_int("steps", steps, low=0)
    prompt = _check_prompt(model, prompt, steps)
    check_choice("strategy", strategy, STRATEGIES)
    if strategy == "greedy" and (top_k is not None or top_p is not None or temperature != 1.0):
        raise ValueError("strategy: expected 'sample' with a temperature, top_k or top_p, got 'greedy'")
    if strategy == "sample":
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator: expected a seeded torch.Generator to sample, got {type(generator).__name__}")
        next_char_probabilities(torch.zeros(1), temperature=temperature, top_k=top_k, top_p=top_p)  # checks them
    if not isinstance(cache, bool):
        raise TypeError(f"cache: expected True or False, got {type(cache).__name__}")
    caches = model.new_caches() if cache else None  # ValueError for blocks that take no cache
    training = model.training
    model.eval()
    text = prompt
    try:
        with torch_threads(1):
            logits = model(prompt, caches)[:, -1]  # (B, V): after the prompt (with a cache: prefilled)
            for _ in range(steps):
                if strategy == "greedy":
                    nxt = logits.argmax(-1, keepdim=True)  # (B, 1)
                else:
                    probs = next_char_probabilities(logits, temperature=temperature, top_k=top_k, top_p=top_p)
                    nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                text = torch.cat([text, nxt], dim=1)  # (B, T + 1)
                logits = (model(nxt, caches) if cache else model(text))[:, -1]  # (B, V)
    finally:
        model.train(training)
    return text


def generate_text(model: CharLM, vocab: Vocabulary, prompt: str, steps: int, **options: object) -> str:
    """``generate`` for one string: the prompt and the ``steps`` characters that follow it."""
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab: expected an attn.lessons.language_model.Vocabulary, got {type(vocab).__name__}")
    ids = vocab.encode(prompt)[None]  # (1, T0)
    return vocab.decode(generate(model, ids, steps, **options)[0])


@torch.no_grad()
def distribution_after(model: CharLM, vocab: Vocabulary, prompt: str, *, temperature: float = 1.0,
                       top_k: int | None = None, top_p: float | None = None) -> Tensor:
    """The distribution of the character after ``prompt`` (what the explorer draws): (V,)."""
    ids = _check_prompt(model, vocab.encode(prompt)[None], 0)  # (1, T)
    training = model.training
    model.eval()
    try:
        with torch_threads(1):
            logits = model(ids)[0, -1]  # (V,)
    finally:
        model.train(training)
    return next_char_probabilities(logits, temperature=temperature, top_k=top_k, top_p=top_p)


@dataclass(frozen=True)
class StepTimes:
    """Seconds of generating the character at each length, with and without a cache.

    Attributes:
        lengths: T, the characters already there when the step runs.
        with_cache, without_cache: the fastest of ``repeats`` runs of that step, seconds.
    """

    lengths: list[int]
    with_cache: list[float]
    without_cache: list[float]

    def chars_per_second(self, cache: bool) -> float:
        """Characters per second of generating all the lengths in a row."""
        seconds = self.with_cache if cache else self.without_cache
        return len(seconds) / sum(seconds)


@torch.no_grad()
def step_times(model: CharLM, lengths: list[int], *, repeats: int = 3, seed: int = 0) -> StepTimes:
    """Measure one generation step at each length T, with a cache (the new character against
    T cached positions) and without (the whole T + 1 characters again), on one thread.

    Each is the fastest of ``repeats`` runs (the least disturbed by other programs). A random
    text of ids (seeded) stands in for a prompt: the cost does not depend on what it says.
    """
    if not isinstance(model, CharLM):
        raise TypeError(f"model: expected an attn.lessons.language_model.CharLM, got {type(model).__name__}")
    if not isinstance(lengths, list) or not lengths:
        raise TypeError(f"lengths: expected a non-empty list of ints, got {lengths!r:.60}")
    lengths = [check_int("lengths", n, low=1, high=model.context - 1) for n in lengths]
    repeats = check_positive_int("repeats", repeats)
    text = torch.randint(0, model.vocab_size, (1, max(lengths) + 1),
                         generator=torch.Generator().manual_seed(check_int("seed", seed, low=0)))  # (1, T + 1)
    training = model.training
    model.eval()
    cached, uncached = [], []
    try:
        with torch_threads(1):
            for n in lengths:
                best_with = best_without = float("inf")
                for _ in range(repeats + 1):  # the first run warms up
                    caches = model.new_caches()
                    model(text[:, :n], caches)  # prefill (not timed): T positions cached
                    t0 = time.perf_counter()
                    model(text[:, n:n + 1], caches)  # (1, 1) -> (1, 1, V)
                    t1 = time.perf_counter()
                    model(text[:, :n + 1])  # (1, T + 1) -> (1, T + 1, V)
                    t2 = time.perf_counter()
                    best_with, best_without = min(best_with, t1 - t0), min(best_without, t2 - t1)
                cached.append(best_with)
                uncached.append(best_without)
    finally:
        model.train(training)
    return StepTimes(lengths, cached, uncached)
