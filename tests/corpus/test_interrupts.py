"""An interrupt (SIGINT, SIGTERM) at spread-out moments of a command's first second, through
`python -m ngcbuild` and `python -m invoke`: one line at most, exit 130/143 (or the signal's own
status when it lands while the interpreter is shutting down), never a traceback from our code.

A signal that lands before the first line of the project runs (the interpreter's own start, or
invoke importing itself before it loads tasks.py) is outside what the project can handle: such an
outcome is counted as "before our code" in the figures, and fails the test only if its traceback
passes through a file of ours."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..conftest import REPO, ScratchProject

pytestmark = pytest.mark.reliability

# spread over the first second, closer together in its first half, while the interpreter starts and the
# command imports what it needs (ngcbuild/__init__.py installs the handlers first thing)
MOMENTS = [0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.45, 0.65, 0.9]
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
        # an interrupt while the interpreter itself starts (site's .pth files, on a loaded machine) is
        # Python's traceback before our first instruction, as test_an_interrupt_at_any_moment_is_one_line
        # counts it; one through our code is a problem, as is any change to the site
        ours = classify(project.root, "ngcbuild", signal.SIGINT, status, out, err) == "traceback in our code"
        if now != complete or strays or ours:
            problems.append((moment, status, len(now), strays, err[-200:]))
    figures(suite="hostile", case="SIGINT to docs at 5 moments", input="docs", klass="docs atomic",
            clean=not problems, traceback=False, hang=False, secret=False, leftovers=len(problems), exit_status=None,
            message=str(problems)[:300])
    assert not problems, problems


# --- threaded work and cleanup (issue 32) -------------------------------------------------------------

def _code_env(**extra) -> dict:
    """The environment of a process running the code under test (NGCBUILD_CODE_UNDER_TEST: another
    checkout's src/, for a "before" figure; else this checkout's)."""
    code = os.environ.get("NGCBUILD_CODE_UNDER_TEST") or str(REPO / "src")
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH", "")) if p)
    return env


class SilentProxy:
    """An HTTP proxy that takes every connection and never answers: every request through it waits
    until its client gives up (the audit's workers, on PyPI, retrying with backoff)."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.held = []
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self):
        while True:
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                return

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}"

    def close(self):
        self.server.close()
        for conn in self.held:
            conn.close()


SBOM_OF_TEN = json.dumps({"bomFormat": "CycloneDX", "components": [
    {"name": f"pkg{i}", "version": "1.0", "purl": f"pkg:pypi/pkg{i}@1.0"} for i in range(10)]})


def test_an_interrupt_stops_the_audit_while_its_workers_wait_on_the_index(tmp_path, figures):
    """`audit` asks PyPI on 8 worker threads; every request hangs (a proxy that never answers). A
    Ctrl-C must end the command within a second, not after the workers' timeouts and retries."""
    project = ScratchProject(tmp_path / "project")
    project.copy_release("dev")
    folder = project.root / "build" / "dev"
    folder.mkdir(parents=True)
    (folder / "sbom.cdx.json").write_text(SBOM_OF_TEN)
    (folder / "record.json").write_text(json.dumps({"release": "dev", "image_id": "sha256:" + "0" * 64, "sbom": {
        "sha256": hashlib.sha256(SBOM_OF_TEN.encode()).hexdigest(), "image_id": "sha256:" + "0" * 64}}))
    proxy = SilentProxy()
    env = _code_env(HTTPS_PROXY=proxy.url, https_proxy=proxy.url, HTTP_PROXY=proxy.url, http_proxy=proxy.url,
                    NO_PROXY="", no_proxy="")
    env.pop("NGCBUILD_PYPI_MIRROR", None)
    try:
        process = subprocess.Popen([sys.executable, "-m", "ngcbuild", "audit", "--release", "dev"], cwd=project.root,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 60
        while len(proxy.held) < 8 and time.monotonic() < deadline:  # every worker is waiting
            time.sleep(0.1)
        waiting = len(proxy.held)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        took = time.monotonic() - sent
    finally:
        proxy.close()
    clean = process.returncode == 130 and took < 1.5 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    figures(suite="hostile", case="SIGINT to audit while 8 workers wait on the index", input="audit",
            klass="interrupts in threaded work", clean=clean, traceback="Traceback" in err, hang=took >= 60,
            secret=False, leftovers=0, exit_status=process.returncode,
            message=f"{waiting} requests waiting; exit {process.returncode} {took:.1f}s after the signal")
    assert waiting >= 8, (waiting, err[-2000:])
    assert process.returncode == 130 and err.strip() == "ngcbuild: interrupted", (process.returncode, err[-2000:])
    assert took < 1.5, f"the audit took {took:.1f}s to stop after Ctrl-C"


CLEANUP = """
import sys, time
from pathlib import Path
from ngcbuild.core.interrupts import Interrupted, install, leave

install()
try:
    try:
        print("working", flush=True)
        time.sleep(60)
    finally:
        print("cleaning up", flush=True)
        time.sleep(1.5)  # what a command puts back: tags, containers, temporary files
        Path(sys.argv[1]).write_text("done")
except Interrupted as exc:
    leave(exc)
"""


def _signalled(tmp_path, signals: int):
    mark = tmp_path / f"cleaned-{signals}"
    process = subprocess.Popen([sys.executable, "-c", CLEANUP, str(mark)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_code_env())
    assert process.stdout.readline().strip() == "working"
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    assert process.stdout.readline().strip() == "cleaning up"
    for _ in range(signals - 1):
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    return process.returncode, err, mark.exists(), time.monotonic() - started


def test_a_second_interrupt_still_lets_the_cleanup_finish_and_a_third_ends_at_once(tmp_path, figures):
    status, err, cleaned, _ = _signalled(tmp_path, 2)
    forced_status, _, forced_cleaned, forced_took = _signalled(tmp_path, 3)
    clean = status == 130 and cleaned and "Traceback" not in err and forced_status == 130 and forced_took < 1.2
    figures(suite="hostile", case="a second SIGINT during cleanup; a third", input="core/interrupts",
            klass="interrupts in threaded work", clean=clean, traceback="Traceback" in err, hang=False, secret=False,
            leftovers=0 if cleaned else 1, exit_status=status,
            message=f"two: exit {status}, cleaned {cleaned}; three: exit {forced_status} in {forced_took:.1f}s")
    assert status == 130 and err.strip() == "ngcbuild: interrupted", (status, err[-1500:])
    assert cleaned, "the second Ctrl-C cut the cleanup short"
    assert forced_status == 130 and not forced_cleaned and forced_took < 1.2, (forced_status, forced_took)
