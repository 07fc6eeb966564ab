"""The package's own text in Chinese (attn.language): what its functions print, return and draw.

For each module that writes words for a learner (the worked example's checks, the cost tables,
the rnn-vs-attention and cost plots, the heatmaps' titles, the tasks' descriptions, the marked
labels of the hand-built heads and the toy), the text under ``language("zh")`` is Chinese and
found in the catalogue (nothing in ``missing_messages()``), and the English text is what it was
before the Chinese edition, byte for byte. ``attn.drawing.figures.check_alt`` takes a Chinese
description as it takes an English one.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from attn.lessons import chapter_check
from attn.lessons import worked_example as we
from attn._text import width
from attn.lessons.cost.counts import compare_heads, format_rows
from attn.drawing.charts import STYLE, loglog_curves
from attn.lessons.cost.scoring_costs import scoring_costs
from attn.examples import worked_example_inputs
from attn.drawing.figures import check_alt
from attn.lessons.handbuilt.heads import HEAD_VARIANTS
from attn.lessons.handbuilt.sentence import TOY_FEATURES, TOY_ROLES
from attn.language import language, missing_messages, tr, translation
from attn.lessons.pattern_scores import PATTERNS
from attn.drawing.plotting import _font_path, head_grid, heatmap, new_figure
from attn.drawing.charts import plot_gradient_profile, plot_path_counts
from attn.lessons.rnn_vs_attention import gradient_profile, path_counts
from attn.lessons.trained.tasks import TASKS

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "attn"
#: The modules of this test: every file of the package but the explorers, the exercises and
#: attn.language itself (their words are tested with them).
MODULES = sorted(p for p in PACKAGE.rglob("*.py")
                 if not {"widgets", "exercises"} & set(p.relative_to(PACKAGE).parts) and p.name != "language.py")
CJK = re.compile(r"[\u4e00-\u9fff]")


def sentences(path: Path) -> list[str]:
    """The literal first arguments of tr(...) and mark(...) in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tr", "mark"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append(node.args[0].value)
    return found


MESSAGES = sorted({m for p in MODULES for m in sentences(p)})


def chinese(text: str) -> bool:
    return bool(CJK.search(text))


def test_the_modules_have_sentences_to_translate():
    """A miscount means the tests below look at nothing."""
    assert len(MESSAGES) >= 90, len(MESSAGES)


def test_every_sentence_of_the_package_has_a_translation():
    with language("zh"):
        shown = {m: translation(m) for m in MESSAGES}  # tr would ask for the fields
    missing = sorted(set(MESSAGES) & missing_messages())
    assert not missing, f"not in the zh catalogue (python -m tools.catalogue --fill ...): {missing}"
    # in Chinese, but names and fields (the colon of the last one becomes a Chinese one)
    same = sorted(m for m, t in shown.items() if not chinese(t))
    assert same == ["PyTorch SDPA", "tanh RNN", "{step} = {formula}: {verdict}"], same


@pytest.fixture
def no_new_missing():
    """The test's Chinese text is all in the catalogue: nothing new in ``missing_messages()``."""
    before = missing_messages()
    yield
    assert missing_messages() - before == set()


def worked_texts() -> dict[str, str]:
    checks = chapter_check.check_chapter()
    ex = worked_example_inputs()
    right = we.worked_steps()
    return {
        "check Q": chapter_check.format_check(checks["Q"]),
        "check weights": chapter_check.format_check(checks["weights"]),
        "check K^T": chapter_check.format_check(checks["K^T"]),
        "summary": chapter_check.format_summary(checks),
        "row product": we.explain_row_product(ex["X"], ex["W_Q"], 1, names=("X", "W_Q")),
        "sanity printed": str(we.sanity_checks(we.printed("weights"), we.printed("V"), we.printed("output"),
                                               atol=3 * we.ROUNDING_ATOL)),
        "sanity right": str(we.sanity_checks(right["weights"], right["V"], right["output"])),
        "scenarios": we.format_scenarios(we.scenarios(), "Q"),
    }


