"""The README and the guides: short, and every relative link and anchor leads somewhere.

The pages are README.md, CONTRIBUTING.md and docs/*.md, and in Chinese README.zh.md and
docs/zh/*.md. Each relative link must point to a file
(or folder) that exists, and each ``#anchor`` to a heading of the Markdown file it names (the
page itself for a bare ``#anchor``), by GitHub's rule for a heading's anchor: the heading's
text, lowercased, punctuation dropped, spaces turned into ``-``, and ``-1``, ``-2``, ... after
a repeated one. Links inside code (fenced blocks, `inline code`) are not links.

A Chinese guide (docs/zh/NAME.md) is the translation of docs/NAME.md, and cannot drift from it
silently: it has the same headings (levels, in order), the same code blocks (comments aside, and
``make lab-zh`` where the English has ``make lab``), every address the English gives and a link
to every file the English links (to its translation where it has one). README.zh.md gives a
Chinese newcomer what README.md gives an English one: the same ``make`` targets, the Binder
links of the Chinese notebooks, the local addresses, and the mirrors.
"""
from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

from _support import REPO

from tools import lesson

ENGLISH = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
CHINESE = [REPO / "README.zh.md", *sorted((REPO / "docs" / "zh").glob("*.md"))]
PAGES = ENGLISH + CHINESE
# A Chinese page -> the English page it translates (README.zh.md, each docs/zh/NAME.md).
ORIGINAL = {REPO / "README.zh.md": REPO / "README.md",
            **{page: REPO / "docs" / page.name for page in CHINESE[1:]}}
README_MAX_LINES = 150
THE_TWO_COMMANDS = """```bash
make lab    # set everything up, then open the course in JupyterLab
make test   # set everything up, then run every test (package, every notebook, browser)
```"""

FENCE = re.compile(r"^ *(```|~~~).*?^ *\1\s*$", re.M | re.S)  # (indented too: in a list item)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
# the target of an inline link or image, ](target) or ](target "title"); nested ones too
LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def without_code(text: str) -> str:
    """``text`` with its fenced code blocks and code spans blanked (lines kept)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's Markdown text: ``"The package `attn`"`` -> ``"the-package-attn"``.

    Args:
        heading: the heading's text after its ``#`` marks.

    Returns:
        the anchor, without ``#`` and without the ``-1`` GitHub adds to a repeated one.
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or image: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    kept = "".join(ch for ch in text.lower()
                   if ch.isalnum() or ch in " -_" or unicodedata.category(ch).startswith("M"))
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor the headings of ``page`` give, ``-1``, ``-2`` ... for repeated ones."""
    seen: dict[str, int] = {}
    found = set()
    for _, text in HEADING.findall(without_code_keep_headings(page.read_text(encoding="utf-8"))):
        a = anchor(text)
        n = seen.get(a, 0)
        seen[a] = n + 1
        found.add(a if n == 0 else f"{a}-{n}")
    return found


def without_code_keep_headings(text: str) -> str:
    """``text`` without its fenced code blocks (a ``# comment`` there is no heading); code spans
    kept, since a heading's code is part of its anchor."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def links(page: Path) -> list[str]:
    """The targets of every link and image of ``page`` outside code."""
    text = without_code(page.read_text(encoding="utf-8"))
    return LINK.findall(text) + REFERENCE.findall(text)


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` that lead nowhere, each with the reason."""
    problems = []
    for target in links(page):
        if not target or SCHEME.match(target):
            continue  # an absolute URL (https:, mailto:): not this test's
        path_part, _, fragment = target.partition("#")
        dest = page if not path_part else (page.parent / path_part).resolve()
        if not dest.exists():
            problems.append(f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}")
            continue
        if fragment:
            if dest.suffix != ".md":
                problems.append(f"{target}: an anchor into {dest.name}, which is not Markdown")
            elif fragment not in anchors(dest):
                problems.append(f"{target}: {dest.name} has no heading with the anchor #{fragment}")
    return problems


def test_the_pages_exist():
    names = {p.relative_to(REPO).as_posix() for p in PAGES}
    assert {"README.md", "CONTRIBUTING.md", "docs/setup.md", "docs/teaching.md",
            "docs/performance.md", "README.zh.md", "docs/zh/setup.md", "docs/zh/teaching.md"} <= names, names
    missing = [p.relative_to(REPO).as_posix() for p in ORIGINAL.values() if not p.is_file()]
    assert missing == [], f"Chinese pages without the English page they translate: {missing}"


