"""The course website (``make site``) and the handouts (``make handouts``), in a real browser:
its pages. Its explorers, live without a kernel, are tests/delivery/test_site_live.py's.

The site is built once for the run (tests/conftest.py, ``built_site``: as ``make site`` builds
it, from the committed notebooks, without running them): the English site, and the Chinese one
in its folder zh/. It is served on 127.0.0.1, and every lesson page of both, a solutions page
of each, a guide of each and the Chinese page of the guides are opened once, in headless
Chromium with every request outside that server refused (the other pages are of a kind opened:
VISITED and BROWSED below); axe-core (npm, site/package.json) checks each, and each notebook page
opened is printed there as its handout (``handouts.print_page``, as ``make handouts`` prints
it). The guides (docs/*.md, CONTRIBUTING.md) are pages of the English site, in its table of
contents; those written in Chinese (docs/zh/*.md) are pages of the Chinese site, whose page of
the guides leads to them and to the English-only ones. Every link and anchor of the course's
pages leads to a page or an id that the built site has, and every page's language switch leads
to its twin in the other language (a guide's: its translation), and back.

Without Chromium, the site's npm packages or a CJK font the tests are skipped,
saying how to enable them; under CI (CI=true) they fail instead.
"""
from __future__ import annotations

import io
import json
import posixpath
import re
import time
import unicodedata
from collections import Counter
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from PIL import Image

from _browser import SERIOUS, axe_violations, watched_page
from _pictures import explorer_outputs, static_figures
from _support import unavailable
from attn.language import language, tr
from attn.widgets._base import RUN_TO_MOVE
from tools import handouts, site
from tools.lab import VIEWPORT

PAGES = handouts.handout_pages()  # every notebook page, English then Chinese: 02_qkv, zh/02_qkv
# The pages opened in the browser (rendered, checked by axe-core, printed as handouts): every
# lesson, and of the solutions, which are pages of the same kind as the lessons, one per
# language; every page's links and files are checked without a browser (below).
VISITED = [p for p in PAGES if "solutions/" not in p
           or p.endswith("solutions/12_transformer_block_solutions")]
ZH = "zh/"  # the Chinese site's folder in the site
GUIDES = site.guide_pages()  # the English site's guides: guides/setup, ...
ZH_GUIDES = [ZH + p for p in site.guide_pages("zh") if p != site.ZH_GUIDES]  # the Chinese ones: zh/guides/setup, ...
OTHERS = [p for p in site.site_pages() if p not in PAGES]  # the guides, and zh/guides


def guide_source(page: str) -> Path:
    """The Markdown file a guide's page shows: ``guides/setup`` -> docs/setup.md,
    ``zh/guides/setup`` -> docs/zh/setup.md."""
    edition = site.edition_of(page)
    return site.guide_files(edition.code)[page[len(edition.prefix):].split("/", 1)[1]]


# The other pages opened in the browser: the longest guide of each language (the guides are pages
# of one kind, made from Markdown by one recipe, and every guide's links, files and heading are
# checked without a browser, below), and the Chinese site's page that leads to them.
BROWSED = ([max(g, key=lambda name: guide_source(name).stat().st_size) for g in (GUIDES, ZH_GUIDES)]
           + [p for p in OTHERS if p not in GUIDES + ZH_GUIDES])
LANG = {"en": "en", "zh": "zh-CN"}  # each edition's language, as HTML's lang attribute says it
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def notebook_of(page: str) -> Path:
    """The notebook a page of the site shows: ``zh/02_qkv`` -> notebooks/zh/02_qkv.ipynb."""
    edition = site.edition_of(page)
    return edition.notebooks / f"{page[len(edition.prefix):]}.ipynb"


