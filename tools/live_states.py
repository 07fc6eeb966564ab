"""Every state of the course's explorers, drawn by the explorers themselves, for the website.

The website has no kernel. So that its explorers still answer their controls, ``make site``
builds each explorer of a notebook from the notebook's own explorer cell (the function the cell
calls, with the arguments it writes: tools/explorer_cells.py; ``recipes()``), asks it for the
picture, the readout and the text alternative of every setting of its controls
(tools/explorer_states.py numbers them), and writes them out: the pictures as lossless WebP
files named by their pixels (a picture two states or two languages share is stored once), the
rest as one JSON file per explorer and language (a "manifest"). The page's script
(site/_static/attn-live.js) only lays them out: it works out which state the controls name and
shows that state's picture and readout. No attention maths is written a second time in
JavaScript.

This file holds only what the site adds to the notebooks' calls (below): the values of the
arguments a notebook computes in its own cells (``PROVIDERS``, ``MEASURED``), and where the site
offers fewer values than the notebook (``offers()``: 06's explorer has 787,200 settings; 08's
pretrained one takes any sentence), with the note the page shows beside the controls.

The work is cached under build/live-cache/, by a hash of its inputs: the notebook's call, the
files of ``attn`` that the explorer's module imports (followed through the package), the
package's data files, this file, the language and the versions of the libraries that draw. An
unchanged explorer is not drawn again. ``python -m tools.live_states`` draws every explorer and
says what it cost.
"""
from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import io
import json
import math
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from tools.explorer_cells import (Computed, ExplorerCell, ExplorerCellError, explorer_cells, explorer_signature,
                                  imported_module, module_file)
from tools.explorer_states import offered_controls, one_move_apart, same_value, set_values, state_index

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
PACKAGE = REPO / "src" / "attn"
CACHE = REPO / "build" / "live-cache"
LANGUAGES = ("en", "zh")
# WebP's lossless mode: the page decodes exactly the pixels the explorer drew, in files about
# 2.5 times smaller than PNG's (measured on the explorers' pictures). Effort (``quality``, in
# lossless mode) 25 and method 2: 7 ms a picture against 18 ms for 50 and 3, 7% larger.
PICTURE_SUFFIX = ".webp"


# --- what the site adds to the notebooks' explorers ----------------------------------------
#
# Each explorer is built from its notebook's own cell (tools/explorer_cells.py): the function the
# cell calls, with the arguments it writes. A new lesson whose explorer cell calls a course
# explorer with literal arguments is on the site with no line here. What this section holds is
# only what the site adds:
#
# - PROVIDERS: the value of an argument the notebook computes in its own cells (07's measured
#   times, 08's trained runs), keyed "<explorer function>.<parameter>". A provider takes the
#   explorer's measurements (``MEASURED``; None without) and returns the argument. A provider
#   for a parameter the call leaves out adds that argument (07's block sizes, measured with the
#   rest, so that both languages and the tests draw from one measurement).
# - MEASURED: explorer function -> what is measured once on the machine that builds the site
#   (JSON-able), kept in the cache and in the site (``_live/measured.json``).
# - OFFERS: explorer function -> ``Offer``, where the site offers fewer values than the notebook.

def _measure_costs() -> dict:
    """07's measurements, made once on the machine that builds the site (its explorer draws
    measured times and memory: the notebook's own are those of the machine that ran it)."""
    from attn.lessons.cost.measure import memory_curve, time_curve
    from attn.widgets.efficiency import LENGTHS, _WHOLE, measure_block_sizes

    blocks = measure_block_sizes(LENGTHS)
    return {"seconds": time_curve(LENGTHS, methods=_WHOLE, repeats=3),
            "peak_bytes": memory_curve(LENGTHS, methods=_WHOLE),
            "blocks": {"lengths": list(blocks.lengths),
                       "seconds": {str(b): list(v) for b, v in blocks.seconds.items()},
                       "peak_bytes": {str(b): list(v) for b, v in blocks.peak_bytes.items()}}}


def _blocks(data: dict):
    from attn.widgets.efficiency import BlockMeasurements

    b = data["blocks"]
    return BlockMeasurements(tuple(b["lengths"]), {int(k): tuple(v) for k, v in b["seconds"].items()},
                             {int(k): tuple(v) for k, v in b["peak_bytes"].items()})


def _shipped_runs(data: dict | None) -> dict:
    """08's training runs shipped with the package, task -> run (the run the notebook trains
    itself is not on the site: its ``Offer`` says so)."""
    from attn.lessons.trained import tasks, tiny

    return {name: tiny.load_run(name) for name in tasks.TASKS}


