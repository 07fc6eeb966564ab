"""The course website (``make site``) and the handouts (``make handouts``), in a real browser.

The module builds the site once into a temporary folder (as ``make site`` does, from the
committed notebooks, without running them), serves it on 127.0.0.1 and opens every page in
headless Chromium with every request outside that server refused. Then it prints the
handouts from that site. axe-core (npm, site/package.json) checks every page. The guides
(docs/*.md, CONTRIBUTING.md) are pages too: in the table of contents, every link and anchor
of the course's pages leading to a page or an id that the built site has.

Without Chromium, the site's npm packages or a CJK font the tests are skipped,
saying how to enable them; under CI (CI=true) they fail instead.
"""
from __future__ import annotations

import io
import json
import re
import time
import posixpath
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse, urlsplit

import pytest
from PIL import Image

from _browser import SERIOUS, axe_violations
from _pictures import explorer_outputs
from test_figures_alt import static_figures
from _support import unavailable
from tools import handouts, site
from tools.lab import VIEWPORT, browser_unavailable
from tools.serve import serving

PAGES = site.notebook_pages()
GUIDES = site.guide_pages()
pytestmark = [pytest.mark.browser, pytest.mark.slow]

# In the page: every image decoded with pixels that are not all one colour; the text a reader
# sees outside code (no raw $$ left by a failed MathJax, no widget repr).
_IMAGES = """() => [...document.images].map((img) => {
  const r = {src: img.currentSrc.slice(0, 80), w: img.naturalWidth, h: img.naturalHeight,
             alt: img.alt || img.title || '', explorer: img.classList.contains('widget-image'),
             figure: !img.classList.contains('widget-image') && !!img.closest('.cell_output'),
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
    print(f"make site: {seconds:.1f} s for {len(PAGES)} notebook pages and {len(GUIDES)} guides")
    return out


@pytest.fixture(scope="module")
def site_browser(built_site, browser):
    with serving(built_site) as url:
        yield url, browser


def _visit(browser, url: str, page_name: str) -> dict:
    """Open one page with every request outside ``url``'s server refused, let it render, and
    collect what the tests check: refused requests, failed responses, page errors, images,
    the visible prose, the live links and axe-core's violations."""
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
    try:
        page.goto(f"{url}{page_name}", wait_until="load")
        if page_name == "index.html":  # a redirect to the start page
            page.wait_for_url(f"**/{site.START}.html", timeout=10_000)
        site.wait_rendered(page)
        facts["url"] = page.url
        facts["images"] = page.evaluate(_IMAGES)
        facts["prose"] = page.evaluate(_PROSE)
        facts["math"] = page.evaluate("""() => { const m = [...document.querySelectorAll('.math')];
            return {all: m.length, typeset: m.filter((e) => e.querySelector('mjx-container')).length}; }""")
        facts["links"] = {cls: page.locator(f"a.{cls}").first.get_attribute("href")
                          for cls in ("attn-binder-lab", "attn-binder-voila")
                          if page.locator(f"a.{cls}").count()}
        facts["axe"] = axe_violations(page)
    finally:
        context.close()
    return facts


@pytest.fixture(scope="module")
def visited(site_browser):
    """page name -> what ``_visit`` saw (each page opened once for all the tests below)."""
    url, browser = site_browser
    seen: dict[str, dict] = {}

    def visit(name: str) -> dict:
        if name not in seen:
            seen[name] = _visit(browser, url, name)
        return seen[name]
    return visit


def test_the_site_has_every_notebook_and_an_index(built_site):
    assert (built_site / "index.html").is_file()
    for name in PAGES:
        assert (built_site / f"{name}.html").is_file(), f"no page for notebooks/{name}.ipynb"


def test_index_opens_the_start_page(visited):
    facts = visited("index.html")
    assert facts["url"].endswith(f"/{site.START}.html"), facts["url"]
    assert facts["refused"] == facts["failed"] == facts["errors"] == []


@pytest.mark.parametrize("name", PAGES + GUIDES)
def test_page_loads_with_nothing_from_outside(visited, name):
    facts = visited(f"{name}.html")
    assert facts["refused"] == [], f"{name}: requests outside the site: {facts['refused']}"
    assert facts["failed"] == [], f"{name}: failed requests: {facts['failed']}"
    assert facts["errors"] == [], f"{name}: errors in the page: {facts['errors']}"


