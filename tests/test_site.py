"""The course website (``make site``) and the handouts (``make handouts``), in a real browser.

The module builds the site once into a temporary folder (as ``make site`` does, from the
committed notebooks, without running them): the English site, and the Chinese one in its
folder zh/. It serves it on 127.0.0.1 and opens every page of both, once, in headless
Chromium with every request outside that server refused; axe-core (npm, site/package.json)
checks each, and each notebook page is printed there as its handout (``handouts.print_page``,
as ``make handouts`` prints it). The guides (docs/*.md, CONTRIBUTING.md) are pages of the
English site, in its table of contents; the Chinese site leads to them. Every link and anchor
of the course's pages leads to a page or an id that the built site has, and every page's
language switch leads to its twin in the other language, and back.

Without Chromium, the site's npm packages or a CJK font the tests are skipped,
saying how to enable them; under CI (CI=true) they fail instead.
"""
from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
import re
import time
import posixpath
import unicodedata
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse, urlsplit

import numpy as np
import pytest
from PIL import Image

from _browser import SERIOUS, axe_violations, serious_in
from _pictures import ACROSS_LEVELS, across_machines_problem, explorer_outputs
from test_figures_alt import static_figures
from _support import unavailable
from attn.language import language, tr
from tools import handouts, live_states, site
from tools.lab import VIEWPORT, browser_unavailable
from tools.serve import serving

PAGES = handouts.handout_pages()  # every notebook page, English then Chinese: 02_qkv, zh/02_qkv
# The pages opened in the browser (rendered, checked by axe-core, printed as handouts): every
# lesson, and of the solutions, which are pages of the same kind as the lessons, one per
# language; every page's links and files are checked without a browser (below).
VISITED = [p for p in PAGES if "solutions/" not in p
           or p.endswith("solutions/12_transformer_block_solutions")]
GUIDES = site.guide_pages()  # the English site's guides: guides/setup, ...
OTHERS = [p for p in site.site_pages() if p not in PAGES]  # the guides, and zh/guides
ZH = "zh/"  # the Chinese site's folder in the site
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


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    reason = browser_unavailable()
    if reason:
        unavailable(f"website test: {reason}")
    if not site.NODE_MODULES.is_dir():
        unavailable("website test: the site's JavaScript is not installed: npm ci --prefix site "
                    "(make site and make test do it)")
    out = tmp_path_factory.mktemp("site") / "site"
    seconds = site.build(out)
    for edition in site.EDITIONS.values():
        print(f"make site ({edition.code}): {seconds[edition.code]:.1f} s for {len(site.notebook_pages(edition.code))} "
              f"notebook pages and {len(site.guide_pages(edition.code))} other pages")
    return out


@pytest.fixture(scope="module")
def site_browser(built_site, browser):
    with serving(built_site) as url:
        yield url, browser


def _watched(browser, url: str):
    """A new page in its own context that refuses every request outside ``url``'s server, and
    the facts it collects: refused requests, failed responses, errors in the page."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    local = urlparse(url).netloc
    facts: dict = {"refused": [], "failed": [], "errors": []}

    def route(r):
        if urlparse(r.request.url).netloc == local:
            r.continue_()
        else:
            facts["refused"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("response", lambda r: r.status >= 400 and facts["failed"].append(f"{r.status} {r.url}"))
    page.on("pageerror", lambda e: facts["errors"].append(str(e)))
    page.on("console", lambda m: m.type == "error" and facts["errors"].append(f"console: {m.text}"))
    return context, page, facts


@pytest.fixture(scope="module")
def tab(site_browser):
    """``open(path) -> (page, facts)``: one browser page, kept open for the module's visits and
    live explorers, showing the site's page ``path`` (under the site, with .html), every request
    outside the site refused as by ``_watched``, and the facts (refused requests, failed
    responses, errors) of that page alone. On 8 lesson pages alone, a page opened in a new
    context cost Chromium about twice the CPU time of a navigation; over the whole run the gain
    was within the noise (Chromium 492 CPU-seconds against 501, CONTRIBUTING.md). Each ``open``
    starts from a blank page with the screen's media and the viewport of the other tests."""
    url, browser = site_browser
    context, page, facts = _watched(browser, url)

    def open_(path: str):
        page.goto("about:blank")
        page.emulate_media(media="screen")
        page.set_viewport_size(VIEWPORT)
        for found in facts.values():
            found.clear()
        page.goto(f"{url}{path}", wait_until="load")
        return page, facts

    yield open_
    context.close()


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
            facts["pdf"] = handouts.print_page(page, pdf)
            page.emulate_media(media="print")
            page.set_viewport_size({"width": PRINT_WIDTH, "height": VIEWPORT["height"]})
            facts["printed"] = page.evaluate(_PRINTED)
    finally:
        facts.update({kind: list(found) for kind, found in seen.items()})  # refused, failed, errors
    return facts