# In the page: every image decoded with pixels that are not all one colour; the text a reader
# sees outside code (no raw $$ left by a failed MathJax, no widget repr).
_IMAGES = """() => [...document.images].map((img) => {
  const r = {src: img.currentSrc.slice(0, 80), w: img.naturalWidth, h: img.naturalHeight,
             alt: img.alt || img.title || '', explorer: img.classList.contains('attn-live-picture'),
             figure: !img.classList.contains('attn-live-picture') && !img.classList.contains('widget-image') && !!img.closest('.cell_output'),
             imgAlt: img.getAttribute('alt')};
  if (!img.complete || !img.naturalWidth) return {...r, spread: 0};
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let lo = 255, hi = 0;
  for (let i = 0; i < d.length; i += 4) { const v = d[i] + d[i + 1] + d[i + 2]; lo = Math.min(lo, v); hi = Math.max(hi, v); }
  return {...r, spread: hi - lo};
})"""
_PROSE = """() => {
  const skip = (n) => n.closest('pre, code, script, style, mjx-container, .highlight');
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && !skip(el) && el.offsetParent !== null) out.push(n.textContent);
  }
  return out.join(' ');
}"""
# Under the print style sheet, at the width of the paper (A4 less the margins, in CSS pixels):
# the text of the page's article that a handout shows, and the blocks of code or output whose
# lines are cut at the paper's edge.
PRINT_WIDTH = round((210 - sum(float(handouts.PDF_OPTIONS["margin"][side].removesuffix("mm"))
                               for side in ("left", "right"))) / 25.4 * 96)
_PRINTED = """() => {
  const article = document.querySelector('article');
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const text = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && el.checkVisibility({visibilityProperty: true})) text.push(n.textContent);
  }
  const cut = [...article.querySelectorAll('pre')].filter((p) => p.checkVisibility() && p.scrollWidth > p.clientWidth + 1);
  return {text: text.join(' '), cut: cut.map((p) => p.textContent.trim().slice(0, 60))};
}"""


def _visit(tab, page_name: str, pdf: Path | None) -> dict:
    """Open one page (its path under the site without .html) in ``tab`` (every request outside
    the site refused), let it render, and collect what the tests check: refused requests,
    failed responses, page errors, images, the visible prose, the live links, the language
    switch (what a screen reader hears of it, whether it takes the keyboard's focus) and
    axe-core's violations; a notebook page is then printed to ``pdf``."""
    page, seen = tab(f"{page_name}.html")
    facts: dict = {}
    try:
        site.wait_rendered(page)
        facts["images"] = page.evaluate(_IMAGES)
        facts["prose"] = page.evaluate(_PROSE)
        facts["math"] = page.evaluate("""() => { const m = [...document.querySelectorAll('.math')];
            return {all: m.length, typeset: m.filter((e) => e.querySelector('mjx-container')).length}; }""")
        facts["links"] = {cls: page.locator(f"a.{cls}").first.get_attribute("href")
                          for cls in ("attn-binder-lab", "attn-binder-voila")
                          if page.locator(f"a.{cls}").count()}
        switch = page.locator("nav.attn-language")
        if switch.count() == 1 and switch.locator("a").count() == 1:
            link = switch.locator("a")
            link.focus()
            facts["switch"] = {"heard": switch.aria_snapshot(), "text": link.inner_text(),
                               "visible": link.is_visible(), "tab_index": link.evaluate("(a) => a.tabIndex"),
                               "focused": link.evaluate("(a) => document.activeElement === a")}
        else:
            facts["switch"] = {"count": switch.count(), "links": switch.locator("a").count()}
        facts["axe"] = axe_violations(page)
        if pdf is not None:
            # Print media before printing: the tab shows pages with the screen's media, and
            # Playwright prints what is emulated, so the handout would be laid out for the
            # screen (its print style sheet unapplied: a long line cut, not wrapped), unlike
            # the one make handouts prints from a fresh page.
            page.emulate_media(media="print")
            facts["pdf"] = handouts.print_page(page, pdf)
            page.set_viewport_size({"width": PRINT_WIDTH, "height": VIEWPORT["height"]})
            facts["printed"] = page.evaluate(_PRINTED)
    finally:
        facts.update({kind: list(found) for kind, found in seen.items()})  # refused, failed, errors
    return facts


@pytest.fixture(scope="module")
def visited(site_tab, tmp_path_factory):
    """page -> what ``_visit`` saw (each page opened once for all the tests below, each
    notebook page printed then as its handout)."""
    pdfs = tmp_path_factory.mktemp("handouts")
    seen: dict[str, dict] = {}

    def visit(name: str) -> dict:
        if name not in seen:
            seen[name] = _visit(site_tab, name, pdfs / handouts.pdf_name(name) if name in PAGES else None)
        return seen[name]
    return visit