ENGLISH_WORKED = {
    "check Q": (
        "Q = X W^Q: wrong, and does not follow from the chapter's previous printed step (a new error here)\n"
        "printed             right               from printed inputs\n"
        "[  2.00    1.00 ]   [  2.00    1.00 ]   [  2.00    1.00 ]\n"
        "[  0.00    2.00*]   [  0.00    1.00 ]   [  0.00    1.00*]\n"
        "[  1.00    1.00 ]   [  1.00    1.00 ]   [  1.00    1.00 ]\n"
        "  printed differs from the right value at (row, col) = (1,1)\n"
        "  printed does not follow from its printed inputs at (1,1)"),
    "row product": ("X[1] = [0, 1, 0, 1]\n"
                    "  col 0: 0*1 + 1*0 + 0*1 + 1*0 = 0\n"
                    "  col 1: 0*0 + 1*1 + 0*1 + 1*0 = 1\n"
                    "X[1] @ W_Q = [0, 1]"),
    "sanity printed": ("row sums of the weights: 0.90, 0.85, 0.99 -> rows [0, 1] do not sum to 1\n"
                       "weights >= 0: True\n"
                       "range of each V column: [1.00, 1.00], [0.00, 2.00]\n"
                       "output inside those ranges: no, at (row, col) [(0, 0), (1, 0)]"),
    "sanity right": ("row sums of the weights: 1.00, 1.00, 1.00 -> all 1\n"
                     "weights >= 0: True\n"
                     "range of each V column: [1.00, 1.00], [0.00, 2.00]\n"
                     "output inside those ranges: yes"),
    "scenarios": ("Q\n"
                  "printed             softmax fixed       right\n"
                  "[  2.00    1.00 ]   [  2.00    1.00 ]   [  2.00    1.00 ]\n"
                  "[  0.00    2.00 ]   [  0.00    2.00 ]   [  0.00    1.00 ]\n"
                  "[  1.00    1.00 ]   [  1.00    1.00 ]   [  1.00    1.00 ]"),
}


def test_worked_example_in_chinese(no_new_missing):
    with language("zh"):
        texts = worked_texts()
        verdicts = {step: c.verdict for step, c in chapter_check.check_chapter().items()}
    for name, text in texts.items():
        assert chinese(text), name
    assert "K 的转置" in texts["check K^T"].splitlines()[0]  # a formula in words is translated ...
    assert texts["check Q"].startswith("Q = X W^Q")  # ... one in symbols is not
    assert all(chinese(v) for v in verdicts.values())
    summary = texts["summary"].splitlines()
    assert "正确值" in texts["check Q"] and "教材数值" in texts["scenarios"]
    assert summary[-1].split() == ["合计", "58", "15"]


def test_worked_example_in_english_is_unchanged():
    with language("zh"):
        worked_texts()  # nothing of it stays behind
    texts = worked_texts()
    for name, text in ENGLISH_WORKED.items():
        assert texts[name] == text, name
    assert texts["summary"].splitlines()[0] == "step       printed wrong  verdict"
    assert texts["summary"].splitlines()[-1] == "all             58    15"
    assert chapter_check.check_chapter()["K"].verdict == "right (to the printed 2 decimals)"


def right_edges(lines: list[str]) -> list[list[int]]:
    """The display column where each run of non-spaces ends, line by line."""
    return [[width(line[:m.end()]) for m in re.finditer(r"\S+(?: \S+)*", line)] for line in lines]


@pytest.mark.parametrize("code", ["en", "zh"])
def test_cost_table_lines_up(code, no_new_missing):
    """Every column of numbers ends under its (right-aligned) header, Chinese characters two
    columns wide."""
    with language(code):
        names, rows = compare_heads(10, 512, 8)
        lines = format_rows(names, rows).splitlines()
    edges = right_edges(lines)
    assert all(e[-3:] == edges[0] for e in edges[1:]), lines
    assert chinese("\n".join(lines)) == (code == "zh")


