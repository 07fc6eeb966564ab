"""Build the course website offline: ``make site`` (``python -m tools.site``) -> build/site/.

One site per language of the course, each a Jupyter Book 1 book of its own, with its own
table of contents, title and Sphinx language (so that the theme's own words are in it):

- the English edition (notebooks/) at build/site/, with the guides (docs/*.md and
  CONTRIBUTING.md) as pages under ``guides/``: the book's source is a copy of notebooks/
  without zh/, the guides beside it, their links rewritten for the site (``copy_guides``);
- the Chinese edition (notebooks/zh/) at build/site/zh/, with the guides written in Chinese
  (docs/zh/*.md) as pages under ``guides/``, and one page of its own, 指南 (``guides``), that
  leads to them and to the guides that are in English only, on the English site.

Every page carries a language switch, a link to the same page in the other language (a
notebook's twin, a guide's translation; a page without one: the other edition's start page),
and a link from one edition's notebook to
the other's (``zh/00_start_here.ipynb``, ``../00_start_here.ipynb``) leads to its page
(site/_ext/attn_site.py). Jupyter Book turns the executed, nbval-checked notebooks into pages
without running them (``execute_notebooks: off``). Every script a page needs comes from the
site itself: MathJax 3, copied from the npm package pinned in site/package.json (installed by
``npm ci`` into site/node_modules), and the site's own scripts (site/_static/). Nothing is
fetched while building and no page loads anything from outside.

The explorers answer their controls without a kernel (``tools.live_states`` draws their
states, site/_static/attn-live.js shows them); a static figure is an ``<img>`` with its text
alternative (site/_ext/attn_site.py). So no page needs a widget manager: the book's copy of
each notebook leaves out its saved widget state, and the pages load no ipywidgets script.
"""
from __future__ import annotations

import argparse
import html
import json
import posixpath
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
SITE_SRC = REPO / "site"
NODE_MODULES = SITE_SRC / "node_modules"
BUILD = REPO / "build"
OUT = BUILD / "site"
START = "00_start_here"
# The guides, as pages of the English site: page name under guides/ -> the Markdown file of
# the repository (in the order of the table of contents).
GUIDES = {
    "setup": REPO / "docs" / "setup.md",
    "teaching": REPO / "docs" / "teaching.md",
    "performance": REPO / "docs" / "performance.md",
    "contributing": REPO / "CONTRIBUTING.md",
}
# The guides written in Chinese too, as pages of the Chinese site under guides/, each under the
# name of its English original (so that the language switch joins the two).
ZH_GUIDE_FILES = {
    "setup": REPO / "docs" / "zh" / "setup.md",
    "teaching": REPO / "docs" / "zh" / "teaching.md",
}
# Each edition's README: a guide's link to it leads to the edition's start page.
READMES = {"en": REPO / "README.md", "zh": REPO / "README.zh.md"}


@dataclass(frozen=True)
class Edition:
    """One language of the course as a site of its own.

    Attributes:
        code: the language's code in ``attn.language`` (``"en"``, ``"zh"``).
        notebooks: the edition's notebooks folder.
        prefix: the edition's folder in the site, ``""`` or ``"zh/"``.
        sphinx_language: Sphinx's ``language``, in which the theme writes its own words.
        title: the site's title.
        captions: the parts of the table of contents: lessons, worked solutions, guides.
    """

    code: str
    notebooks: Path
    prefix: str
    sphinx_language: str
    title: str
    captions: tuple[str, str, str]


