"""`invoke test`'s whole run as two pytest processes side by side: the unit tests (pure Python, no engine,
minutes of one core) beside the rest, whose engine builds, pushes and workflow runs leave a core idle for
long stretches. The reliability tests of tests/unit (the generated examples) stay in the main process,
so that one session holds every reliability test and writes the figures (tests/reliability_plugin.py).

The second process's output goes to build/tests/unit.log and is printed whole when both have ended;
the exit status is the main process's, or the unit tests' where the main one passed. An interrupt
stops both."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import TextIO

# tests/conftest.py marks every test under tests/unit `unit`
BESIDE = ["tests/unit", "-m", "not reliability", "-p", "no:cacheprovider"]
MAIN = ["tests", "-m", "not unit or reliability"]
LOG = Path("build") / "tests" / "unit.log"
STOP_WAIT_S = 60


def run_whole_suite(root: Path, out: TextIO) -> int:
    log = root / LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    out.write(f"invoke test: the unit tests run beside the rest in a second pytest process; their output "
              f"goes to {LOG} and is shown when both have ended\\n")
    out.flush()
    with open(log, "w", encoding="utf-8") as sink:
        beside = subprocess.Popen([sys.executable, "-m", "pytest", *BESIDE], cwd=root, stdout=sink,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            main = subprocess.run([sys.executable, "-m", "pytest", *MAIN], cwd=root, check=False).returncode
            if beside.poll() is None:
                out.write("invoke test: waiting for the unit tests\\n")
                out.flush()
            unit = beside.wait()
        finally:
            _stop(beside)
    out.write(f"\\n{'=' * 30} the unit tests ({LOG}) {'=' * 30}\\n")
    out.write(log.read_text(encoding="utf-8", errors="replace"))
    out.flush()
    return main or unit


def _stop(process: subprocess.Popen) -> None:
    """An interrupted run leaves no pytest behind: Ctrl-C as a terminal sends it, then a kill."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
