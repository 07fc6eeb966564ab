"""BERT's WordPiece rules on a small vocabulary: lowercase, accents, punctuation, Chinese
characters, longest match first, [UNK]."""
import pytest

from attn.lessons.trained.wordpiece import WordPiece

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cafe", "un", "##believ", "##able", ",",
         "!", "小", "明", "play", "##ing", "."]


def test_wordpiece_rules():
    tok = WordPiece(VOCAB)
    assert tok.tokenize("The  CAFÉ,") == ["the", "cafe", ","]  # lowercase, accents, punctuation
    assert tok.tokenize("unbelievable!") == ["un", "##believ", "##able", "!"]  # longest match first
    assert tok.tokenize("小明在") == ["小", "明", "[UNK]"]  # one token per Chinese character
    assert tok.tokenize("playingx") == ["[UNK]"]  # a word that cannot be split is one [UNK]
    assert tok.tokenize("the\tthe\x00\nthe") == ["the", "the", "the"]  # control chars dropped
    assert WordPiece(VOCAB, max_chars=3).tokenize("cafe the") == ["[UNK]", "the"]
    assert tok.convert(["the", "nope"]) == [4, 1]
    with pytest.raises(TypeError, match="text: expected a str, got int"):
        tok.tokenize(3)
