"""What `make setup` downloads on a plain Linux machine: the files pip picks, and their sizes.

    python tools/setup_report.py

1. Fetches the CPU wheel of the pinned torch as the Makefile's torch step does (pip, with this
   machine's settings: from PyTorch's CPU index, or a local copy where that index is out of
   reach), and puts it alone in a local index that stands in for PyTorch's.
2. Runs each ``pip install`` of ``make -n -B setup TORCH_INDEX=<that index>`` as a dry run,
   with pip seeing what a plain machine sees (PyPI, no configuration file, no local mirror),
   each step seeing the torch wheel of the first as installed.
3. Adds up the sizes of the files picked (a HEAD request for each file on PyPI; the wheel's
   own size for the CPU torch), and does the same for PyPI's ``torch==2.13.0`` (the CUDA
   build) for comparison.

tests/delivery/test_setup.py uses the same functions to prove that no CUDA package is picked.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Packages of the CUDA build: PyPI's Linux torch depends on nvidia-* (and cuda-*) wheels and on
# triton, its GPU compiler.
CUDA = re.compile(r"^(nvidia-.*|cuda-.*|triton)$")


def plain_pip_env() -> dict[str, str]:
    """pip as on a plain machine: PyPI only, no configuration file, no find-links."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("PIP_") and k not in ("PIP_CERT", "PIP_DISABLE_PIP_VERSION_CHECK"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def run(args, *, env=None, cwd=REPO, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


def make_dry(*args: str) -> list[str]:
    """The commands that `make -n -B <args>` prints (what make would run, from scratch)."""
    r = run(["make", "--no-print-directory", "-n", "-B", *args])
    if r.returncode != 0:
        raise RuntimeError(f"make -n {' '.join(args)}: {r.stderr}")
    return r.stdout.splitlines()


def pip_installs(lines: list[str]) -> list[list[str]]:
    """The `python -m pip install ...` commands among `lines`, split into words."""
    return [shlex.split(line) for line in lines if re.search(r"-m pip install ", line)]


def torch_cpu_pin() -> str:
    """The Linux torch pin of requirements.txt, e.g. 'torch==2.13.0+cpu'."""
    from packaging.requirements import Requirement

    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line.startswith("torch"):
            req = Requirement(line)
            if req.marker is not None and req.marker.evaluate({"sys_platform": "linux"}):
                return f"{req.name}{req.specifier}"
    raise ValueError("requirements.txt: expected a torch line for Linux (sys_platform == \"linux\")")


def fetch_cpu_wheel(dest: Path) -> Path:
    """Fetch the pinned CPU wheel as the Makefile's torch step does; RuntimeError if it can't."""
    pin = torch_cpu_pin()
    r = run([sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "0", "--timeout", "20",
             "--index-url", CPU_INDEX, "--dest", dest, pin])
    if r.returncode != 0:
        raise RuntimeError(f"{pin}: neither {CPU_INDEX} nor a local copy answered: {r.stderr[-500:]}")
    (wheel,) = dest.glob("torch-*.whl")
    return wheel


def one_file_index(wheel: Path, root: Path) -> str:
    """The file:// URL of a PEP 503 index under `root` that serves `wheel` alone."""
    page = root / "simple" / "torch"
    page.mkdir(parents=True)
    link = urllib.parse.quote(os.path.relpath(wheel, page))
    (page / "index.html").write_text(f'<a href="{link}">{wheel.name}</a>\n')
    return (root / "simple").as_uri()


def dry_run(command: list[str], report: Path, *extra: str, env=None) -> dict:
    """Run one `.venv/bin/python -m pip install ...` of the Makefile as a dry run, with this
    interpreter; return pip's report (RuntimeError if pip fails)."""
    if command[:4] != [".venv/bin/python", "-m", "pip", "install"]:
        raise ValueError(f"command: expected .venv/bin/python -m pip install ..., got {command}")
    args = [sys.executable, *command[1:], "--dry-run", "--ignore-installed", "--report",
            str(report), *extra]
    r = run(args, env=env or plain_pip_env())
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return json.loads(report.read_text())


def picked(report: dict) -> dict[str, dict]:
    """name -> {version, url} of what pip would install (names normalized)."""
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    return {canonicalize_name(item["metadata"]["name"]):
            {"version": Version(item["metadata"]["version"]), "url": item["download_info"]["url"]}
            for item in report["install"]}


def setup_steps(cpu_index: str, workdir: Path) -> list[tuple[list[str], dict[str, dict]]]:
    """(command, what it picks) for each pip install of `make setup`, in order. Each step sees
    the torch wheel of the torch step as already there, as the real set-up does."""
    steps, extra = [], []
    for n, command in enumerate(pip_installs(make_dry("setup", f"TORCH_INDEX={cpu_index}"))):
        step = picked(dry_run(command, workdir / f"step{n}.json", *extra))
        if "--index-url" in command and "torch" in step:
            extra = ["--find-links", str(Path(urllib.parse.urlparse(step["torch"]["url"]).path).parent)]
        steps.append((command, step))
    return steps


def file_size(url: str) -> int:
    """Bytes of a file: on disk for file:// URLs, else the server's Content-Length."""
    parts = urllib.parse.urlparse(url)
    if parts.scheme == "file":
        return Path(urllib.parse.unquote(parts.path)).stat().st_size
    request = urllib.request.Request(url.split("#", 1)[0], method="HEAD")
    with urllib.request.urlopen(request, timeout=60) as response:
        return int(response.headers["Content-Length"])


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wheel = fetch_cpu_wheel(tmp / "wheels")
        steps = setup_steps(one_file_index(wheel, tmp / "index"), tmp)
        files = {}
        for command, step in steps:
            files.update({name: info["url"] for name, info in step.items() if name != "pip"})
        sizes = {name: file_size(url) for name, url in files.items()}
        cuda = picked(dry_run([".venv/bin/python", "-m", "pip", "install", "torch==2.13.0"],
                              tmp / "cuda.json", "--only-binary=:all:"))
        cuda_sizes = {name: file_size(info["url"]) for name, info in cuda.items()}
    mb = 1e6
    torch_mb = sizes["torch"] / mb
    print(f"make setup on plain Linux: {len(sizes)} files, {sum(sizes.values()) / mb:.0f} MB "
          f"(torch {files['torch'].rsplit('/', 1)[-1]}: {torch_mb:.0f} MB, "
          f"everything else {(sum(sizes.values()) - sizes['torch']) / mb:.0f} MB)")
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    print("largest: " + ", ".join(f"{name} {size / mb:.0f} MB" for name, size in largest))
    nvidia = {n: s for n, s in cuda_sizes.items() if CUDA.match(n)}
    print(f"PyPI's torch==2.13.0 instead (CUDA): torch {cuda_sizes['torch'] / mb:.0f} MB plus "
          f"{len(nvidia)} CUDA packages {sum(nvidia.values()) / mb:.0f} MB "
          f"({', '.join(sorted(nvidia))})")
    print(f"CUDA packages in the set-up's own picks: {sorted(n for n in files if CUDA.match(n)) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