def test_cost_table_in_english_is_unchanged():
    names, rows = compare_heads(10, 512, 8)
    lines = format_rows(names, rows).splitlines()
    assert lines[0] == "                      1 head, no W^O  1 head + W^O  8 heads + W^O"
    assert lines[1] == "params W^Q,W^K,W^V           786,432       786,432        786,432"
    assert lines[-1] == "softmax entries                  100           100            800"


def test_worked_summary_lines_up_in_chinese():
    with language("zh"):
        lines = chapter_check.format_summary(chapter_check.check_chapter()).splitlines()
    edges = [e[:3] for e in right_edges(lines)]
    assert all(e[1:] == edges[0][1:] for e in edges), lines


def test_scoring_costs_are_named_in_the_current_language(no_new_missing):
    with language("zh"):
        zh = [c.name for c in scoring_costs(4, 4, 8)]
    assert zh == ["加性", "点积", "缩放点积"]
    assert [c.name for c in scoring_costs(4, 4, 8)] == ["additive", "dot product", "scaled dot product"]


def test_task_descriptions_follow_the_language(no_new_missing):
    english = {name: spec.description for name, spec in TASKS.items()}
    with language("zh"):
        zh = {name: spec.description for name, spec in TASKS.items()}
    assert english["reverse"] == "output the sequence backwards"
    assert all(chinese(d) for d in zh.values()) and english == {n: s.english for n, s in TASKS.items()}


def test_marked_labels_are_translated_where_shown():
    """The toy's features and roles, the hand-built heads' names and the patterns' cells are
    stored in English (module constants) and shown with tr()."""
    labels = [*TOY_FEATURES, *TOY_ROLES, *PATTERNS.values(), *(label for label, _, _ in STYLE.values()),
              *(s.name for specs in HEAD_VARIANTS.values() for s in specs if s.name and s.kind != "random")]
    assert TOY_FEATURES[0] == "person" and HEAD_VARIANTS["random"][3].name == "random 3"
    with language("zh"):
        shown = [tr(label) for label in labels]
    assert not set(labels) & missing_messages()
    assert sum(chinese(s) for s in shown) == len(labels) - 1  # all but "PyTorch SDPA"


# --- pictures --------------------------------------------------------------------------------

def texts_of(ax) -> dict[str, object]:
    """The words on one axes, and the font files of those words (None: matplotlib's default)."""
    legend = ax.get_legend()
    items = [ax.title, ax.xaxis.label, ax.yaxis.label, *(legend.get_texts() if legend else [])]
    return {"title": ax.get_title(), "x": ax.get_xlabel(), "y": ax.get_ylabel(),
            "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
            "fonts": {t.get_fontproperties().get_file() for t in items if t.get_text()}}


def rnn_axes():
    fig = new_figure(10, 3.4)
    ax1, ax2 = fig.subplots(1, 2)
    plot_path_counts([path_counts(n) for n in (1, 2, 4)], ax1)
    plot_gradient_profile(gradient_profile(n=6, d=4, seed=0), ax2)
    return ax1, ax2


def test_rnn_plots_in_chinese(no_new_missing):
    with language("zh"):
        ax1, ax2 = rnn_axes()
    left, right = texts_of(ax1), texts_of(ax2)
    for words in (left["title"], left["x"], left["y"], *left["legend"], right["title"], right["x"]):
        assert chinese(words), words
    assert right["y"] == "‖∂ y_last / ∂ x_j‖"  # symbols only
    assert left["fonts"] == {_font_path()}  # every word in the CJK font
    assert right["fonts"] == {_font_path(), None}  # but the symbols' label


