"""The website's explorers come from the notebooks' own explorer cells (tools/explorer_cells.py,
tools/live_states.py), checked without a browser and without building the site.

The notebook writes each explorer's call once; the site builds the explorer from that call,
adding only what tools/live_states.py provides (the values of arguments the notebook computes,
and where the site offers fewer values). So an edited call is what the site shows, a new
lesson's explorer is on the site without a line in tools/live_states.py, and a cell the site
cannot build stops it with a message that names the notebook, the cell and what to write where.
"""
from __future__ import annotations

import ast
import inspect
import json
from importlib import import_module
from pathlib import Path

import pytest

from tools import live_states, site
from tools.explorer_cells import ExplorerCellError, explorer_cells

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LESSONS = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _call(cell: dict) -> ast.Call:
    """The call a cell ends with, read here without tools/explorer_cells.py."""
    source = "".join(cell["source"])
    return ast.parse(source).body[-1].value


class _Provided:
    def __init__(self, key: str) -> None:
        self.key = key


@pytest.mark.parametrize("name", LESSONS)
def test_the_site_builds_exactly_the_notebooks_explorer_cells(monkeypatch, name):
    """Each explorer the site builds is one the notebook shows (its saved widget state says where),
    in the same order, built by the function the cell calls with the arguments it writes: each
    literal as written, each computed one from a provider of tools/live_states.py."""
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    shown = [i for i, _j in site.explorer_outputs(notebook)]
    recipes = live_states.recipes().get(name, [])
    assert [r.cell.cell for r in recipes] == shown, (
        f"{name}.ipynb: the site builds the explorers of cells {[r.cell.cell for r in recipes]}, "
        f"the notebook shows explorers in cells {shown}")
    for key in live_states.PROVIDERS:
        monkeypatch.setitem(live_states.PROVIDERS, key, lambda data, key=key: _Provided(key))
    for recipe in recipes:
        call = _call(notebook["cells"][recipe.cell.cell])
        module = import_module(recipe.module)
        function = getattr(module, call.func.id)
        built = {}
        monkeypatch.setattr(module, call.func.id, lambda **kwargs: built.update(kwargs))
        recipe.build(None)
        written = inspect.signature(function).bind(*call.args, **{k.arg: k.value for k in call.keywords}).arguments
        for parameter, node in written.items():
            try:
                expected = ast.literal_eval(node)
            except ValueError:  # computed by the notebook: the site's provider gives it
                assert isinstance(built[parameter], _Provided), (recipe.cell.where, parameter)
                assert built[parameter].key == f"{call.func.id}.{parameter}"
                continue
            assert built[parameter] == expected and type(built[parameter]) is type(expected), (
                f"{recipe.cell.where}: the site builds {parameter}={built[parameter]!r}")
        added = set(built) - set(written)
        assert all(isinstance(built[p], _Provided) for p in added), (recipe.cell.where, added)


@pytest.mark.parametrize("name", LESSONS)
def test_the_chinese_twin_shows_the_same_explorer_cells(name):
    """The Chinese site builds its explorers from the English calls (same ids): the twin's must be
    the same calls in the same cells."""
    english = [(c.cell, c.call) for c in explorer_cells(NOTEBOOKS / f"{name}.ipynb")]
    assert [(c.cell, c.call) for c in explorer_cells(NOTEBOOKS / "zh" / f"{name}.ipynb")] == english


def _scratch(tmp_path: Path, name: str, new: str, *, as_name: str | None = None, explorer: int = 0) -> Path:
    """A copy of lesson ``name`` in ``tmp_path`` whose ``explorer``-th explorer cell's code reads
    ``new`` (found as the site finds it: whatever the notebook's call is today)."""
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    notebook["cells"][explorer_cells(NOTEBOOKS / f"{name}.ipynb")[explorer].cell]["source"] = new
    path = tmp_path / f"{as_name or name}.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def test_an_edited_call_is_what_the_site_starts_at(tmp_path):
    """A teacher writes ``scaling_explorer(d_k=16)`` in 02: the site's first state is d_k = 16
    (no edit of tools/live_states.py), and the cache draws it again. (If 02 opens at 16 already,
    the edit is to 32.)"""
    before = live_states.recipes()["02_qkv"][0]
    d_k = 32 if before.build(None).controls["d_k"].value == 16 else 16
    _scratch(tmp_path, "02_qkv", f"scaling_explorer(d_k={d_k})")
    (after,) = live_states.recipes(tmp_path)["02_qkv"]
    assert after.build(None).controls["d_k"].value == d_k
    manifest = live_states.draw_states(after, "en", tmp_path / "states")
    (control,) = manifest["controls"]
    assert control["labels"][control["start"]] == str(d_k) and manifest["states"][manifest["start"]] is not None
    assert live_states.inputs_hash(after, "en") != live_states.inputs_hash(before, "en")


def test_a_new_lessons_explorer_needs_no_line_in_live_states(tmp_path):
    _scratch(tmp_path, "05_pytorch_implementation", 'mask_explorer("causal", length=4)', as_name="99_my_topic")
    (recipe,) = live_states.recipes(tmp_path)["99_my_topic"]
    assert live_states.explorer_id(recipe.notebook, 0) == "99_my_topic-0"
    explorer = recipe.build(None)
    assert explorer.controls["length"].value == 4


@pytest.mark.parametrize("name,new,says", [
    ("02_qkv", "scaling_explorer(d_k=size)",
     "Give tools/live_states.py a provider for `size`: PROVIDERS['scaling_explorer.d_k']"),
    ("02_qkv", "explorer = scaling_explorer()\nexplorer",
     "does not end in a call of one (`something_explorer(...)`). Make the explorer call the cell's last line"),
    ("02_qkv", "mystery_explorer()", "no cell of the notebook imports mystery_explorer from attn"),
    ("02_qkv", "scaling_explorer(size=16)", "scaling_explorer has no parameter 'size'"),
    ("06_visualization", 'pattern_explorer("mixed", 8, d_k=32, strength=1.0)',
     "the website offers d_k in (4, 16, 64), not the notebook's 32: add it to OFFERS['pattern_explorer'].grid "
     "in tools/live_states.py"),
])
def test_a_cell_the_site_cannot_build_says_what_to_write_where(tmp_path, name, new, says):
    _scratch(tmp_path, name, new)
    with pytest.raises(ExplorerCellError) as error:
        live_states.recipes(tmp_path)
    message = str(error.value)
    assert message.startswith(f"{name}.ipynb, cell ") and says in message, message


def test_a_call_that_shows_no_explorer_yet_says_re_execute(tmp_path):
    """An explorer cell added but not executed: its saved output shows no explorer."""
    path = _scratch(tmp_path, "02_qkv", "scaling_explorer()")
    notebook = json.loads(path.read_text(encoding="utf-8"))
    (cell,) = [c for c in notebook["cells"] if "".join(c["source"]) == "scaling_explorer()"]
    cell["outputs"] = []
    path.write_text(json.dumps(notebook), encoding="utf-8")
    with pytest.raises(ExplorerCellError, match=r"02_qkv.ipynb, cell \d+ .*saved output shows none. "
                                                r"Re-execute the notebook: python -m tools.execute 02_qkv"):
        live_states.recipes(tmp_path)


def test_solutions_show_no_explorer():
    """The site builds explorers for lessons only: a solutions notebook's explorer would stay a saved
    widget view that nothing draws (tools.site.wait_rendered says so)."""
    shown = {p.name: explorer_cells(p) for p in sorted((NOTEBOOKS / "solutions").glob("*.ipynb"))}
    assert {name: [c.where for c in cells] for name, cells in shown.items() if cells} == {}

