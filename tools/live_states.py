"""Every state of the course's explorers, drawn by the explorers themselves, for the website.

The website has no kernel. So that its explorers still answer their controls, ``make site``
asks each explorer of a notebook, built as that notebook builds it (``recipes()``), for the
picture, the readout and the text alternative of every setting of its controls, and writes
them out: the pictures as lossless WebP files named by their pixels (a picture two states or
two languages share is stored once), the rest as one JSON file per explorer and language (a
"manifest"). The page's script (site/_static/attn-live.js) only lays them out: it works out
which state the controls name and shows that state's picture and readout. No attention maths
is written a second time in JavaScript.

A state is numbered like a number written in mixed radix: the explorer's offered controls in
their order, the last one changing fastest (``state_index``). A setting the explorer refuses
(notebook 04: a head count that does not divide d_model) is ``null`` in the manifest.

Where the site offers fewer values than the notebook (06's explorer has 787,200 settings; 08's
pretrained one takes any sentence), the recipe says which (``Recipe.grid``, ``Recipe.fixed``) and
the manifest carries a note the page shows beside the control.

The work is cached under build/live-cache/, by a hash of its inputs: the files of ``attn``
that the explorer's module imports (followed through the package), the package's data files,
this file, the language and the versions of the libraries that draw. An unchanged explorer is
not drawn again. ``python -m tools.live_states`` draws every explorer and says what it cost.
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

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "attn"
CACHE = REPO / "build" / "live-cache"
LANGUAGES = ("en", "zh")
# WebP's lossless mode: the page decodes exactly the pixels the explorer drew, in files about
# 2.5 times smaller than PNG's (measured on the explorers' pictures). Effort (``quality``, in
# lossless mode) 25 and method 2: 7 ms a picture against 18 ms for 50 and 3, 7% larger.
PICTURE_SUFFIX = ".webp"


# --- what the site offers of each explorer -------------------------------------------------

def _training(data: dict | None):
    from attn.lessons.trained import tasks, tiny
    from attn.widgets.trained import training_explorer

    return training_explorer({name: tiny.load_run(name) for name in tasks.TASKS}, task="neighbours")


def _examples(data: dict | None):
    from attn.lessons.trained import tasks, tiny
    from attn.widgets.trained import example_explorer

    shipped = {name: tiny.load_run(name) for name in tasks.TASKS}
    return example_explorer({name: r.model for name, r in shipped.items()}, task="phrases")


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


def _efficiency(data: dict | None):
    from attn.widgets.efficiency import BlockMeasurements, efficiency_explorer

    b = data["blocks"]
    blocks = BlockMeasurements(tuple(b["lengths"]), {int(k): tuple(v) for k, v in b["seconds"].items()},
                               {int(k): tuple(v) for k, v in b["peak_bytes"].items()})
    return efficiency_explorer(512, 128, seconds=data["seconds"], peak_bytes=data["peak_bytes"], blocks=blocks)


def _call(module: str, name: str, *args, **kwargs) -> Callable[[dict | None], object]:
    def build(data: dict | None):
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    return build


@dataclass(frozen=True)
class Recipe:
    """One explorer of one notebook, as the site offers it.

    Attributes:
        notebook: the notebook's name without .ipynb (the same in both editions).
        module: the module of ``attn`` whose explorer it is (the cache follows its imports).
        build: ``build(data) -> Explorer``, the call the notebook makes, with ``data`` from
            ``prepare`` (None without one).
        grid: control -> the values the site offers, where it offers fewer than the notebook.
        fixed: the controls the site does not offer (they keep the notebook's value).
        note: what the site leaves out, in a sentence (``mark``ed for the catalogue), shown
            beside the controls with a link to the live notebook.
        prepare: what the explorer needs measured once, JSON-able (07's times).
    """

    notebook: str
    module: str
    build: Callable[[dict | None], object]
    grid: Mapping[str, Sequence] = field(default_factory=dict)
    fixed: tuple[str, ...] = ()
    note: str = ""
    prepare: Callable[[], dict] | None = None

    @property
    def name(self) -> str:
        return self.module.rsplit(".", 1)[-1]


@functools.cache
def recipes() -> dict[str, list[Recipe]]:
    """Each notebook's explorers as the site offers them, in the order the notebook shows them."""
    from attn.language import mark

    w = "attn.widgets"
    recipes = [
        Recipe("01_intuition", f"{w}.sentence", _call(f"{w}.sentence", "sentence_explorer")),
        Recipe("02_qkv", f"{w}.scaling", _call(f"{w}.scaling", "scaling_explorer")),
        Recipe("03_worked_example", f"{w}.worked", _call(f"{w}.worked", "worked_explorer")),
        # the heads drop-down offers the divisors of d_model: every count any d_model allows
        Recipe("04_multi_head", f"{w}.splitting",
               _call(f"{w}.splitting", "splitting_explorer", d_model=16, num_heads=2),
               grid={"num_heads": (1, 2, 3, 4, 6, 8)}),
        Recipe("05_pytorch_implementation", f"{w}.masks",
               _call(f"{w}.masks", "mask_explorer", "causal + left padding", length=6, fill="-inf")),
        Recipe("06_visualization", f"{w}.patterns",
               _call(f"{w}.patterns", "pattern_explorer", "mixed", 8, d_k=16, strength=1.0),
               grid={"n_heads": (1, 2, 4, 8), "d_k": (4, 16, 64), "strength": (0.5, 1.0, 2.0)},
               fixed=("n_tokens",),
               note=mark("This page offers 1,080 of the explorer's 787,200 settings: 1, 2, 4 or 8 "
                         "heads, d_k 4, 16 or 64, strength 0.5, 1 or 2, and 8 tokens. The live "
                         "notebook offers every value.")),
        Recipe("07_efficiency", f"{w}.efficiency", _efficiency, prepare=_measure_costs,
               note=mark("Measured once on the machine that built this page, not on yours: run the "
                         "live notebook to measure your own.")),
        Recipe("08_trained_heads", f"{w}.trained.tiny", _training,
               note=mark("The run the notebook trains itself, \"phrases (trained here)\", is only "
                         "in the live notebook.")),
        Recipe("08_trained_heads", f"{w}.trained.tiny", _examples),
        Recipe("08_trained_heads", f"{w}.trained.minilm",
               _call(f"{w}.trained.minilm", "pretrained_explorer", layer=1, head=3, pattern="previous"),
               fixed=("text",),
               note=mark("This page offers the four example sentences; to type your own, run the "
                         "live notebook.")),
        Recipe("09_positions", f"{w}.positions", _call(f"{w}.positions", "positions_explorer")),
        Recipe("10_cross_attention_and_decoding", f"{w}.decoding", _call(f"{w}.decoding", "decoding_explorer")),
        Recipe("11_backward", f"{w}.backward", _call(f"{w}.backward", "backward_explorer")),
        Recipe("12_transformer_block", f"{w}.depth", _call(f"{w}.depth", "depth_explorer")),
    ]
    by_notebook: dict[str, list[Recipe]] = {}
    for recipe in recipes:
        by_notebook.setdefault(recipe.notebook, []).append(recipe)
    return by_notebook


def explorer_id(notebook: str, position: int) -> str:
    """The name of a notebook's explorer in the site: ``06_visualization-0``."""
    return f"{notebook}-{position}"


def all_ids() -> list[tuple[str, Recipe]]:
    return [(explorer_id(nb, i), r) for nb, rs in recipes().items() for i, r in enumerate(rs)]


# --- the states of an explorer ---------------------------------------------------------------

def control_choices(control) -> list[tuple[str, object]]:
    """Every value a control can take, with the label it shows for it: (label, value).

    A check box: False, True. A drop-down, toggle buttons, a selection slider: their options.
    An integer or float slider: min to max by step, labelled as its readout shows them.

    Raises:
        TypeError: a control of another kind (a text box): it has no list of values.
    """
    import ipywidgets as widgets

    if isinstance(control, widgets.Checkbox):
        return [("False", False), ("True", True)]
    if isinstance(control, (widgets.Dropdown, widgets.ToggleButtons, widgets.SelectionSlider,
                            widgets.RadioButtons)):
        # ipywidgets' own reading of ``options``: all (label, value) pairs, or values shown by str
        given = tuple(control.options)
        if all(isinstance(o, (list, tuple)) and len(o) == 2 for o in given):
            return [(str(label), value) for label, value in given]
        return [(str(value), value) for value in given]
    if isinstance(control, widgets.IntSlider):
        return [(format(v, control.readout_format), v) for v in range(control.min, control.max + 1, control.step)]
    if isinstance(control, widgets.FloatSlider):
        n = round((control.max - control.min) / control.step)
        values = [round(control.min + i * control.step, 10) for i in range(n + 1)]
        return [(format(v, control.readout_format), v) for v in values]
    raise TypeError(f"control: expected a check box, a drop-down, toggle buttons or a slider, "
                    f"got {type(control).__name__}")


def control_kind(control) -> str:
    """How the page shows a control: site/_static/attn-live.js draws each kind."""
    import ipywidgets as widgets

    if isinstance(control, widgets.Checkbox):
        return "checkbox"
    if isinstance(control, widgets.ToggleButtons):
        return "toggle"
    if isinstance(control, widgets.Dropdown):
        return "select"
    return "slider"


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, abs_tol=1e-9)
    return a == b


@dataclass(frozen=True)
class Offered:
    """A control as the site offers it: its values, in order, with their labels."""

    name: str
    label: str
    kind: str
    choices: list[tuple[str, object]]


def offered_controls(explorer, recipe: Recipe) -> list[Offered]:
    """The controls the site offers, in the explorer's order, each with the values it offers
    (``recipe.grid`` where given, else all of them).

    Raises:
        ValueError: a value of ``recipe.grid`` the control does not know, or a control
            (a text box) that neither has values nor is in ``recipe.fixed``.
    """
    offered = []
    for name, control in explorer.controls.items():
        if name in recipe.fixed:
            continue
        choices = control_choices(control)
        if name in recipe.grid:
            known = {repr(v): label for label, v in choices}
            # a value the control offers only under another setting (04's heads) is shown by str
            choices = [(known.get(repr(v), str(v)), v) for v in recipe.grid[name]]
        offered.append(Offered(name, control.description, control_kind(control), choices))
    return offered


def state_index(offered: Sequence[Offered], positions: Sequence[int]) -> int:
    """The number of the state in which control i shows its ``positions[i]``-th value: mixed
    radix, the last control fastest (what the page's script computes)."""
    index = 0
    for control, k in zip(offered, positions):
        index = index * len(control.choices) + k
    return index


def one_move_apart(sizes: Sequence[int]):
    """Every setting of controls with ``sizes`` values each (tuples of positions), each one move
    of one control from the setting before (a reflected mixed-radix Gray code): drawn in this
    order, every setting costs the explorer one redraw, where counting order (``state_index``)
    moves several controls, each with its own redraw, whenever an earlier control turns over."""
    if not sizes:
        yield ()
        return
    *earlier, n = sizes
    for i, prefix in enumerate(one_move_apart(earlier)):
        for k in (range(n) if i % 2 == 0 else range(n - 1, -1, -1)):
            yield (*prefix, k)


def set_values(explorer, offered: Sequence[Offered], positions: Sequence[int]) -> bool:
    """Move the explorer's controls, in their order, to the given values, as a learner would.
    False if the explorer refuses one (it is not a state of the explorer)."""
    from traitlets import TraitError

    for control, k in zip(offered, positions):
        widget, value = explorer.controls[control.name], control.choices[k][1]
        if not _same(widget.value, value):
            try:
                widget.value = value
            except (TraitError, ValueError):
                return False
    return all(_same(explorer.controls[c.name].value, c.choices[k][1]) for c, k in zip(offered, positions))


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
        found = [k for k, (_label, v) in enumerate(control.choices) if _same(v, value)]
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

def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "attn":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def module_closure(module: str) -> list[Path]:
    """The files of ``attn`` that ``module`` imports, directly or through others (followed
    through the package's own imports; a package's ``__init__`` only where it is imported)."""
    seen: dict[str, Path] = {}
    todo = [module, "attn.widgets._base"]
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if path is None or name in seen:
            continue
        seen[name] = path
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
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
    h.update(f"{recipe.notebook}|{recipe.module}|{language}".encode())
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
