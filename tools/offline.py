"""Run a command with no network: in a new network namespace whose only interface is loopback.

    python -m tools.offline COMMAND [ARG ...]

``make test`` runs the course's tests this way (all but those marked ``network``, which ask
PyPI what ``make setup`` would install): every notebook that strict nbval executes, every
JupyterLab, Voilà, hub and browser that the tests start, and every kernel they run, run where
no packet can leave the machine. Loopback stays up, so a server and its browser still talk over
127.0.0.1. That is the offline test of the course: a notebook that fetched anything would fail
under nbval, and tests/delivery/test_offline.py checks, from inside the run, that the network is gone.

How: as root, ``unshare --net``; as another user, ``unshare --net --map-root-user`` (a user
namespace, where the kernel allows them). Where neither works (macOS, Windows, a container
that forbids namespaces), the command runs as it is, after a line saying so, and the tests
that need the namespace skip, saying why (under CI, ``CI=true``, they fail instead).
Inside the namespace the variable ``ATTN_OFFLINE`` is ``netns``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

# Brings loopback up, then replaces the shell with the command ("$@").
_LOOPBACK_THEN_RUN = 'ip link set lo up && exec "$@"'


def namespace_prefix() -> tuple[list[str] | None, str]:
    """The ``unshare`` words that start a command in a new network namespace here, or None and
    why not."""
    missing = [tool for tool in ("unshare", "ip") if shutil.which(tool) is None]
    if missing:
        return None, f"{' and '.join(missing)} not found (Debian: util-linux, iproute2)"
    flags = ["--net"] if os.geteuid() == 0 else ["--net", "--map-root-user"]
    probe = subprocess.run(["unshare", *flags, "sh", "-c", _LOOPBACK_THEN_RUN, "sh", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None, f"`unshare {' '.join(flags)}` is not allowed here: {probe.stderr.strip()}"
    return ["unshare", *flags, "sh", "-c", _LOOPBACK_THEN_RUN, "sh"], ""


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    prefix, why = namespace_prefix()
    if prefix is None:
        print(f"tools.offline: running with the network, not in a namespace: {why}", file=sys.stderr)
        return subprocess.call(argv)
    env = {**os.environ, "ATTN_OFFLINE": "netns"}
    return subprocess.call([*prefix, *argv], env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