PROVIDERS: dict[str, Callable[[dict | None], object]] = {
    "efficiency_explorer.seconds": lambda data: data["seconds"],
    "efficiency_explorer.peak_bytes": lambda data: data["peak_bytes"],
    "efficiency_explorer.blocks": _blocks,
    "training_explorer.runs": _shipped_runs,
    "example_explorer.models": lambda data: {name: r.model for name, r in _shipped_runs(data).items()},
}

MEASURED: dict[str, Callable[[], dict]] = {"efficiency_explorer": _measure_costs}


@dataclass(frozen=True)
class Offer:
    """Where the site offers fewer settings of an explorer than its notebook.

    Attributes:
        grid: control -> the values the site offers, where it offers fewer than the notebook.
        fixed: the controls the site does not offer (they keep the notebook's value).
        note: what the site leaves out, in a sentence (``mark``ed for the catalogue), shown
            beside the controls with a link to the live notebook.
    """

    grid: Mapping[str, Sequence] = field(default_factory=dict)
    fixed: tuple[str, ...] = ()
    note: str = ""


def offers() -> dict[str, Offer]:
    from attn.language import mark

    return {
        # the heads drop-down offers the divisors of d_model: every count any d_model allows
        "splitting_explorer": Offer(grid={"num_heads": (1, 2, 3, 4, 6, 8)}),
        "pattern_explorer": Offer(
            grid={"n_heads": (1, 2, 4, 8), "d_k": (4, 16, 64), "strength": (0.5, 1.0, 2.0)}, fixed=("n_tokens",),
            note=mark("This page offers 1,080 of the explorer's 787,200 settings: 1, 2, 4 or 8 "
                      "heads, d_k 4, 16 or 64, strength 0.5, 1 or 2, and 8 tokens. The live "
                      "notebook offers every value.")),
        "efficiency_explorer": Offer(note=mark(
            "Measured once on the machine that built this page, not on yours: run the live notebook to "
            "measure your own.")),
        "training_explorer": Offer(note=mark(
            "The run the notebook trains itself, \"phrases (trained here)\", is only in the live notebook.")),
        "pretrained_explorer": Offer(fixed=("text",), note=mark(
            "This page offers the four example sentences; to type your own, run the live notebook.")),
        "language_model_explorer": Offer(
            grid={"temperature": (0.5, 1.0, 2.0), "top_k": (1, 10, 100)},
            note=mark("This page offers 432 of the explorer's 1,200 settings: temperature 0.5, 1 or 2 and "
                      "top-k 1, 10 or 100. The live notebook offers every value.")),
    }


@dataclass(frozen=True)
class Recipe:
    """One explorer of one notebook, as the site builds it: the notebook's call (``cell``) with
    what the site adds (``PROVIDERS``, ``MEASURED``, ``OFFERS``).

    Attributes:
        cell: the explorer cell (``tools.explorer_cells.ExplorerCell``).
        module: the module of ``attn`` that defines the explorer (the cache follows its imports).
        arguments: parameter -> the value the call writes, or the provider's key for one it
            computes or leaves to the site.
        grid, fixed, note: the ``Offer`` of its function (empty where the site offers all).
        prepare: what the explorer needs measured once, JSON-able (07's times), or None.
    """

    cell: ExplorerCell
    module: str
    arguments: tuple[tuple[str, object], ...]
    grid: Mapping[str, Sequence] = field(default_factory=dict)
    fixed: tuple[str, ...] = ()
    note: str = ""
    prepare: Callable[[], dict] | None = None

    @property
    def notebook(self) -> str:
        return self.cell.notebook

    @property
    def name(self) -> str:
        return self.module.rsplit(".", 1)[-1]

    def build(self, data: dict | None):
        """The explorer, as the notebook's cell builds it (``data``: its measurements)."""
        import importlib

        function = getattr(importlib.import_module(self.module), self.cell.function)
        return function(**{p: PROVIDERS[v.key](data) if isinstance(v, _Provided) else v
                           for p, v in self.arguments})


@dataclass(frozen=True)
class _Provided:
    key: str


