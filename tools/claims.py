"""A lesson's claims: the printed lines that carry its argument, marked in the notebook.

    python -m tools.claims 02_qkv                        # each cell's printed lines, numbered; claims starred
    python -m tools.claims notebooks/zh/02_qkv.ipynb     # the same for one file (here the Chinese twin)
    python -m tools.claims 02_qkv --mark 19:0 21:2       # mark line 0 of cell 19 and line 2 of cell 21
    python -m tools.claims 02_qkv --unmark 21:2          # no longer a claim

A claim is a code cell's metadata ``"claims": ["line as printed", ...]``: whole lines of what
the cell prints (``printed_lines``), in the notebook's language, so the Chinese twin marks the
same cells with its own printed lines. ``tests/notebooks/test_claims.py`` holds every lesson to
its claims: a re-execution that changes a claimed line fails there until the claim (or the prose
that relies on it) is updated. A cell tagged ``nbval-ignore-output`` can carry no claim: nothing
re-checks its output.

``--mark`` also drops the cell's claims that it no longer prints, so that updating a claim after
a re-execution is one command. Only the metadata changes; the notebook needs no re-execution.
A lesson's name (``02_qkv``) means its English notebook; name the file for the Chinese twin.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from tools.execute import NOTEBOOKS, ROOT, output_ignored, stable_form

#: The code cell's metadata key that lists its claims.
KEY = "claims"
#: Outputs that are pictures or explorers: their text/plain is a repr no reader sees.
PICTURES = ("image/png", "application/vnd.jupyter.widget-view+json")


def printed_lines(cell: dict) -> list[str]:
    """The lines a code cell prints: its standard output, and the text/plain of a result that is
    no picture or explorer (a checker's feedback, a value), in order."""
    text = ""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            text += "".join(out.get("text", ""))
        elif out.get("output_type") in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "text/plain" in data and not any(kind in data for kind in PICTURES):
                text += "".join(data["text/plain"]) + "\n"
    return text.splitlines()


def claims(cell: dict) -> list[str]:
    """The claims marked in a cell (none for a markdown cell)."""
    return list(cell.get("metadata", {}).get(KEY, []))


def marked(nb: dict) -> list[tuple[int, dict]]:
    """(index, cell) of every cell that marks a claim."""
    return [(i, c) for i, c in enumerate(nb["cells"]) if claims(c)]


def notebook_path(name: str) -> Path:
    """``02_qkv`` -> notebooks/02_qkv.ipynb; a path to a notebook stays itself."""
    if name.endswith(".ipynb"):
        return Path(name).resolve()
    path = NOTEBOOKS / f"{name}.ipynb"
    if not path.exists():
        known = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
        raise SystemExit(f"lesson: expected one of {known}, got {name!r}")
    return path


def place(text: str) -> tuple[int, int]:
    """``"19:0"`` -> (19, 0): a cell's index in the notebook and a line's index in its printed lines."""
    cell, _, line = text.partition(":")
    try:
        return int(cell), int(line)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CELL:LINE such as 19:0, got {text!r}") from None


def show(nb: dict) -> str:
    """Every code cell that prints, its lines numbered, claims starred, stale claims listed."""
    parts = []
    for i, cell in enumerate(nb["cells"]):
        lines = printed_lines(cell) if cell["cell_type"] == "code" else []
        if not lines and not claims(cell):
            continue
        note = " (nbval-ignore-output: can carry no claim)" if output_ignored(cell) else ""
        parts.append(f"cell {i}{note}")
        parts += [f"  {'*' if line in claims(cell) else ' '} {i}:{k}  {line}" for k, line in enumerate(lines)]
        parts += [f"  ! claimed, no longer printed: {claim!r}" for claim in claims(cell) if claim not in lines]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.claims", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="a lesson (02_qkv: its English notebook) or a notebook file")
    parser.add_argument("--mark", nargs="+", type=place, default=[], metavar="CELL:LINE",
                        help="mark these printed lines as claims")
    parser.add_argument("--unmark", nargs="+", type=place, default=[], metavar="CELL:LINE",
                        help="these lines are claims no longer")
    args = parser.parse_args(argv)
    path = notebook_path(args.notebook)
    nb = nbformat.read(path, as_version=4)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if not args.mark and not args.unmark:
        print(show(nb) or f"{shown}: no cell prints anything")
        return 0
    for (i, k), add in [(p, True) for p in args.mark] + [(p, False) for p in args.unmark]:
        cell = nb.cells[i] if 0 <= i < len(nb.cells) else None
        lines = printed_lines(cell) if cell is not None and cell.cell_type == "code" else []
        if not 0 <= k < len(lines):
            parser.error(f"{shown}: cell {i} prints no line {k} (python -m tools.claims {args.notebook} lists them)")
        if add and output_ignored(cell):
            parser.error(f"{shown}: cell {i} is tagged nbval-ignore-output: nothing re-checks its output, "
                         f"so it can carry no claim")
        for stale in (c for c in claims(cell) if c not in lines):
            print(f"cell {i}: dropped the claim it no longer prints: {stale!r}")
        wanted = (set(claims(cell)) | {lines[k]}) if add else set(claims(cell)) - {lines[k]}
        cell.metadata[KEY] = [line for line in dict.fromkeys(lines) if line in wanted]  # in printed order
        if not cell.metadata[KEY]:
            del cell.metadata[KEY]
        print(f"cell {i}: {'marked' if add else 'unmarked'} {lines[k]!r}")
    path.write_text(stable_form(nb, path), encoding="utf-8")
    print(f"{shown}: stored (metadata only: no need to re-execute)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
