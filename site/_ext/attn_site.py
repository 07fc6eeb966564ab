"""Sphinx extension of the course website (one Sphinx project per language: tools/site.py).

- A language switch at the top of every page: a link to the same page in the other language
  (a page without a twin: the other edition's start page), named for screen readers and
  marked with the language it leads to. tools/site.py gives each edition where its pages
  lie in the site (``attn_site_prefix``) and where each page's switch leads
  (``attn_site_switch``).
- A link from one edition to the other (``zh/00_start_here.ipynb`` in English,
  ``../00_start_here.ipynb`` in Chinese, ``../guides/setup.md`` in Chinese) leads to that
  page of the other site (``attn_site_elsewhere``: its pages), which this Sphinx project
  does not hold.
- A "run it live" line under the title of every notebook page. The line links the page's notebook on Binder twice: in JupyterLab (code and explorers) and in
Voilà's app mode (explorers only, code hidden). The Binder address is built from the book's
``repository`` settings in site/_config.yml; while ``url`` is empty (the course not published
yet), pages have no such line.
- Every static figure as a picture with its text alternative: ``attn.drawing.figures.show_figure``
  stores its description in the output's metadata as ``{"image/png": {"alt": ...}}``. Where
  the output is a picture widget's view (what JupyterLab and Voilà show), the page gets the
  figure's PNG as an ``<img alt=...>`` instead of the widget; where it is a plain image/png,
  the description becomes the image's ``alt`` (Sphinx would write the PNG's file name).
- A link to a folder of the book (``[solutions/](solutions/)`` in a notebook, which opens the
  folder in JupyterLab) leads to that folder on GitHub: a folder has no page on the site.
- Each script tag once: with Sphinx 7.4, the inline scripts that sphinx-thebe adds while
  reading are written twice into each page, and the second ``const THEBE_JS_URL`` is an
  error in the browser.
"""
from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import re
from html import escape
from pathlib import Path
from urllib.parse import urlparse

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The words the extension writes, in each language of the site (Sphinx's language up to "_"):
# the language's code for the lang attribute and its own name; what a screen reader says of a
# switch that leads to it (to a page's twin, to its start page); the name of the switch on a
# page in that language; the "run it live" line.
WORDS = {
    "en": {
        "lang": "en", "name": "English", "twin": "This page in English",
        "start": "The English course's start page", "switch": "Language",
        "run_live": 'This page shows the notebook as it was last run. Its explorers answer their controls '
                    'here too, from pictures the explorers drew when the site was built; to change the '
                    'code or type your own input, <a class="attn-binder-lab" href="{lab}">run it live on Binder</a> '
                    '(JupyterLab) or <a class="attn-binder-voila" href="{voila}">open it in app mode</a> '
                    "(Voilà: explorers only, code hidden).",
    },
    "zh": {
        "lang": "zh-CN", "name": "中文", "twin": "本页的中文版", "start": "中文版课程的起始页", "switch": "语言",
        "run_live": "本页显示的是笔记本最近一次运行后的样子。其中的探索器在这里也能响应控件，所显示的图片是建站时由探索器本身预先画好的；若要修改代码或输入自己的内容，可以"
                    '<a class="attn-binder-lab" href="{lab}">在 Binder 上实时运行</a>（JupyterLab），或'
                    '<a class="attn-binder-voila" href="{voila}">以应用模式打开</a>（Voilà：只有探索器，代码隐藏）。',
    },
}
_MODEL_ID = re.compile(r"[0-9a-f]{32}")


def binder_urls(repository_url: str, branch: str, path: str) -> dict[str, str]:
    """Binder addresses that open ``path`` (a file of the repository) in JupyterLab and in Voilà.

    Args:
        repository_url: ``https://github.com/OWNER/REPO``.
        branch: the branch Binder builds.
        path: the notebook, relative to the repository root (``notebooks/02_qkv.ipynb``).

    Returns:
        ``{"lab": url, "voila": url}``.
    """
    parts = urlparse(repository_url)
    owner_repo = parts.path.strip("/")
    if parts.netloc != "github.com" or owner_repo.count("/") != 1:
        raise ValueError(f"repository_url: expected https://github.com/OWNER/REPO, got {repository_url!r}")
    base = f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath="
    return {"lab": f"{base}lab/tree/{path}", "voila": f"{base}voila/render/{path}"}


def folder_url(repository_url: str, branch: str, path: str) -> str:
    """The GitHub address of a folder of the repository.

    Args:
        repository_url: ``https://github.com/OWNER/REPO``.
        branch: the branch.
        path: the folder, relative to the repository root (``notebooks/solutions``).

    Returns:
        ``https://github.com/OWNER/REPO/tree/main/notebooks/solutions``.
    """
    parts = urlparse(repository_url)
    if parts.netloc != "github.com" or parts.path.strip("/").count("/") != 1:
        raise ValueError(f"repository_url: expected https://github.com/OWNER/REPO, got {repository_url!r}")
    return f"https://github.com/{parts.path.strip('/')}/tree/{branch}/{path.strip('/')}"


def _folder_links(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    options = app.config.html_theme_options
    srcdir = Path(app.srcdir).resolve()
    for xref in list(doctree.findall(addnodes.pending_xref)):
        if xref.get("reftype") != "myst" or xref.get("refdomain"):
            continue  # (links MyST resolved to a page have the "doc" domain)
        target = xref["reftarget"].split("#", 1)[0]
        folder = Path(env.relfn2path(target, env.docname)[1]).resolve() if target else None
        if folder is None or not folder.is_dir() or not folder.is_relative_to(srcdir):
            continue
        book = options.get("path_to_docs", "").strip("/")
        path = "/".join(p for p in (book, folder.relative_to(srcdir).as_posix()) if p and p != ".")
        if not app.config.attn_repository_url:  # no address yet: the words, unlinked
            xref.replace_self(nodes.inline("", "", *xref.children))
            continue
        url = folder_url(app.config.attn_repository_url, options.get("repository_branch", "main"), path)
        xref.replace_self(nodes.reference("", "", *xref.children, refuri=url, internal=False))


def figure_alts(nb: dict) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """The static figures of a notebook and their text alternatives.

    A static figure is an output with an image/png and ``{"image/png": {"alt": ...}}`` in its
    metadata (``attn.drawing.figures.show_figure``); an explorer's output has no such metadata.

    Args:
        nb: the notebook, as its JSON.

    Returns:
        ``(by_widget, by_file)``: widget model id -> (base64 PNG, alt) for the figures shown
        as a picture widget, and the SHA-256 of the PNG (the name myst-nb gives its file) ->
        alt for those shown as a plain image/png.
    """
    by_widget, by_file = {}, {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            alt = out.get("metadata", {}).get("image/png", {}).get("alt")
            if "image/png" not in data or not alt:
                continue
            png, alt = "".join(data["image/png"]), " ".join(str(alt).split())
            if WIDGET_VIEW in data:
                by_widget[data[WIDGET_VIEW]["model_id"]] = (png, alt)
            else:
                by_file[hashlib.sha256(base64.b64decode(png)).hexdigest()] = alt
    return by_widget, by_file


def _figure_alt(app: Sphinx, doctree: nodes.document) -> None:
    path = Path(app.env.doc2path(app.env.docname))
    if path.suffix != ".ipynb":
        return
    by_widget, by_file = figure_alts(json.loads(path.read_text(encoding="utf-8")))
    for image in doctree.findall(nodes.image):
        alt = by_file.get(Path(image.get("uri", "")).stem)
        if alt and not image.get("alt"):
            image["alt"] = alt
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if WIDGET_VIEW not in text:
            continue
        model = _MODEL_ID.search(text)
        if model and model.group(0) in by_widget:
            png, alt = by_widget[model.group(0)]
            img = f'<img class="attn-figure" alt="{escape(alt, quote=True)}" src="data:image/png;base64,{png}">'
            raw.replace_self(nodes.raw(text=img, format="html"))


def _run_live(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    if doctree is None or not str(app.env.doc2path(pagename)).endswith(".ipynb"):
        return
    options = app.config.html_theme_options
    if not app.config.attn_repository_url:
        return  # the repository's address is not set (site/_config.yml): no Binder to point at
    folder = options.get("path_to_docs", "").strip("/")
    path = f"{folder}/{pagename}.ipynb" if folder else f"{pagename}.ipynb"
    urls = binder_urls(app.config.attn_repository_url, options.get("repository_branch", "main"), path)
    run_live = _words(app)["run_live"].format(lab=escape(urls["lab"]), voila=escape(urls["voila"]))
    line = f'<p class="attn-run-live">{run_live}</p>'
    body = context.get("body", "")
    # Under the page's title (the notebook's first heading), or on top if it has none.
    context["body"] = body.replace("</h1>", "</h1>" + line, 1) if "</h1>" in body else line + body


def _words(app: Sphinx) -> dict[str, str]:
    """The words of the page's language (Sphinx's ``language``: ``en``, ``zh_CN``)."""
    code = (app.config.language or "en").split("_")[0]
    if code not in WORDS:
        raise ValueError(f"language: expected one of {sorted(WORDS)} (up to '_'), got {app.config.language!r}")
    return WORDS[code]


def page_url(target: str, page: str) -> str:
    """The relative address of one page of the site from another.

    Args:
        target: the page led to, its path under the site without .html (``zh/02_qkv``).
        page: the page the link is on, the same way (``solutions/02_qkv_solutions``).

    Returns:
        ``../zh/02_qkv.html``.
    """
    return posixpath.relpath(f"{target}.html", posixpath.dirname(page) or ".")


def switch_html(target: str, page: str, *, twin: bool, to: dict[str, str], here: dict[str, str]) -> str:
    """The language switch of ``page``: a link to ``target`` (both paths under the site without
    .html), in the language of ``to`` (its words, ``WORDS[...]``) on a page in the language of
    ``here``; ``twin``: whether ``target`` is the same page (else the other edition's start)."""
    name = to["twin"] if twin else to["start"]
    return (f'<nav class="attn-language" aria-label="{escape(here["switch"])}">'
            f'<a class="attn-language-switch" href="{escape(page_url(target, page))}" hreflang="{to["lang"]}" '
            f'lang="{to["lang"]}" aria-label="{escape(name)}">{escape(to["name"])}</a></nav>')


def _other_words(app: Sphinx) -> dict[str, str]:
    here = _words(app)
    others = [w for w in WORDS.values() if w is not here]
    if len(others) != 1:
        raise ValueError(f"WORDS: expected two languages, got {sorted(WORDS)}")
    return others[0]


def _language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    switch = app.config.attn_site_switch
    if doctree is None or pagename not in switch:
        return
    target, twin = switch[pagename]
    html = switch_html(target, app.config.attn_site_prefix + pagename, twin=twin, to=_other_words(app),
                       here=_words(app))
    context["body"] = html + context.get("body", "")


def _links_to_the_other_edition(app: Sphinx, doctree: nodes.document) -> None:
    elsewhere = set(app.config.attn_site_elsewhere)
    page = app.config.attn_site_prefix + app.env.docname
    for xref in list(doctree.findall(addnodes.pending_xref)):
        if xref.get("reftype") != "myst" or xref.get("refdomain"):
            continue  # (links MyST resolved to a page of this edition have the "doc" domain)
        path, _, fragment = xref["reftarget"].partition("#")
        stem, suffix = posixpath.splitext(posixpath.normpath(posixpath.join(posixpath.dirname(page), path)))
        if suffix not in (".ipynb", ".md") or stem not in elsewhere:
            continue
        url = page_url(stem, page) + (f"#{fragment}" if fragment else "")
        xref.replace_self(nodes.reference("", "", *xref.children, refuri=url, internal=True))


def _scripts_once(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    seen, unique = set(), []
    for script in context.get("script_files", []):
        # (the same inline script comes once with filename None and once with "")
        key = (getattr(script, "filename", script) or "", repr(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app: Sphinx) -> dict[str, object]:
    app.add_config_value("attn_site_prefix", "", "html", types=[str])
    # The repository's address as site/_config.yml sets it, "" until it is published (Jupyter Book
    # puts its own repository in the theme's repository_url when ours is empty: never read that).
    app.add_config_value("attn_repository_url", "", "html", types=[str])
    app.add_config_value("attn_site_elsewhere", [], "html", types=[list])
    app.add_config_value("attn_site_switch", {}, "html", types=[dict])
    app.connect("doctree-read", _figure_alt)
    app.connect("doctree-read", _links_to_the_other_edition)
    app.connect("doctree-read", _folder_links)
    app.connect("html-page-context", _run_live)
    app.connect("html-page-context", _language_switch)
    app.connect("html-page-context", _scripts_once, priority=900)  # after myst-nb adds its own
    return {"parallel_read_safe": True, "parallel_write_safe": True}
