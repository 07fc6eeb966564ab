"""Install the course's Jupyter configuration into the running Python's environment.

    .venv/bin/python -m tools.jupyter_config          (make setup; Binder's postBuild runs it too)
    .venv/bin/python -m tools.jupyter_config --deck   (make deck: the slide deck's template is required)

Run from the repository's root. What it copies, into ``sys.prefix``:

- ``deploy/lab-settings/overrides.json`` to ``share/jupyter/lab/settings/``: JupyterLab's settings
  overrides (no prompt about Jupyter news);
- ``deploy/lab-settings/zh/``'s one file to ``share/jupyter/lab-zh/user-settings/``: JupyterLab's
  language, Chinese (``"locale": "zh_CN"``), in the user settings of the Chinese edition's
  JupyterLab (``make lab-zh`` gives it this folder, and a workspaces folder beside it);
  ``make lab`` reads the user's own settings and stays English;
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
  installs (``make deck`` runs both). The deck is optional: without that package its template
  is left out, without a word, since a learner who never asked for the deck has nothing to do
  about it; with ``--deck`` (``make deck``), a missing package is an error that says so.

Standard library only, so that it runs in any environment, Windows included.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: JupyterLab's language, a user setting: where a user-settings folder holds it
LANGUAGE_SETTING = "@jupyterlab/translation-extension/plugin.jupyterlab-settings"
#: (source in the repository, destination under the environment's prefix)
FILES = (
    ("deploy/lab-settings/overrides.json", "share/jupyter/lab/settings/overrides.json"),
    ("deploy/app-template/voila.json", "etc/jupyter/voila.json"),
    ("deploy/app-template/voila.json", "etc/jupyter/jupyter_server_config.d/attn-voila.json"),
    # one file, not the folder: the Chinese Lab keeps the other settings a learner makes in it
    (f"deploy/lab-settings/zh/{LANGUAGE_SETTING}", f"share/jupyter/lab-zh/user-settings/{LANGUAGE_SETTING}"),
)
FOLDERS = (("deploy/app-template/course", "share/jupyter/voila/templates/course"),)
DECK = ("deploy/app-template/course-deck", "share/jupyter/voila/templates/course-deck")
#: reveal.js as npm installs it, and the files of it that the deck loads
REVEAL = "deploy/app-template/node_modules/reveal.js"
REVEAL_FILES = ("LICENSE", "dist/reveal.js", "dist/reveal.css", "dist/theme/white.css")


def install(prefix: Path, *, deck_required: bool = False) -> None:
    """Copy the configuration into ``prefix``; the deck's template only where reveal.js is
    installed (FileNotFoundError, naming the command that installs it, if ``deck_required``)."""
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
        if deck_required:
            raise FileNotFoundError(f"the slide deck's template needs reveal.js, and {REVEAL} is missing: "
                                    "`npm ci --prefix deploy/app-template` installs it (`make deck` runs it)")


def _copy_folder(source: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)  # no file left from an older version
    shutil.copytree(source, dest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deck", action="store_true",
                        help="fail if the slide deck's template cannot be installed (make deck)")
    args = parser.parse_args(argv)
    try:
        install(Path(sys.prefix), deck_required=args.deck)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