def test_the_site_has_every_notebook_and_an_index(built_site):
    for edition in site.EDITIONS.values():
        assert (built_site / edition.prefix / "index.html").is_file(), f"no index.html in the site's {edition.prefix!r}"
    for name in PAGES:
        assert (built_site / f"{name}.html").is_file(), f"no page for {notebook_of(name).relative_to(site.REPO)}"


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_index_opens_the_start_page(site_browser, edition):
    url, browser = site_browser
    folder = site.EDITIONS[edition].prefix
    context, page, facts = watched_page(browser, url)
    try:
        page.goto(f"{url}{folder}index.html", wait_until="load")
        page.wait_for_url(f"{url}{folder}{site.START}.html", timeout=10_000)
        site.wait_rendered(page)
    finally:
        context.close()
    assert facts["refused"] == facts["failed"] == facts["errors"] == []


@pytest.mark.parametrize("name", VISITED + BROWSED)
def test_page_loads_with_nothing_from_outside(visited, name):
    facts = visited(name)
    assert facts["refused"] == [], f"{name}: requests outside the site: {facts['refused']}"
    assert facts["failed"] == [], f"{name}: failed requests: {facts['failed']}"
    assert facts["errors"] == [], f"{name}: errors in the page: {facts['errors']}"


@pytest.mark.parametrize("name", VISITED)
def test_page_shows_pictures_math_and_no_widget_repr(visited, name):
    facts = visited(name)
    images = facts["images"]
    blank = [i for i in images if i["spread"] == 0]
    assert blank == [], f"{name}: images without pixels: {blank}"
    nb = json.loads(notebook_of(name).read_text(encoding="utf-8"))
    explorers = [i for i in images if i["explorer"]]
    assert len(explorers) == len(explorer_outputs(nb)), f"{name}: explorers shown: {explorers}"
    with language(site.edition_of(name).code):
        picture = tr("Picture: {title}", title="")  # "Picture: ", "图："
    assert all(i["alt"].startswith(picture) for i in explorers), f"{name}: an explorer picture without its text"
    # every static figure is an <img> whose alt is its description (not the PNG's file name)
    figures = [i["imgAlt"] for i in images if i["figure"]]
    assert figures == [out.get("metadata", {}).get("image/png", {}).get("alt") for _, out in static_figures(nb)], (
        f"{name}: the static figures' alt texts: {[(a or '')[:60] for a in figures]}")
    prose = facts["prose"]
    for raw in ("$$", "\\(", "\\["):  # math MathJax did not typeset
        assert raw not in prose, f"{name}: raw {raw} on the page: ...{prose[prose.find(raw) - 80:][:160]}..."
    assert facts["math"]["typeset"] == facts["math"]["all"], f"{name}: math typeset: {facts['math']}"
    for repr_text in ("Explorer(children=", "VBox(children=", "Loading widget", "Error displaying widget"):
        assert repr_text not in prose, f"{name}: {repr_text!r} on the page"
    with language(site.edition_of(name).code):  # the saved picture's line: the site's explorers are live
        assert tr(RUN_TO_MOVE) not in prose, f"{name}: {tr(RUN_TO_MOVE)!r} under a live explorer"


@pytest.mark.parametrize("name", PAGES)
def test_page_links_to_run_it_live(built_site, name):
    notebook = notebook_of(name).relative_to(site.REPO).as_posix()  # notebooks/zh/02_qkv.ipynb
    page = (built_site / f"{name}.html").read_text(encoding="utf-8")
    links = dict(re.findall(r'<a class="(attn-binder-(?:lab|voila))" href="([^"]*)"', page))
    url, branch = site.repository_url()
    if not url:  # no address set (site/_config.yml): no Binder line
        assert links == {}, f"{name}: Binder links with no repository address: {links}"
        return
    base = f"https://mybinder.org/v2/gh/{url.removeprefix('https://github.com/')}/{branch}?urlpath="
    assert {k: unescape(v) for k, v in links.items()} == {
        "attn-binder-lab": f"{base}lab/tree/{notebook}",
        "attn-binder-voila": f"{base}voila/render/{notebook}"}, f"{name}: {links}"


@pytest.mark.parametrize("name", VISITED + BROWSED)
def test_axe_finds_no_serious_violation(visited, name):
    violations = visited(name)["axe"]
    for v in violations:
        print(f"axe, {name}: {v['impact']}: {v['id']} ({len(v['nodes'])} nodes, e.g. {v['nodes'][0][:100]})")
    serious = [v for v in violations if v["impact"] in SERIOUS]
    assert serious == [], f"{name}: axe-core: " + "; ".join(
        f"{v['id']} ({v['impact']}) at {v['nodes'][:3]}" for v in serious)