@pytest.fixture(scope="module")
def visited(tab, tmp_path_factory):
    """page -> what ``_visit`` saw (each page opened once for all the tests below, each
    notebook page printed then as its handout)."""
    pdfs = tmp_path_factory.mktemp("handouts")
    seen: dict[str, dict] = {}

    def visit(name: str) -> dict:
        if name not in seen:
            seen[name] = _visit(tab, name, pdfs / handouts.pdf_name(name) if name in PAGES else None)
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
    context, page, facts = _watched(browser, url)
    try:
        page.goto(f"{url}{folder}index.html", wait_until="load")
        page.wait_for_url(f"{url}{folder}{site.START}.html", timeout=10_000)
        site.wait_rendered(page)
    finally:
        context.close()
    assert facts["refused"] == facts["failed"] == facts["errors"] == []


@pytest.mark.parametrize("name", VISITED + OTHERS)
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


@pytest.mark.parametrize("name", PAGES)
def test_page_links_to_run_it_live(built_site, name):
    base = "https://mybinder.org/v2/gh/OWNER/REPO/main?urlpath="
    notebook = notebook_of(name).relative_to(site.REPO).as_posix()  # notebooks/zh/02_qkv.ipynb
    page = (built_site / f"{name}.html").read_text(encoding="utf-8")
    links = dict(re.findall(r'<a class="(attn-binder-(?:lab|voila))" href="([^"]*)"', page))
    assert {k: unescape(v) for k, v in links.items()} == {
        "attn-binder-lab": f"{base}lab/tree/{notebook}",
        "attn-binder-voila": f"{base}voila/render/{notebook}"}, f"{name}: {links}"


@pytest.mark.parametrize("name", VISITED + OTHERS)
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


def test_guide_links_for_the_site():
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


def test_guide_copies_load_nothing_from_outside(tmp_path):
    site.copy_guides(tmp_path)
    for name in GUIDES:
        text = (tmp_path / f"{name.split('/', 1)[1]}.md").read_text(encoding="utf-8")
        assert not re.search(r"!\[[^\]]*\]\(\s*<?[a-zA-Z][a-zA-Z0-9+.-]*:", text), f"{name}: an image from another site"
        assert "](../README.md" not in text and "](../deploy/" not in text, f"{name}: a link to a file outside the site"


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
    # its table of contents has the page 指南（英文）, which links every guide of the English site
    for page in (f"{ZH}{site.START}.html", f"{ZH}{PAGES[1]}.html"):
        html = (built_site / page).read_text(encoding="utf-8")
        assert 'class="caption-text">指南（英文）<' in html, f"{page}: no part 指南（英文） in the table of contents"
        listed = {found[0] for href in anchors_of(page).hrefs if (found := local_target(page, href))}
        assert f"{ZH}{site.ZH_GUIDES}.html" in listed, f"{page}: the page {site.ZH_GUIDES} is not in the table of contents"
    page = f"{ZH}{site.ZH_GUIDES}.html"
    linked = {found[0] for href in anchors_of(page).hrefs if (found := local_target(page, href))}
    assert {f"{name}.html" for name in GUIDES} <= linked, f"{page}: links to {sorted(linked)}"


@pytest.mark.parametrize("name", GUIDES)
def test_guide_page_shows_the_guide(built_site, visited, name):
    source = site.GUIDES[name.split("/", 1)[1]].read_text(encoding="utf-8")
    title = source.splitlines()[0].lstrip("# ").strip()
    html = (built_site / f"{name}.html").read_text(encoding="utf-8")
    assert re.search(r"<h1>" + re.escape(title), html), f"{name}: the guide's title {title!r} is not the page's heading"
    assert visited(name)["links"] == {}, f"{name}: a guide is not a notebook to run on Binder"


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
    """Where a page's language switch must lead: its twin in the other language; for a page
    with none (a guide, zh/guides), the other edition's start page."""
    if name.startswith(ZH):
        twin = name.removeprefix(ZH)
        return twin if twin in site.notebook_pages("en") else site.START
    return ZH + name if name in site.notebook_pages("zh") else ZH + site.START


