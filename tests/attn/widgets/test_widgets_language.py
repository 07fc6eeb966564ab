"""Every explorer in Chinese (attn.language), and in English as before.

Each explorer of ``EXPLORERS`` is built three times, each time with every control moved through
two or more values: in English, under ``language("zh")``, then in English again. Built in
Chinese, everything a learner reads is Chinese and in the catalogue (nothing new in
``missing_messages()``): the title, every control's name and option labels, what a screen reader
hears of a slider, the readout and the picture's text alternative after every move, and the
words drawn in the picture, which are drawn with the CJK font (``attn.drawing.plotting.text_font``).
No English word is left but names (code, units, the model's name). Built in English after the
Chinese one, an explorer reads and draws exactly as the first English one (no cache carries
text from one language into the other).
"""
from __future__ import annotations

import re

import ipywidgets as widgets
import pytest
from matplotlib.font_manager import findfont
from matplotlib.text import Text

from attn.language import language, missing_messages
from attn.drawing.plotting import token_font
from attn.widgets import EXPLORERS
from attn.widgets._base import html_to_text
from attn.widgets._bitmaps import BitmapText, TickLabels
from attn.widgets._mapview import CellMap
from attn.widgets.efficiency import BLOCK_SIZES, LENGTHS, BlockMeasurements, efficiency_explorer
from attn.widgets.masks import FILLS, MASK_KINDS, mask_explorer

CJK = re.compile(r"[\u4e00-\u9fff]")
#: Names a Chinese text keeps: code and maths (softmax, NaN, attn.masked_softmax), units, the
#: library and the special tokens. A word with a digit or "_" (d_k, float32, head_i) is code too.
NAMES = {"softmax", "exp", "NaN", "inf", "attn", "SDPA", "PyTorch", "RoPE", "MiB", "KiB", "max",
         "min", "GiB", "rowsum", "Concat", "MultiHead", "CLS", "SEP", "PAD", "UNK", "cls"}
MODEL = "all-MiniLM-L6-v2"
#: Options and labels that are data, not words of the course: the pretrained (English) model's
#: example sentences, the one typed, and the tokens of its map.
DATA_OPTIONS = {("pretrained (08)", "example"), ("pretrained (08)", "text")}
DATA_LABELS = {"pretrained (08)"}

# The efficiency explorer measures its curves when built (timings differ from run to run): here
# it gets fixed numbers, so that two builds can be compared.
SECONDS = {"naive": [1e-4 * (n / 64) ** 2 for n in LENGTHS], "sdpa": [5e-5 * (n / 64) ** 1.8 for n in LENGTHS]}
PEAK = {"naive": [12 * n * n for n in LENGTHS], "sdpa": [1280 * n for n in LENGTHS]}
BLOCKS = BlockMeasurements(
    tuple(LENGTHS), {b: tuple(1e-4 * (n / 64) ** 2 * (1 + b / 512) for n in LENGTHS) for b in BLOCK_SIZES},
    {b: tuple(12 * n * min(b, n) for n in LENGTHS) for b in BLOCK_SIZES})
BUILDERS = {**EXPLORERS,
            "efficiency (07)": lambda: efficiency_explorer(seconds=SECONDS, peak_bytes=PEAK, blocks=BLOCKS)}
CJK_FONT = token_font().get_file()


def english_words(text: str) -> list[str]:
    """The English words of ``text``: 3 or more letters, not a name of ``NAMES`` or code."""
    text = text.replace(MODEL, "")
    return [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text)
            if w.isalpha() and len(w) >= 3 and w not in NAMES]


def font_file(font) -> str:  # noqa: ANN001 (a FontProperties)
    return font.get_file() or findfont(font)


def moves(control: widgets.Widget) -> list[object]:
    """Two or more other values for a control, then its first value again."""
    start = control.value
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        others = [control.max, control.min]
    elif isinstance(control, widgets.Checkbox):
        others = [not start]
    elif isinstance(control, widgets.Text):
        others = [start + " 北京"]
    else:
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        others = values[:2] + values[-1:] if len(values) > 3 else values
    return [v for v in others if v != start] + [start]