EDITIONS = {
    "en": Edition("en", NOTEBOOKS, "", "en", "Self-attention and multi-head attention",
                  ("Lessons", "Worked solutions", "Guides")),
    "zh": Edition("zh", NOTEBOOKS / "zh", "zh/", "zh_CN", "自注意力与多头注意力",
                  ("课程", "参考答案", "指南")),
}
# The Chinese site's page that leads to the guides: to its own pages for those written in
# Chinese (ZH_GUIDE_FILES), to the English site's for the others. Each guide: its name in
# Chinese and what it holds; the page says which are in English only.
ZH_GUIDES = "guides"
ZH_GUIDES_PAGE = ("指南", "安装指南和教学指南有中文版；其余两份指南只有英文版，链接指向英文网站上的页面。", {
    "setup": ("安装指南", "在自己的电脑上安装并运行课程：torch 的 CPU 版、下载量与用时、镜像源、所需的 Python、"
                          "不用 make 的做法，以及在远程服务器上运行"),
    "teaching": ("教学指南", "在 JupyterHub、Binder 或学员的电脑上教学，作业与评分，以及网站、幻灯片、应用模式和讲义"),
    "performance": ("性能（Performance，英文）", "注意力的耗时与内存，以及基准测试的表格"),
    "contributing": ("参与开发（Contributing，英文）", "课程包 `attn`、测试、重新执行笔记本，以及用“埋入错误”来证明测试"),
})


def guide_files(language: str = "en") -> dict[str, Path]:
    """An edition's guides that are its pages: page name under ``guides/`` -> Markdown file."""
    return GUIDES if _edition(language).code == "en" else ZH_GUIDE_FILES


def zh_guides_text() -> str:
    """The Markdown of the Chinese site's page that leads to the guides (``zh/guides``): a
    guide written in Chinese is a page beside it (``guides/setup.md``), any other is the
    English site's (``../guides/performance.md``)."""
    title, intro, guides = ZH_GUIDES_PAGE
    if list(guides) != list(GUIDES):
        raise ValueError(f"ZH_GUIDES_PAGE: expected the guides {list(GUIDES)}, got {list(guides)}")
    lines = [f"# {title}", "", intro, ""]
    for page, (name, holds) in guides.items():
        where = f"guides/{page}.md" if page in ZH_GUIDE_FILES else f"../guides/{page}.md"
        lines.append(f"- [{name}]({where})：{holds}。")
    return "\n".join(lines) + "\n"


# What each page may load, copied from npm packages: destination folder -> (package folder,
# files or folders inside it). MathJax loads its input/output/ui components on demand,
# relative to its own script.
VENDOR = {
    "mathjax": ("mathjax/es5", ["tex-mml-chtml.js", "input", "output", "ui", "a11y", "adaptors", "sre"]),
}


def _edition(language: str) -> Edition:
    if language not in EDITIONS:
        raise ValueError(f"language: expected one of {sorted(EDITIONS)}, got {language!r}")
    return EDITIONS[language]


def _other_editions(edition: Edition) -> list[Edition]:
    return [e for e in EDITIONS.values() if e != edition]


def notebook_pages(language: str = "en") -> list[str]:
    """Every notebook of one edition as a page name (path under its notebooks folder, without
    .ipynb): the start page first, then the lessons, then the worked solutions. The English
    edition's folder holds the Chinese one (notebooks/zh/), which is no part of it."""
    edition = _edition(language)
    others = [e.notebooks for e in _other_editions(edition) if e.notebooks.is_relative_to(edition.notebooks)]
    names = sorted(str(p.relative_to(edition.notebooks).with_suffix("")) for p in edition.notebooks.rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and not any(p.is_relative_to(o) for o in others))
    if START not in names:
        raise FileNotFoundError(f"{edition.notebooks.relative_to(REPO)}/{START}.ipynb: the site's start page is missing")
    lessons = [n for n in names if "/" not in n and n != START]
    solutions = [n for n in names if "/" in n]
    return [START] + lessons + solutions


def guide_pages(language: str = "en") -> list[str]:
    """The pages of one edition that are no notebook: its guides (``guides/setup``, ...), after,
    in Chinese, the page that leads to every guide (``guides``)."""
    own = [f"guides/{name}" for name in guide_files(language)]
    return own if _edition(language).code == "en" else [ZH_GUIDES] + own


