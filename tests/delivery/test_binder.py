"""Binder: repo2docker accepts the repository, builds it from binder/, with the tested pins.

repo2docker (pip package jupyter-repo2docker) turns the repository into the image Binder runs.
``repo2docker --no-build`` prints the Dockerfile it would build without needing Docker; the
test reads it. The pins in binder/requirements.txt must be those of requirements.txt (what
``make test`` tests), apart from the documented exceptions below.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from packaging.version import Version
from _support import REPO, TEST_ONLY, norm, read_pins, unavailable

from tools import lesson

BINDER = REPO / "binder"
START = "notebooks/00_start_here.ipynb"
# In binder/requirements.txt only, with the reason written beside it there.
BINDER_ONLY = {"notebook"}
# The one option line allowed: PyTorch's CPU-only wheels (torch==X+cpu), instead of PyPI's
# Linux torch, which is the CUDA build.
TORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


def _repo2docker() -> list[str]:
    exe = Path(sys.executable).parent / "repo2docker"
    if exe.exists():
        return [str(exe)]
    if shutil.which("repo2docker"):
        return ["repo2docker"]
    unavailable("repo2docker not found: `pip install jupyter-repo2docker` (it is in requirements.txt)")
    return []


@pytest.fixture(scope="module")
def dockerfile() -> str:
    """The Dockerfile repo2docker would build for this repository (as Binder's user, uid 1000)."""
    cmd = _repo2docker() + ["--no-build", "--debug", "--user-id", "1000", "--user-name", "jovyan",
                            str(REPO)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.returncode == 0, f"repo2docker rejected the repository:\n{r.stdout}\n{r.stderr}"
    out = r.stdout + r.stderr
    assert "FROM " in out, out
    return out


def test_repo2docker_uses_binder_folder_and_python_311(dockerfile):
    assert "Building conda environment for python=3.11" in dockerfile, dockerfile
    # binder/ wins over the top-level files: binder/requirements.txt is what pip installs,
    # the top-level requirements.txt (with test tools) and pyproject.toml are not used.
    assert re.search(r'pip install --no-cache-dir -r "binder/requirements.txt"', dockerfile), dockerfile
    assert 'install --no-cache-dir -r "requirements.txt"' not in dockerfile
    assert "pip install --no-cache-dir ." not in dockerfile
    # postBuild installs the course's package, after the repository is copied in.
    assert "RUN ./binder/postBuild" in dockerfile
    assert dockerfile.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/") < dockerfile.index("RUN ./binder/postBuild")


def test_runtime_is_python_311():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


def test_postbuild_installs_attn_and_the_nodeps_packages_without_touching_the_pins():
    """As `make setup` does after requirements.txt: requirements-nodeps.txt (when the
    repository has one) and then attn itself, both with --no-deps."""
    script = (BINDER / "postBuild").read_text()
    assert script.startswith("#!/bin/bash\n")
    commands = [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
    assert "set -euo pipefail" in commands
    installs = [line for line in commands if "pip install" in line]
    assert all("--no-deps" in line for line in installs), installs
    assert installs[-1].endswith(" -e ."), installs
    nodeps = REPO / "requirements-nodeps.txt"
    if nodeps.exists():
        assert installs[:-1] == [line for line in installs if line.endswith(" -r requirements-nodeps.txt")]
        assert len(installs) == 2, installs
    else:
        assert len(installs) == 1, installs


def test_postbuild_installs_reveal_js_before_the_course_templates():
    """The deck's template (Binder's deck links) is installed with its reveal.js: npm ci of
    deploy/app-template's lock file, then tools.jupyter_config, which copies it in."""
    commands = [line for line in (BINDER / "postBuild").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    npm = [i for i, line in enumerate(commands) if line.startswith("npm ci --prefix deploy/app-template")]
    config = commands.index("python -m tools.jupyter_config")
    assert len(npm) == 1 and npm[0] < config, commands
    assert (REPO / "deploy" / "app-template" / "package-lock.json").is_file()


def test_binder_pins_match_requirements():
    top, top_options = read_pins(REPO / "requirements.txt")
    binder, binder_options = read_pins(BINDER / "requirements.txt")
    assert top_options == []
    assert binder_options == [TORCH_CPU_INDEX]
    assert set(binder) == (set(top) - TEST_ONLY) | BINDER_ONLY, (
        "binder/requirements.txt must hold the run-time packages of requirements.txt: missing "
        f"{sorted((set(top) - TEST_ONLY) - set(binder))}, extra {sorted(set(binder) - set(top) - BINDER_ONLY)}")
    for name in set(binder) & set(top):
        assert binder[name] == top[name], (
            f"{name}: binder pins {binder[name]}, requirements.txt pins {top[name]}")
    # The CPU build of torch, from the CPU index (not PyPI's CUDA build), on both.
    assert binder["torch"].local == top["torch"].local == "cpu"
    assert {norm(n) for n in TEST_ONLY} & set(binder) == set()


def test_read_pins_rejects_unpinned_lines(tmp_path):
    f = tmp_path / "requirements.txt"
    f.write_text("numpy==2.4.6  # fine\ntorch>=2\n")
    with pytest.raises(ValueError, match="torch>=2"):
        read_pins(f)


def test_read_pins_keeps_the_lines_for_binders_platform(tmp_path):
    f = tmp_path / "requirements.txt"
    f.write_text('torch==2.13.0+cpu ; sys_platform == "linux"\ntorch==2.13.0 ; sys_platform != "linux"\n')
    assert read_pins(f) == ({"torch": Version("2.13.0+cpu")}, [])


def test_binder_start_notebook_exists():
    assert (REPO / START).is_file()


DOC_PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_doc_links_open_existing_notebooks(page):
    """Every Binder link in README.md and docs/*.md opens a notebook that exists (in JupyterLab
    or in Voilà: app mode, or a template of deploy/app-template/ named by ``%3Ftemplate%3D``, as the
    deck links do), and so does every nbgitpuller link (in the clone's folder, REPO)."""
    text = page.read_text(encoding="utf-8")
    links = re.findall(r"https://mybinder\.org/v2/[^\s)\"'>]+", text)
    if page.name in ("README.md", "teaching.md") and lesson.repository_url(REPO)[0]:
        assert links, f"{page.name} has no Binder link: run python -m tools.lesson sync"
    for link in links:
        m = (re.search(r"urlpath=(?:%2F)?(?:lab(?:/|%2F)tree|voila(?:/|%2F)render)(?:/|%2F)([^&\s)]+)", link)
             or re.search(r"labpath=([^&\s)]+)", link))
        assert m, f"Binder link without urlpath=lab/tree/..., urlpath=voila/render/... or labpath=...: {link}"
        path, _, query = m.group(1).replace("%2F", "/").partition("%3F")
        assert (REPO / path).is_file(), f"{link} opens {path}, which does not exist"
        if query:
            template = re.fullmatch(r"template%3D([\w-]+)", query)
            assert template and "voila" in link and (REPO / "deploy" / "app-template" / template.group(1)).is_dir(), (
                f"{link}: expected ...ipynb%3Ftemplate%3DNAME with NAME a template of deploy/app-template/")
    for link in re.findall(r"https://HUB/hub/user-redirect/git-pull\?[^\s)\"'>`]+", text):
        urlpath = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query)).get("urlpath", "")
        m = re.fullmatch(r"lab/tree/REPO/(.+)", urlpath)
        assert m, f"nbgitpuller link without urlpath=lab/tree/REPO/...: {link}"
        assert (REPO / m.group(1)).is_file(), f"{link} opens {m.group(1)}, which does not exist"


def test_teaching_guide_opens_every_notebook_on_binder():
    """docs/teaching.md, On Binder: one JupyterLab link per notebook of notebooks/, from the
    repository's address (site/_config.yml); none while it is unset."""
    text = (REPO / "docs" / "teaching.md").read_text(encoding="utf-8")
    url, branch = lesson.repository_url(REPO)
    if not url:
        assert "mybinder.org/v2/" not in text and "repository: url:" in text, \
            "docs/teaching.md: no repository address is set, so no Binder link: run python -m tools.lesson sync"
        return
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        link = lesson.binder(url, branch, f"lab/tree/notebooks/{path.name}")
        assert link in text, f"docs/teaching.md: no Binder link for {path.name}: run python -m tools.lesson sync"


#: What a reader of the course reads: where a placeholder address would be a dead link.
READ = [REPO / "README.md", REPO / "README.zh.md", REPO / "CONTRIBUTING.md", REPO / "site" / "_config.yml",
        *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "notebooks").rglob("*.ipynb"))]
DEAD = re.compile(r"mybinder\.org/v2/gh/OWNER|\]\(https://github\.com/OWNER|url: +https://github\.com/OWNER")


@pytest.mark.parametrize("page", READ, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_page_links_a_placeholder_repository(page):
    """The repository's address is written once (site/_config.yml, ``repository: url:``); no page
    links OWNER/REPO, which leads nowhere."""
    text = page.read_text(encoding="utf-8")
    dead = sorted({text[m.start():text.find(")", m.start())][:90] for m in DEAD.finditer(text)})
    assert not dead, (f"{page.relative_to(REPO)}: a link to the placeholder OWNER/REPO: {dead}; the Binder "
                      "links are written by python -m tools.lesson sync from repository: url: in site/_config.yml")


def test_the_placeholder_pattern():
    assert DEAD.search("[Binder](https://mybinder.org/v2/gh/OWNER/REPO/main?urlpath=lab)")
    assert DEAD.search("repository:\n  url: https://github.com/OWNER/REPO\n")
    assert not DEAD.search("`pip install git+https://github.com/OWNER/REPO@main`")  # a command to fill in
