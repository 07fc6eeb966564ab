"""Install the course's Jupyter configuration into the running Python's environment.

    .venv/bin/python -m tools.jupyter_config       (make setup; Binder's postBuild runs it too)

Run from the repository's root. What it copies, into ``sys.prefix``:

- ``deploy/lab-settings/overrides.json`` to ``share/jupyter/lab/settings/``: JupyterLab's settings
  overrides (no prompt about Jupyter news);
- ``deploy/app-template/course/`` to ``share/jupyter/voila/templates/course/``: app mode's Voilà
  template (Voilà's "lab" template without its CDN style sheets);
- ``deploy/app-template/voila.json`` to ``etc/jupyter/voila.json`` and
  ``etc/jupyter/jupyter_server_config.d/attn-voila.json``: that template as the default, for
  ``voila`` and for Voilà inside Jupyter Server (Binder's ``voila/render`` links), and the
  JupyterLab extensions that Voilà's pages leave out (jupyterlab-slideshow and the
  jupyterlab-fonts it brings: made for JupyterLab alone, they fail to start in Voilà);
- ``deploy/app-template/course-deck/`` to ``share/jupyter/voila/templates/course-deck/``: the slide
  deck's template (``make deck``, ``?template=course-deck``), with reveal.js in its
  ``static/reveal.js/``, copied from the npm package that ``npm ci --prefix deploy/app-template``
  installs (``make deck`` runs both). Without that package the deck's template is left out,
  and this says so.

Standard library only, so that it runs in any environment, Windows included.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: (source in the repository, destination under the environment's prefix)
FILES = (
    ("deploy/lab-settings/overrides.json", "share/jupyter/lab/settings/overrides.json"),
    ("deploy/app-template/voila.json", "etc/jupyter/voila.json"),
    ("deploy/app-template/voila.json", "etc/jupyter/jupyter_server_config.d/attn-voila.json"),
)
FOLDERS = (("deploy/app-template/course", "share/jupyter/voila/templates/course"),)
DECK = ("deploy/app-template/course-deck", "share/jupyter/voila/templates/course-deck")
#: reveal.js as npm installs it, and the files of it that the deck loads
REVEAL = "deploy/app-template/node_modules/reveal.js"
REVEAL_FILES = ("LICENSE", "dist/reveal.js", "dist/reveal.css", "dist/theme/white.css")


def install(prefix: Path) -> None:
    for source, dest in FILES:
        (prefix / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / source, prefix / dest)
    for source, dest in FOLDERS:
        _copy_folder(REPO / source, prefix / dest)
    deck_source, deck_dest = DECK
    if (REPO / REVEAL / "dist" / "reveal.js").exists():
        _copy_folder(REPO / deck_source, prefix / deck_dest)
        for name in REVEAL_FILES:
            dest = prefix / deck_dest / "static" / "reveal.js" / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO / REVEAL / name, dest)
    else:
        shutil.rmtree(prefix / deck_dest, ignore_errors=True)
        print(f"The slide deck's template is not installed: {REVEAL} is missing "
              "(`npm ci --prefix deploy/app-template` installs it; `make deck` runs it and this).")


def _copy_folder(source: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)  # no file left from an older version
    shutil.copytree(source, dest)


if __name__ == "__main__":
    install(Path(sys.prefix))