def test_the_readme_is_read_in_two_minutes():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md: {len(lines)} lines, expected at most {README_MAX_LINES}"


def test_the_readme_opens_with_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first_lines = text.split("\n\n", 2)[1]  # after the title
    assert first_lines == THE_TWO_COMMANDS, first_lines


@pytest.mark.parametrize("readme, pages", [("README.md", ENGLISH[1:] + CHINESE[:1]), ("README.zh.md", CHINESE[1:])])
def test_the_readme_points_to_each_guide(readme, pages):
    targets = {t.partition("#")[0] for t in links(REPO / readme)}
    for page in pages:
        assert page.relative_to(REPO).as_posix() in targets, f"{readme}: no link to {page.relative_to(REPO)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_and_anchor_resolves(page):
    assert broken_links(page) == []


# --- the checker itself -------------------------------------------------------------------------

@pytest.mark.parametrize("heading, expected", [
    ("torch's CPU build, on every system", "torchs-cpu-build-on-every-system"),
    ("The package `attn`", "the-package-attn"),
    ("Read it without running: website, slides, app mode, handouts",
     "read-it-without-running-website-slides-app-mode-handouts"),
    ("Zero to JupyterHub (Kubernetes), for larger classes", "zero-to-jupyterhub-kubernetes-for-larger-classes"),
    ("Notebook 08's model wheel: a real pretrained model, offline",
     "notebook-08s-model-wheel-a-real-pretrained-model-offline"),
    ("What `attn.functional` holds: softmax(QKᵀ/√d_k)", "what-attnfunctional-holds-softmaxqkᵀd_k"),
    ("自注意力 (self-attention)", "自注意力-self-attention"),
    ("A [linked](https://example.org) heading", "a-linked-heading"),
])
def test_anchor_follows_githubs_rule(heading, expected):
    assert anchor(heading) == expected


def test_checker_finds_a_missing_file_a_missing_anchor_and_ignores_code(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## App mode\n\n## App mode\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n\n## Local heading\n\n"
        "[ok](docs/guide.md#app-mode) [ok, repeated](docs/guide.md#app-mode-1) [ok](#local-heading)\n"
        "[![badge](https://example.org/b.svg)](https://example.org) [ok](docs/)\n"
        "[no file](docs/missing.md) [no anchor](docs/guide.md#app-mode-2) [no local](#nowhere)\n"
        "`[in code](nothing.md)`\n\n```text\n[in a block](nothing.md)\n# not a heading\n```\n",
        encoding="utf-8")
    problems = broken_links(page)
    assert len(problems) == 3, problems
    assert problems[0].startswith("docs/missing.md: no file")
    assert problems[1] == "docs/guide.md#app-mode-2: guide.md has no heading with the anchor #app-mode-2"
    assert problems[2] == "#nowhere: README.md has no heading with the anchor #nowhere"
    assert "not-a-heading" not in anchors(page)