def test_switch_targets_and_what_is_no_page(monkeypatch):
    assert site.switch_target("02_qkv") == ("zh/02_qkv", True)
    assert site.switch_target("zh/solutions/02_qkv_solutions") == ("solutions/02_qkv_solutions", True)
    assert site.switch_target("guides/setup") == ("zh/00_start_here", False)
    assert site.switch_target("zh/guides") == ("00_start_here", False)
    with pytest.raises(ValueError, match="page: expected a page of the site .*got 'zh/guides/setup'"):
        site.switch_target("zh/guides/setup")
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
    if name in PAGES:  # and back
        back = anchors_of(f"{target}.html").switch
        assert [local_target(f"{target}.html", a["href"]) for a in back] == [(page, "")], (
            f"{target}.html: its switch does not lead back to {page}: {back}")


# In the browser, on the pages opened anyway (the switch of every page is checked above, without one).
@pytest.mark.parametrize("name", VISITED + OTHERS)
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
    context, page, facts = _watched(browser, url)
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


# --- the explorers, live without a kernel (tools/live_states.py, site/_static/attn-live.js) ---
#
# On every explorer's page, in each language, offline: each control is moved through up to 5
# of its values (every value of a control with fewer; a slider's two ends among them), by the
# keyboard where the control takes it, and the same move is made on the explorer in Python,
# built as the site's recipe builds it. After each move the page must show the state Python is
# in: the same state number, a picture whose decoded pixels are those Python drew, the same
# readout text and text alternative, and a slider heard as Python's ``value_text``.

LIVE = [(ident, code) for ident, _recipe in live_states.all_ids() for code in site.EDITIONS]

# The page's picture, decoded by the browser, as a SHA-256 of its RGBA pixels; the readout's
# text; the picture's text alternative; the state number and the moves shown so far.
_LIVE_SHOWN = """async (figure) => {
  const img = figure.querySelector('img.attn-live-picture');
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const pixels = g.getImageData(0, 0, c.width, c.height).data;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', pixels));
  return {hash: [...digest].map((b) => b.toString(16).padStart(2, '0')).join(''),
          size: [c.width, c.height], alt: img.alt, state: Number(figure.dataset.state),
          readout: figure.querySelector('.attn-live-readout').textContent};
}"""


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _bare(html_or_text: str, *, html: bool = False) -> str:
    """Text without any white space (an HTML fragment's text first, where ``html``)."""
    if html:
        parser = _Text()
        parser.feed(html_or_text)
        parser.close()
        html_or_text = "".join(parser.parts)
    return "".join(html_or_text.split())


def _python_shown(explorer) -> dict:
    image = Image.open(io.BytesIO(bytes(explorer.image.value))).convert("RGBA")
    return {"hash": hashlib.sha256(image.tobytes()).hexdigest(), "size": list(image.size),
            "alt": explorer.alt_text(), "readout": _bare(explorer.readout.value, html=True)}


def _positions(explorer, offered) -> list[int]:
    """Which of its offered values each control of the Python explorer shows."""
    return [next(k for k, (_label, v) in enumerate(c.choices) if live_states._same(v, explorer.controls[c.name].value))
            for c in offered]