def picture_texts(ex, name: str) -> list[tuple[str, str, str]]:  # noqa: ANN001 (an Explorer)
    """(kind, text, font file) of every word drawn in the picture now: matplotlib's texts and the
    bitmap texts of the maps (titles, labels, cell strings)."""
    found = []
    for t in ex.fig.findobj(Text):
        shown = t.get_visible() and (t.axes is None or t.axes.get_visible())
        if shown and t.get_text().strip():
            found.append(("text", t.get_text(), font_file(t.get_fontproperties())))
    for ax in ex.fig.axes:
        for artist in ax.get_children():
            parts = []
            if isinstance(artist, BitmapText):
                parts = [("bitmap", artist)]
            elif isinstance(artist, TickLabels) and name not in DATA_LABELS:
                parts = [("labels", part) for part in artist.parts()]
            elif isinstance(artist, CellMap) and artist.text is not None:
                parts = [("cells", artist.text)]
            found += [(kind, text, part.font_file) for kind, part in parts for text in part.texts]
    return found


def record(ex, name: str) -> dict:  # noqa: ANN001 (an Explorer)
    """What a learner reads and sees of the explorer now."""
    return {
        "title": ex.title,
        "readout": ex.readout.value,
        "alt": ex.alt_text(),
        "png": bytes(ex.image.value),
        "labels": {n: c.description for n, c in ex.controls.items()},
        "heard": {n: ex.value_text(n) for n in ex.controls if (name, n) not in DATA_OPTIONS},
        "options": {n: [o[0] if isinstance(o, tuple) else str(o) for o in c.options]
                    for n, c in ex.controls.items()
                    if hasattr(c, "options") and (name, n) not in DATA_OPTIONS},
        "picture": picture_texts(ex, name),
    }


def walk(name: str) -> list[dict]:
    """Build the explorer, move each control through its ``moves``; a record after each."""
    ex = BUILDERS[name]()
    records = [record(ex, name)]
    for control in ex.controls.values():
        for value in moves(control):
            control.value = value
            records.append(record(ex, name))
    return records


@pytest.fixture(scope="module")
def walks():
    """name -> (English, Chinese, English again, messages the Chinese walk found missing);
    each explorer walked once per language, on first use."""
    done = {}

    def get(name: str):
        if name not in done:
            english = walk(name)
            before = missing_messages()
            with language("zh"):
                chinese = walk(name)
            missing = missing_messages() - before
            done[name] = english, chinese, walk(name), missing
        return done[name]

    return get


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_an_explorer_built_in_chinese_speaks_chinese(name, walks):
    _, chinese, _, missing = walks(name)
    assert not missing, f"{name}: not in the zh catalogue (python -m tools.catalogue --fill ...): {missing}"
    assert len(chinese) >= 3
    first = chinese[0]
    assert CJK.search(first["title"]) and not english_words(first["title"]), first["title"]
    for n, label in first["labels"].items():
        assert not english_words(label), (name, n, label)
    for n, labels in first["options"].items():
        assert not any(english_words(str(label)) for label in labels), (name, n, labels)
    for r in chinese:
        text = html_to_text(r["readout"])
        assert CJK.search(text), (name, text)
        for shown in [text, r["alt"], *r["heard"].values()]:
            assert not english_words(shown), (name, english_words(shown), shown)
        for kind, drawn, font in r["picture"]:
            assert not english_words(drawn), (name, kind, drawn)
            if CJK.search(drawn):
                assert font == CJK_FONT, f"{name}: {kind} {drawn!r} drawn with {font}, not the CJK font"
    assert any(CJK.search(drawn) for r in chinese for _, drawn, _ in r["picture"]), \
        f"{name}: no Chinese word drawn in the picture"


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_an_explorer_built_in_english_after_a_chinese_one_is_as_before(name, walks):
    english, chinese, again, _ = walks(name)
    assert again == english
    assert [r["readout"] for r in chinese] != [r["readout"] for r in english]


def test_an_explorer_keeps_the_language_it_was_built_in():
    with language("zh"):
        chinese = mask_explorer()
    english = mask_explorer()
    with language("zh"):
        english.controls["length"].value = 3
    chinese.controls["length"].value = 3
    assert CJK.search(chinese.readout.value) and CJK.search(chinese.alt_text())
    assert not CJK.search(english.readout.value) and not CJK.search(english.alt_text())
    assert english.readout.value.startswith("causal + left padding, L = 3: ")


def test_an_option_shows_its_label_in_chinese_and_keeps_its_english_value():
    with language("zh"):
        ex = mask_explorer()
    kind, fill = ex.controls["kind"], ex.controls["fill"]
    assert [v for _, v in kind.options] == list(MASK_KINDS) and [v for _, v in fill.options] == list(FILLS)
    assert kind.label == "因果掩码 + 左侧填充" and kind.value == "causal + left padding"
    fill.value = "package"
    assert fill.label == "attn 包" and ex.state.fill == "package"
    assert ex.value_text("fill") == "填充值 = attn 包"
