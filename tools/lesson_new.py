"""``python -m tools.lesson new NN_name --title "..." --title-zh "..."``: a new lesson, registered.

It writes the lesson, its Chinese twin and the solutions of both from the template below (a
small lesson that already keeps every rule the notebook tests hold: a first cell with what the
learner will be able to do, the time and the prerequisites; a first code cell that sets the
language and seeds; one explorer, tagged ``nbval-ignore-output``; a Summary; one exercise that
``attn.exercises.general`` checks; a link to the solutions, which show no explorer), then:

1. writes the previous lesson's ``Next:`` link, in both languages;
2. rewrites the generated tables (``tools.lesson.sync``);
3. runs ``tools.slides`` (slide metadata), ``tools.catalogue --check`` and ``tools.execute`` on
   the four files (the stored outputs);

and prints what is left to write by hand. The template's topic is the causal mask; the teacher
replaces it, in both languages, keeping the cells' kinds.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools.execute import IGNORE_TAG
from tools.lesson import ROOT, STEM, LessonError, notebook_path, read_lesson, rel, stems, sync

IMPORTS = """import torch

from attn.exercises import general
from attn.language import set_language
from attn.masks import causal_mask
from attn.widgets.masks import mask_explorer

set_language("{language}")

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)"""

# The words of each language; {n}, {title}, {stem}, {prev_*} are filled in.
WORDS = {
    "en": {
        "first": "# {n} · {title}\n\n**After this notebook you will be able to**\n\n"
                 "- say which keys each query may attend to under a causal mask (因果掩码);\n"
                 "- write a causal mask by hand, as a matrix of True/False.\n\n"
                 "**Estimated time:** 20 minutes. **Prerequisites:** [{prev_n} {prev_title}]({prev_stem}.ipynb).",
        "section": "## 1. The causal mask\n\nA causal mask lets query $i$ attend to keys $0, \\dots, i$ and to no "
                   "later key: row $i$ is True up to the diagonal. The package builds it with "
                   "`attn.masks.causal_mask`; here it is for 6 tokens, 1 where a query may attend:",
        "code": "mask = causal_mask(6)  # (6, 6): True = may attend\nprint(mask.int().tolist())",
        "explore": "## 2. Explore\n\nThe explorer draws the scores and the weights under a mask. Move the "
                   "length, pick another mask, and watch which cells are blocked.",
        "explorer": 'mask_explorer("causal", length=6)',
        "summary": "## Summary\n\n- A causal mask lets query $i$ attend to keys $0, \\dots, i$: the lower "
                   "triangle, diagonal included.",
        "exercise": "## Exercises\n\n**Exercise 1.** Write the causal mask of 4 tokens by hand, as a 4 x 4 "
                    "list of True/False (rows are queries, columns are keys). The checker names a mistake, "
                    "never the answer.",
        "answer": 'answer = None  # a 4 x 4 list of True/False\ngeneral.check_mask(answer, kind="causal", length=4)',
        "last": "Worked solutions: [solutions/{stem}_solutions.ipynb](solutions/{stem}_solutions.ipynb).\n\n"
                "**This is the last notebook.** Back to the map: [00 Start here](00_start_here.ipynb).",
        "solutions_first": "# {n} · {title} — worked solutions\n\nThe worked solutions of the exercises of "
                           "[{n} {title}](../{stem}.ipynb). Try them yourself first.\n\n"
                           "**Prerequisites:** notebook {n}.",
        "solution_text": "## Exercise 1: the causal mask of 4 tokens\n\nRow $i$ is True on keys $0, \\dots, i$: "
                         "one key in row 0, two in row 1, and so on, 10 in all.",
        "solution": 'answer = causal_mask(4)  # (4, 4): the lower triangle\ngeneral.check_mask(answer, kind="causal", length=4)',
        "next": "Next: [{n} {title}]({stem}.ipynb).",
        "the last": "**This is the last notebook.** ",
        "back": "Back to the map",
    },
    "zh": {
        "first": "# {n} · {title}\n\n**学完本课，你将能够**\n\n"
                 "- 说出在因果掩码（causal mask）下每个查询可以关注哪些键；\n"
                 "- 亲手把因果掩码写成一个由 True/False 组成的矩阵。\n\n"
                 "**预计用时：** 20 分钟。**先修知识：** [{prev_n} {prev_title}]({prev_stem}.ipynb)。",
        "section": "## 1. 因果掩码\n\n因果掩码让查询 $i$ 关注键 $0, \\dots, i$，而不关注任何更靠后的键：第 $i$ 行"
                   "到对角线为止都是 True。课程包用 `attn.masks.causal_mask` 构造它；下面是 6 个词元的因果掩码，"
                   "1 表示查询可以关注：",
        "code": "mask = causal_mask(6)  # (6, 6)：True 表示可以关注\nprint(mask.int().tolist())",
        "explore": "## 2. 动手探索\n\n探索器画出加上掩码后的分数和权重。拖动长度，换一种掩码，看看哪些格子被挡住了。",
        "explorer": 'mask_explorer("causal", length=6)',
        "summary": "## 小结\n\n- 因果掩码让查询 $i$ 关注键 $0, \\dots, i$：也就是包括对角线在内的下三角。",
        "exercise": "## 练习\n\n**练习 1。** 亲手写出 4 个词元的因果掩码，写成一个 4 x 4 的 True/False 列表"
                    "（行是查询，列是键）。检查器会指出错在哪里，但绝不给出答案。",
        "answer": 'answer = None  # 一个 4 x 4 的 True/False 列表\ngeneral.check_mask(answer, kind="causal", length=4)',
        "last": "参考答案：[solutions/{stem}_solutions.ipynb](solutions/{stem}_solutions.ipynb)。\n\n"
                "**这是最后一个笔记本。** 回到课程地图：[00 从这里开始](00_start_here.ipynb)。",
        "solutions_first": "# {n} · {title}——参考答案\n\n[{n} {title}](../{stem}.ipynb) 中练习的参考答案。"
                           "请先自己试一试。\n\n**先修知识：** 先完成笔记本 {n}。",
        "solution_text": "## 练习 1：4 个词元的因果掩码\n\n第 $i$ 行在键 $0, \\dots, i$ 上是 True：第 0 行一个键，"
                         "第 1 行两个，依此类推，一共 10 个。",
        "solution": 'answer = causal_mask(4)  # (4, 4)：下三角\ngeneral.check_mask(answer, kind="causal", length=4)',
        "next": "下一课：[{n} {title}]({stem}.ipynb)。",
        "the last": "**这是最后一个笔记本。**",
        "back": "回到课程地图",
    },
}


def lesson_notebook(language: str, fill: dict[str, str]) -> nbformat.NotebookNode:
    w = {key: text.format(**fill) for key, text in WORDS[language].items()}
    explorer = new_code_cell(w["explorer"], metadata={"tags": [IGNORE_TAG]})
    return new_notebook(cells=[
        new_markdown_cell(w["first"]), new_code_cell(IMPORTS.format(language=language)),
        new_markdown_cell(w["section"]), new_code_cell(w["code"]),
        new_markdown_cell(w["explore"]), explorer,
        new_markdown_cell(w["summary"]), new_markdown_cell(w["exercise"]), new_code_cell(w["answer"]),
        new_markdown_cell(w["last"]),
    ], metadata={"attn": {"summary": "(one line: what a learner learns)" if language == "en" else "（一句话：学什么）"}})


def solutions_notebook(language: str, fill: dict[str, str]) -> nbformat.NotebookNode:
    w = {key: text.format(**fill) for key, text in WORDS[language].items()}
    imports = IMPORTS.format(language=language).replace("from attn.widgets.masks import mask_explorer\n", "")
    return new_notebook(cells=[
        new_markdown_cell(w["solutions_first"]), new_code_cell(imports),
        new_markdown_cell(w["solution_text"]), new_code_cell(w["solution"]),
    ])


def _check_name(name: str, root: Path) -> tuple[str, str]:
    """The new lesson's stem and the previous lesson's, or a ``LessonError`` that says why not."""
    existing = stems(root)
    if not STEM.fullmatch(name):
        raise LessonError(f"{name}: expected NN_name, two digits then lower-case words joined by _ (13_my_topic)")
    if name in existing or any(notebook_path(name, lang, root).exists() for lang in ("en", "zh")):
        raise LessonError(f"{name}: notebooks/{name}.ipynb exists already")
    following = f"{int(existing[-1][:2]) + 1:02d}"
    if name[:2] != following:
        raise LessonError(f"{name}: the lessons are numbered without a gap and a new one comes last: "
                          f"the next is {following}_..., not {name[:2]}_...")
    return name, existing[-1]


def _write(path: Path, nb: nbformat.NotebookNode) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


def link_from_previous(previous: str, stem: str, titles: dict[str, str], root: Path) -> list[str]:
    """Append the ``Next:`` link to the previous lesson's last cell, in both languages, and take
    out its sentence that it is the last notebook.

    Returns:
        the files whose last cell still says it is the last notebook in other words (to edit by hand).
    """
    still_last = []
    for language in ("en", "zh"):
        path = notebook_path(previous, language, root)
        nb = nbformat.read(path, as_version=4)
        cell = nb.cells[-1]
        link = WORDS[language]["next"].format(n=stem[:2], title=titles[language], stem=stem)
        cell.source = cell.source.replace(WORDS[language]["the last"], "").rstrip() + "\n\n" + link
        if WORDS[language]["the last"].strip() in cell.source and previous != "00_start_here":
            still_last.append(rel(path, root))
        _write(path, nb)
    return still_last


def _run(root: Path, *args: str) -> int:
    print("$ python -m " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", *args], cwd=root).returncode


def new_lesson(name: str, title: str, title_zh: str, *, execute: bool = True, root: Path = ROOT) -> int:
    """Write lesson ``name`` (its two notebooks and their solutions), register it, run the tools.

    Returns:
        0, or the exit code of the first tool that failed.

    Raises:
        LessonError: the name is not NN_name, exists, or breaks the numbering.
    """
    stem, previous = _check_name(name, root)
    before = read_lesson(previous, root)
    for language, its_title in (("en", title), ("zh", title_zh)):
        fill = {"n": stem[:2], "title": its_title, "stem": stem, "prev_n": previous[:2],
                "prev_title": before.title[language], "prev_stem": previous}
        _write(notebook_path(stem, language, root), lesson_notebook(language, fill))
        _write(notebook_path(stem, language, root).parent / "solutions" / f"{stem}_solutions.ipynb",
               solutions_notebook(language, fill))
    still_last = link_from_previous(previous, stem, {"en": title, "zh": title_zh}, root)
    sync(root)
    print(f"wrote notebooks/{stem}.ipynb, notebooks/zh/{stem}.ipynb and their solutions; "
          f"{previous} links it; the tables list it")
    for tool in (("tools.slides",), ("tools.catalogue", "--check")) + ((("tools.execute", stem),) if execute else ()):
        code = _run(root, *tool)
        if code:
            return code
    if execute:  # the template's claim: the mask its section prints (cell 3, line 0), in both languages
        for path in (notebook_path(stem, "en", root), notebook_path(stem, "zh", root)):
            code = _run(root, "tools.claims", str(path), "--mark", "3:0")
            if code:
                return code
    print(f"""
What is left, by hand (CONTRIBUTING.md, "Adding or changing a lesson"):
  1. notebooks/{stem}.ipynb: your lesson, in place of the template's causal mask; its one-line
     summary in the notebook's metadata, "attn": {{"summary": ...}} (JupyterLab: the property inspector, Notebook metadata).
  2. notebooks/zh/{stem}.ipynb: the same code, Chinese prose (00's glossary), its Chinese summary.
  3. notebooks/solutions/{stem}_solutions.ipynb and notebooks/zh/solutions/{stem}_solutions.ipynb.
  4. a checker: attn.exercises.general, or your own.
  5. its claims, the printed lines its prose relies on: python -m tools.claims {stem} (lists them),
     then --mark CELL:LINE, in both languages (CONTRIBUTING.md, "A lesson's claims").{''.join(f'''
  *  {path}: its last cell still says it is the last notebook: edit that sentence.''' for path in still_last)}
Then:
  python -m tools.execute {stem}          # the four files' outputs
  python -m tools.lesson sync             # the tables, from your titles, times and summaries
  python -m tools.catalogue --fill build/zh.json   # the Chinese of any new tr("...") sentence
  make check NB={stem}""")
    return 0