def test_a_headless_start_says_how_to_tunnel():
    """Issue 23 §4: on a server over SSH, `make lab`'s localhost URL opens only through a
    tunnel. The set-up guide gives the command, with the port JupyterLab really uses, the README
    points to it, and `make lab` prints the reminder before JupyterLab starts."""
    import subprocess

    from jupyter_server.serverapp import ServerApp

    port = ServerApp.port_default_value  # 8888 unless JUPYTER_PORT or --port says otherwise
    setup = (REPO / "docs" / "setup.md").read_text(encoding="utf-8")
    section = setup.split("## On a remote or headless machine", 1)[1].split("\n## ", 1)[0]
    assert f"ssh -N -L {port}:localhost:{port} you@server" in section
    assert f"http://localhost:{port}/lab/tree/00_start_here.ipynb" in section
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/setup.md#on-a-remote-or-headless-machine)" in readme
    dry = subprocess.run(["make", "-n", "-s", "lab"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    lab_line = next(i for i, line in enumerate(dry.splitlines()) if "jupyter lab" in line)
    # the port make lab chose, the one JupyterLab gets (tests/delivery/test_setup.py runs it)
    hint = next(i for i, line in enumerate(dry.splitlines()) if "ssh -N -L $port:localhost:$port" in line)
    assert hint < lab_line, "make lab prints the tunnel before JupyterLab starts"


def test_the_chinese_readme_opens_with_its_two_commands_and_make_has_them():
    """README.zh.md: make lab-zh (the Chinese start page) and make test, both real targets."""
    text = (REPO / "README.zh.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    block = text.split("\n\n", 2)[1]
    commands = [ln.split("#")[0].strip() for ln in block.splitlines()[1:-1]]
    assert commands == ["make lab-zh", "make test"], block
    dry = subprocess.run(["make", "-n", "lab-zh"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "--LabApp.default_url=/lab/tree/zh/00_start_here.ipynb" in dry, dry
    assert (REPO / "notebooks" / "zh" / "00_start_here.ipynb").exists()


# --- the Chinese pages keep up with the English ones -----------------------------------------

URL = re.compile(r"https?://[^\s<>()`'\"，。；：（）、“”]+")
CHINESE_GUIDES = [page for page in CHINESE if page.parent.name == "zh"]


def heading_levels(text: str) -> list[tuple[int, str]]:
    """(level, text) of every heading outside code, in order."""
    return [(len(marks), title) for marks, title in HEADING.findall(without_code_keep_headings(text))]


def code_blocks(text: str) -> list[str]:
    """Every fenced code block, without its comments (a line or the end of a line from ``#``
    after a space), ``make lab-zh`` read as ``make lab``."""
    blocks = []
    for block in FENCE.finditer(text):
        kept = [re.sub(r"(^|\s+)#.*$", "", line.strip()) for line in block.group(0).splitlines()]
        blocks.append("\n".join(re.sub(r"\blab-zh\b", "lab", line) for line in kept if line))
    return blocks


def addresses(text: str) -> set[str]:
    """Every http(s) address of a page, in its prose or its code, trailing punctuation dropped."""
    return {url.rstrip(".,;:") for url in URL.findall(text)}


def linked_files(page: Path) -> set[Path]:
    """The files the relative links of ``page`` lead to (the page itself for a bare ``#anchor``)."""
    found = set()
    for target in links(page):
        if target and not SCHEME.match(target):
            path_part = target.partition("#")[0]
            found.add(page if not path_part else (page.parent / path_part).resolve())
    return found


def drift(chinese: Path) -> list[str]:
    """How the Chinese page ``chinese`` differs from the English one it translates: headings,
    code blocks, addresses, linked files (each English file read as its translation, if any)."""
    english = ORIGINAL[chinese]
    en_text, zh_text = english.read_text(encoding="utf-8"), chinese.read_text(encoding="utf-8")
    problems = []
    en_levels = [level for level, _ in heading_levels(en_text)]
    zh_levels = [level for level, _ in heading_levels(zh_text)]
    if en_levels != zh_levels:
        pairs = "; ".join(f"{'#' * level} {title}" for level, title in heading_levels(en_text))
        problems.append(f"headings: the English has levels {en_levels} ({pairs}), the Chinese {zh_levels}")
    en_code, zh_code = code_blocks(en_text), code_blocks(zh_text)
    if en_code != zh_code:
        differ = [f"block {i + 1}: {e!r} / {z!r}" for i, (e, z) in enumerate(zip(en_code, zh_code)) if e != z]
        problems.append(f"code: {len(en_code)} blocks in English, {len(zh_code)} in Chinese; {differ[:2]}")
    missing = sorted(addresses(en_text) - addresses(zh_text))
    if missing:
        problems.append(f"addresses the Chinese lacks: {missing}")
    translated = {en.resolve(): zh.resolve() for zh, en in ORIGINAL.items()}
    wanted = {translated.get(f.resolve(), f.resolve()) for f in linked_files(english)}
    lacking = sorted(f.relative_to(REPO).as_posix() for f in wanted - {f.resolve() for f in linked_files(chinese)})
    if lacking:
        problems.append(f"files the English links and the Chinese does not: {lacking}")
    return problems


@pytest.mark.parametrize("page", CHINESE_GUIDES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_each_chinese_guide_keeps_the_english_ones_sections_code_and_links(page):
    assert drift(page) == []


def test_the_chinese_guides_are_the_set_up_and_teaching_guides():
    assert {p.name for p in CHINESE_GUIDES} >= {"setup.md", "teaching.md"}


def test_the_chinese_readme_gives_what_the_english_one_gives():
    """The make targets of README.md (lab-zh for lab, NB=zh/... for NB=...), the Binder links of
    the Chinese notebooks where README.md has the English ones, the local addresses (app mode's),
    the editable install and the mirrors' two settings."""
    en, zh = ((REPO / name).read_text(encoding="utf-8") for name in ("README.md", "README.zh.md"))
    targets = lambda text: {re.sub(r"\blab-zh\b", "lab", m) for m in re.findall(r"\bmake ([a-z][a-z-]*)", text)}
    assert targets(en) <= targets(zh), f"README.zh.md lacks make {sorted(targets(en) - targets(zh))}"
    binder = {u for u in addresses(en) if u.startswith("https://mybinder.org/")}
    zh_binder = {u.replace("/notebooks/", "/notebooks/zh/") if "/notebooks/" in u else u for u in binder}
    if lesson.repository_url(REPO)[0]:  # no Binder link anywhere until the address is set
        assert len(binder) >= 14, "README.md: fewer than 14 Binder links: run python -m tools.lesson sync"
    assert zh_binder <= addresses(zh), sorted(zh_binder - addresses(zh))
    local = {u for u in addresses(en) if u.startswith("http://localhost")}
    assert local and local <= addresses(zh), sorted(local - addresses(zh))
    for app in re.findall(r"make app NB=(\w+)", en):
        assert f"make app NB=zh/{app}" in zh, f"README.zh.md: no make app NB=zh/{app}"
    assert "editable mode" in en and "可编辑模式" in zh
    for setting in ("PIP_INDEX_URL=", "make TORCH_INDEX="):
        assert setting in zh, f"README.zh.md does not say how to use a mirror: {setting}"


WIDE = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”‘’…—]")


def broken_chinese_lines(text: str) -> list[str]:
    """Where a line of prose ends with a Chinese character (or full-width punctuation) and the
    next line of the same paragraph begins with one: a break that shows as a space."""
    lines = without_code(text).splitlines()
    found = []
    for line, following in zip(lines, lines[1:]):
        starts_a_block = re.match(r"^\s*([-*+]|\d+\.)\s|^\s*[#|]|^\s*$", following)
        if line.strip() and not starts_a_block and not line.lstrip().startswith("|"):
            if WIDE.search(line.rstrip()[-1]) and WIDE.search(following.lstrip(" >")[:1] or " "):
                found.append(f"{line.strip()[-12:]}⏎{following.strip()[:12]}")
    return found


@pytest.mark.parametrize("page", CHINESE, ids=lambda p: p.relative_to(REPO).as_posix())
def test_chinese_prose_has_no_line_break_between_two_chinese_characters(page):
    assert broken_chinese_lines(page.read_text(encoding="utf-8")) == []


def test_broken_chinese_lines_sees_a_break_between_chinese_characters_only():
    text = "## 标题\n\n第一行写到这里\n第二行接着写。\n\n- 一项\n- 另一项\n\n中文 `code`\nand English\n"
    assert broken_chinese_lines(text) == ["第一行写到这里⏎第二行接着写。"]


def test_the_drift_check_sees_a_missing_section_a_changed_command_and_a_lost_link(tmp_path, monkeypatch):
    """The checker itself, on a made-up pair."""
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "docs" / "zh").mkdir(parents=True)
    (tmp_path / "other.md").write_text("# Other\n", encoding="utf-8")
    english = tmp_path / "docs" / "guide.md"
    english.write_text("# Guide\n\n## One\n\n```bash\nmake lab   # start\n```\n\n## Two\n\n"
                       "See https://example.org/a and [other](../other.md).\n", encoding="utf-8")
    chinese = tmp_path / "docs" / "zh" / "guide.md"
    monkeypatch.setitem(ORIGINAL, chinese, english)
    good = ("# 指南\n\n## 一\n\n```bash\nmake lab-zh   # 开始\n```\n\n## 二\n\n"
            "见 https://example.org/a 和[另一页](../../other.md)。\n")
    chinese.write_text(good, encoding="utf-8")
    assert drift(chinese) == []
    chinese.write_text(good.replace("## 二\n\n", ""), encoding="utf-8")
    assert [p.split(":")[0] for p in drift(chinese)] == ["headings"]
    chinese.write_text(good.replace("make lab-zh", "make test"), encoding="utf-8")
    assert [p.split(":")[0] for p in drift(chinese)] == ["code"]
    chinese.write_text(good.replace("https://example.org/a", "https://example.org/b")
                       .replace("[另一页](../../other.md)", "另一页"), encoding="utf-8")
    assert [p.split(":")[0] for p in drift(chinese)] == ["addresses the Chinese lacks", "files the English links and the Chinese does not"]
