"""A real JupyterHub class on this machine: the machinery of tests/delivery/test_hub.py and benchmarks/hub.py.

    origin = course_origin(tmp / "git")                 # the teacher's repository (a snapshot)
    with running_hub(tmp / "hub", ["learner-1", "learner-2"]) as hub:
        link = class_link(hub.url, origin)              # the teaching guide's nbgitpuller link, filled in
        ...                                             # learners follow it in Chromium

The hub is the one an instructor runs, scaled down: JupyterHub (PyPI ``jupyterhub``) behind
configurable-http-proxy (npm, installed into ``deploy/hub/node_modules`` by ``npm ci --prefix deploy/hub``,
which ``make test`` runs), DummyAuthenticator (any password) for the listed learners only,
and SimpleLocalProcessSpawner: each learner's single-user server (this venv's
``jupyterhub-singleuser``, so the course's pinned packages) runs as the hub's own user with its
own home folder, so no system accounts are needed. nbgitpuller (a server extension of the same
venv) clones the course into each home. ``attn`` is imported from the learner's pulled clone
(``PYTHONPATH=<home>/<clone>/src``, as docs/teaching.md tells instructors), not from the editable
install. Kernels use Unix sockets (``--KernelManager.transport=ipc``), so that kernels of
different servers started at the same moment cannot race for a TCP port. Database, cookie
secret, proxy token, logs and homes all live in the given folder; every port is a free one; at exit every server, kernel and the proxy are stopped (killed if
they do not stop).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
CHP = REPO / "deploy" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
SINGLEUSER = VENV_BIN / "jupyterhub-singleuser"
JUPYTERHUB = VENV_BIN / "jupyterhub"
# The clone's name in every learner's home (nbgitpuller names it after the repository URL's
# last part), standing for REPO in the teaching guide's link.
FOLDER = "attention-course"
START = "notebooks/00_start_here.ipynb"

ENABLE_HINT = (
    "run `make test` (it installs the pinned packages into .venv and configurable-http-proxy "
    "with `npm ci --prefix deploy/hub`, which needs Node.js 20+ and npm) and Debian's Chromium "
    "(`apt-get install chromium`, giving /usr/bin/chromium)"
)


def hub_unavailable(*, browser: bool = True) -> str | None:
    """Why a hub class cannot run here (and, with ``browser``, be driven by Chromium), or None."""
    missing = [str(p) for p in (JUPYTERHUB, SINGLEUSER, CHP) if not os.access(p, os.X_OK)]
    if shutil.which("git") is None:
        missing.append("git")
    try:
        import nbgitpuller  # noqa: F401
    except ImportError:
        missing.append("the Python package nbgitpuller")
    if browser:
        try:
            from tools.lab import CHROMIUM  # the browser test's Chromium (imports playwright)
        except ImportError:
            missing.append("the Python package playwright")
        else:
            if not os.access(CHROMIUM, os.X_OK):
                missing.append(CHROMIUM)
    return f"missing {', '.join(missing)}; {ENABLE_HINT}" if missing else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# The teacher's repository and the teaching guide's link (docs/teaching.md).

def run_git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "teacher", "GIT_AUTHOR_EMAIL": "teacher@example.org",
           "GIT_COMMITTER_NAME": "teacher", "GIT_COMMITTER_EMAIL": "teacher@example.org",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {r.stderr.strip()}")
    return r.stdout


def course_origin(parent: Path) -> Path:
    """The teacher's repository: ``parent/attention-course``, branch ``main``, one commit holding
    this working tree's files (tracked and new, not ignored ones), so the class gets what the
    tests test, committed or not."""
    origin = parent / FOLDER
    origin.mkdir(parents=True)
    files = run_git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():  # not a file deleted in the working tree
            (origin / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, origin / name)
    run_git(origin, "init", "-q", "-b", "main")
    run_git(origin, "add", "-A")
    run_git(origin, "commit", "-q", "-m", "the course")
    return origin


def teacher_commit(origin: Path, notebook: str, note: str) -> str:
    """The teacher adds a paragraph ``note`` to the end of ``notebook``'s first cell and
    commits it (the "push": learners pull from this repository). Returns the new commit."""
    path = origin / notebook
    nb = json.loads(path.read_text(encoding="utf-8"))
    source = nb["cells"][0]["source"]
    lines = source.splitlines(keepends=True) if isinstance(source, str) else list(source)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    nb["cells"][0]["source"] = lines + ["\n", note]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    run_git(origin, "commit", "-q", "-am", f"{notebook}: a note for today's class")
    return run_git(origin, "rev-parse", "HEAD").strip()


TEACHING = REPO / "docs" / "teaching.md"  # the teaching guide, which gives instructors the link
HUB_SECTION = "On a JupyterHub, with an nbgitpuller link"


def readme_link(page: Path = TEACHING) -> str:
    """The nbgitpuller link that the teaching guide's section "On a JupyterHub, with an
    nbgitpuller link" gives instructors (the name is from when the README held it).

    Args:
        page: the Markdown page with that section (a heading of any level).

    Returns:
        the link, ``https://HUB/hub/user-redirect/git-pull?repo=...``, as the page writes it.

    Raises:
        ValueError: the page has no such section, or the section no ```text block with the link.
    """
    text = page.read_text(encoding="utf-8")
    section = re.split(rf"^#+ {re.escape(HUB_SECTION)}\s*$", text, maxsplit=1, flags=re.M)
    if len(section) != 2:
        raise ValueError(f"{page.name}: no section '{HUB_SECTION}'")
    body = re.split(r"^#+ ", section[1], maxsplit=1, flags=re.M)[0]  # up to the next heading
    m = re.search(r"```text\n(https://HUB/\S+)\n```", body)
    if m is None:
        raise ValueError(f"{page.name}: its section '{HUB_SECTION}' has no ```text block with a "
                         "https://HUB/... link")
    return m.group(1)


def class_link(hub_url: str, origin: Path, link: str | None = None) -> str:
    """The teaching guide's link as an instructor fills it in: ``https://HUB`` becomes the hub's
    address, the ``repo`` parameter the teacher's repository (here a local one, ``file://...``),
    and ``REPO``, the clone's folder in ``urlpath``, its name. The rest is the guide's."""
    link = readme_link() if link is None else link
    parts = urllib.parse.urlsplit(link)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    names = [k for k, _ in query]
    if parts.netloc != "HUB" or "repo" not in names:
        raise ValueError(f"class link: expected https://HUB/...?repo=..., got {link!r}")
    filled = []
    for key, value in query:
        if key == "repo":
            value = origin.as_uri()
        elif key == "urlpath":
            value = value.replace("REPO", origin.name)
        filled.append((key, value))
    return hub_url.rstrip("/") + parts.path + "?" + urllib.parse.urlencode(filled)


# --------------------------------------------------------------------------------------------
# The hub.

def _json_request(url: str, method: str, body: object, *, token: str, timeout: float) -> Any:
    """One request to a Jupyter REST API with ``token``: ``body`` sent as JSON, the answer
    read as JSON (None when empty)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"token {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        text = resp.read()
    return json.loads(text) if text.strip() else None


@dataclass
class Hub:
    """A running JupyterHub (see ``running_hub``)."""

    url: str  # the public address (the proxy), no trailing slash
    token: str  # an admin service's API token
    root: Path  # its folder: database, secrets, log, homes
    proc: subprocess.Popen
    log: Path
    users: list[str]

    def api(self, method: str, path: str, body: object = None, timeout: float = 30) -> Any:
        """Call the hub's REST API (``path`` like ``"users/learner-1"``); JSON in and out."""
        return _json_request(f"{self.url}/hub/api/{path}", method, body, token=self.token, timeout=timeout)

    def home(self, user: str) -> Path:
        return self.root / "home" / user

    def clone(self, user: str) -> Path:
        """Where nbgitpuller puts the course in ``user``'s home."""
        return self.home(user) / FOLDER

    def user_token(self, user: str) -> str:
        """A new API token of ``user`` (for a client that talks to their server, as the
        browser does with its cookie)."""
        return self.api("POST", f"users/{user}/tokens", {"note": "benchmark", "expires_in": 86400})["token"]

    def server_api(self, user: str, method: str, path: str, body: object = None, *, token: str,
                   timeout: float = 60) -> Any:
        """Call the REST API of ``user``'s server (``path`` like ``"api/sessions"``) with one of
        their tokens, through the hub's proxy; JSON in and out."""
        return _json_request(f"{self.url}/user/{user}/{path}", method, body, token=token, timeout=timeout)

    def start_session(self, user: str, path: str, *, token: str) -> dict[str, Any]:
        """Open notebook ``path``'s session on ``user``'s server with a Python kernel, or join the
        one it has (the server keeps one session per path). JupyterLab, opening the notebook
        afterwards, joins that session instead of starting a kernel itself. Returns the
        session's model (``id``, ``kernel``: ``id``, ``execution_state``, ...)."""
        return self.server_api(user, "POST", "api/sessions", {
            "path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": "python3"}},
            token=token)

    def start_server(self, user: str, timeout: float = 300) -> None:
        """Start ``user``'s server through the API (as their first login does) and wait for it."""
        try:
            self.api("POST", f"users/{user}/server")
        except urllib.error.HTTPError as e:
            if e.code != 400:  # 400: already running
                raise
        deadline = time.monotonic() + timeout
        while not self.api("GET", f"users/{user}").get("servers", {}).get("", {}).get("ready"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{user}: server not ready after {timeout} s:\n{self.log_tail()}")
            time.sleep(0.5)

    def git_pull(self, user: str, token: str, origin: Path, timeout: float = 300) -> None:
        """What the class link's page asks nbgitpuller to do: clone (or pull) ``origin``'s
        branch main into ``user``'s home, through nbgitpuller's event stream."""
        query = urllib.parse.urlencode({"repo": origin.as_uri(), "branch": "main", "targetpath": origin.name})
        req = urllib.request.Request(f"{self.url}/user/{user}/git-pull/api?{query}")
        req.add_header("Authorization", f"token {token}")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            for raw in resp:
                line = raw.decode(errors="replace").strip()
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                if event.get("phase") == "finished":
                    return
                if event.get("phase") == "error":
                    raise RuntimeError(f"{user}: nbgitpuller: {event.get('message')}\n{event.get('output')}")
        raise RuntimeError(f"{user}: nbgitpuller's stream ended before it finished")

    def server_process(self, user: str):
        """The psutil.Process of ``user``'s single-user server, or None when it is not running."""
        import psutil

        for child in psutil.Process(self.proc.pid).children():
            try:
                if child.environ().get("JUPYTERHUB_USER") == user:
                    return child
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return None

    def log_tail(self, n: int = 60) -> str:
        lines = self.log.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])


