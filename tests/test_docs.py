"""The README and the guides: short, and every relative link and anchor leads somewhere.

The pages are README.md, CONTRIBUTING.md and docs/*.md. Each relative link must point to a file
(or folder) that exists, and each ``#anchor`` to a heading of the Markdown file it names (the
page itself for a bare ``#anchor``), by GitHub's rule for a heading's anchor: the heading's
text, lowercased, punctuation dropped, spaces turned into ``-``, and ``-1``, ``-2``, ... after
a repeated one. Links inside code (fenced blocks, `inline code`) are not links.
"""
from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

from _support import REPO

PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md")), REPO / "README.zh.md"]
README_MAX_LINES = 150
THE_TWO_COMMANDS = """```bash
make lab    # set everything up, then open the course in JupyterLab
make test   # set everything up, then run every test (package, every notebook, browser)
```"""

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
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
            "docs/performance.md"} <= names, names


def test_the_readme_is_read_in_two_minutes():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md: {len(lines)} lines, expected at most {README_MAX_LINES}"


def test_the_readme_opens_with_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first_lines = text.split("\n\n", 2)[1]  # after the title
    assert first_lines == THE_TWO_COMMANDS, first_lines


def test_the_readme_points_to_each_guide():
    targets = {t.partition("#")[0] for t in links(REPO / "README.md")}
    for page in PAGES[1:]:
        assert page.relative_to(REPO).as_posix() in targets, f"README.md: no link to {page.relative_to(REPO)}"


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
    hint = next(i for i, line in enumerate(dry.splitlines()) if f"ssh -N -L {port}:localhost:{port}" in line)
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