# --- the guides, and the links between pages ----------------------------------------------

class _Anchors(HTMLParser):
    """The targets of a page's ``<a href>``, every id (or ``<a name>``) it has, its language
    (``<html lang>``) and the attributes of its language switch's links."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.lang: str | None = None
        self.switch: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "html":
            self.lang = a.get("lang")
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href") is not None:
            self.hrefs.append(a["href"])
        if tag == "a" and "attn-language-switch" in (a.get("class") or "").split():
            self.switch.append(a)


@pytest.fixture(scope="module")
def anchors_of(built_site):
    """page file under the site (``guides/setup.html``) -> its hrefs and ids, read once each."""
    seen: dict[str, _Anchors] = {}

    def read(page: str) -> _Anchors:
        if page not in seen:
            parser = _Anchors()
            parser.feed((built_site / page).read_text(encoding="utf-8"))
            seen[page] = parser
        return seen[page]
    return read


def local_target(page: str, href: str) -> tuple[str, str] | None:
    """Where ``href`` on ``page`` leads inside the site: (file under the site, fragment), or
    None for an address elsewhere (``https:``, ``mailto:``, ``//host``)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path)) if path else page
    if path.endswith("/"):
        target = posixpath.join(target, "index.html")
    return target, unquote(parts.fragment)


def test_local_target():
    assert local_target("guides/setup.html", "teaching.html#app-mode") == ("guides/teaching.html", "app-mode")
    assert local_target("guides/setup.html", "#without-make") == ("guides/setup.html", "without-make")
    assert local_target("guides/setup.html", "../00_start_here.html") == ("00_start_here.html", "")
    assert local_target("guides/setup.html", "https://github.com/OWNER/REPO") is None


def test_guide_links_for_the_site(monkeypatch):
    # as once the repository's address is set (site/_config.yml, repository: url:)
    monkeypatch.setattr(site, "repository_url", lambda: ("https://github.com/OWNER/REPO", "main"))
    docs = site.REPO / "docs"
    assert site.site_link("../README.md", docs / "setup.md") == f"../{site.START}.ipynb"
    assert site.site_link("teaching.md#app-mode", docs / "setup.md") == "teaching.md#app-mode"
    assert site.site_link("docs/setup.md#without-make", site.REPO / "CONTRIBUTING.md") == "setup.md#without-make"
    assert site.site_link("../CONTRIBUTING.md", docs / "setup.md") == "contributing.md"
    assert site.site_link("#tests", site.REPO / "CONTRIBUTING.md") == "#tests"
    assert site.site_link("../notebooks/02_qkv.ipynb", docs / "setup.md") == "../02_qkv.ipynb"
    github = "https://github.com/OWNER/REPO"
    assert site.site_link("../README.md#the-notebooks", docs / "teaching.md") == f"{github}/blob/main/README.md#the-notebooks"
    assert site.site_link("../deploy/hub/z2jh-config.yaml", docs / "teaching.md") == f"{github}/blob/main/deploy/hub/z2jh-config.yaml"
    assert site.site_link("../binder", docs / "teaching.md") == f"{github}/tree/main/binder"
    assert site.site_link("https://mybinder.org", docs / "teaching.md") == "https://mybinder.org"
    with pytest.raises(FileNotFoundError, match="no-such-file.md"):
        site.site_link("no-such-file.md", docs / "teaching.md")
    # from a Chinese guide: its sibling, the Chinese README and notebooks, an English-only guide
    # (on the English site), a README section and any other file (on GitHub)
    zh = docs / "zh"
    assert site.site_link("teaching.md#应用模式", zh / "setup.md") == "teaching.md#应用模式"
    assert site.site_link("../../README.zh.md", zh / "setup.md") == f"../{site.START}.ipynb"
    assert site.site_link("../../README.md", zh / "setup.md") == f"../../{site.START}.ipynb"
    assert site.site_link("../../notebooks/zh/02_qkv.ipynb", zh / "teaching.md") == "../02_qkv.ipynb"
    assert site.site_link("../performance.md#the-tables", zh / "teaching.md") == "../../guides/performance.md#the-tables"
    assert site.site_link("../setup.md", zh / "setup.md") == "../../guides/setup.md"
    assert site.site_link("../../README.zh.md#笔记本", zh / "teaching.md") == f"{github}/blob/main/README.zh.md#笔记本"
    assert site.site_link("../../deploy/hub/z2jh-config.yaml", zh / "teaching.md") == f"{github}/blob/main/deploy/hub/z2jh-config.yaml"
    # and from an English guide to a Chinese one
    assert site.site_link("zh/setup.md", docs / "setup.md") == "../zh/guides/setup.md"
    with pytest.raises(FileNotFoundError, match="not a guide of the site"):
        site.site_link("setup.md", docs / "translating.md")


@pytest.mark.parametrize("language", site.EDITIONS)
def test_guide_copies_load_nothing_from_outside(tmp_path, language):
    site.copy_guides(tmp_path, language)
    written = sorted(p.stem for p in tmp_path.glob("*.md"))
    assert written == sorted(site.guide_files(language)), written
    for name in written:
        text = (tmp_path / f"{name}.md").read_text(encoding="utf-8")
        assert not re.search(r"!\[[^\]]*\]\(\s*<?[a-zA-Z][a-zA-Z0-9+.-]*:", text), f"{language} {name}: an image from another site"
        outside = re.findall(r"\]\((?:\.\./)+(?:README[^)]*|deploy/[^)]*|CONTRIBUTING[^)]*)\)", text)
        assert outside == [], f"{language} {name}: links to files outside the site: {outside}"


def test_each_guide_is_a_page_in_the_table_of_contents(built_site, anchors_of):
    # the navigation of the start page (where index.html leads) and of a lesson
    for page in (f"{site.START}.html", f"{PAGES[1]}.html"):
        html = (built_site / page).read_text(encoding="utf-8")
        assert 'class="caption-text">Guides<' in html, f"{page}: no part 'Guides' in the table of contents"
        listed = {found[0] for href in anchors_of(page).hrefs if (found := local_target(page, href))}
        for name in GUIDES:
            assert (built_site / f"{name}.html").is_file(), f"no page for the guide {name}"
            assert f"{name}.html" in listed, f"{page}: the guide {name} is not in the table of contents"


def test_the_chinese_site_leads_to_the_guides(built_site, anchors_of):
    # its table of contents has the part 指南: the page that leads to every guide, and the
    # guides written in Chinese
    assert ZH_GUIDES, "no guide is a page of the Chinese site"
    for page in (f"{ZH}{site.START}.html", f"{ZH}{PAGES[1]}.html"):
        html = (built_site / page).read_text(encoding="utf-8")
        assert 'class="caption-text">指南<' in html, f"{page}: no part 指南 in the table of contents"
        listed = {found[0] for href in anchors_of(page).hrefs if (found := local_target(page, href))}
        for name in [f"{ZH}{site.ZH_GUIDES}"] + ZH_GUIDES:
            assert f"{name}.html" in listed, f"{page}: the page {name} is not in the table of contents"
    # that page: each guide once, in Chinese where it is written in Chinese, else in English
    page = f"{ZH}{site.ZH_GUIDES}.html"
    linked = {found[0] for href in anchors_of(page).hrefs if (found := local_target(page, href))}
    expected = {f"{ZH}{name}.html" if ZH + name in ZH_GUIDES else f"{name}.html" for name in GUIDES}
    assert expected <= linked, f"{page}: links to {sorted(linked)}, expected {sorted(expected)}"
    assert not {f"{name}.html" for name in GUIDES if ZH + name in ZH_GUIDES} & linked, (
        f"{page}: leads to the English version of a guide written in Chinese: {sorted(linked)}")


@pytest.mark.parametrize("name", GUIDES + ZH_GUIDES)
def test_guide_page_shows_the_guide(built_site, name):
    source = guide_source(name).read_text(encoding="utf-8")
    title = source.splitlines()[0].lstrip("# ").strip()
    html = (built_site / f"{name}.html").read_text(encoding="utf-8")
    assert re.search(r"<h1>" + re.escape(title), html), f"{name}: the guide's title {title!r} is not the page's heading"
    assert "attn-binder-" not in html, f"{name}: a guide is not a notebook to run on Binder"


@pytest.mark.parametrize("edition", site.EDITIONS)
def test_each_site_has_its_title_language_and_table_of_contents(built_site, anchors_of, edition):
    e = site.EDITIONS[edition]
    own = site.site_pages(edition)
    for name in own:
        page = f"{name}.html"
        assert anchors_of(page).lang == LANG[edition], f"{page}: <html lang={anchors_of(page).lang!r}>"
    start = f"{e.prefix}{site.START}.html"
    html = (built_site / start).read_text(encoding="utf-8")
    assert re.search(r"<title>[^<]*" + re.escape(e.title) + r"[^<]*</title>", html), f"{start}: the title is not {e.title!r}"
    for caption in e.captions:
        assert f'class="caption-text">{caption}<' in html, f"{start}: no part {caption!r} in the table of contents"
    listed = {found[0] for href in anchors_of(start).hrefs if (found := local_target(start, href))}
    assert {f"{name}.html" for name in own} <= listed, f"{start}: not in its table of contents: {sorted({f'{n}.html' for n in own} - listed)}"
    # the theme's own words in the site's language (its search box)
    search = {"en": "Search", "zh": "搜索"}[edition]
    assert re.search(r'class="search-button__default-text">\s*' + search, html), f"{start}: the search button is not {search!r}"


# --- the language switch -------------------------------------------------------------------

def expected_switch(name: str) -> str:
    """Where a page's language switch must lead: its twin in the other language (a notebook's,
    a guide's translation); for a page with none (a guide in English only, zh/guides), the
    other edition's start page."""
    pages = set(PAGES + OTHERS)
    if name.startswith(ZH):
        twin = name.removeprefix(ZH)
        return twin if twin in pages else site.START
    return ZH + name if ZH + name in pages else ZH + site.START


def test_switch_targets_and_what_is_no_page(monkeypatch):
    assert site.switch_target("02_qkv") == ("zh/02_qkv", True)
    assert site.switch_target("zh/solutions/02_qkv_solutions") == ("solutions/02_qkv_solutions", True)
    assert site.switch_target("guides/setup") == ("zh/guides/setup", True)
    assert site.switch_target("zh/guides/teaching") == ("guides/teaching", True)
    assert site.switch_target("guides/performance") == ("zh/00_start_here", False)
    assert site.switch_target("zh/guides") == ("00_start_here", False)
    with pytest.raises(ValueError, match="page: expected a page of the site .*got 'zh/guides/performance'"):
        site.switch_target("zh/guides/performance")
    with pytest.raises(ValueError, match=r"language: expected one of \['en', 'zh'\], got 'fr'"):
        site.notebook_pages("fr")
    monkeypatch.setitem(site.GUIDES, "translating", site.REPO / "docs" / "translating.md")
    with pytest.raises(ValueError, match="ZH_GUIDES_PAGE: expected the guides .*'translating'"):
        site.zh_guides_text()


@pytest.mark.parametrize("name", PAGES + OTHERS)
def test_language_switch_leads_to_the_twin_and_back(anchors_of, name):
    page = f"{name}.html"
    switch = anchors_of(page).switch
    assert len(switch) == 1, f"{page}: {len(switch)} language switches"
    target = expected_switch(name)
    assert local_target(page, switch[0]["href"]) == (f"{target}.html", ""), f"{page}: the switch leads to {switch[0]['href']}"
    other = "zh" if target.startswith(ZH) else "en"
    assert switch[0]["lang"] == switch[0]["hreflang"] == LANG[other], f"{page}: the switch's lang and hreflang: {switch[0]}"
    if target.removeprefix(ZH) == name.removeprefix(ZH):  # a twin: and back
        back = anchors_of(f"{target}.html").switch
        assert [local_target(f"{target}.html", a["href"]) for a in back] == [(page, "")], (
            f"{target}.html: its switch does not lead back to {page}: {back}")


# In the browser, on the pages opened anyway (the switch of every page is checked above, without one).
@pytest.mark.parametrize("name", VISITED + BROWSED)
def test_language_switch_is_named_and_takes_the_focus(visited, name):
    switch = visited(name)["switch"]
    assert "heard" in switch, f"{name}: expected one language switch with one link, got {switch}"
    # (Playwright's accessibility snapshot: '- navigation "语言":\n  - link "This page in English":\n ...')
    heard = re.match(r'- navigation "([^"]+)":\s*- link "([^"]+)"', switch["heard"])
    assert heard, f"{name}: a screen reader hears {switch['heard']!r}"
    assert switch["text"] in heard.group(2), f"{name}: the link shows {switch['text']!r}, is named {heard.group(2)!r}"
    assert switch["visible"] and switch["focused"] and switch["tab_index"] >= 0, (
        f"{name}: the switch is not visible, or not in the order of Tab, or takes no focus: {switch}")


def test_language_switch_by_keyboard(site_browser):
    """From a page's top, Tab reaches the switch and Enter opens the twin; there too, and back."""
    url, browser = site_browser
    name = next(n for n in PAGES if n.startswith("solutions/"))  # a short page
    context, page, facts = watched_page(browser, url)
    try:
        page.goto(f"{url}{name}.html", wait_until="load")
        for target in (f"{ZH}{name}", name):
            for _ in range(200):
                page.keyboard.press("Tab")
                if page.evaluate("() => document.activeElement.classList.contains('attn-language-switch')"):
                    break
            else:
                pytest.fail(f"{page.url}: 200 presses of Tab never reach the language switch")
            page.keyboard.press("Enter")
            page.wait_for_url(f"{url}{target}.html", timeout=10_000)
    finally:
        context.close()
    assert facts["refused"] == facts["failed"] == []


# --- the links between pages ----------------------------------------------------------------

_NOTEBOOK_LINK = re.compile(r"\]\((?P<path>[^)\s#:]+\.ipynb)[)#]")  # (a link to another notebook, with no scheme)


@pytest.mark.parametrize("name", PAGES)
def test_each_link_between_notebooks_is_a_link_of_the_page(anchors_of, name):
    # the link of the English 00 to zh/00_start_here.ipynb and of the Chinese 00 back to
    # ../00_start_here.ipynb too: the other edition is another Sphinx project
    nb = json.loads(notebook_of(name).read_text(encoding="utf-8"))
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    page = f"{name}.html"
    # (the links of the page but its language switch, which leads to its twin too)
    hrefs = Counter(anchors_of(page).hrefs) - Counter(a["href"] for a in anchors_of(page).switch)
    leads_to = {found[0] for href in hrefs if (found := local_target(page, href))}
    missing = []
    for m in _NOTEBOOK_LINK.finditer(prose):  # (where an anchor leads: the test below)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(name), unquote(m.group("path"))))
        if f"{target.removesuffix('.ipynb')}.html" not in leads_to:
            missing.append(m.group(0))
    assert missing == [], f"{page}: the notebook's links {missing} are no links of the page"


def test_every_link_and_anchor_between_pages_resolves(built_site, anchors_of):
    broken = []
    # (a page missing from the site is the business of the tests above)
    for page in [f"{n}.html" for n in PAGES + OTHERS if (built_site / f"{n}.html").is_file()]:
        for href in anchors_of(page).hrefs:
            found = local_target(page, href)
            if found is None:
                continue
            target, fragment = found
            if not (built_site / target).is_file():
                broken.append(f"{page}: {href} (no file {target})")
            elif fragment and target.endswith(".html") and fragment not in anchors_of(target).ids:
                broken.append(f"{page}: {href} (no id {fragment!r} in {target})")
    assert broken == [], "links that lead nowhere:\n" + "\n".join(broken)


# --- handouts ------------------------------------------------------------------------------

CJK = re.compile(r"[\u4e00-\u9fff]")
CJK_OR_RADICAL = re.compile(r"[\u2e80-\u2fdf\u4e00-\u9fff]")


def _utf16(hex_text: str) -> str:
    return bytes.fromhex(hex_text).decode("utf-16-be", errors="replace")


def mapped_text(cmap: str) -> str:
    """Every character a font's ToUnicode CMap maps its glyphs to (bfchar and bfrange entries),
    NFKC-normalised: a glyph a CJK font shares between 一 and the Kangxi radical ⼀ may be
    mapped to the radical."""
    chars = []
    for block in re.findall(r"beginbfchar(.*?)endbfchar", cmap, re.S):
        chars += [_utf16(dst) for _src, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block)]
    for block in re.findall(r"beginbfrange(.*?)endbfrange", cmap, re.S):
        for lo, hi, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]+>|\[[^\]]*\])", block):
            if dst.startswith("["):
                chars += [_utf16(d) for d in re.findall(r"<([0-9A-Fa-f]+)>", dst)]
            else:
                first = int(dst[1:-1], 16)
                chars += [chr(first + k) for k in range(int(hi, 16) - int(lo, 16) + 1)]
    return unicodedata.normalize("NFKC", "".join(chars))