def recipe_for(cell: ExplorerCell) -> Recipe:
    """The site's recipe for one explorer cell.

    Raises:
        ExplorerCellError: the site cannot build it; the message says what to write where.
    """
    module, positional, keyword = explorer_signature(cell.module, cell.function)
    fix = "tools/live_states.py, PROVIDERS"
    if len(cell.args) > len(positional):
        raise ExplorerCellError(f"{cell.where}: {cell.function} takes {len(positional)} positional "
                                f"argument(s), the cell gives {len(cell.args)}")
    given = dict(zip(positional, cell.args)) | dict(cell.kwargs)
    unknown = sorted(set(given) - set(positional) - set(keyword))
    if unknown:
        raise ExplorerCellError(f"{cell.where}: {cell.function} has no parameter {unknown[0]!r}")
    arguments = {}
    for parameter, value in given.items():
        key = f"{cell.function}.{parameter}"
        if isinstance(value, Computed):
            if key not in PROVIDERS:
                raise ExplorerCellError(
                    f"{cell.where}: the website builds this explorer without running the notebook, so it "
                    f"needs the value of `{value.source}` ({parameter}=), which the notebook computes. Give "
                    f"tools/live_states.py a provider for `{value.source}`: PROVIDERS[{key!r}] = a function "
                    f"of the site's measurements that returns it; or write the argument as a literal.")
            value = _Provided(key)
        elif key in PROVIDERS:
            raise ExplorerCellError(f"{cell.where}: the cell writes {parameter}={value!r}, and {fix} "
                                    f"provides it too: remove PROVIDERS[{key!r}]")
        arguments[parameter] = value
    for key in PROVIDERS:  # what the site adds to the call
        function, parameter = key.split(".")
        if function == cell.function and parameter not in arguments:
            arguments[parameter] = _Provided(key)
    offer = offers().get(cell.function, Offer())
    for parameter, offered in offer.grid.items():
        if parameter in given and not any(same_value(given[parameter], v) for v in offered):
            raise ExplorerCellError(
                f"{cell.where}: the website offers {parameter} in {tuple(offered)}, not the notebook's "
                f"{given[parameter]!r}: add it to OFFERS[{cell.function!r}].grid in tools/live_states.py "
                f"(or use one of those values)")
    return Recipe(cell, module, tuple(arguments.items()), offer.grid, offer.fixed, offer.note,
                  MEASURED.get(cell.function))


@functools.cache
def recipes(folder: Path = NOTEBOOKS) -> dict[str, list[Recipe]]:
    """Each notebook's explorers as the site offers them, in the order the notebook shows them
    (the lessons of ``folder``; the Chinese twins hold the same code)."""
    found = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        cells = explorer_cells(path)
        if cells:
            found[path.stem] = [recipe_for(cell) for cell in cells]
    return found


def explorer_id(notebook: str, position: int) -> str:
    """The name of a notebook's explorer in the site: ``06_visualization-0``."""
    return f"{notebook}-{position}"


def all_ids() -> list[tuple[str, Recipe]]:
    return [(explorer_id(nb, i), r) for nb, rs in recipes().items() for i, r in enumerate(rs)]


# --- the pictures ------------------------------------------------------------------------------

def picture_name(image) -> str:
    """A picture's file name: a hash of its pixels (the same picture, the same file)."""
    digest = hashlib.sha256(f"{image.size}".encode() + image.tobytes()).hexdigest()
    return digest[:24] + PICTURE_SUFFIX


def _write_picture(image, folder: Path) -> str:
    name = picture_name(image)
    path = folder / name
    if not path.exists():
        buffer = io.BytesIO()
        # lossless; method 1 draws the site's pictures twice as fast as method 2, for 9% more bytes
        image.save(buffer, format="webp", lossless=True, quality=10, method=1)
        path.write_bytes(buffer.getvalue())
    return name


def draw_states(recipe: Recipe, language: str, folder: Path, data: dict | None = None) -> dict:
    """Every state of one explorer in one language: pictures into ``folder/pictures``; returns
    the manifest (also written to ``folder/manifest.json``)."""
    from attn.language import set_language, tr

    set_language(language)
    explorer = recipe.build(data)
    explorer.encode_png = False  # the pixels of each state, read below without a PNG (Explorer's fast path)
    offered = offered_controls(explorer, recipe)
    start = []
    for control in offered:
        value = explorer.controls[control.name].value
        found = [k for k, (_label, v) in enumerate(control.choices) if same_value(v, value)]
        if not found:
            raise ValueError(f"recipe {recipe.notebook}/{recipe.name}: the notebook's value {value!r} of "
                             f"{control.name!r} is not among the values the site offers")
        start.append(found[0])
    pictures = folder / "pictures"
    pictures.mkdir(parents=True, exist_ok=True)
    states: list = [None] * math.prod(len(c.choices) for c in offered)  # a refused setting stays None
    for positions in one_move_apart([len(c.choices) for c in offered]):
        if set_values(explorer, offered, positions):
            image = explorer.pixels()
            states[state_index(offered, positions)] = [_write_picture(image, pictures), explorer.readout.value,
                                                       explorer.alt_text()]
    manifest = {
        "notebook": recipe.notebook, "module": recipe.module, "language": language,
        "title": explorer.title, "note": tr(recipe.note) if recipe.note else "",
        "controls": [{"name": c.name, "label": c.label, "kind": c.kind,
                      "labels": [label for label, _v in c.choices], "start": k}
                     for c, k in zip(offered, start)],
        "start": state_index(offered, start), "states": states, "data": data,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, separators=(",", ":")))
    return manifest