def test_rnn_plots_in_english_are_unchanged():
    ax1, ax2 = rnn_axes()
    left, right = texts_of(ax1), texts_of(ax2)
    assert (left["title"], left["x"], left["y"]) == ("counted on the computation graphs", "sequence length n", "count")
    assert left["legend"] == ["RNN: sequential steps", "RNN: longest path", "attention: sequential steps",
                              "attention: longest path"]
    assert right["title"] == "random layers, n = 6, d = 4, seed 0"
    assert right["legend"] == ["tanh RNN", "self-attention"]
    assert left["fonts"] == right["fonts"] == {None}
    assert ax1.title.get_fontsize() == 12 and ax1.xaxis.label.get_fontsize() == 10
    assert ax1.get_legend().get_texts()[0].get_fontsize() == 8


def loglog_axes():
    ax = new_figure(6, 4).add_subplot()
    loglog_curves(ax, [64, 128], {m: [1.0, 4.0] for m in STYLE}, ylabel=tr("count"), title="t")
    return ax


def test_loglog_curves_in_chinese(no_new_missing):
    with language("zh"):
        ax = loglog_axes()
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[0] == "朴素实现（n×n 权重）" and chinese(labels[-1]) and chinese(ax.get_xlabel())
    assert ax.xaxis.label.get_fontproperties().get_file() == _font_path()
    assert ax.yaxis.label.get_fontproperties().get_file() == _font_path()


def test_loglog_curves_in_english_are_unchanged():
    ax = loglog_axes()
    assert [line.get_label() for line in ax.get_lines()] == [
        "naive (n×n weights)", "blockwise", "PyTorch SDPA", "slope 2 (∝ $n^{2}$)"]
    assert ax.get_xlabel() == "n (queries = keys)" and ax.title.get_fontsize() == 10


def test_heatmap_titles_in_the_current_language(no_new_missing):
    with language("zh"):
        grid = head_grid(np.ones((2, 3, 3)) / 3, nrows=1, ncols=2)
        hm = heatmap(np.eye(2), title="注意力权重")
    assert [m.ax.get_title() for m in grid.heatmaps] == ["头 1", "头 2"]
    assert {m.ax.title.get_fontproperties().get_file() for m in grid.heatmaps} == {_font_path()}
    assert hm.ax.title.get_fontproperties().get_file() == _font_path()
    english = head_grid(np.ones((2, 3, 3)) / 3, nrows=1, ncols=2)
    assert [m.ax.get_title() for m in english.heatmaps] == ["Head 1", "Head 2"]
    assert english.heatmaps[0].ax.title.get_fontproperties().get_file() is None
    assert english.heatmaps[0].ax.title.get_fontsize() == 12


# --- attn.drawing.figures.check_alt in Chinese -------------------------------------------------------

GOOD_ZH = ("注意力权重的热力图：行是六个查询，列是六个键；每一行都把大部分权重放在它前面的那个词上，"
           "在对角线下方形成一条深色的线。")


def test_check_alt_accepts_a_chinese_description():
    assert check_alt(GOOD_ZH) == GOOD_ZH
    plot = "每次调用的毫秒数随 n 变化的双对数折线图，n 从 64 到 1024：朴素实现的曲线与斜率为 2 的参考线平行，分块计算的曲线更平。"
    assert check_alt(plot) == plot
    axes = "一张柱状图：横轴是四种逐元素运算，纵轴是每个元素的纳秒数；在这台机器上 tanh 比乘法和加法都慢一些。"
    assert check_alt(axes) == axes


@pytest.mark.parametrize("alt", [
    "注意力权重的热力图：行是查询，列是键。",  # too short to say what it shows
    GOOD_ZH.replace("热力图", "图片"),  # no type
    # no axes: 序列 ("sequence") and 随机 ("random") are not a column and an "against"
    "一张热力图，画的是随机初始化的层的注意力权重，输入序列是教材的例句：大部分权重都落在前一个词上，"
    "对角线下方有一条深色的线，其余位置的颜色都很浅。",
], ids=["too short", "no type", "no axes"])
def test_check_alt_rejects_a_chinese_description_that_says_nothing(alt):
    with pytest.raises(ValueError, match="alt"):
        check_alt(alt)
