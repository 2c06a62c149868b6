"""An interrupt (SIGINT, SIGTERM) at spread-out moments of a command's first second, through
`python -m ngcbuild` and `python -m invoke`: one line at most, exit 130/143 (or the signal's own
status when it lands while the interpreter is shutting down), never a traceback from our code.

A signal that lands before the first line of the project runs (the interpreter's own start, or
invoke importing itself before it loads tasks.py) is outside what the project can handle: such an
outcome is counted as "before our code" in the figures, and fails the test only if its traceback
passes through a file of ours."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..conftest import ScratchProject

pytestmark = pytest.mark.reliability

MOMENTS = [i / 10 for i in range(10)]
SIGNALS = {signal.SIGINT: (130, -signal.SIGINT), signal.SIGTERM: (143, -signal.SIGTERM)}


def interrupt(root, module: str, signum: int, moment: float, task=("render", "--release", "dev")):
    process = subprocess.Popen([sys.executable, "-m", module, *task], cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(moment)
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def classify(root, module: str, signum: int, status: int, out: str, err: str) -> str:
    if "Traceback" in out + err or "Fatal Python error" in err:
        frames = [line for line in err.splitlines() if line.strip().startswith("File ")]
        ours = [f for f in frames if "/ngcbuild/" in f or str(root / "tasks.py") in f]
        return "traceback in our code" if ours else "before our code"
    if module == "invoke" and status == 1 and not (out + err).strip():
        return "before our code"  # invoke's program, still loading tasks.py, exits 1 on a KeyboardInterrupt
    if status not in (0, *SIGNALS[signum]):
        return f"exit {status}"
    if len(err.strip().splitlines()) > 1:
        return "more than one line"
    return "clean"


@pytest.mark.parametrize("module", ["ngcbuild", "invoke"])
@pytest.mark.parametrize("signum", list(SIGNALS), ids=lambda s: signal.Signals(s).name)
def test_an_interrupt_at_any_moment_is_one_line(tmp_path, module, signum, figures):
    project = ScratchProject(tmp_path / "project")
    project.copy_release("dev")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda m: interrupt(project.root, module, signum, m), MOMENTS))
    verdicts = [classify(project.root, module, signum, *run) for run in runs]
    name = signal.Signals(signum).name
    figures(suite="hostile", case=f"{name} to {module} in its first second", input=f"{len(MOMENTS)} moments",
            klass="entry points", clean=all(v in ("clean", "before our code") for v in verdicts),
            traceback=any(v == "traceback in our code" for v in verdicts), hang=False, secret=False, leftovers=0,
            exit_status=None, message=", ".join(f"{m}s: {v}" for m, v in zip(MOMENTS, verdicts, strict=True)
                                                if v != "clean")[:300])
    bad = [(m, v, run[2][-1200:]) for m, v, run in zip(MOMENTS, verdicts, runs, strict=True)
           if v not in ("clean", "before our code")]
    assert not bad, bad


def test_an_interrupted_docs_leaves_the_older_complete_site(tmp_path, figures):
    project = ScratchProject(tmp_path / "project")
    project.copy_release("dev")
    done = project.invoke("docs", "--no-screenshot", timeout=600)
    assert done.returncode == 0, done.stderr
    site = project.root / "build" / "site"
    complete = sorted(p.relative_to(site).as_posix() for p in site.rglob("*"))
    problems = []
    for moment in (0.3, 0.8, 1.3, 1.8, 2.5):
        status, out, err = interrupt(project.root, "ngcbuild", signal.SIGINT, moment, task=("docs", "--no-screenshot"))
        now = sorted(p.relative_to(site).as_posix() for p in site.rglob("*"))
        strays = [p.name for p in site.parent.iterdir() if ".render-" in p.name or ".old-" in p.name]
        if now != complete or strays or "Traceback" in out + err:
            problems.append((moment, status, len(now), strays, err[-200:]))
    figures(suite="hostile", case="SIGINT to docs at 5 moments", input="docs", klass="docs atomic",
            clean=not problems, traceback=False, hang=False, secret=False, leftovers=len(problems), exit_status=None,
            message=str(problems)[:300])
    assert not problems, problems
