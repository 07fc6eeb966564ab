"""attn.language and its catalogues: complete, compiled, drawable (docs/translating.md)."""
from __future__ import annotations

import pytest
from matplotlib.font_manager import get_font

from attn import language
from attn.language import mark, missing_messages, set_language, tr
from attn.plotting import _font_path, text_font, token_font
from tools import catalogue


def test_the_chinese_catalogue_is_complete_and_compiled():
    assert catalogue.problems("zh") == []


def test_the_catalogue_holds_sentences_of_the_package_and_of_the_notebooks():
    places = {place.split("/")[0] for message in catalogue.extract() for place, _ in message.locations}
    assert {"src", "notebooks"} <= places


def test_every_chinese_character_can_be_drawn():
    """The shipped CJK subset has every character of the Chinese catalogue (tools/cjk_font.py)."""
    drawable = set(map(chr, get_font(_font_path()).get_charmap()))
    needed = {c for m in catalogue.read(catalogue.po_path("zh"), "zh") for c in (m.string or "")
              if c.isprintable() and not c.isspace()}
    emoji = {"✅", "❌", "⚠", "️"}  # printed in text outputs, never drawn in a picture
    assert sorted(needed - drawable - emoji) == []


def test_chinese_text_is_drawn_with_the_cjk_font_and_english_with_the_default():
    with language.language("zh"):
        assert text_font(9).get_file() == token_font(9).get_file()
    assert text_font(9).get_file() is None  # matplotlib's default family


def test_tr_translates_and_fills_fields():
    english = "{n} tokens"
    assert tr(english, n=3) == "3 tokens"
    with language.language("zh"):
        translated = tr("largest difference < 1e-12: {ok}", ok=True)
    assert tr("largest difference < 1e-12: {ok}", ok=True) == "largest difference < 1e-12: True"
    assert "True" in translated


def test_the_language_comes_back_after_a_with_block():
    set_language("en")
    with language.language("zh"):
        assert language.get_language() == "zh"
    assert language.get_language() == "en"


def test_the_language_comes_back_when_the_with_block_raises():
    set_language("en")
    with pytest.raises(ZeroDivisionError):
        with language.language("zh"):
            assert language.get_language() == "zh"
            1 / 0
    assert language.get_language() == "en"
    set_language("zh")
    try:
        with pytest.raises(KeyError):
            with language.language("en"):
                {}["missing"]
        assert language.get_language() == "zh"
    finally:
        set_language("en")


def test_a_missing_translation_is_recorded_and_shown_in_english():
    with language.language("zh"):
        assert tr("a sentence nobody wrote") == "a sentence nobody wrote"
    assert "a sentence nobody wrote" in missing_messages()
    assert mark("stored label") == "stored label"


@pytest.mark.parametrize("bad, error, match", [
    ("fr", ValueError, r"language: expected one of \['en', 'zh'\], got 'fr'"),
    (None, TypeError, r"language: expected a str"),
])
def test_a_bad_language_is_refused(bad, error, match):
    with pytest.raises(error, match=match):
        set_language(bad)
    assert language.get_language() == "en"


def test_tr_refuses_a_non_string():
    with pytest.raises(TypeError, match="message: expected a str, got int"):
        tr(3)


POST_LN = ("Post-LN: every activation stays at RMS 1 (a LayerNorm ends each sub-layer); the gradient "
           "reaching the input is {ratio:.2f} times the one leaving the top.")


def _problems_of_an_edited_catalogue(tmp_path, monkeypatch, edit):
    """``catalogue.problems("zh")`` on a copy of the Chinese catalogue changed by ``edit(po)``,
    compiled beside it (so that only the edit can be wrong)."""
    po = catalogue.read(catalogue.po_path("zh"), "zh")
    edit(po)
    po_file, mo_file = tmp_path / "attn.po", tmp_path / "attn.mo"
    catalogue.write(po, po_file)
    mo_file.write_bytes(catalogue.compiled(catalogue.read(po_file, "zh")))
    monkeypatch.setattr(catalogue, "po_path", lambda language: po_file)
    monkeypatch.setattr(catalogue, "mo_path", lambda language: mo_file)
    return catalogue.problems("zh")


def test_problems_sees_nothing_in_an_unchanged_copy(tmp_path, monkeypatch):
    assert _problems_of_an_edited_catalogue(tmp_path, monkeypatch, lambda po: None) == []


def test_problems_reports_an_untranslated_sentence(tmp_path, monkeypatch):
    def untranslate(po):
        po[POST_LN].string = ""

    assert _problems_of_an_edited_catalogue(tmp_path, monkeypatch, untranslate) == [
        f"zh: untranslated: {POST_LN!r}"]


@pytest.mark.parametrize("wrong, has", [
    ("到达输入的梯度是离开顶层时的 {rate:.2f} 倍。", ["rate"]),  # another name
    ("到达输入的梯度比离开顶层时的小。", []),  # the field left out
    ("{ratio:.2f} 倍，第 {l} 块。", ["l", "ratio"]),  # a field added
], ids=["another name", "left out", "one more"])
def test_problems_reports_a_translation_whose_fields_differ(tmp_path, monkeypatch, wrong, has):
    def mistranslate(po):
        po[POST_LN].string = wrong

    assert _problems_of_an_edited_catalogue(tmp_path, monkeypatch, mistranslate) == [
        f"zh: fields differ: {POST_LN!r} has ['ratio'], {wrong!r} has {has}"]


def test_fields_of_a_translation_must_match():
    assert catalogue.fields("error {err:.2f} at {i}") == {"err", "i"}
    assert catalogue.fields("{{literal}} {x}") == {"x"}


def test_a_sentence_marked_without_a_literal_is_refused():
    with pytest.raises(ValueError, match="mark\\(\\) needs a literal string"):
        catalogue.sentences_in("mark(label)", "x.py")
    assert catalogue.sentences_in('tr("a {b}", b=1)\nmark("c")\ntr(name)', "x.py") == [("a {b}", "x.py"),
                                                                                         ("c", "x.py")]