def _config(root: Path, users: list[str], ports: dict[str, int], token: str,
            environment: dict[str, str], runtime: Path) -> str:
    home = root / "home"
    return f"""\
# Written by tests/_hub.py: a test class on one machine.
c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{ports['public']}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {ports['hub']}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports['proxy_api']}"
c.ConfigurableHTTPProxy.command = [{str(CHP)!r}]
c.ConfigurableHTTPProxy.auth_token = {secrets.token_hex(32)!r}
c.JupyterHub.db_url = "sqlite:///{root / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(root / 'jupyterhub_cookie_secret')!r}
c.JupyterHub.pid_file = {str(root / 'jupyterhub.pid')!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {set(users)!r}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(home / '{username}')!r}
c.Spawner.cmd = [{str(SINGLEUSER)!r}]
c.Spawner.args = [
    "--allow-root",  # the hub runs as root here, and so do the servers
    # Kernels talk to their server over Unix sockets, not TCP ports: with many servers on one
    # machine, kernels started at the same moment could pick the same free port (measured:
    # 20 learners opening a notebook at once; the kernel fails and restarts).
    "--KernelManager.transport=ipc",
]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300
# attn from each learner's pulled clone, as docs/teaching.md tells instructors.
c.Spawner.environment = {{
    "PYTHONPATH": lambda spawner: spawner.home_dir + "/{FOLDER}/src",
    # A short folder for the kernels' sockets: a Unix socket's path is at most 107 bytes.
    "JUPYTER_RUNTIME_DIR": lambda spawner: {str(runtime)!r} + "/" + spawner.user.name,
    **{environment!r},
}}
c.JupyterHub.services = [{{"name": "class-admin", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "class-admin",
    "scopes": ["read:hub", "admin:users", "admin:servers", "tokens", "access:servers", "list:users"],
    "services": ["class-admin"],
}}]
"""


