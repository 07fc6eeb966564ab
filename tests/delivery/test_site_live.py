"""The course website's explorers, live without a kernel (tools/live_states.py draws every
state of each explorer when the site is built; site/_static/attn-live.js shows them), in a real
browser, offline: each starts as its notebook saved it, answers every control as the explorer in
Python does, reads without JavaScript, and says what went wrong when its states or pictures fail
to arrive, then tries again.

The site is built once for the run (tests/conftest.py, ``built_site``) and served on 127.0.0.1;
every request outside that server is refused. Its pages are tests/delivery/test_site.py's.

Without Chromium or the site's npm packages the tests are skipped, saying how to enable them;
under CI (CI=true) they fail instead.
"""
from __future__ import annotations

import hashlib
import io
import json
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from _browser import refuse_outside, serious_in, watched_page
from _pictures import ACROSS_LEVELS, across_machines_problem, explorer_outputs
from attn.language import language, tr
from tools import explorer_states, live_states, site
from tools.lab import VIEWPORT

pytestmark = [pytest.mark.browser, pytest.mark.slow]


# --- the explorers, live without a kernel (tools/live_states.py, site/_static/attn-live.js) ---
#
# On every explorer's page, in each language, offline: in English each control is moved through
# up to 5 of its values (every value of a control with fewer; a slider's two ends among them),
# in Chinese once (what the language changes is the states file, the pictures and the words; how
# a move finds its state is the same script, proven in English: as tests/delivery/test_browser.py does in
# JupyterLab), by the keyboard where the control takes it, and the same move is made on the
# explorer in Python, built as the site's recipe builds it. After each move the page must show the state Python is
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
    same = explorer_states.same_value
    return [next(k for k, (_label, v) in enumerate(c.choices) if same(v, explorer.controls[c.name].value))
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
    offered = explorer_states.offered_controls(explorer, recipe)
    start = explorer_states.state_index(offered, _positions(explorer, offered))
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
def test_live_explorer_answers_every_control_offline(site_tab, live_site, ident, code):
    recipe = dict(live_states.all_ids())[ident]
    manifest = live_site(ident, code)
    explorer = _built(recipe, manifest["data"], code)
    offered = explorer_states.offered_controls(explorer, recipe)
    moves, seen = [], {}
    page, facts = site_tab(f"{site.EDITIONS[code].prefix}{recipe.notebook}.html")
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
                   if manifest["states"][explorer_states.state_index(offered, at[:i] + [k] + at[i + 1:])]]
        if control.kind == "select":  # what the explorer refuses here, the page does not offer
            offered_now = drawn.locator("option").evaluate_all("(os) => os.map((o) => !o.disabled)")
            assert offered_now == [k in allowed for k in range(len(control.choices))], f"{ident}: {control.name}"
        targets = _targets(allowed, at[i])
        for k in targets if code == "en" else targets[:1]:  # in Chinese, once (above)
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
            assert shown["state"] == explorer_states.state_index(offered, _positions(explorer, offered)), where
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
    wanted = 5 if code == "en" else 2  # the value it had and, in Chinese, one other
    few = {c.name: sorted(seen[c.name]) for c in offered if len(seen[c.name]) < min(wanted, len(c.choices))}
    assert moves and few == {}, f"{ident} ({code}): controls moved through fewer than {wanted} values: {few}"
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


@pytest.fixture(scope="module")
def fault_page(site_browser):
    """One page for the module's faults (a page in a new context for each cost Chromium about
    twice the CPU time of a navigation): (the page, the site's address, the facts it collects)."""
    url, browser = site_browser
    context, page, facts = watched_page(browser, url)
    yield page, url, facts
    context.close()


@pytest.fixture
def faulty_explorer(fault_page, live_site):
    """``open(code, route)``: ``FAULTY``'s page in the language ``code``, its states file answered
    by ``route``. Returns the page, the figure, its spec, its states, the address of the page's
    live notebook, the states file's pattern (to unroute) and a function that reads what the
    figure shows (``_FAULT_SHOWN``). Afterwards every route the test added is removed, and the
    page again refuses every request outside the site, as ``watched_page`` made it."""
    page, url, facts = fault_page

    def open_(code: str, route):
        recipe = dict(live_states.all_ids())[FAULTY]
        page.goto("about:blank")
        pattern = f"**/{site.LIVE}/{code}/{FAULTY}.json"
        page.route(pattern, route)
        page.goto(f"{url}{site.EDITIONS[code].prefix}{recipe.notebook}.html", wait_until="load")
        page.wait_for_function("(id) => document.getElementById(id).dataset.live === 'ready'", arg=f"live-{FAULTY}")
        figure = page.locator(f"#live-{FAULTY}")
        spec = json.loads(figure.locator("script.attn-live-spec").text_content())
        assert [c["kind"] for c in spec["controls"]] == ["slider"], f"{FAULTY}: {spec['controls']}"
        binder = page.locator("a.attn-binder-lab")  # none while the repository's address is unset
        live = binder.first.get_attribute("href") if binder.count() else None
        return (page, figure, spec, live_site(FAULTY, code)["states"], live, pattern,
                lambda: figure.evaluate(_FAULT_SHOWN))

    yield open_
    page.goto("about:blank")
    page.unroute_all(behavior="ignoreErrors")
    refuse_outside(page, url, facts["refused"])


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
