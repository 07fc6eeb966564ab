"""Build the course website offline: ``make site`` (``python -m tools.site``) -> build/site/.

Jupyter Book 1 turns the executed, nbval-checked notebooks into pages without running them
(``execute_notebooks: off``). Every script a page needs comes from the site itself:

- the widget manager ``@jupyter-widgets/html-manager`` (its ``embed.js``, which renders the
  explorers from the widget state saved in each notebook, with no require.js),
- MathJax 3,

both copied from the npm packages pinned in site/package.json (installed by ``npm ci`` into
site/node_modules). Nothing is fetched while building and no page loads anything from outside.

The guides (docs/*.md and CONTRIBUTING.md) are pages of the site too, under ``guides/``: the
book's source is a copy of notebooks/ with the guides beside it, their links rewritten for the
site (``copy_guides``).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
SITE_SRC = REPO / "site"
NODE_MODULES = SITE_SRC / "node_modules"
BUILD = REPO / "build"
OUT = BUILD / "site"
START = "00_start_here"
# The guides, as pages of the site: page name under guides/ -> the Markdown file of the
# repository (in the order of the table of contents).
GUIDES = {
    "setup": REPO / "docs" / "setup.md",
    "teaching": REPO / "docs" / "teaching.md",
    "performance": REPO / "docs" / "performance.md",
    "contributing": REPO / "CONTRIBUTING.md",
}

# What each page may load, copied from npm packages: destination folder -> (package folder,
# files or folders inside it). MathJax loads its input/output/ui components on demand,
# relative to its own script.
VENDOR = {
    "html-manager": ("@jupyter-widgets/html-manager/dist",
                     ["embed.js", "embed.js.LICENSE.txt", "*.woff", "*.woff2", "*.ttf", "*.eot", "*.svg"]),
    "mathjax": ("mathjax/es5", ["tex-mml-chtml.js", "input", "output", "ui", "a11y", "adaptors", "sre"]),
}


def notebook_pages() -> list[str]:
    """Every notebook of the course as a page name (path under notebooks/ without .ipynb),
    the start page first, then the lessons, then the worked solutions. The site is the
    English edition's: the Chinese twins (notebooks/zh/) are not pages of it yet."""
    names = sorted(str(p.relative_to(NOTEBOOKS).with_suffix("")) for p in NOTEBOOKS.rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and p.relative_to(NOTEBOOKS).parts[0] != "zh")
    if START not in names:
        raise FileNotFoundError(f"notebooks/{START}.ipynb: the site's start page is missing")
    lessons = [n for n in names if "/" not in n and n != START]
    others = [n for n in names if "/" in n]
    return [START] + lessons + others


def guide_pages() -> list[str]:
    """Every guide as a page name of the site: ``guides/setup``, ..."""
    return [f"guides/{name}" for name in GUIDES]


