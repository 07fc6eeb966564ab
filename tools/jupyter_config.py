"""Install the course's Jupyter configuration into the running Python's environment.

    .venv/bin/python -m tools.jupyter_config       (make setup; Binder's postBuild runs it too)

Run from the repository's root. What it copies, into ``sys.prefix``:

- ``lab-settings/overrides.json`` to ``share/jupyter/lab/settings/``: JupyterLab's settings
  overrides (no prompt about Jupyter news);
- ``app-template/course/`` to ``share/jupyter/voila/templates/course/``: app mode's Voilà
  template (Voilà's "lab" template without its CDN style sheets);
- ``app-template/voila.json`` to ``etc/jupyter/voila.json`` and
  ``etc/jupyter/jupyter_server_config.d/attn-voila.json``: that template as the default, for
  ``voila`` and for Voilà inside Jupyter Server (Binder's ``voila/render`` links).

Standard library only, so that it runs in any environment, Windows included.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: (source in the repository, destination under the environment's prefix)
FILES = (
    ("lab-settings/overrides.json", "share/jupyter/lab/settings/overrides.json"),
    ("app-template/voila.json", "etc/jupyter/voila.json"),
    ("app-template/voila.json", "etc/jupyter/jupyter_server_config.d/attn-voila.json"),
)
FOLDERS = (("app-template/course", "share/jupyter/voila/templates/course"),)


def install(prefix: Path) -> None:
    for source, dest in FILES:
        (prefix / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / source, prefix / dest)
    for source, dest in FOLDERS:
        shutil.rmtree(prefix / dest, ignore_errors=True)  # no file left from an older version
        shutil.copytree(REPO / source, prefix / dest)


if __name__ == "__main__":
    install(Path(sys.prefix))
