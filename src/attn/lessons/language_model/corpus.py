"""The texts a character-level language model reads, and how they become numbers.

Each edition of the course trains on a real text in its own language, chosen by the language
setting (``attn.language.get_language()``): four plays of Shakespeare for English, 3,263
regulated Tang poems for Chinese. Both are public domain, vendored in ``texts/<language>/``
with a README (source, commit, what was cut) and a LICENSE.

A **vocabulary** is every character of a text, sorted by code point (so the same text always
gives the same ids); a character's id is its place in that order. ``encode`` turns a string
into ids, ``decode`` ids back into the string. The last ``HELD_OUT_SHARE`` of each text is
held out: the model never trains on it, and a loss measured there says how well it predicts
text it has not seen.

Shape legend: N characters, B batch, T context (characters a window holds).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable

import torch
from torch import Tensor

from ..._checks import check_choice, check_int, check_positive_int, check_rank, check_tensor, shape_str
from ...language import LANGUAGES, get_language

__all__ = ["TEXTS", "HELD_OUT_SHARE", "Vocabulary", "Corpus", "load_text", "load_corpus", "openings",
           "random_windows", "text_files"]

#: Each language's text, in ``texts/``.
TEXTS = {"en": "en/shakespeare.txt", "zh": "zh/tang_poems.txt"}
#: The share of each text, at its end, that training never sees.
HELD_OUT_SHARE = 0.1


def _language(language: str | None) -> str:
    """``language``, or the course's current language when None; ValueError for another."""
    if language is None:
        return get_language()
    if not isinstance(language, str):
        raise TypeError(f"language: expected a language code, one of {sorted(LANGUAGES)}, or None, "
                        f"got {type(language).__name__}")
    return check_choice("language", language, tuple(TEXTS))


def text_files(language: str | None = None) -> dict[str, Traversable]:
    """The vendored files of a language's text: ``{"text": ..., "README.md": ..., "LICENSE": ...}``."""
    language = _language(language)
    folder = resources.files(__package__) / "texts" / language
    return {"text": resources.files(__package__) / "texts" / TEXTS[language],
            "README.md": folder / "README.md", "LICENSE": folder / "LICENSE"}


def load_text(language: str | None = None) -> str:
    """The whole text of ``language`` ("en" or "zh"; None: the course's current language)."""
    return _text(_language(language))


@lru_cache(maxsize=None, typed=True)
def _text(language: str) -> str:
    return text_files(language)["text"].read_text(encoding="utf-8")


@dataclass(frozen=True)
class Vocabulary:
    """The characters of a text, in code-point order: id i is ``chars[i]``.

    Attributes:
        chars: every character once, sorted by code point.
    """

    chars: str

    @classmethod
    def from_text(cls, text: str) -> "Vocabulary":
        """Every character of ``text``, sorted: the same text always gives the same ids."""
        if not isinstance(text, str) or not text:
            raise TypeError(f"text: expected a non-empty str, got {type(text).__name__} {text!r:.40}")
        return cls("".join(sorted(set(text))))

    def __len__(self) -> int:
        return len(self.chars)

    @property
    def index(self) -> dict[str, int]:
        """character -> id."""
        return _index(self.chars)

    def encode(self, text: str) -> Tensor:
        """``text`` -> its ids, (N,) long.

        Raises:
            ValueError naming ``text``: a character that is not in the vocabulary.
        """
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        index = self.index
        missing = sorted({c for c in text if c not in index})
        if missing:
            raise ValueError(f"text: expected characters of the vocabulary ({len(self)} of them), got "
                             f"{''.join(missing)[:20]!r}, which the text never uses")
        return torch.tensor([index[c] for c in text], dtype=torch.long)  # (N,)

    def decode(self, ids: Tensor | list[int]) -> str:
        """ids, (N,) or a list of ints in 0..len - 1 -> the string they stand for."""
        if isinstance(ids, Tensor):
            check_rank("ids", ids, 1, "(N,)")
            ids = ids.tolist()
        if not isinstance(ids, list) or not all(isinstance(i, int) and 0 <= i < len(self) for i in ids):
            raise ValueError(f"ids: expected ids in 0..{len(self) - 1}, got {ids!r:.60}")
        return "".join(self.chars[i] for i in ids)


@lru_cache(maxsize=None, typed=True)
def _index(chars: str) -> dict[str, int]:
    return {c: i for i, c in enumerate(chars)}


@dataclass(frozen=True)
class Corpus:
    """A language's text as ids, cut into what training reads and what it never sees.

    Attributes:
        language: "en" or "zh".
        vocab: the text's ``Vocabulary``.
        train: (N_train,) long, the first 1 - ``HELD_OUT_SHARE`` of the text.
        held_out: (N_held,) long, the rest.
    """

    language: str
    vocab: Vocabulary
    train: Tensor
    held_out: Tensor


@lru_cache(maxsize=None, typed=True)
def _corpus(language: str) -> Corpus:
    text = _text(language)
    vocab = Vocabulary.from_text(text)
    ids = vocab.encode(text)  # (N,)
    cut = round(len(ids) * (1 - HELD_OUT_SHARE))
    return Corpus(language, vocab, ids[:cut], ids[cut:])


def load_corpus(language: str | None = None) -> Corpus:
    """The ``Corpus`` of ``language`` ("en" or "zh"; None: the course's current language)."""
    return _corpus(_language(language))


def openings(corpus: Corpus, count: int = 1) -> list[str]:
    """The held-out text from the start of each of its first ``count`` speeches (the plays) or
    poems, a blank line before each: each string runs from that start to the end of the text."""
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus: expected an attn.lessons.language_model.Corpus, got {type(corpus).__name__}")
    count = check_int("count", count, low=1)
    held = corpus.vocab.decode(corpus.held_out)
    found, at = [], 0
    while len(found) < count:
        at = held.index("\n\n", at) + 2  # a blank line: a new speech, a new poem
        found.append(held[at:])
    return found


def random_windows(data: Tensor, batch_size: int, context: int, *,
                   generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """B windows of T + 1 characters at random places of ``data``: each window's first T
    characters are the input, and its last T the targets (the character after each input).

    Args:
        data: (N,) long ids, N > T.
        batch_size: B.
        context: T.
        generator: a seeded ``torch.Generator``: the same seed draws the same windows.

    Returns:
        inputs (B, T), targets (B, T), long: ``targets[b, t]`` is the character that follows
        ``inputs[b, t]``.
    """
    data = check_tensor("data", data)
    check_rank("data", data, 1, "(N,)")
    batch_size = check_positive_int("batch_size", batch_size)
    context = check_positive_int("context", context)
    if data.shape[0] <= context:
        raise ValueError(f"data: expected more than context={context} ids, got shape {shape_str(data)}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    starts = torch.randint(0, data.shape[0] - context, (batch_size,), generator=generator)  # (B,)
    offsets = torch.arange(context + 1)  # (T + 1,)
    windows = data[starts[:, None] + offsets[None, :]]  # (B, 1) + (1, T + 1) -> (B, T + 1)
    return windows[:, :-1], windows[:, 1:]  # (B, T), (B, T)
