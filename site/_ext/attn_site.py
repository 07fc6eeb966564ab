"""Sphinx extension of the course website.

- A "run it live" line under the title of every notebook page. The line links the page's notebook on Binder twice: in JupyterLab (code and explorers) and in
Voilà's app mode (explorers only, code hidden). The Binder address is built from the book's
``repository`` settings in site/_config.yml (``OWNER/REPO`` until the course is published).
- Each script tag once: with Sphinx 7.4, the inline scripts that sphinx-thebe adds while
  reading are written twice into each page, and the second ``const THEBE_JS_URL`` is an
  error in the browser.
"""
from __future__ import annotations

from html import escape
from urllib.parse import urlparse

from sphinx.application import Sphinx


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
    app.connect("html-page-context", _run_live)
    app.connect("html-page-context", _scripts_once, priority=900)  # after myst-nb adds its own
    return {"parallel_read_safe": True, "parallel_write_safe": True}