def site_pages(language: str | None = None) -> list[str]:
    """Every page of the site (of one edition, or of both) as its path under build/site/
    without .html: ``02_qkv``, ``guides/setup``, ``zh/02_qkv``, ``zh/guides``."""
    editions = EDITIONS.values() if language is None else [_edition(language)]
    return [e.prefix + name for e in editions for name in notebook_pages(e.code) + guide_pages(e.code)]


def edition_of(page: str) -> Edition:
    """The edition a page of the site belongs to.

    Args:
        page: the page's path under build/site/ without .html (``02_qkv``, ``zh/guides``).

    Returns:
        its ``Edition`` (``zh/02_qkv`` -> ``EDITIONS["zh"]``).
    """
    for edition in sorted(EDITIONS.values(), key=lambda e: -len(e.prefix)):  # zh/ before ""
        if page.startswith(edition.prefix) and page in site_pages(edition.code):
            return edition
    raise ValueError(f"page: expected a page of the site ({', '.join(site_pages()[:2])}, ...), got {page!r}")


def switch_target(page: str) -> tuple[str, bool]:
    """Where the language switch of a page leads: the same page in the other language (a
    notebook's twin, a guide's translation), or, for a page without one (a guide in English
    only, ``zh/guides``), the other edition's start page.

    Args:
        page: the page's path under build/site/ without .html (``02_qkv``, ``zh/02_qkv``).

    Returns:
        ``(target, twin)``: the other page's path under build/site/ without .html
        (``zh/02_qkv``, ``02_qkv``), and whether it is the page's twin.
    """
    edition = edition_of(page)
    other = _other_editions(edition)[0]
    name = page[len(edition.prefix):]
    twin = name in notebook_pages(other.code) + guide_pages(other.code)
    return other.prefix + (name if twin else START), twin


def write_toc(path: Path, language: str = "en") -> None:
    """An edition's table of contents: the start page, the lessons, the worked solutions, the guides."""
    edition = _edition(language)
    pages = notebook_pages(language)
    lessons = [n for n in pages[1:] if "/" not in n]
    solutions = [n for n in pages[1:] if n.startswith("solutions/")]
    lines = ["format: jb-book", f"root: {pages[0]}", "parts:"]
    for caption, names in zip(edition.captions, (lessons, solutions, guide_pages(language))):
        if names:
            lines += [f"  - caption: {caption}", "    chapters:"] + [f"      - file: {n}" for n in names]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def copy_vendor(dest: Path) -> None:
    """Copy the pinned npm files that pages load into ``dest`` (served as the site's _static)."""
    if not NODE_MODULES.is_dir():
        raise FileNotFoundError(f"{NODE_MODULES}: not found; install the site's JavaScript first: "
                                "npm ci --prefix site (make site does)")
    if dest.exists():
        shutil.rmtree(dest)
    for folder, (package, patterns) in VENDOR.items():
        src = NODE_MODULES / package
        for pattern in patterns:
            matches = sorted(src.glob(pattern))
            if not matches:
                raise FileNotFoundError(f"{src}/{pattern}: not in the npm package (site/package.json)")
            for m in matches:
                target = dest / folder / m.name
                target.parent.mkdir(parents=True, exist_ok=True)
                if m.is_dir():
                    shutil.copytree(m, target)
                else:
                    shutil.copy2(m, target)


