"""What the browser tests share besides the session fixtures (tests/conftest.py): the
accessibility checker, axe-core, run in a page."""
from __future__ import annotations

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
