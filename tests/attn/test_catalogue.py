"""attn.language and its catalogues: complete, compiled, drawable (docs/translating.md)."""
from __future__ import annotations

import pytest
from matplotlib.font_manager import get_font

from attn import language
from attn.language import mark, missing_messages, set_language, tr
from attn.drawing.plotting import _font_path, text_font, token_font
from tools import catalogue

#: Two sentences of the catalogue, with fields.
OK_MESSAGE = "largest difference < 1e-12: {ok}"
POST_LN = ("Post-LN: every activation stays at RMS 1 (a LayerNorm ends each sub-layer); the gradient "
           "reaching the input is {ratio:.2f} times the one leaving the top.")


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
    with pytest.raises(TypeError, match="message: expected a str, got NoneType"):
        language.translation(None)


@pytest.mark.parametrize("code", ["en", "zh"])
def test_tr_names_a_missing_field(code):
    with language.language(code):
        with pytest.raises(ValueError, match=r"fields: expected the field\(s\) \['ok'\] of the message "
                                             r"'largest difference < 1e-12: \{ok\}', got \['wrong'\]: "
                                             r"\['ok'\] missing"):
            tr(OK_MESSAGE, wrong=1)
        with pytest.raises(ValueError, match=r"fields: expected the field\(s\) \['ok'\] of the message "
                                             r"'largest difference < 1e-12: \{ok\}', got none"):
            tr(OK_MESSAGE)  # never the sentence with "{ok}" left in it
        with pytest.raises(ValueError, match=r"\['ratio'\] missing"):
            tr("{n} tokens, {ratio:.2f}", n=3)
        assert "{ok}" in language.translation(OK_MESSAGE)  # the template, for a caller who fills it


@pytest.mark.parametrize("code", ["en", "zh"])
def test_tr_names_a_field_its_format_cannot_take(code):
    with language.language(code):
        with pytest.raises(TypeError, match=r"x: expected a value that the format \{x:\.2f\} of the message "
                                            r"'\{x:\.2f\}' takes, got str 'a'"):
            tr("{x:.2f}", x="a")
        with pytest.raises(TypeError, match=r"ratio: expected a value that the format \{ratio:\.2f\} .* "
                                            r"got NoneType None"):
            tr(POST_LN, ratio=None)


def test_tr_takes_what_it_always_took():
    assert tr("{n} tokens", n=3, unused="x") == "3 tokens"  # one call for whichever sentence of a table
    assert tr("h_{t-1}: how many states wait?") == "h_{t-1}: how many states wait?"  # braces, no field
    assert tr("a sentence with no field") == "a sentence with no field"
    assert tr("{x!r:>5}", x=1) == "    1"
    with pytest.raises(ValueError, match=r"message: expected named fields .* got 'h_\{t-1\} \{n\}', in which "
                                         r"str.format reads the field 't-1'"):
        tr("h_{t-1} {n}", n=1)


def test_tr_names_a_translation_whose_fields_differ(monkeypatch):
    """A catalogue with {rate} for {ratio} (the audit's P01): a ValueError naming the message and
    both sets of fields, not a bare KeyError: 'rate'."""
    class Wrong:
        def gettext(self, message):
            return message.replace("{ratio:.2f}", "{rate:.2f}")

    monkeypatch.setattr(language, "_catalogue", lambda code: Wrong())
    with pytest.raises(ValueError, match=r"fields: the en translation of 'Post-LN: .* whose fields \['rate'\] "
                                         r"differ from the message's \['ratio'\]"):
        tr(POST_LN, ratio=0.58)


def test_message_fields_are_the_catalogues_fields():
    assert language.message_fields("{a} {b:.2f} {c!r} {d.real} {e[0]} {{f}} {} {0} h_{t-1} {") == set()  # lone {
    assert language.message_fields("{a} {b:.2f} {c!r} {d.real} {e[0]} {{f}} {} {0} h_{t-1}") == set("abcde")


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


@pytest.mark.parametrize("message, copied", [
    ("Head {h}", "Head {h}"),  # a title of every head grid, copied instead of translated
    (POST_LN, POST_LN),
], ids=["head", "post-LN"])
def test_problems_reports_a_translation_left_in_english(tmp_path, monkeypatch, message, copied):
    def copy(po):
        po[message].string = copied

    found = _problems_of_an_edited_catalogue(tmp_path, monkeypatch, copy)
    assert len(found) == 1 and found[0].startswith(f"zh: left in English: {message!r}"), found


def test_a_translation_may_keep_only_names_of_code_in_english():
    assert catalogue.left_in_english("softmax(Q_i K_iᵀ/√d_k) (n, n)", "zh") == []
    assert catalogue.left_in_english("{heads}: {error:.2f}", "zh") == []
    assert catalogue.left_in_english("头 {h}", "zh") == []
    assert catalogue.left_in_english("Head {h}", "zh") == ["Head"]
    assert catalogue.left_in_english("Head {h}", "en") == []


def test_fields_of_a_translation_must_match():
    assert catalogue.fields("error {err:.2f} at {i}") == {"err", "i"}
    assert catalogue.fields("{{literal}} {x}") == {"x"}


def test_a_sentence_marked_without_a_literal_is_refused():
    with pytest.raises(ValueError, match="mark\\(\\) needs a literal string"):
        catalogue.sentences_in("mark(label)", "x.py")
    assert catalogue.sentences_in('tr("a {b}", b=1)\nmark("c")\ntr(name)', "x.py") == [("a {b}", "x.py"),
                                                                                         ("c", "x.py")]
