"""`invoke test`'s whole run as two pytest processes: the unit tests (pure Python, no engine, minutes of
one core) run beside the integration tests, whose engine builds, pushes and workflow runs keep one core
of our two busy and leave the other idle for long stretches. The unit tests start when the main process
reaches its first integration test (it creates the file named by NGCBUILD_UNIT_TESTS_GO,
tests/integration/conftest.py): the corpus before it keeps both cores busy. The reliability tests of
tests/unit (the generated examples) stay in the main process, so that one session holds every
reliability test and writes the figures (tests/reliability_plugin.py).

The second process's output goes to build/tests/unit.log and is printed whole when both have ended;
the exit status is the main process's, or the unit tests' where the main one passed. An interrupt
stops both."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

# tests/conftest.py marks every test under tests/unit `unit`
BESIDE = ["tests/unit", "-m", "not reliability", "-p", "no:cacheprovider"]
MAIN = ["tests", "-m", "not unit or reliability"]
LOG = Path("build") / "tests" / "unit.log"
GO = "NGCBUILD_UNIT_TESTS_GO"
POLL_S = 1.0
STOP_WAIT_S = 60


def run_whole_suite(root: Path, out: TextIO) -> int:
    log = root / LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    go = log.with_name("unit.go")
    go.unlink(missing_ok=True)
    out.write(f"invoke test: the unit tests run in a second pytest process beside the integration tests; "
              f"their output goes to {LOG} and is shown when both have ended\n")
    out.flush()
    beside: subprocess.Popen | None = None
    with open(log, "w", encoding="utf-8") as sink:
        def start_beside() -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-m", "pytest", *BESIDE], cwd=root, stdout=sink,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        main = subprocess.Popen([sys.executable, "-m", "pytest", *MAIN], cwd=root,
                                env={**os.environ, GO: str(go)})
        try:
            while main.poll() is None:
                if beside is None and go.exists():
                    beside = start_beside()
                time.sleep(POLL_S)
            if beside is None:  # no integration test ran: the unit tests after the rest
                beside = start_beside()
            if beside.poll() is None:
                out.write("invoke test: waiting for the unit tests\n")
                out.flush()
            unit = beside.wait()
        finally:
            for process in (main, beside):
                _stop(process)
            go.unlink(missing_ok=True)
    out.write(f"\n{'=' * 30} the unit tests ({LOG}) {'=' * 30}\n")
    out.write(log.read_text(encoding="utf-8", errors="replace"))
    out.flush()
    return main.returncode or unit


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