def _pdf_facts(path: Path) -> tuple[int, list[tuple[int, int]], set[str]]:
    """(pages, pixel sizes of the images, CJK characters that a font of the PDF maps). The
    sizes are read from the images' dictionaries (/Width, /Height), not by decoding them."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    sizes, cjk = [], set()

    def walk(resources) -> None:  # a page's resources, and those of the forms it draws
        resources = resources.get_object() if resources is not None else {}
        for font in (resources.get("/Font") or {}).values():
            to_unicode = font.get_object().get("/ToUnicode")
            if to_unicode is not None:
                cjk.update(CJK_OR_RADICAL.findall(mapped_text(to_unicode.get_object().get_data().decode("latin-1"))))
        for xobject in (resources.get("/XObject") or {}).values():
            xobject = xobject.get_object()
            if xobject.get("/Subtype") == "/Image":
                sizes.append((int(xobject["/Width"]), int(xobject["/Height"])))
            elif xobject.get("/Subtype") == "/Form":
                walk(xobject.get("/Resources"))

    for page in reader.pages:
        walk(page.get("/Resources"))
    return len(reader.pages), sizes, cjk


@pytest.fixture(scope="module")
def printed(visited):
    """page -> (its handout, printed where the page was visited by ``handouts.print_page``;
    what the page shows in print: its article's text, blocks whose lines are cut)."""
    reason = handouts.cjk_font_missing()
    if reason:
        unavailable(f"handouts test: {reason}")
    return lambda name: (visited(name)["pdf"], visited(name)["printed"])


def test_make_handouts_prints_one_pdf_per_notebook_and_language(site_browser, tmp_path):
    assert PAGES == [e.prefix + n for e in site.EDITIONS.values() for n in site.notebook_pages(e.code)]
    names = [handouts.pdf_name(name) for name in PAGES]
    assert len(set(names)) == len(PAGES), "two pages would print to one PDF"
    reason = handouts.cjk_font_missing()
    if reason:
        unavailable(f"handouts test: {reason}")
    # make handouts' own loop, on a small page of each language
    url, browser = site_browser
    pages = [name for name in PAGES if name.endswith("/02_qkv_solutions")]
    t0 = time.monotonic()
    written = handouts.print_pages(browser, url, tmp_path, pages)
    print(f"make handouts: {time.monotonic() - t0:.1f} s for {len(written)} PDFs")
    assert written == {"solutions/02_qkv_solutions": tmp_path / "02_qkv_solutions.pdf",
                       f"{ZH}solutions/02_qkv_solutions": tmp_path / ZH / "02_qkv_solutions.pdf"}
    for name, path in written.items():
        n_pages, _, cjk = _pdf_facts(path)
        assert n_pages >= 1, f"{path}: no page"
        assert cjk or not name.startswith(ZH), f"{path}: a Chinese page printed without Chinese glyphs"


@pytest.mark.parametrize("name", VISITED)
def test_handout_has_pages_pictures_and_chinese_glyphs(printed, name):
    path, shown = printed(name)
    assert shown["cut"] == [], f"{name}: lines cut at the paper's edge in the blocks {shown['cut']}"
    n_pages, sizes, cjk = _pdf_facts(path)
    print(f"{handouts.pdf_name(name)}: {n_pages} pages, {len(sizes)} images, {path.stat().st_size / 1024:.0f} KiB")
    assert n_pages >= 1
    nb = json.loads(notebook_of(name).read_text(encoding="utf-8"))
    for _, png in explorer_outputs(nb):
        size = Image.open(io.BytesIO(png)).size
        assert size in sizes, f"{path.name}: no image of the explorer's size {size} (images: {sizes})"
    pictures = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
    assert len(sizes) >= pictures, f"{path.name}: {len(sizes)} images for {pictures} pictures in the notebook"
    chinese = set(CJK.findall(shown["text"]))
    assert chinese or not name.startswith(ZH), f"{name}: no Chinese on a page of the Chinese site"
    # Each Chinese character the page shows is mapped by a font of the PDF, or its glyph is
    # mapped to a variant the page does not use (长 -> the radical ⻓, which NFKC leaves as it
    # is). With no CJK font, no glyph maps to any of them.
    missing, variants = chinese - cjk, cjk - chinese
    assert len(missing) <= len(variants), (
        f"{handouts.pdf_name(name)}: {len(missing)} of the page's {len(chinese)} Chinese characters are drawn "
        f"by no CJK font in the PDF: {''.join(sorted(missing))[:40]}")