def write_toc(path: Path) -> None:
    """The book's table of contents: the start page, the lessons, the worked solutions, the guides."""
    pages = notebook_pages()
    lessons = [n for n in pages[1:] if "/" not in n]
    solutions = [n for n in pages[1:] if n.startswith("solutions/")]
    lines = ["format: jb-book", f"root: {pages[0]}", "parts:"]
    for caption, names in (("Lessons", lessons), ("Worked solutions", solutions), ("Guides", guide_pages())):
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
                       r"|\]\((?P<target>[^)\s]+)", re.M | re.S)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def repository_url() -> tuple[str, str]:
    """The repository's GitHub address and branch, from site/_config.yml
    (``https://github.com/OWNER/REPO`` until the course is published)."""
    import yaml

    config = yaml.safe_load((SITE_SRC / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return config["url"].rstrip("/"), config.get("branch", "main")


def site_link(target: str, source: Path) -> str:
    """Where a link of a guide points on the site.

    Args:
        target: the link's target as the guide on GitHub has it (``../README.md``,
            ``teaching.md#app-mode``, ``../hub/z2jh-config.yaml``, ``#tests``, ``https://...``).
        source: the guide's Markdown file in the repository.

    Returns:
        a guide -> that guide's page (``setup.md#without-make``, the anchor kept: MyST gives
        headings GitHub's anchors); the README -> the start page (``../00_start_here.ipynb``),
        but a README section (``../README.md#the-notebooks``), which the site has not, ->
        the README on GitHub; a notebook -> its page; any other file or folder of the
        repository -> its address on GitHub. Addresses with a scheme and bare ``#anchors``
        are kept.

    Raises:
        FileNotFoundError: the target is not a file or folder of the repository.
    """
    if _SCHEME.match(target) or target.startswith("#"):
        return target
    path, hash_, fragment = target.partition("#")
    fragment = hash_ + fragment
    resolved = (source.parent / path).resolve()
    if not resolved.exists() or not resolved.is_relative_to(REPO):
        raise FileNotFoundError(f"{source.relative_to(REPO)}: the link {target!r} leads to no file of the repository")
    guides = {file.resolve(): name for name, file in GUIDES.items()}
    if resolved in guides:
        return f"{guides[resolved]}.md{fragment}"
    if resolved == (REPO / "README.md").resolve() and not fragment:
        return f"../{START}.ipynb"
    if resolved.suffix == ".ipynb" and resolved.is_relative_to(NOTEBOOKS.resolve()):
        return f"../{resolved.relative_to(NOTEBOOKS.resolve()).as_posix()}{fragment}"
    url, branch = repository_url()
    kind = "tree" if resolved.is_dir() else "blob"
    return f"{url}/{kind}/{branch}/{resolved.relative_to(REPO).as_posix()}{fragment}"


def copy_guides(dest: Path) -> None:
    """Write each guide into ``dest`` (the book's guides/ folder) as ``NAME.md``, with its
    links rewritten for the site (``site_link``) and each image from another site (the
    README's Binder badge) replaced by its text, since no page loads anything from outside;
    code is left alone."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, source in GUIDES.items():
        def rewrite(m: re.Match, source: Path = source) -> str:
            if m.group("alt") is not None:
                return m.group("alt")
            if m.group("target") is None:
                return m.group(0)
            return "](" + site_link(m.group("target"), source)
        text = _MARKDOWN.sub(rewrite, source.read_text(encoding="utf-8"))
        (dest / f"{name}.md").write_text(text, encoding="utf-8")


def write_config(path: Path, vendor: Path) -> None:
    text = (SITE_SRC / "_config.yml").read_text(encoding="utf-8")
    for key, value in {"@EXT@": SITE_SRC / "_ext", "@STATIC@": SITE_SRC / "_static", "@VENDOR@": vendor}.items():
        text = text.replace(key, str(value))
    path.write_text(text, encoding="utf-8")


def build(out: Path = OUT, *, quiet: bool = True) -> float:
    """Build the website into ``out``; returns the seconds it took."""
    t0 = time.monotonic()
    work = BUILD / "site-work"
    if work.exists():  # from scratch: Sphinx keeps stale static files and cached pages
        shutil.rmtree(work)
    work.mkdir(parents=True)
    vendor = work / "vendor"
    copy_vendor(vendor)
    write_config(work / "_config.yml", vendor)
    write_toc(work / "_toc.yml")
    book = work / "book"  # the book's source: the notebooks, and the guides beside them
    shutil.copytree(NOTEBOOKS, book, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "_build"))
    if (book / "guides").exists():
        raise FileExistsError(f"{NOTEBOOKS}/guides: the site's guides/ folder would hide it")
    copy_guides(book / "guides")
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book),
           "--config", str(work / "_config.yml"), "--toc", str(work / "_toc.yml"),
           "--path-output", str(work), "--builder", "html"]
    r = subprocess.run(cmd, capture_output=quiet, text=True, cwd=REPO)
    if r.returncode != 0:
        raise RuntimeError(f"jupyter-book failed ({r.returncode}):\n{r.stdout}\n{r.stderr}" if quiet
                           else f"jupyter-book failed ({r.returncode})")
    html = work / "_build" / "html"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(html, out)
    return time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default build/site)")
    parser.add_argument("--verbose", action="store_true", help="show Jupyter Book's output")
    args = parser.parse_args(argv)
    seconds = build(args.out, quiet=not args.verbose)
    print(f"website: {args.out / 'index.html'} ({len(notebook_pages())} notebook pages, "
          f"{len(guide_pages())} guides, {seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --- a built page in a browser ------------------------------------------------------------

_RENDERED = """() => {
  if (document.readyState !== 'complete') return false;
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  if (document.querySelectorAll('.widget-subarea').length < views.length) return false;
  return [...document.images].every((img) => img.complete);
}"""


def wait_rendered(page: object, timeout: float = 30) -> None:
    """Wait until a page of the site (a Playwright page) shows everything: loaded, every saved
    widget rendered by the widget manager, every image decoded, MathJax done typesetting."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(_RENDERED, timeout=timeout * 1000)
    except PlaywrightTimeout:
        state = page.evaluate("""() => ({ready: document.readyState,
            saved: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
            rendered: document.querySelectorAll('.widget-subarea').length,
            loading: [...document.images].filter((i) => !i.complete).map((i) => i.src.slice(0, 80))})""")
        raise RuntimeError(f"{page.url}: not rendered after {timeout} s: {state['saved']} saved widgets, "
                           f"{state['rendered']} rendered by the widget manager; document "
                           f"{state['ready']}; images still loading: {state['loading']}") from None
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise.then(() => true) : true")
