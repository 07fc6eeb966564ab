"""A character-level language model of Transformer blocks, trained on real text (notebook 13).

``corpus``: the two vendored texts (Shakespeare for English, Tang poems for Chinese, chosen
by the language setting), their vocabularies, and random windows to train on.
``model``: ``CharLM``, a decoder-only model of any block class (the learner's from 12) with
09's positions and a causal mask.
``training``: training it (seeded, one thread), its held-out loss, and the checks that catch a
model that sees the future (``looks_like_a_leak``, ``future_leaks``).
``generation``: greedy, temperature, top-k and top-p sampling, with and without a KV cache,
and the time of a step each way.
``shipped``: the weights trained longer by ``python -m tools.train_language_model``.
``heads``: every head's causal map on a line of text, scored against the patterns of the text
(the character before, the line's start, the same place in the line before, ...) and read
against an even head's score.
"""
