"""attn._text: fixed-width text in both languages (a Chinese character takes two columns)."""
import pytest

from attn._text import ljust, rjust, width, wrap


def test_columns_count_a_chinese_character_twice():
    assert width("ab") == 2 and width("江上") == 4 and width("d_k = 16，头") == 12
    assert ljust("江", 4) == "江  " and rjust("江", 4) == "  江" and ljust("江上青山", 2) == "江上青山"


def test_wrap_keeps_every_line_within_the_columns_and_every_character():
    poem = "赴海，閬州應更有楸佳記盌闈氊矜緜乳致沌晨淳紼丞耘檝援影嶽渝\n短行"
    wrapped = wrap(poem, 20)
    assert all(width(line) <= 20 for line in wrapped.split("\n"))
    assert wrapped.replace("\n", "") == poem.replace("\n", "")  # a break between characters, none lost
    assert wrapped.split("\n")[0] == "赴海，閬州應更有楸佳"  # ten wide characters: 20 columns
    assert wrapped.endswith("\n短行")  # the text's own line break is kept


def test_wrap_breaks_english_at_a_space_and_a_long_word_anywhere():
    assert wrap("to be or not to be", 9) == "to be or\nnot to be"
    assert wrap("abcdefghij", 4) == "abcd\nefgh\nij"
    assert wrap("short", 10) == "short" and wrap("", 5) == ""
    with pytest.raises(ValueError, match="columns: expected an int >= 2"):
        wrap("x", 1)
