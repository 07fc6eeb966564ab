"""What the browser tests share besides the session fixtures (tests/conftest.py): the
accessibility checker, axe-core, run in a page, and what a screen reader hears from an
explorer (``heard_problems``)."""
from __future__ import annotations

import re

from _support import unavailable
from tools import site

AXE = site.NODE_MODULES / "axe-core" / "axe.min.js"
SERIOUS = {"serious", "critical"}  # the impacts a test fails on


def add_axe(page) -> None:
    """Load axe-core into ``page`` (skip, or fail under CI, if it is not installed)."""
    if not AXE.is_file():
        unavailable(f"{AXE} not found: npm ci --prefix site")
    page.add_script_tag(path=str(AXE))


def axe_violations(page) -> list[dict]:
    """axe-core's violations on the page (rule id, impact, help, the first nodes' selectors)."""
    add_axe(page)
    return page.evaluate("""async () => (await axe.run(document)).violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => n.target.join(' ')) }))""")


# --- what a screen reader hears from an explorer (its ARIA, written by attn.widgets' script) ---

# Every part of an explorer a user operates, with what assistive technology gets from it:
# role, the aria-valuetext of a slider, the text its readout shows; and the explorer's readout
# (role, aria-live). The names come from Playwright's accessible-name computation (aria_snapshot).
_JS_HEARD = r"""
(explorer) => {
  const clean = (s) => (s || '').replace(/[\u200b\s]+/g, ' ').trim();
  const sliders = [...explorer.querySelectorAll('.widget-slider')].map((s) => ({
    label: clean((s.querySelector(':scope > label.widget-label') || {}).textContent),
    shown: clean((s.querySelector('.widget-readout') || {}).textContent),
    valuetext: (s.querySelector('[role=slider]') || {getAttribute: () => null}).getAttribute('aria-valuetext')}));
  const toggles = [...explorer.querySelectorAll('.widget-toggle-buttons')].map((g) => ({
    label: clean((g.querySelector(':scope > label.widget-label') || {}).textContent),
    role: g.getAttribute('role'), name: g.getAttribute('aria-label'),
    pressed: [...g.querySelectorAll('button')].map((b) => [b.getAttribute('aria-pressed'),
                                                            b.classList.contains('mod-active')])}));
  const readouts = [...explorer.querySelectorAll(':scope > .widget-html')].slice(-1).map((r) => ({
    role: r.getAttribute('role'), live: r.getAttribute('aria-live')}));
  return {sliders, toggles, readouts};
}
"""
_NAMED = re.compile(r'^\s*- (slider|combobox|textbox|checkbox|radio|button|spinbutton|listbox)'
                    r'(?: "((?:[^"\\]|\\.)*)")?', re.M)


def unnamed_parts(explorer) -> list[str]:
    """The operable parts (slider, drop-down, text box, check box, buttons) of the explorer's
    controls that have no accessible name: "role" each (``explorer``: a Playwright locator)."""
    snapshot = "\n".join(row.aria_snapshot() for row in explorer.locator(":scope > .widget-hbox").all()
                         if row.locator("input, select, textarea, button, [role=slider]").count())
    return [role for role, name in _NAMED.findall(snapshot) if not (name or "").strip()]


def heard_problems(explorer) -> list[str]:
    """What is wrong with what a screen reader hears from the explorer: an unnamed part, a
    slider whose aria-valuetext is not "label = shown value", toggle buttons that are no group
    named by their label or do not say (aria-pressed) which one is chosen, a readout that is no
    polite live region. Empty when all is right."""
    problems = [f"a {role} without an accessible name" for role in unnamed_parts(explorer)]
    heard = explorer.evaluate(_JS_HEARD)
    for s in heard["sliders"]:
        want = f"{s['label']} = {s['shown']}"
        if s["valuetext"] != want:
            problems.append(f"slider {s['label']!r}: aria-valuetext {s['valuetext']!r}, expected {want!r}")
    for t in heard["toggles"]:
        if (t["role"], t["name"]) != ("group", t["label"]):
            problems.append(f"toggle buttons {t['label']!r}: role {t['role']!r}, name {t['name']!r}"
                            f" (expected a group named {t['label']!r})")
        if [pressed for pressed, _ in t["pressed"]] != [str(active).lower() for _, active in t["pressed"]]:
            problems.append(f"toggle buttons {t['label']!r}: aria-pressed {t['pressed']} (of each "
                            f"button: [aria-pressed, shown as chosen]) does not say which is chosen")
    if [(r["role"], r["live"]) for r in heard["readouts"]] != [("status", "polite")]:
        problems.append(f"the readout is not a polite live region (role=status): {heard['readouts']}")
    return problems


def serious_in(page, selector: str) -> list[dict]:
    """axe-core's serious and critical violations inside the elements matching ``selector``
    (rule id, impact, the node), one entry per node."""
    add_axe(page)
    found = page.evaluate("""async (sel) => {
        const nodes = [...document.querySelectorAll(sel)];
        if (!nodes.length) return [];
        return (await axe.run(nodes)).violations.flatMap((v) =>
          v.nodes.map((n) => ({id: v.id, impact: v.impact, target: n.target.join(' ')})));
      }""", selector)
    return [f for f in found if f["impact"] in SERIOUS]
