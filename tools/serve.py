"""A folder served over HTTP on 127.0.0.1 (a free port), in a thread: for the website's tests
and the handouts, which open the built pages in Chromium."""
from __future__ import annotations

import functools
import http.server
import socketserver
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextmanager
def serving(folder: Path | str) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1; yields the base URL (ending with "/")."""
    folder = Path(folder)
    if not (folder / "index.html").is_file():
        raise FileNotFoundError(f"folder: expected a built site with index.html, got {folder}")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    with _Server(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join(10)
