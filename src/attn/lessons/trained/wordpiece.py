"""BERT's WordPiece tokenizer (uncased), as all-MiniLM-L6-v2 reads its input.

Text is cleaned, Chinese characters are split apart, everything is lowercased and stripped of
accents, punctuation is split off, and each word is then cut into the longest pieces found in
the vocabulary, left to right ("##" marks a word's later pieces); a word with no such cut
becomes [UNK].
"""
from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Sequence

__all__ = ["WordPiece"]


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class WordPiece:
    """BERT's uncased tokenizer: clean, split Chinese characters, lowercase, strip accents,
    split punctuation, then greedy longest-match WordPiece ("##" marks a word's later pieces).

    Args:
        vocab: the token list (line k of ``vocab.txt`` is token id k).
    """

    def __init__(self, vocab: Sequence[str], *, max_chars: int = 100) -> None:
        self.vocab = list(vocab)
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        self.max_chars = max_chars

    @classmethod
    def from_file(cls, path: str | Path) -> "WordPiece":
        return cls(Path(path).read_text(encoding="utf-8").splitlines())

    def _words(self, text: str) -> list[str]:
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            chars.append(f" {ch} " if _is_cjk(cp) else (" " if ch.isspace() else ch))
        words = []
        for word in "".join(chars).split():
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                           if unicodedata.category(c) != "Mn")
            piece = ""
            for c in word:
                if _is_punctuation(c):
                    words += [piece, c] if piece else [c]
                    piece = ""
                else:
                    piece += c
            if piece:
                words.append(piece)
        return words

    def _pieces(self, word: str) -> list[str]:
        if len(word) > self.max_chars:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            if end == start:
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """Text -> WordPiece tokens (no [CLS]/[SEP])."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        return [p for w in self._words(text) for p in self._pieces(w)]

    def convert(self, tokens: Sequence[str]) -> list[int]:
        return [self.ids.get(t, self.ids["[UNK]"]) for t in tokens]