# --- the cache -------------------------------------------------------------------------------

def module_closure(module: str) -> list[Path]:
    """The files of ``attn`` that ``module`` imports, directly or through others (followed
    through the package's own imports; a package's ``__init__`` only where it is imported)."""
    seen: dict[str, Path] = {}
    todo = [module, "attn.widgets._base"]
    while todo:
        name = todo.pop()
        path = module_file(name)
        if path is None or name in seen:
            continue
        seen[name] = path
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = imported_module(package, node)
                todo.append(target)
                todo += [f"{target}.{alias.name}" for alias in node.names]  # a submodule
    return sorted(set(seen.values()))


def inputs_hash(recipe: Recipe, language: str) -> str:
    """A hash of everything that decides the explorer's pictures and words."""
    from importlib.metadata import version

    h = hashlib.sha256()
    files = module_closure(recipe.module) + [Path(__file__)]
    files += sorted(p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc", ".pot")
                    and "__pycache__" not in p.parts)
    for path in files:
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    for lib in ("torch", "numpy", "matplotlib", "pillow", "ipywidgets"):
        h.update(f"{lib}={version(lib)}".encode())
    # the notebook's call: an edited call is drawn again
    h.update(f"{recipe.notebook}|{recipe.module}|{recipe.cell.call}|{language}".encode())
    return h.hexdigest()[:16]


def _cached(ident: str, recipe: Recipe, language: str) -> Path:
    return CACHE / f"{ident}-{language}-{inputs_hash(recipe, language)}"


def _job(ident: str, language: str, data: dict | None) -> tuple[str, str, float]:
    recipe = dict(all_ids())[ident]
    folder = _cached(ident, recipe, language)
    work = folder.with_name(folder.name + ".part")
    shutil.rmtree(work, ignore_errors=True)
    start = time.perf_counter()
    draw_states(recipe, language, work, data)
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return ident, language, time.perf_counter() - start


def _prepared(ident: str, recipe: Recipe) -> dict | None:
    """``recipe.prepare()``'s result, kept with the cache so that both languages and later
    builds use the same measurements."""
    if recipe.prepare is None:
        return None
    path = CACHE / f"{ident}-data-{inputs_hash(recipe, '')}.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(recipe.prepare()))
    return json.loads(path.read_text())


def build_states(languages: Sequence[str] = LANGUAGES, *, workers: int = 2,
                 log: Callable[[str], None] = print) -> dict[tuple[str, str], Path]:
    """Draw (or take from the cache) every explorer in every language: (id, language) -> its
    folder (``manifest.json`` and ``pictures/``)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    folders, todo = {}, []
    for ident, recipe in all_ids():
        for language in languages:
            folder = _cached(ident, recipe, language)
            folders[ident, language] = folder
            if not (folder / "manifest.json").is_file():
                todo.append((ident, language, _prepared(ident, recipe)))
    if todo:
        import multiprocessing

        start = time.perf_counter()
        # the largest first, so that the two workers end together
        todo.sort(key=lambda job: job[0].startswith(("08_trained_heads-2", "06_")), reverse=True)
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_quiet) as pool:
            for ident, language, seconds in pool.map(_job, *zip(*todo)):
                log(f"live states: {ident} ({language}) drawn in {seconds:.1f} s")
        log(f"live states: {len(todo)} of {len(folders)} drawn in {time.perf_counter() - start:.1f} s "
            f"({len(folders) - len(todo)} from the cache)")
    else:
        log(f"live states: all {len(folders)} from the cache")
    return folders


def _quiet() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--language", choices=LANGUAGES, action="append")
    args = parser.parse_args(argv)
    # this module's own functions, not __main__'s: the workers import them by name
    from tools.live_states import build_states

    folders = build_states(args.language or LANGUAGES, workers=args.workers)
    total = sum(p.stat().st_size for f in folders.values() for p in f.rglob("*") if p.is_file())
    print(f"{len(folders)} explorers; {total / 2**20:.1f} MiB before sharing pictures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