@pytest.mark.parametrize("name", PAGES)
def test_page_shows_pictures_math_and_no_widget_repr(visited, name):
    facts = visited(f"{name}.html")
    images = facts["images"]
    blank = [i for i in images if i["spread"] == 0]
    assert blank == [], f"{name}: images without pixels: {blank}"
    nb = json.loads((site.NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    explorers = [i for i in images if i["explorer"]]
    assert len(explorers) == len(explorer_outputs(nb)), f"{name}: explorers shown: {explorers}"
    assert all(i["alt"].startswith("Picture: ") for i in explorers), f"{name}: an explorer picture without its text"
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
def test_page_links_to_run_it_live(visited, name):
    base = "https://mybinder.org/v2/gh/OWNER/REPO/main?urlpath="
    assert visited(f"{name}.html")["links"] == {
        "attn-binder-lab": f"{base}lab/tree/notebooks/{name}.ipynb",
        "attn-binder-voila": f"{base}voila/render/notebooks/{name}.ipynb"}


@pytest.mark.parametrize("name", PAGES + GUIDES)
def test_axe_finds_no_serious_violation(visited, name):
    violations = visited(f"{name}.html")["axe"]
    for v in violations:
        print(f"axe, {name}: {v['impact']}: {v['id']} ({len(v['nodes'])} nodes, e.g. {v['nodes'][0][:100]})")
    serious = [v for v in violations if v["impact"] in SERIOUS]
    assert serious == [], f"{name}: axe-core: " + "; ".join(
        f"{v['id']} ({v['impact']}) at {v['nodes'][:3]}" for v in serious)


# --- the guides, and the links between pages ----------------------------------------------

class _Anchors(HTMLParser):
    """The targets of a page's ``<a href>`` and every id (or ``<a name>``) it has."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href") is not None:
            self.hrefs.append(a["href"])


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
    assert site.site_link("../hub/z2jh-config.yaml", docs / "teaching.md") == f"{github}/blob/main/hub/z2jh-config.yaml"
    assert site.site_link("../binder", docs / "teaching.md") == f"{github}/tree/main/binder"
    assert site.site_link("https://mybinder.org", docs / "teaching.md") == "https://mybinder.org"
    with pytest.raises(FileNotFoundError, match="no-such-file.md"):
        site.site_link("no-such-file.md", docs / "teaching.md")


def test_guide_copies_load_nothing_from_outside(tmp_path):
    site.copy_guides(tmp_path)
    for name in GUIDES:
        text = (tmp_path / f"{name.split('/', 1)[1]}.md").read_text(encoding="utf-8")
        assert not re.search(r"!\[[^\]]*\]\(\s*<?[a-zA-Z][a-zA-Z0-9+.-]*:", text), f"{name}: an image from another site"
        assert "](../README.md" not in text and "](../hub/" not in text, f"{name}: a link to a file outside the site"


def test_each_guide_is_a_page_in_the_table_of_contents(built_site, anchors_of):
    # the navigation of the start page (where index.html leads) and of a lesson
    for page in (f"{site.START}.html", f"{PAGES[1]}.html"):
        html = (built_site / page).read_text(encoding="utf-8")
        assert 'class="caption-text">Guides<' in html, f"{page}: no part 'Guides' in the table of contents"
        listed = {found[0] for href in anchors_of(page).hrefs if (found := local_target(page, href))}
        for name in GUIDES:
            assert (built_site / f"{name}.html").is_file(), f"no page for the guide {name}"
            assert f"{name}.html" in listed, f"{page}: the guide {name} is not in the table of contents"


@pytest.mark.parametrize("name", GUIDES)
def test_guide_page_shows_the_guide(built_site, visited, name):
    source = site.GUIDES[name.split("/", 1)[1]].read_text(encoding="utf-8")
    title = source.splitlines()[0].lstrip("# ").strip()
    html = (built_site / f"{name}.html").read_text(encoding="utf-8")
    assert re.search(r"<h1>" + re.escape(title), html), f"{name}: the guide's title {title!r} is not the page's heading"
    assert visited(f"{name}.html")["links"] == {}, f"{name}: a guide is not a notebook to run on Binder"


def test_every_link_and_anchor_between_pages_resolves(built_site, anchors_of):
    broken = []
    # (a page missing from the site is the business of the tests above)
    for page in [f"{n}.html" for n in PAGES + GUIDES if (built_site / f"{n}.html").is_file()]:
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
    """(pages, pixel sizes of the images, CJK characters that a font of the PDF maps)."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    sizes, cjk = [], set()
    for p in reader.pages:
        sizes += [im.image.size for im in p.images]
        for font in (p["/Resources"].get("/Font") or {}).values():
            to_unicode = font.get_object().get("/ToUnicode")
            if to_unicode is not None:
                cjk |= set(CJK_OR_RADICAL.findall(mapped_text(to_unicode.get_object().get_data().decode("latin-1"))))
    return len(reader.pages), sizes, cjk


@pytest.fixture(scope="module")
def printed(site_browser, tmp_path_factory):
    reason = handouts.cjk_font_missing()
    if reason:
        unavailable(f"handouts test: {reason}")
    url, browser = site_browser
    t0 = time.monotonic()
    pdfs = handouts.print_pages(browser, url, tmp_path_factory.mktemp("handouts"))
    print(f"make handouts: {time.monotonic() - t0:.1f} s for {len(pdfs)} PDFs")
    return pdfs


@pytest.mark.parametrize("name", PAGES)
def test_handout_has_pages_pictures_and_chinese_glyphs(printed, name):
    path = printed[name]
    n_pages, sizes, cjk = _pdf_facts(path)
    print(f"{path.name}: {n_pages} pages, {len(sizes)} images, {path.stat().st_size / 1024:.0f} KiB")
    assert n_pages >= 1
    nb = json.loads((site.NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    for _, png in explorer_outputs(nb):
        size = Image.open(io.BytesIO(png)).size
        assert size in sizes, f"{path.name}: no image of the explorer's size {size} (images: {sizes})"
    pictures = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
    assert len(sizes) >= pictures, f"{path.name}: {len(sizes)} images for {pictures} pictures in the notebook"
    text = "".join("".join(c["source"]) + "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) + "".join(o.get("data", {}).get("text/html", ""))
        for o in c.get("outputs", [])) for c in nb["cells"])  # all the notebook's text
    chinese = set(CJK.findall(text))
    # Each Chinese character of the text is mapped by a font of the PDF, or its glyph is mapped
    # to a variant the text does not use (长 -> the radical ⾧, whose NFKC form is 長). With no
    # CJK font, no glyph maps to any of them.
    missing, variants = chinese - cjk, cjk - chinese
    assert len(missing) <= len(variants), (
        f"{path.name}: {len(missing)} Chinese characters of the notebook are drawn by no "
        f"CJK font in the PDF: {''.join(sorted(missing))[:40]}")
