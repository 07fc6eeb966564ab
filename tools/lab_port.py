"""The port ``make lab`` starts JupyterLab on: the first free one from a given port on.

    .venv/bin/python -m tools.lab_port 8888      # prints 8888, or 8889 if 8888 is taken, ...

``make lab`` (from 8888) and ``make lab-zh`` (from 8889) choose the port before JupyterLab
starts, print the SSH reminder with it, and give it to JupyterLab with
``--ServerApp.port_retries=0``. Left to itself, JupyterLab would move to the next port when
8888 is taken, after the reminder had named 8888.

A port is free when it can be bound as JupyterLab binds it (Tornado's ``bind_sockets`` for
"localhost"): on every address of localhost, 127.0.0.1 and, where the machine has IPv6, ::1,
with SO_REUSEADDR on all but Windows. Standard library only.
"""
from __future__ import annotations

import errno
import os
import socket
import sys

#: how many ports, from the first, are tried
TRIES = 50


def is_free(port: int, host: str = "localhost") -> bool:
    """True if a server could listen on ``port`` at every address of ``host`` now."""
    addresses = {info[:3] + (info[4],) for info in
                 socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)}
    for family, kind, proto, address in addresses:
        with socket.socket(family, kind, proto) as sock:
            if os.name != "nt":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as e:
                if e.errno == errno.EADDRNOTAVAIL and family == socket.AF_INET6:
                    continue  # no IPv6 on this machine: Tornado skips ::1 too
                return False
    return True


def first_free(start: int, tries: int = TRIES) -> int:
    """The first free port of ``start``, ``start + 1``, ... (``tries`` of them).

    Raises:
        ValueError: ``start`` is no port number.
        RuntimeError: none of them is free.
    """
    if not 1 <= start <= 65535:
        raise ValueError(f"start: expected a port number, 1 to 65535, got {start}")
    last = min(start + tries - 1, 65535)
    for port in range(start, last + 1):
        if is_free(port):
            return port
    raise RuntimeError(f"no free port from {start} to {last}: stop a JupyterLab you no longer need "
                       f"(`jupyter server list` names them), or start from another port: "
                       f"make lab LAB_PORT=9000")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m tools.lab_port FIRST_PORT", file=sys.stderr)
        return 2
    try:
        print(first_free(int(argv[1])))
    except (ValueError, RuntimeError) as e:
        print(f"make lab: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