# In Markdown: a fenced code block, a code span (neither holds links), an image from another
# site ![alt](https://...), or a link's target ](...).
_MARKDOWN = re.compile(r"(?P<fence>^(?P<mark>```|~~~).*?^(?P=mark)[ \t]*$)"
                       r"|(?P<span>(?P<ticks>`+)(?:(?!(?P=ticks)).)+?(?P=ticks))"
                       r"|!\[(?P<alt>[^\]]*)\]\([a-zA-Z][a-zA-Z0-9+.-]*:[^)\s]*\)"
                       r"|\[(?P<words>[^\[\]\n]*)\]\((?P<link>[^)\s]+)\)"
                       r"|\]\((?P<target>[^)\s]+)", re.M | re.S)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def repository_url() -> tuple[str, str]:
    """The repository's GitHub address and branch, from site/_config.yml
    (``""`` until the course is published: tools/lesson.py, ``repository_url``)."""
    import yaml

    config = yaml.safe_load((SITE_SRC / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return (config.get("url") or "").rstrip("/"), config.get("branch", "main")


def _page_of_file(path: Path) -> str | None:
    """The page of the site that shows a file of the repository, as the book's source names it
    (its path under build/site/, with the source's suffix): a guide -> ``guides/setup.md`` or
    ``zh/guides/setup.md``; a notebook -> ``02_qkv.ipynb`` or ``zh/02_qkv.ipynb``; an edition's
    README -> its start page, ``00_start_here.ipynb`` or ``zh/00_start_here.ipynb``. None for
    any other file."""
    for edition in EDITIONS.values():
        for name, file in guide_files(edition.code).items():
            if path == file.resolve():
                return f"{edition.prefix}guides/{name}.md"
        if path == READMES[edition.code].resolve():
            return f"{edition.prefix}{START}.ipynb"
    if path.suffix == ".ipynb":
        for edition in sorted(EDITIONS.values(), key=lambda e: -len(e.prefix)):  # zh/ before ""
            if path.is_relative_to(edition.notebooks.resolve()):
                return edition.prefix + path.relative_to(edition.notebooks.resolve()).as_posix()
    return None


def site_link(target: str, source: Path) -> str | None:
    """Where a link of a guide points on the site.

    Args:
        target: the link's target as the guide on GitHub has it (``../README.md``,
            ``teaching.md#app-mode``, ``../deploy/hub/z2jh-config.yaml``, ``#tests``, ``https://...``).
        source: the guide's Markdown file in the repository (``docs/setup.md``, ``docs/zh/setup.md``).

    Returns:
        the page that shows the target, relative to the guide's page, as the book's source
        links it: a guide -> its page (``setup.md#without-make``, the anchor kept: MyST gives
        headings GitHub's anchors; from a Chinese guide to one in English only,
        ``../../guides/performance.md``, which site/_ext/attn_site.py leads to the English
        site); an edition's README -> its start page (``../00_start_here.ipynb``), but a
        README section (``../README.md#the-notebooks``), which the site has not, -> the README
        on GitHub; a notebook -> its page; any other file or folder of the repository -> its
        address on GitHub, or None while that address is not set (site/_config.yml): the link's
        words then stand without a link. Addresses with a scheme and bare ``#anchors`` are kept.

    Raises:
        FileNotFoundError: the target is not a file or folder of the repository, or ``source``
            is no guide of the site.
    """
    if _SCHEME.match(target) or target.startswith("#"):
        return target
    here = _page_of_file(source.resolve())
    if here is None or not here.endswith(".md"):
        raise FileNotFoundError(f"{source}: not a guide of the site (tools/site.py, GUIDES and ZH_GUIDE_FILES)")
    path, hash_, fragment = target.partition("#")
    fragment = hash_ + fragment
    resolved = (source.parent / path).resolve()
    if not resolved.exists() or not resolved.is_relative_to(REPO):
        raise FileNotFoundError(f"{source.relative_to(REPO)}: the link {target!r} leads to no file of the repository")
    page = _page_of_file(resolved)
    a_readme_section = fragment and resolved in {readme.resolve() for readme in READMES.values()}
    if page is not None and not a_readme_section:
        return posixpath.relpath(page, posixpath.dirname(here)) + fragment
    url, branch = repository_url()
    if not url:  # not published yet: the file has no address on GitHub
        return None
    kind = "tree" if resolved.is_dir() else "blob"
    return f"{url}/{kind}/{branch}/{resolved.relative_to(REPO).as_posix()}{fragment}"


def copy_guides(dest: Path, language: str = "en") -> None:
    """Write each guide of an edition (``guide_files``) into ``dest`` (the book's guides/
    folder) as ``NAME.md``, with its links rewritten for the site (``site_link``) and each
    image from another site (the README's Binder badge) replaced by its text, since no page
    loads anything from outside; code is left alone."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, source in guide_files(language).items():
        def rewrite(m: re.Match, source: Path = source) -> str:
            if m.group("alt") is not None:
                return m.group("alt")
            if m.group("link") is not None:
                link = site_link(m.group("link"), source)
                return f"[{m.group('words')}]({link})" if link else m.group("words")
            if m.group("target") is None:
                return m.group(0)
            return "](" + (site_link(m.group("target"), source) or "#")
        text = _MARKDOWN.sub(rewrite, source.read_text(encoding="utf-8"))
        (dest / f"{name}.md").write_text(text, encoding="utf-8")


def write_config(path: Path, vendor: Path, language: str = "en") -> None:
    """An edition's Jupyter Book configuration: site/_config.yml with its paths filled in; the
    edition's title, Sphinx language and notebooks folder (for the Binder links); what the
    site's extension needs to join the editions (site/_ext/attn_site.py): where the edition
    lies in the site, the other edition's pages, and where each page's switch leads. An edition
    in a folder of the site (zh/) loads MathJax from the English site's _static/: one copy of it
    serves both."""
    import yaml

    edition = _edition(language)
    text = (SITE_SRC / "_config.yml").read_text(encoding="utf-8")
    for key, value in {"@EXT@": SITE_SRC / "_ext", "@STATIC@": SITE_SRC / "_static", "@VENDOR@": vendor}.items():
        text = text.replace(key, str(value))
    config = yaml.safe_load(text)
    config["title"] = edition.title
    config["repository"]["path_to_book"] = edition.notebooks.relative_to(REPO).as_posix()
    if not config["repository"].get("url"):  # not published yet: no launch button leads to Binder
        config.pop("launch_buttons", None)
        del config["repository"]["url"]
    sphinx = config["sphinx"]["config"]
    up = "../" * edition.prefix.count("/")  # from the edition's folder to the site's top
    if up:  # MathJax: one copy, in the English site's _static/
        sphinx["html_static_path"].remove(str(vendor))
        sphinx["mathjax_path"] = f"{up}../_static/{sphinx['mathjax_path']}"  # (relative to _static/)
    own = site_pages(language)
    sphinx.update({
        "language": edition.sphinx_language,
        "attn_site_prefix": edition.prefix,
        "attn_repository_url": repository_url()[0],
        "attn_site_elsewhere": [page for page in site_pages() if page not in own],
        "attn_site_switch": {page[len(edition.prefix):]: list(switch_target(page)) for page in own},
    })
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")


def _book_source(edition: Edition, book: Path) -> None:
    """The book's source: a copy of the edition's notebooks, and its pages that are no notebook."""
    others = {e.notebooks for e in _other_editions(edition)}
    skip = {".ipynb_checkpoints", "__pycache__", "_build"}
    shutil.copytree(edition.notebooks, book,
                    ignore=lambda folder, names: {n for n in names if n in skip or Path(folder, n) in others})
    clash = sorted(p.name for p in book.glob("guides*"))
    if clash:
        raise FileExistsError(f"{edition.notebooks}: {clash} would be hidden by the site's guides")
    copy_guides(book / "guides", edition.code)
    if edition.code == "zh":
        (book / f"{ZH_GUIDES}.md").write_text(zh_guides_text(), encoding="utf-8")


# --- the explorers, live without a kernel (tools/live_states.py, site/_static/attn-live.js) ----

LIVE = "_live"  # the site's folder of explorer states: pictures/ (both languages), en/, zh/
EXPLORER_CLASS = "attn-explorer"  # (attn.widgets._base.EXPLORER_CLASS)
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def explorer_outputs(notebook: dict) -> list[tuple[int, int]]:
    """Where a notebook shows its explorers: (cell, output) of each, in order. An explorer is
    a saved widget view whose model carries the explorers' CSS class."""
    state = notebook.get("metadata", {}).get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    explorers = {k for k, v in state.items() if EXPLORER_CLASS in v.get("state", {}).get("_dom_classes", [])}
    return [(i, j) for i, cell in enumerate(notebook["cells"])
            for j, out in enumerate(cell.get("outputs", []))
            if out.get("data", {}).get(_WIDGET_VIEW, {}).get("model_id") in explorers]


def live_faults() -> dict[str, str]:
    """What an explorer's readout says, in the current language, when a move cannot be shown:
    ``"states"`` when its states file cannot be loaded (missing, corrupt, short), ``"picture"``
    when the picture of a state is missing. Each keeps ``{live}``, where attn-live.js puts the
    link to the live notebook (on a page without one, the words ``tr("run the live notebook")``)."""
    from attn.language import tr

    return {"states": tr("This explorer's pictures could not be loaded, so it still shows the last setting: "
                         "move a control to try again, reload the page, or {live}.", live="{live}"),
            "picture": tr("This picture could not be loaded: reload the page, or {live}.", live="{live}")}


def live_figure(manifest: dict, ident: str, up: str) -> str:
    """The HTML of one explorer on the site: without JavaScript, its title, its picture at the
    notebook's setting with the text alternative, and the readout; with it, attn-live.js adds
    the controls from the spec in the ``<script>`` and answers them from the states file (or
    says in the readout why it cannot: ``live_faults``).

    Args:
        manifest: the explorer's states in one language (``live_states.draw_states``).
        ident: its name in the site (``live_states.explorer_id``).
        up: from the page to the site's top (``""``, ``"../"``).
    """
    from attn.language import language, tr

    base = f"{up}{LIVE}"
    picture, readout, alt = manifest["states"][manifest["start"]]
    with language(manifest["language"]):
        live_link = tr("run the live notebook")
        faults = live_faults()
    spec = {key: manifest[key] for key in ("controls", "start", "note")}
    spec.update(states=f"{base}/{manifest['language']}/{ident}.json", pictures=f"{base}/pictures/",
                live_link=live_link, faults=faults)
    data = json.dumps(spec, ensure_ascii=False).replace("</", "<\\/")
    return (f'<figure class="attn-live" id="live-{ident}" data-explorer="{ident}">'
            f'<figcaption class="attn-live-title">{manifest["title"]}</figcaption>'
            f'<div class="attn-live-controls"></div>'
            f'<img class="attn-live-picture" src="{base}/pictures/{picture}" alt="{html.escape(alt, quote=True)}">'
            f'<div class="attn-live-readout" role="status" aria-live="polite">{readout}</div>'
            f'<script type="application/json" class="attn-live-spec">{data}</script></figure>')


def add_live_explorers(book: Path, edition: Edition, manifests: dict[tuple[str, str], dict]) -> None:
    """Put each explorer of the book's notebooks on its page as a live figure (``live_figure``)
    in place of its saved widget view.

    Raises:
        ValueError: a notebook shows a different number of explorers than live_states knows.
    """
    from tools import live_states

    for name, recipes in live_states.recipes().items():
        path = book / f"{name}.ipynb"
        notebook = json.loads(path.read_text(encoding="utf-8"))
        places = explorer_outputs(notebook)
        if len(places) != len(recipes):
            raise ValueError(f"{edition.notebooks / path.name}: expected {len(recipes)} explorer(s) "
                             f"(tools/live_states.py), found {len(places)}")
        for position, (i, j) in enumerate(places):
            ident = live_states.explorer_id(name, position)
            manifest = manifests[ident, edition.code]
            _pic, _readout, alt = manifest["states"][manifest["start"]]
            notebook["cells"][i]["outputs"][j] = {
                "output_type": "display_data", "metadata": {},
                "data": {"text/html": live_figure(manifest, ident, "../" * edition.prefix.count("/")),
                         "text/plain": alt}}
        path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    for path in book.rglob("*.ipynb"):  # no page needs the saved widget state any more
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if notebook.get("metadata", {}).pop("widgets", None) is not None:
            path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")


# The theme's Font Awesome script (1.5 MB) redraws its icons as SVG; its style sheet already
# draws the same icons from Font Awesome's web fonts, which it ships. A page leaves it out.
_ICON_SCRIPT = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?')


def drop_icon_script(out: Path) -> int:
    """Remove the theme's Font Awesome script from every page under ``out``; how many pages."""
    changed = 0
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lean = _ICON_SCRIPT.sub("", text)
        if lean != text:
            page.write_text(lean, encoding="utf-8")
            changed += 1
    return changed


def copy_live(out: Path, folders: dict[tuple[str, str], Path]) -> None:
    """Copy the explorers' states into the site: every picture once into ``out/_live/pictures``,
    each explorer's states (without its controls, which its page holds) into
    ``out/_live/<language>/<id>.json``, and what was measured for them (07's times) into
    ``out/_live/measured.json`` (explorer -> the measurements)."""
    pictures = out / LIVE / "pictures"
    pictures.mkdir(parents=True, exist_ok=True)
    measured = {}
    for (ident, language), folder in folders.items():
        for picture in (folder / "pictures").iterdir():
            target = pictures / picture.name
            if not target.exists():
                shutil.copyfile(picture, target)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        (out / LIVE / language).mkdir(exist_ok=True)
        (out / LIVE / language / f"{ident}.json").write_text(
            json.dumps(manifest["states"], ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        if manifest["data"] is not None:
            measured[ident] = manifest["data"]
    (out / LIVE / "measured.json").write_text(json.dumps(measured, indent=1), encoding="utf-8")


def _start_book(edition: Edition, work: Path, vendor: Path, *, quiet: bool,
                manifests: dict[tuple[str, str], dict]) -> subprocess.Popen:
    """Start building one edition's book in ``work`` (its HTML: work/_build/html); Jupyter
    Book's output goes to work/build.log, or to the terminal unless ``quiet``."""
    work.mkdir(parents=True)
    write_config(work / "_config.yml", vendor, edition.code)
    write_toc(work / "_toc.yml", edition.code)
    _book_source(edition, work / "book")
    add_live_explorers(work / "book", edition, manifests)
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(work / "book"),
           "--config", str(work / "_config.yml"), "--toc", str(work / "_toc.yml"),
           "--path-output", str(work), "--builder", "html"]
    if not quiet:
        return subprocess.Popen(cmd, cwd=REPO)
    with (work / "build.log").open("w", encoding="utf-8") as log:  # (the process keeps it open)
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)


def build(out: Path = OUT, *, quiet: bool = True, log: Callable[[str], None] = print) -> dict[str, float]:
    """Build the website into ``out``: the English edition there, the Chinese one in ``out/zh/``.
    The two books are built at once, each by its own Jupyter Book process.

    Returns:
        each edition's code -> the seconds from the start until its book was built
        (``{"en": 31.2, "zh": 30.5}``; the largest is the build's time, but for the copy to ``out``).
    """
    t0 = time.monotonic()
    work = BUILD / "site-work"
    if work.exists():  # from scratch: Sphinx keeps stale static files and cached pages
        shutil.rmtree(work)
    work.mkdir(parents=True)
    vendor = work / "vendor"
    copy_vendor(vendor)
    from tools import live_states

    folders = live_states.build_states(tuple(EDITIONS), log=log)
    manifests = {key: json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
                 for key, folder in folders.items()}
    builds = {e.code: _start_book(e, work / e.code, vendor, quiet=quiet, manifests=manifests)
              for e in EDITIONS.values()}
    seconds = {}
    while len(seconds) < len(builds):  # (each book's time: until its process ends)
        for code, process in builds.items():
            if code not in seconds and process.poll() is not None:
                seconds[code] = time.monotonic() - t0
        time.sleep(0.1)
    failed = {code: p.returncode for code, p in builds.items() if p.returncode != 0}
    if failed:
        logs = "".join(f"\n--- {code}: {work / code / 'build.log'}\n" + (work / code / "build.log").read_text(encoding="utf-8")[-3000:]
                       for code in failed) if quiet else ""
        raise RuntimeError(f"jupyter-book failed (edition: return code): {failed}{logs}")
    if out.exists():
        shutil.rmtree(out)
    for edition in EDITIONS.values():  # English first: the Chinese site is a folder of it
        shutil.copytree(work / edition.code / "_build" / "html", out / edition.prefix)
    copy_live(out, folders)
    drop_icon_script(out)
    return seconds


def folder_size(folder: Path, *, leave_out: tuple[Path, ...] = ()) -> int:
    """The bytes of the files under ``folder``, those under ``leave_out`` left out."""
    return sum(p.stat().st_size for p in folder.rglob("*")
               if p.is_file() and not any(p.is_relative_to(x) for x in leave_out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default build/site)")
    parser.add_argument("--verbose", action="store_true", help="show Jupyter Book's output")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    seconds = build(args.out, quiet=not args.verbose)
    print(f"website: {time.monotonic() - t0:.1f} s, both books built at once")
    folders = {e.code: args.out / e.prefix for e in EDITIONS.values()}
    for code, folder in folders.items():
        inner = tuple(f for f in folders.values() if f != folder and f.is_relative_to(folder))
        print(f"website ({code}): {folder / 'index.html'} ({len(notebook_pages(code))} notebook pages, "
              f"{len(guide_pages(code))} other pages, {seconds[code]:.1f} s, "
              f"{folder_size(folder, leave_out=inner) / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --- a built page in a browser ------------------------------------------------------------

_RENDERED = """() => {
  if (document.readyState !== 'complete') return false;
  if (document.querySelector('script[type="application/vnd.jupyter.widget-view+json"]')) return false;
  if (document.querySelector('figure.attn-live:not([data-live])')) return false;
  return [...document.images].every((img) => img.complete);
}"""


def wait_rendered(page: object, timeout: float = 30) -> None:
    """Wait until a page of the site (a Playwright page) shows everything: loaded, every
    explorer's controls drawn (site/_static/attn-live.js), every image decoded, MathJax done
    typesetting. A saved widget view left on the page fails it: no page loads a widget
    manager, so it would never be drawn."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(_RENDERED, timeout=timeout * 1000)
    except PlaywrightTimeout:
        state = page.evaluate("""() => ({ready: document.readyState,
            views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
            waiting: document.querySelectorAll('figure.attn-live:not([data-live])').length,
            loading: [...document.images].filter((i) => !i.complete).map((i) => i.src.slice(0, 80))})""")
        todo = (" A saved widget view is drawn on the site only as a live explorer (the explorer cell of a "
                "lesson, tools/explorer_cells.py says what one is) or as a figure of attn.drawing.figures."
                "show_figure: a solutions notebook must show no explorer (remove the explorer cell from it and "
                "re-execute it with python -m tools.execute); a lesson's explorer the site cannot build stops "
                "the build with a message naming its cell (tools/live_states.py)." if state["views"] else "")
        raise RuntimeError(f"{page.url}: not rendered after {timeout} s: {state['views']} saved widget views "
                           f"(no widget manager draws them), {state['waiting']} explorers without their "
                           f"controls; document {state['ready']}; images still loading: {state['loading']}."
                           f"{todo}") from None
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise.then(() => true) : true")
