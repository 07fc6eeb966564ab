"""Sphinx extension of the course website.

- A "run it live" line under the title of every notebook page. The line links the page's notebook on Binder twice: in JupyterLab (code and explorers) and in
Voilà's app mode (explorers only, code hidden). The Binder address is built from the book's
``repository`` settings in site/_config.yml (``OWNER/REPO`` until the course is published).
- Every static figure as a picture with its text alternative: ``attn.figures.show_figure``
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
import re
from html import escape
from pathlib import Path
from urllib.parse import urlparse

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
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
        url = folder_url(options["repository_url"], options.get("repository_branch", "main"), path)
        xref.replace_self(nodes.reference("", "", *xref.children, refuri=url, internal=False))


def figure_alts(nb: dict) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """The static figures of a notebook and their text alternatives.

    A static figure is an output with an image/png and ``{"image/png": {"alt": ...}}`` in its
    metadata (``attn.figures.show_figure``); an explorer's output has no such metadata.

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
    folder = options.get("path_to_docs", "").strip("/")
    path = f"{folder}/{pagename}.ipynb" if folder else f"{pagename}.ipynb"
    urls = binder_urls(options["repository_url"], options.get("repository_branch", "main"), path)
    line = (
        '<p class="attn-run-live">This page shows the notebook as it was last run; its explorers '
        "show their saved pictures and do not redraw here. "
        f'<a class="attn-binder-lab" href="{escape(urls["lab"])}">Run it live on Binder</a> '
        f'(JupyterLab) or <a class="attn-binder-voila" href="{escape(urls["voila"])}">open it in '
        "app mode</a> (Voilà: explorers only, code hidden).</p>"
    )
    body = context.get("body", "")
    # Under the page's title (the notebook's first heading), or on top if it has none.
    context["body"] = body.replace("</h1>", "</h1>" + line, 1) if "</h1>" in body else line + body


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
    app.connect("doctree-read", _figure_alt)
    app.connect("doctree-read", _folder_links)
    app.connect("html-page-context", _run_live)
    app.connect("html-page-context", _scripts_once, priority=900)  # after myst-nb adds its own
    return {"parallel_read_safe": True, "parallel_write_safe": True}
