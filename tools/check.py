"""Check one notebook, in both languages: everything that concerns it, in a few minutes.

    python -m tools.check 02_qkv          # make check NB=02_qkv
    python -m tools.check 00_start_here
    python -m tools.check 02_qkv --cold-site   # build the website even if its explorers are not drawn yet

What runs, two steps at a time (each step's output goes to build/check/<lesson>/<step>.log):

- strict nbval of the lesson, its Chinese twin and the solutions of both (the stored outputs are
  what the code prints);
- the tests of tests/notebooks/ (hygiene, claims, twins, headings, course map, slides, ...), the
  Binder checks, that the website builds the lesson's explorers from its cells
  (tests/delivery/test_live_states.py) and the lesson's exercise checkers (tests/attn/exercises/test_exercises_nbNN.py),
  but of the tests parametrised by notebook only this lesson's: a test whose id names another
  lesson is left out (``pytest_collection_modifyitems`` below, ``-p tools.check --lesson NN``);
  a test whose parameters hold one of the course's notebooks must name it in its id, or the
  check says so;
- the tools' own checks: the twins' code (``tools.twins``), the slide metadata (``tools.slides
  --check``), the catalogue (``tools.catalogue --check``), and the generated lesson tables
  (``tools.lesson sync --check``);
- the lesson's website pages and live explorers (tests/delivery/test_site.py and
  test_site_live.py, ``-k`` the lesson), from the explorer states cached in build/live-cache/;
  where that cache lacks some (a first build draws them all, about 5 minutes on 2 cores), the
  step is skipped, saying why and how to run it (``--cold-site`` runs it anyway);
- the lesson's explorers in JupyterLab in a real browser, both languages
  (tests/delivery/test_browser.py, its gallery cut to this lesson's explorers).

At the end it prints what it ran, each step's verdict and time, and either that the notebook is
ready or, for each failure, the failing tests with their messages (which name the file to edit).
``make test`` remains the whole proof (CONTRIBUTING.md, "Tests").
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LOGS = ROOT / "build" / "check"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-rfE"]
FAST = "not browser and not network and not slow"


def lessons() -> list[str]:
    """Every notebook of the course by its name: 00_start_here, 01_intuition, ..."""
    return sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


@dataclass
class Step:
    """One command of the check, its verdict and what it printed."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    skipped: str = ""  # why it does not run, with the command that runs it
    status: str = ""  # "passed", "FAILED", "skipped"
    seconds: float = 0.0
    output: str = ""

    def shown(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        args = [Path(a).name if a == sys.executable else a for a in self.command]
        return " ".join(([env] if env else []) + [f"'{a}'" if " " in a else a for a in args])


def run(step: Step, lesson: str) -> Step:
    """Run one step, its output into build/check/<lesson>/<step>.log."""
    if step.skipped:
        step.status = "skipped"
        return step
    start = time.monotonic()
    # (COLUMNS: pytest's summary line of a failure keeps its message whole, which names the file to edit)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "2000", **step.env}
    done = subprocess.run(step.command, cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    step.seconds, step.output = time.monotonic() - start, done.stdout
    step.status = "passed" if done.returncode == 0 else "FAILED"
    log = LOGS / lesson / f"{step.name.replace(' ', '_')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {step.shown()}\n{step.output}", encoding="utf-8")
    last = step.output.strip().splitlines()[-1:] or [""]
    print(f"{step.status:>7}  {step.name} ({step.seconds:.0f} s): {last[0][:100]}", flush=True)
    return step


def cold_states() -> tuple[int, int]:
    """(explorer states the website's build would draw, all of them): the ones build/live-cache/
    lacks (tools.live_states's cache, by a hash of their inputs)."""
    from tools import live_states

    wanted = [(ident, recipe, language) for ident, recipe in live_states.all_ids() for language in live_states.LANGUAGES]
    missing = [w for w in wanted if not (live_states._cached(*w) / "manifest.json").is_file()]
    return len(missing), len(wanted)


def site_unavailable() -> str:
    """Why the website's tests cannot run here ("" if they can)."""
    from tools import site
    from tools.lab import browser_unavailable

    reason = browser_unavailable()
    if reason:
        return reason
    if not site.NODE_MODULES.is_dir():
        return "the site's JavaScript is not installed: npm ci --prefix site (make vendor)"
    return ""


def steps(lesson: str, *, cold_site: bool) -> list[Step]:
    """The steps of the check of ``lesson``, the longest first (two run at once)."""
    from tools.execute import lesson_files

    files = [str(p.relative_to(ROOT)) for p in lesson_files(lesson)]
    number = lesson[:2]
    site_tests = ["tests/delivery/test_site.py", "tests/delivery/test_site_live.py"]
    site_step = Step("website", PYTEST + site_tests + ["-k", lesson])
    reason = site_unavailable()
    if not reason and not cold_site:
        missing, wanted = cold_states()
        if missing:
            minutes = max(1, round(5 * missing / wanted))  # all of them: about 5 minutes on 2 cores
            reason = (f"build/live-cache/ lacks {missing} of the website's {wanted} explorer states, which its build "
                      f"would draw first (about {minutes} min on 2 cores): run `make site` once, or this check "
                      f"with --cold-site")
    if reason:
        site_step.skipped = f"{reason}; the website's tests of this lesson: {site_step.shown()}"
    browser = Step("explorers in JupyterLab", PYTEST + ["tests/delivery/test_browser.py"], env={"ATTN_LESSON": number})
    if lesson.startswith("00_"):
        browser.skipped = f"{lesson} shows no explorer"
    exercises = ROOT / "tests" / "attn" / "exercises" / f"test_exercises_nb{number}.py"
    fast = (["tests/notebooks", "tests/delivery/test_binder.py", "tests/delivery/test_live_states.py"]
            + ([str(exercises.relative_to(ROOT))] if exercises.exists() else []))
    tools = [Step("twins", [sys.executable, "-m", "tools.twins"]),
             Step("slides", [sys.executable, "-m", "tools.slides", "--check"]),
             Step("catalogue", [sys.executable, "-m", "tools.catalogue", "--check"])]
    tools.append(Step("lesson tables", [sys.executable, "-m", "tools.lesson", "sync", "--check"]))
    return [Step("strict nbval", PYTEST + ["--nbval"] + files),
            site_step,
            Step("notebook tests", PYTEST + ["-m", FAST, "-p", "tools.check", "--lesson", lesson] + fast),
            *tools,
            browser]


def report(lesson: str, done: list[Step], seconds: float) -> int:
    """What ran, each verdict; then ready, or each failure with what it says."""
    print(f"\n{lesson}: what ran ({seconds:.0f} s in all; the logs in {(LOGS / lesson).relative_to(ROOT)}/):")
    for step in done:
        print(f"  {step.status:>7}  {step.name}" + (f" ({step.seconds:.0f} s)" if step.status != "skipped" else "")
              + f"\n           {step.skipped or step.shown()}")
    failed = [s for s in done if s.status == "FAILED"]
    for step in failed:
        lines = step.output.splitlines()
        summary = [ln for ln in lines if ln.startswith(("FAILED ", "ERROR "))] or lines[-25:]
        print(f"\n{step.name} failed:\n" + "\n".join(f"  {ln[:2000]}" for ln in summary))
    skipped = [s.name for s in done if s.status == "skipped"]
    if failed:
        print(f"\n{lesson} is NOT ready: {len(failed)} step(s) failed ({', '.join(s.name for s in failed)}). "
              f"Each message above names the file to edit; a stored output that differs (strict nbval) is "
              f"re-executed with python -m tools.execute {lesson}.")
        return 1
    print(f"\n{lesson} is ready: every step passed" + (f" (skipped: {', '.join(skipped)})" if skipped else "") + ".")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("lesson", help="a notebook of the course by its name, such as 02_qkv")
    parser.add_argument("--cold-site", action="store_true",
                        help="test the website even where its explorer states must be drawn first")
    args = parser.parse_args(argv)
    lesson = args.lesson.removesuffix(".ipynb").removeprefix("notebooks/")
    if lesson not in lessons():
        parser.error(f"no lesson {args.lesson!r}: expected one of {', '.join(lessons())}")
    start = time.monotonic()
    todo = steps(lesson, cold_site=args.cold_site)
    print(f"{lesson}: {len(todo)} steps, two at a time", flush=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda s: run(s, lesson), todo))
    return report(lesson, done, time.monotonic() - start)


# --- as a pytest plugin: this lesson's tests, and every test about no one lesson -------------

def pytest_addoption(parser) -> None:
    parser.addoption("--lesson", help="keep only this lesson's tests of those parametrised by notebook")


def named_lessons(text: str) -> set[str]:
    """The lessons whose names ``text`` holds (02_qkv in 'zh/solutions/02_qkv_solutions.ipynb')."""
    return {name for name in lessons() if name in text}


def pytest_collection_modifyitems(config, items) -> None:
    lesson = config.getoption("--lesson")
    if not lesson:
        return
    kept, dropped, unnamed = [], [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        named = named_lessons(spec.id) if spec else set()
        held = {n for v in (spec.params.values() if spec else ()) if isinstance(v, Path) for n in named_lessons(v.name)}
        if held - named:
            unnamed.append(item.nodeid)
        (kept if not named or lesson in named else dropped).append(item)
    if unnamed:
        import pytest

        raise pytest.UsageError(f"these tests run on a notebook their id does not name, so -k cannot choose them: "
                         f"{unnamed[:5]}: give their parametrize ids=lambda p: p.name (or the path)")
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


if __name__ == "__main__":
    sys.exit(main())
