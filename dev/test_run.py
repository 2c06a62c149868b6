"""`invoke test`'s whole run as two pytest processes side by side: the integration tests (the engine's
builds, pushes and workflow runs, which keep one core of our two busy and leave the other idle for long
stretches: measured, about 50% of the machine) and the rest (the corpus of broken and hostile inputs, the
site and the unit tests: pure Python, no engine; then the integration files that need PyPI but no engine),
the rest at a lower priority so that it takes the idle core and the engine's work keeps what it needs.

Each session leaves what its reliability tests measured in a part file (tests/reliability_plugin.py,
NGCBUILD_FIGURES_PART); the parts are judged together as one session would be, the report written to
build/reliability/RELIABILITY.md, and the run fails unless every figure is as it must be. The
integration tests' output is shown as it comes; the rest's goes to build/tests/rest.log and is shown
when both have ended. An interrupt stops both."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from dev import engine_leftovers

ENGINE = "tests/integration"
LOG = Path("build") / "tests" / "rest.log"
PARTS = Path("build") / "reliability"
NICE = 5  # the rest yields the cores to the engine's work when both want them
STOP_WAIT_S = 60
# an integration file says what it needs in its module's marks; those without `engine` need PyPI alone
# (verify's rows, the resolver's agreement), an index of their own (bump), Podman's service alone (dev's
# pipeline on Podman) or act on the host alone (the workflows whose jobs build nothing). A file with no
# marks stays in the engine's lane.
_MARKS = re.compile(r"^pytestmark = (.*)$", re.M)


def network_only(root: Path) -> list[str]:
    """The integration test files whose tests need no Docker engine (their module has marks, and `engine` is
    not one): they run in the second process, after the rest, and leave the engine's lane their minutes."""
    beside = []
    for path in sorted((root / ENGINE).glob("test_*.py")):
        marks = _MARKS.search(path.read_text(encoding="utf-8"))
        if marks and not re.search(r"\bpytest\.mark\.engine\b", marks.group(1)):
            beside.append(str(path.relative_to(root)))
    return beside


def the_rest(root: Path) -> list[str]:
    """Every folder of tests/ that holds tests, but the integration tests (a test file directly in tests/
    would make the parts not cover tests/, and the figures are then not written, saying so)."""
    tests = root / "tests"
    return [str(path.relative_to(root)) for path in sorted(tests.iterdir())
            if path.name != Path(ENGINE).name
            and path.is_dir() and any(path.rglob("test_*.py"))]


def run_whole_suite(root: Path, out: TextIO) -> int:
    from tests.reliability_plugin import PART, judge_parts

    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")  # as tests/conftest.py reads it
    log = root / LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    parts = [root / PARTS / "part-integration.json", root / PARTS / "part-rest.json"]
    for part in parts:  # a session that never starts must leave no earlier run's part to be judged
        part.unlink(missing_ok=True)
    rest, network = the_rest(root), network_only(root)
    out.write(f"invoke test: {ENGINE} here (but {len(network)} files of it that need no engine), and beside it in "
              f"a second pytest process {', '.join(rest)} and those {len(network)} (output in {LOG}, shown when "
              "both have ended)\n")
    out.flush()
    beside = main = None
    before = engine_leftovers.snapshot()
    with open(log, "w", encoding="utf-8") as sink:
        try:
            beside = subprocess.Popen([sys.executable, "-m", "pytest", *rest, *network], cwd=root, stdout=sink,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env={**os.environ, PART: str(parts[1])}, preexec_fn=lambda: os.nice(NICE))
            main = subprocess.Popen([sys.executable, "-m", "pytest", ENGINE, *(f"--ignore={path}" for path in network)],
                                    cwd=root,
                                    env={**os.environ, PART: str(parts[0])})
            engine_status = main.wait()
            if beside.poll() is None:
                out.write("invoke test: waiting for the tests beside\n")
                out.flush()
            rest_status = beside.wait()
        finally:
            for process in (main, beside):
                _stop(process)
            engine_leftovers.remove_left(before, out)
    out.write(f"\n{'=' * 30} {', '.join(rest)} and {len(network)} files of {ENGINE} ({LOG}) {'=' * 30}\n")
    out.write(log.read_text(encoding="utf-8", errors="replace"))
    verdict = judge_parts(root, parts, in_ci)
    if verdict:
        line, figures_ok = verdict
        out.write(f"{'-' * 30} reliability figures {'-' * 30}\n{line}\n")
    else:
        figures_ok = True
    out.write(f"invoke test: {ENGINE} exit {engine_status}, the rest exit {rest_status}\n")
    out.flush()
    return engine_status or rest_status or (0 if figures_ok else 1)


def _stop(process: subprocess.Popen | None) -> None:
    """An interrupted run leaves no pytest behind: Ctrl-C as a terminal sends it, then a kill."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