def _targets(allowed: list[int], start: int) -> list[int]:
    """Up to 5 of the values a control allows now (``allowed``, ascending), both ends among
    them, none twice in a row, starting from ``start``."""
    if len(allowed) <= 6:
        wanted = [k for k in allowed if k > start] + [k for k in allowed if k < start]
    else:
        at = allowed.index(start)
        wanted = [allowed[at + 1 if at + 1 < len(allowed) else at - 1], allowed[-1], allowed[-2], allowed[0],
                  allowed[len(allowed) // 2]]
    out, now = [], start
    for k in wanted:
        if k != now:
            out.append(k)
            now = k
    return out


@pytest.fixture(scope="module")
def live_site(built_site):
    """(explorer, language) -> what the built site holds of it: its states, and what was
    measured for it (07's times), from which the explorer in Python is built again."""
    measured = json.loads((built_site / site.LIVE / "measured.json").read_text(encoding="utf-8"))

    def read(ident: str, code: str) -> dict:
        states = json.loads((built_site / site.LIVE / code / f"{ident}.json").read_text(encoding="utf-8"))
        return {"states": states, "data": measured.get(ident)}
    return read


def _built(recipe, data, code: str):
    """The explorer in Python, built as the site's recipe builds it, in the language ``code``."""
    with language(code):
        return recipe.build(data)


# The site's first picture of an explorer is the one its notebook saved, at the notebook's
# setting: the recipe builds the notebook's explorer. Not for 07's, whose times were measured on
# the machine that built the site.
@pytest.mark.parametrize("ident,code", [(i, c) for i, c in LIVE if not i.startswith("07_")])
def test_live_explorer_starts_as_its_notebook_saved_it(live_site, built_site, ident, code):
    recipe = dict(live_states.all_ids())[ident]
    held = live_site(ident, code)
    explorer = _built(recipe, held["data"], code)
    offered = live_states.offered_controls(explorer, recipe)
    start = live_states.state_index(offered, _positions(explorer, offered))
    notebook = site.EDITIONS[code].notebooks / f"{recipe.notebook}.ipynb"
    position = int(ident.rsplit("-", 1)[1])
    _out, png = explorer_outputs(json.loads(notebook.read_text(encoding="utf-8")))[position]
    saved = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    shown = np.asarray(Image.open(built_site / site.LIVE / "pictures" / held["states"][start][0]).convert("RGB"))
    # The notebook's picture was drawn on the machine that executed it: equal up to round-off.
    problem = across_machines_problem(shown, saved)
    assert problem is None, (f"{notebook}, explorer {position}: the site's first picture is not the "
                             f"one the notebook saved: {problem}. Re-execute the notebook "
                             f"(CONTRIBUTING.md, 'Re-executing notebooks') if its explorer changed.")
    page = (built_site / f"{site.EDITIONS[code].prefix}{recipe.notebook}.html").read_text(encoding="utf-8")
    assert f'/pictures/{held["states"][start][0]}"' in page, f"{ident}: the page does not start at the notebook's setting"


def test_across_machines_allows_round_off_and_no_real_change():
    """The tolerance of test_live_explorer_starts_as_its_notebook_saved_it, planted: one colour
    level in one cell (the round-off seen on another CPU) passes; another head's map, a moved
    cell or a two-level shift of a whole map fails."""
    notebook = json.loads((site.EDITIONS["en"].notebooks / "06_visualization.ipynb").read_text(encoding="utf-8"))
    saved = np.asarray(Image.open(io.BytesIO(explorer_outputs(notebook)[0][1])).convert("RGB")).astype(int)
    H, W, _ = saved.shape
    assert across_machines_problem(saved, saved) is None
    one_level = saved.copy()
    one_level[19:34, 603:619] += np.where(one_level[19:34, 603:619] < 255, 1, -1)  # 240 pixels, one level
    assert across_machines_problem(one_level, saved) is None
    two_levels = saved.copy()
    two_levels[19:34, 603:619] += np.where(two_levels[19:34, 603:619] < 254, ACROSS_LEVELS + 1, -ACROSS_LEVELS - 1)
    assert across_machines_problem(two_levels, saved) is not None
    other_head = saved.copy()  # the left half's maps where the right half's were
    other_head[:, W // 2:W // 2 * 2] = saved[:, :W // 2]
    assert across_machines_problem(other_head, saved) is not None
    detail = np.abs(np.diff(saved, axis=1)).sum(-1)  # (H, W - 1): where neighbouring pixels differ
    r, c = np.unravel_index(int(detail[16:-16, 16:-32].argmax()), detail[16:-16, 16:-32].shape)
    r, c = r + 16, c + 16
    moved = saved.copy()  # one 16 x 16 patch moved by a cell's width
    moved[r - 8:r + 8, c - 8:c + 8] = saved[r - 8:r + 8, c + 8:c + 24]
    assert across_machines_problem(moved, saved) is not None
    whole = saved.copy()  # every pixel a level off: not one cell's round-off
    whole[...] = np.clip(saved + 1, 0, 255)
    assert across_machines_problem(whole, saved) is not None
    assert across_machines_problem(saved[:-1], saved) is not None


@pytest.mark.parametrize("ident,code", LIVE)
def test_live_explorer_answers_every_control_offline(tab, live_site, ident, code):
    recipe = dict(live_states.all_ids())[ident]
    manifest = live_site(ident, code)
    explorer = _built(recipe, manifest["data"], code)
    offered = live_states.offered_controls(explorer, recipe)
    moves, seen = [], {}
    page, facts = tab(f"{site.EDITIONS[code].prefix}{recipe.notebook}.html")
    figure = page.locator(f"#live-{ident}")
    page.wait_for_function("(id) => document.getElementById(id).dataset.live === 'ready'", arg=f"live-{ident}")
    controls = figure.locator(".attn-live-control")
    assert controls.count() == len(offered), f"{ident}: {controls.count()} controls drawn for {len(offered)}"
    figure.locator(".attn-live-controls").dispatch_event("focusin")  # as a learner reaching for it
    page.wait_for_function("(id) => document.getElementById(id).dataset.states === 'loaded'", arg=f"live-{ident}")
    for i, control in enumerate(offered):
        drawn = controls.nth(i)
        at = _positions(explorer, offered)
        seen[control.name] = {at[i]}
        allowed = [k for k in range(len(control.choices))
                   if manifest["states"][live_states.state_index(offered, at[:i] + [k] + at[i + 1:])]]
        if control.kind == "select":  # what the explorer refuses here, the page does not offer
            offered_now = drawn.locator("option").evaluate_all("(os) => os.map((o) => !o.disabled)")
            assert offered_now == [k in allowed for k in range(len(control.choices))], f"{ident}: {control.name}"
        for k in _targets(allowed, at[i]):
            explorer.controls[control.name].value = control.choices[k][1]  # the same move in Python
            before = figure.evaluate("(f) => Number(f.dataset.shown || 0)")
            now = _positions(explorer, offered)[i]
            if control.kind == "slider":
                handle = drawn.locator("input[type=range]")
                handle.focus()
                here = int(handle.input_value())
                key = {0: "Home", len(control.choices) - 1: "End"}.get(k, "ArrowRight" if k > here else "ArrowLeft")
                for _ in range(abs(k - here) if key.startswith("Arrow") else 1):
                    page.keyboard.press(key)
            elif control.kind == "select":
                drawn.locator("select").select_option(index=k)
            elif control.kind == "toggle":
                drawn.locator("button").nth(k).press("Enter")
                page.wait_for_function("([f, n]) => Number(f.dataset.shown || 0) > n", arg=[figure.element_handle(), before])
                pressed = drawn.locator("button").evaluate_all("(bs) => bs.map((b) => b.getAttribute('aria-pressed'))")
                assert pressed == [str(j == k).lower() for j in range(len(pressed))], f"{ident}: {control.name}: {pressed}"
            else:
                drawn.locator("input[type=checkbox]").press("Space")
            # shown, and no move still under way (each key press of a slider is a move)
            page.wait_for_function("([f, n]) => Number(f.dataset.shown || 0) > n && f.dataset.pending === '0'",
                                   arg=[figure.element_handle(), before])
            page.wait_for_function("(f) => f.querySelector('img.attn-live-picture').complete", arg=figure.element_handle())
            shown, expected = figure.evaluate(_LIVE_SHOWN), _python_shown(explorer)
            where = f"{ident} ({code}), {control.name} -> {control.choices[now][0]}"
            assert shown["state"] == live_states.state_index(offered, _positions(explorer, offered)), where
            assert shown["size"] == expected["size"] and shown["hash"] == expected["hash"], (
                f"{where}: the picture shown is not the one the explorer draws")
            assert _bare(shown["readout"]) == expected["readout"], f"{where}: readout {shown['readout'][:120]!r}"
            assert shown["alt"] == expected["alt"], f"{where}: text alternative {shown['alt'][:120]!r}"
            if control.kind == "slider":
                heard = drawn.locator("input[type=range]").get_attribute("aria-valuetext")
                assert heard == explorer.value_text(control.name), f"{where}: heard {heard!r}"
            moves.append(where)
            seen[control.name].add(now)
    # axe-core on the explorer after its moves (the whole page, before them: test_axe_finds_no_serious_violation)
    serious = serious_in(page, f"#live-{ident}")
    readout = figure.locator(".attn-live-readout")
    live_region = (readout.get_attribute("role"), readout.get_attribute("aria-live"))
    few = {c.name: sorted(seen[c.name]) for c in offered if len(seen[c.name]) < min(5, len(c.choices))}
    assert moves and few == {}, f"{ident}: controls moved through fewer than 5 values: {few}"
    assert live_region == ("status", "polite")
    assert serious == [], f"{ident} ({code}): axe-core: {serious}"
    assert facts["refused"] == [] and facts["failed"] == [] and facts["errors"] == [], facts


@pytest.mark.parametrize("code", list(site.EDITIONS))
def test_live_explorer_reads_without_javascript(site_browser, code):
    """With JavaScript off, an explorer's page still shows what the notebook showed: its
    title, its picture with the text alternative, and its readout (no control)."""
    url, browser = site_browser
    recipe = dict(live_states.all_ids())["06_visualization-0"]
    context = browser.new_context(viewport=VIEWPORT, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{url}{site.EDITIONS[code].prefix}{recipe.notebook}.html", wait_until="load")
        figure = page.locator("figure.attn-live")
        img = figure.locator("img.attn-live-picture")
        shown = img.evaluate("(i) => i.complete && i.naturalWidth > 0")
        alt, readout = img.get_attribute("alt"), figure.locator(".attn-live-readout").inner_text()
        title, controls = figure.locator("figcaption").inner_text(), figure.locator(".attn-live-control").count()
    finally:
        context.close()
    with language(code):
        explorer = recipe.build(None)
    assert shown, f"{code}: the explorer's picture is not shown without JavaScript"
    assert alt == explorer.alt_text() and title == explorer.title
    assert _bare(readout) == _bare(explorer.readout.value, html=True)
    assert controls == 0



# --- an explorer whose states or pictures fail to arrive ---------------------------------
#
# Faults injected with page.route into one small explorer (02's: one slider, d_k, whose state
# is its position), in each language: its states file answering 404, a corrupt body (the file
# cut half way), a short list (fewer states than its controls name), or the network dropping
# the first request. Each time the readout (a live region) says so in the page's language, with
# the link to the live notebook; the slider, its label, the value a screen reader hears and
# the picture agree on the state shown; and once the fault is lifted, the next move shows its
# state, without a reload. A state missing from a file of the right length is said the same
# way. A missing picture: the state's text alternative and readout, and a note in the readout.

FAULTY = "02_qkv-0"
FAULTS = ("404", "corrupt", "short", "dropped once")

# What the explorer shows: its state, the picture's file and text alternative, the readout's
# text apart from the fault it says (with the link's address), the slider's value, label and
# heard value, and the moves under way, the moves shown and the faults said so far.
_FAULT_SHOWN = """(f) => {
  const img = f.querySelector('img.attn-live-picture'), fault = f.querySelector('.attn-live-fault');
  const slider = f.querySelector('.attn-live-slider');
  return {state: Number(f.dataset.state), fault: f.dataset.fault || null, states: f.dataset.states || null,
          pending: Number(f.dataset.pending || 0), shown: Number(f.dataset.shown || 0),
          faults: Number(f.dataset.faults || 0),
          picture: img.getAttribute('src').split('/').pop(), alt: img.alt, drawn: img.complete && img.naturalWidth > 0,
          readout: [...f.querySelector('.attn-live-readout').childNodes].filter((n) => n !== fault)
                     .map((n) => n.textContent).join(''),
          said: fault ? fault.textContent : null, link: fault?.querySelector('a')?.getAttribute('href') ?? null,
          value: Number(slider.querySelector('input').value), label: slider.querySelector('output').textContent,
          heard: slider.querySelector('input').getAttribute('aria-valuetext')};
}"""


def _agrees(shown: dict, spec: dict, states: list, where: str) -> None:
    """The slider, its label, its heard value, the picture and the readout all show ``shown['state']``."""
    (slider,) = spec["controls"]
    state = shown["state"]
    name, readout, alt = states[state]
    assert shown["picture"] == name and shown["alt"] == alt, f"{where}: the picture is not state {state}'s"
    assert _bare(shown["readout"]) == _bare(readout, html=True), f"{where}: the readout is not state {state}'s"
    assert (shown["value"], shown["label"], shown["heard"]) == (
        state, slider["labels"][state], f"{slider['label']} = {slider['labels'][state]}"), (
        f"{where}: the slider shows {shown['value']} ({shown['label']!r}, heard {shown['heard']!r}), "
        f"the picture state {state}")


@pytest.fixture
def faulty_explorer(site_browser, live_site):
    """``open(code, route)``: ``FAULTY``'s page in the language ``code``, its states file answered
    by ``route``. Returns the page, the figure, its spec, its states, the address of the page's
    live notebook, the states file's pattern (to unroute) and a function that reads what the
    figure shows (``_FAULT_SHOWN``)."""
    url, browser = site_browser
    contexts = []

    def open_(code: str, route):
        recipe = dict(live_states.all_ids())[FAULTY]
        context, page, _facts = _watched(browser, url)
        contexts.append(context)
        pattern = f"**/{site.LIVE}/{code}/{FAULTY}.json"
        page.route(pattern, route)
        page.goto(f"{url}{site.EDITIONS[code].prefix}{recipe.notebook}.html", wait_until="load")
        page.wait_for_function("(id) => document.getElementById(id).dataset.live === 'ready'", arg=f"live-{FAULTY}")
        figure = page.locator(f"#live-{FAULTY}")
        spec = json.loads(figure.locator("script.attn-live-spec").text_content())
        assert [c["kind"] for c in spec["controls"]] == ["slider"], f"{FAULTY}: {spec['controls']}"
        live = page.locator("a.attn-binder-lab").first.get_attribute("href")
        return (page, figure, spec, live_site(FAULTY, code)["states"], live, pattern,
                lambda: figure.evaluate(_FAULT_SHOWN))

    yield open_
    for context in contexts:
        context.close()


def _press(page, figure, key: str, shown) -> tuple[dict, dict]:
    """Press ``key`` on the explorer's slider and wait until the move has ended, shown (its
    picture loaded or failed) or said to have failed: what the figure showed before
    (``shown()``) and after."""
    before = shown()
    figure.locator("input[type=range]").press(key)
    page.wait_for_function("([f, s, n]) => (Number(f.dataset.shown || 0) > s || Number(f.dataset.faults || 0) > n)"
                           " && f.dataset.pending === '0' && f.querySelector('img.attn-live-picture').complete",
                           arg=[figure.element_handle(), before["shown"], before["faults"]])
    return before, shown()


def _said(code: str, kind: str) -> str:
    """The fault sentence of ``kind`` (``site.live_faults``) in the language ``code``, with the link's words."""
    with language(code):
        return site.live_faults()[kind].replace("{live}", tr("run the live notebook"))


@pytest.mark.parametrize("code", list(site.EDITIONS))
@pytest.mark.parametrize("fault", FAULTS)
def test_live_explorer_says_when_its_states_fail_and_tries_again(faulty_explorer, code, fault):
    requests, held = [], []

    def route(r):
        requests.append(r.request.url)
        if fault == "dropped once" and len(requests) == 1:
            held.append(r)  # dropped below, once a move waits for it
        elif fault == "404":
            r.fulfill(status=404, body="not found")
        elif fault == "corrupt":
            body = r.fetch().text()
            r.fulfill(status=200, content_type="application/json", body=body[: len(body) // 2])
        elif fault == "short":
            r.fulfill(status=200, content_type="application/json", body=json.dumps(r.fetch().json()[:3]))
        else:
            r.continue_()

    page, figure, spec, states, live, pattern, shown = faulty_explorer(code, route)
    start = shown()
    assert 0 < start["value"] < len(spec["controls"][0]["labels"]) - 1, f"{FAULTY}: starts at an end"
    where = f"{FAULTY} ({code}), states file {fault}"
    if fault == "dropped once":
        # the slider takes the focus (the states file is asked for) and moves twice; both moves wait
        figure.locator("input[type=range]").press("ArrowRight")
        figure.locator("input[type=range]").press("ArrowRight")
        page.wait_for_function("(f) => f.dataset.pending === '2'", arg=figure.element_handle())
        assert len(held) == 1 and shown()["value"] == start["value"] + 2, f"{where}: {held}, {shown()}"
        held[0].abort("internetdisconnected")
        page.wait_for_function("(f) => Number(f.dataset.faults || 0) > 0 && f.dataset.pending === '0'",
                               arg=figure.element_handle())
        now = shown()
        assert now["faults"] == 1, f"{where}: one failed file said {now['faults']} times"
    else:
        _before, now = _press(page, figure, "ArrowRight", shown)
    assert _bare(now["said"] or "") == _bare(_said(code, "states")), f"{where}: the readout says {now['said']!r}"
    assert now["fault"] == "states" and now["link"] == live, f"{where}: fault {now['fault']}, link {now['link']}"
    assert now["state"] == start["state"] and now["shown"] == 0, f"{where}: {now}"
    _agrees(now, spec, states, where)  # the slider back where the picture is
    if fault == "404":  # the sentence and its link, as axe-core reads them
        serious = serious_in(page, f"#live-{FAULTY}")
        assert serious == [], f"{where}: axe-core: {serious}"
    if fault != "dropped once":  # another move fails the same way, is said once and put back
        before, again = _press(page, figure, "ArrowLeft", shown)
        assert again["faults"] == before["faults"] + 1 and again["shown"] == 0, f"{where}, a second move: {again}"
        _agrees(again, spec, states, f"{where}, a second move")
        page.unroute(pattern)  # the fault lifted
    _before, after = _press(page, figure, "ArrowRight", shown)  # the states file asked for again
    assert after["shown"] == 1, f"{where}, then lifted: not shown; the readout says {after['said']!r}"
    assert after["value"] == start["value"] + 1 and after["states"] == "loaded", f"{where}, then lifted: {after}"
    assert after["fault"] is None and after["said"] is None, f"{where}, then lifted: the readout says {after['said']!r}"
    _agrees(after, spec, states, f"{where}, then lifted")
    assert len(requests) >= 2, f"{where}: the states file was asked for once: {requests}"


@pytest.mark.parametrize("code", list(site.EDITIONS))
def test_live_explorer_says_when_a_state_is_missing(faulty_explorer, code):
    """A states file of the right length that lacks the next state (null, as a refused setting
    is, though no setting of this explorer is refused): that move is said and put back; the
    others are shown."""
    gap = {}

    def route(r):
        body = r.fetch().json()
        body[gap["state"]] = None
        r.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page, figure, spec, states, live, _pattern, shown = faulty_explorer(code, route)
    start = shown()
    gap["state"] = start["state"] + 1
    where = f"{FAULTY} ({code}), state {gap['state']} missing"
    _before, now = _press(page, figure, "ArrowRight", shown)
    assert now["fault"] == "states" and now["shown"] == 0 and now["link"] == live, f"{where}: {now}"
    assert _bare(now["said"] or "") == _bare(_said(code, "states")), f"{where}: the readout says {now['said']!r}"
    _agrees(now, spec, states, where)  # the slider back where the picture is
    _before, after = _press(page, figure, "ArrowLeft", shown)  # the state below is there
    assert after["shown"] == 1 and after["value"] == start["value"] - 1, f"{where}, the next move: {after}"
    assert after["fault"] is None and after["said"] is None, f"{where}, the next move: the readout says {after['said']!r}"
    _agrees(after, spec, states, f"{where}, the next move")


@pytest.mark.parametrize("code", list(site.EDITIONS))
def test_live_explorer_says_when_a_picture_is_missing(faulty_explorer, code):
    page, figure, spec, states, live, _pattern, shown = faulty_explorer(code, lambda r: r.continue_())
    start = shown()
    missing = states[start["state"] + 1][0]
    page.route(f"**/{site.LIVE}/pictures/{missing}", lambda r: r.fulfill(status=404, body="not found"))
    _before, now = _press(page, figure, "ArrowRight", shown)
    where = f"{FAULTY} ({code}), picture {missing} missing"
    assert now["state"] == start["state"] + 1 and not now["drawn"], f"{where}: {now}"
    _agrees(now, spec, states, where)  # the state's text alternative and readout, the slider at it
    assert now["fault"] == "picture" and now["link"] == live, f"{where}: fault {now['fault']}, link {now['link']}"
    assert _bare(now["said"] or "") == _bare(_said(code, "picture")), f"{where}: the readout says {now['said']!r}"
    _before, after = _press(page, figure, "ArrowRight", shown)  # the next picture is there
    assert after["drawn"] and after["fault"] is None and after["said"] is None, f"{where}, the next move: {after}"
    _agrees(after, spec, states, f"{where}, the next move")