@contextmanager
def running_hub(root: Path, users: list[str], *, environment: dict[str, str] | None = None,
                lab_settings: dict[str, dict[str, Any]] | None = None,
                startup_timeout: float = 60) -> Iterator[Hub]:
    """Start JupyterHub on 127.0.0.1 (free ports) with ``users`` allowed; stop it and
    everything it started at exit.

    Args:
        root: an empty folder for its database, secrets, log and the learners' homes.
        users: the learners' names (any password logs them in).
        environment: extra environment variables of every single-user server (and its kernels).
        lab_settings: JupyterLab user settings written into every learner's home first
            (plugin id -> values, e.g. ``{"@jupyterlab/notebook-extension/tracker": {...}}``).
        startup_timeout: seconds to wait for the hub's API.
    """
    import psutil

    root.mkdir(parents=True, exist_ok=True)
    for user in users:
        for plugin, values in (lab_settings or {}).items():
            f = root / "home" / user / ".jupyter" / "lab" / "user-settings" / f"{plugin}.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(values, indent=2))
    ports = {"public": free_port(), "hub": free_port(), "proxy_api": free_port()}
    token = secrets.token_hex(32)
    config = root / "jupyterhub_config.py"
    runtime = Path(tempfile.mkdtemp(prefix="hub-", dir="/tmp"))  # short: see _config
    config.write_text(_config(root, users, ports, token, environment or {}, runtime))
    log = root / "jupyterhub.log"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(JUPYTERHUB), "-f", str(config)], cwd=root, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(url=f"http://127.0.0.1:{ports['public']}", token=token, root=root, proc=proc,
              log=log, users=list(users))
    seen: dict[int, Any] = {}  # every process the hub started (servers run in their own sessions)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterHub exited with {proc.returncode}:\n{hub.log_tail()}")
            try:
                hub.api("GET", "", timeout=5)  # the API's root: the hub's version
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                last = e  # not listening yet, or the proxy has no route to the hub yet (404)
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterHub not up after {startup_timeout} s ({last}):\n"
                                   f"{hub.log_tail()}")
            time.sleep(0.25)
        yield hub
    finally:
        try:
            for p in psutil.Process(proc.pid).children(recursive=True):
                seen[p.pid] = p
        except psutil.NoSuchProcess:
            pass
        for user in users:  # stop the servers through the hub, as an admin would
            try:
                hub.api("DELETE", f"users/{user}/server", timeout=30)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the hub stops the servers left and the proxy
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for p in seen.values():
            try:
                if p.is_running():
                    p.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(list(seen.values()), timeout=10)
        shutil.rmtree(runtime, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# A notebook's kernel, driven as JupyterLab drives it (for what a browser cannot tell).

def _frame_message(frame: bytes | str) -> dict | None:
    """One message of a kernel websocket (no subprotocol asked: JSON text frames, and binary
    frames ``count, offsets, JSON, buffers`` with big-endian 32-bit integers for messages that
    carry buffers, e.g. a new picture of a widget)."""
    try:
        if isinstance(frame, str):
            return json.loads(frame)
        n = int.from_bytes(frame[:4], "big")
        offsets = [int.from_bytes(frame[4 + 4 * i: 8 + 4 * i], "big") for i in range(n)]
        end = offsets[1] if n > 1 else len(frame)
        return json.loads(frame[offsets[0]:end])
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


class KernelClient:
    """The kernel of notebook ``path`` on ``user``'s server, over the hub's proxy.

    It opens (or joins) the notebook's session through the server's REST API and speaks the
    kernel protocol over the same websocket a browser uses: ``execute`` runs code as a cell
    does, ``run_notebook`` runs every code cell in order (Run All, without the page),
    ``move`` sets a widget's value as a control does and times until the kernel has sent a
    new picture. Widget models are tracked from the kernel's comm messages.
    """

    def __init__(self, hub: Hub, user: str, path: str, *, token: str | None = None,
                 timeout: float = 600) -> None:
        import uuid

        import websocket  # websocket-client, a dependency of jupyter_server

        self.hub, self.user, self.path, self.timeout = hub, user, path, timeout
        self.token = token or hub.user_token(user)
        self.base = f"{hub.url}/user/{user}/"
        session = hub.start_session(user, path, token=self.token)
        self.session_id, self.kernel_id = session["id"], session["kernel"]["id"]
        self.session = uuid.uuid4().hex  # this client's id in the kernel protocol
        url = (self.base.replace("http", "ws", 1)
               + f"api/kernels/{self.kernel_id}/channels?session_id={self.session}")
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {self.token}"],
                                              timeout=timeout)
        self.models: dict[str, dict[str, Any]] = {}  # comm id -> the widget's state

    def rest(self, method: str, path: str, body: object = None) -> Any:
        return self.hub.server_api(self.user, method, path, body, token=self.token)

    def _send(self, msg_type: str, content: dict) -> str:
        import datetime
        import uuid

        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session,
                  "username": self.user, "version": "5.3",
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        self.ws.send(json.dumps({"header": header, "parent_header": {}, "metadata": {},
                                 "content": content, "channel": "shell", "buffers": []}))
        return msg_id

    def _next(self, deadline: float) -> dict:
        """The next message; keeps the widget models up to date."""
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.user}: {self.path}: no answer from the kernel in time")
            msg = _frame_message(self.ws.recv())
            if msg is None:
                continue
            kind, content = msg["header"]["msg_type"], msg.get("content", {})
            if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
                self.models[content["comm_id"]] = dict(content["data"].get("state", {}))
            elif kind == "comm_msg" and content.get("comm_id") in self.models:
                data = content.get("data", {})
                if data.get("method") in ("update", "echo_update"):
                    self.models[content["comm_id"]].update(data.get("state", {}))
            return msg

    def execute(self, code: str, *, expressions: dict[str, str] | None = None,
                store_history: bool = True) -> dict[str, Any]:
        """Run ``code`` as a cell (``store_history=False``: without counting as one, the
        execution count unchanged); returns ``{"status", "stdout", "error", "expressions"}``
        once the kernel is idle again. ``expressions`` (name -> Python expression) are evaluated
        after the code, and come back in the kernel's reply, as their ``repr``: a value that
        does not depend on when the printed output arrives."""
        msg_id = self._send("execute_request", {"code": code, "silent": False, "store_history": store_history,
                                                "user_expressions": expressions or {},
                                                "allow_stdin": False, "stop_on_error": True})
        deadline = time.monotonic() + self.timeout
        result: dict[str, Any] = {"status": None, "stdout": "", "error": None, "expressions": {}}
        idle = False
        while result["status"] is None or not idle:
            msg = self._next(deadline)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["header"]["msg_type"], msg.get("content", {})
            if kind == "execute_reply":
                result["status"] = content.get("status")
                for name, value in (content.get("user_expressions") or {}).items():
                    result["expressions"][name] = (value.get("data", {}).get("text/plain")
                                                   if value.get("status") == "ok"
                                                   else f"{value.get('ename')}: {value.get('evalue')}")
            elif kind == "stream" and content.get("name") == "stdout":
                result["stdout"] += content.get("text", "")
            elif kind == "error":
                result["error"] = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        return result

    def run_notebook(self, notebook: Path) -> tuple[float, list[str]]:
        """Run every code cell of ``notebook`` in order, as Run All Cells does; stop at the
        first error. Returns the seconds it took and the errors."""
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        t0 = time.perf_counter()
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "code":
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            r = self.execute(source)
            if r["status"] != "ok":
                return time.perf_counter() - t0, [f"cell {i}: {r['error']}"]
        return time.perf_counter() - t0, []

    def sliders(self) -> list[str]:
        """Comm ids of the live sliders (integer or float) the kernel has shown."""
        return [cid for cid, s in self.models.items()
                if s.get("_model_name") in ("IntSliderModel", "FloatSliderModel")
                and not s.get("disabled")]

    def move(self, comm_id: str) -> float:
        """Move slider ``comm_id`` one step (up, or down at its top), as a key press on its handle
        does. Returns the seconds until the kernel sent a new picture (an Image widget's
        value); waits for the kernel to be idle before returning."""
        state = self.models[comm_id]
        step = state.get("step") or 1
        value = state["value"] + step if state["value"] + step <= state["max"] else state["value"] - step
        if isinstance(value, float):
            value = round(value, 10)
        t0 = time.perf_counter()
        msg_id = self._send("comm_msg", {"comm_id": comm_id, "data": {
            "method": "update", "state": {"value": value}, "buffer_paths": []}})
        deadline = time.monotonic() + self.timeout
        elapsed = None
        idle = False
        while elapsed is None or not idle:
            msg = self._next(deadline)
            kind, content = msg["header"]["msg_type"], msg.get("content", {})
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if (kind == "comm_msg" and elapsed is None
                    and self.models.get(content.get("comm_id"), {}).get("_model_name") == "ImageModel"
                    and ["value"] in content.get("data", {}).get("buffer_paths", [])):
                elapsed = time.perf_counter() - t0
            elif kind == "error":
                raise AssertionError(f"{self.user}: moving a slider raised {content.get('ename')}: "
                                     f"{content.get('evalue')}")
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
                if elapsed is None:
                    raise AssertionError(f"{self.user}: the slider moved to {value} but no new "
                                         "picture came back")
        return elapsed

    def process_ids(self) -> tuple[int, int]:
        """(pid of the learner's server, pid of this kernel), for memory figures."""
        server = self.hub.server_process(self.user)
        if server is None:
            raise RuntimeError(f"{self.user}: no running server")
        for child in server.children():
            if self.kernel_id in " ".join(child.cmdline()):  # its connection file names it
                return server.pid, child.pid
        raise RuntimeError(f"{self.user}: kernel {self.kernel_id} not among the server's children")

    def close(self) -> None:
        """Disconnect (the kernel goes on, as when a learner closes the browser tab)."""
        self.ws.close()

    def shutdown(self) -> None:
        """Disconnect and end the notebook's session and kernel (File > Shut Down Kernel)."""
        self.ws.close()
        self.rest("DELETE", f"api/sessions/{self.session_id}")
