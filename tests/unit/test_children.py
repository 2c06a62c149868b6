"""A child process never outlives the task that started it (issue 54 item 5: core/children.py): `invoke
bench --repro` started as a user starts it, its child build a stand-in (a shell that starts a grandchild
and waits), then SIGTERM or SIGINT to the task: the task ends with its one line and status, and the
child and the grandchild are gone. And a child that outlives its timeout is ended with its group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ngcbuild.core.children import run_child

from ..conftest import REPO

STAND_IN = """#!/bin/sh
# the stand-in of `python -m invoke build ...`: itself and a grandchild, their ids written down, waiting
echo $$ > "{folder}/child.pid"
sleep 300 &
echo $! > "{folder}/grandchild.pid"
wait
"""


def _stand_in(folder: Path) -> Path:
    script = folder / "stand-in"
    script.write_text(STAND_IN.format(folder=folder))
    script.chmod(0o755)
    return script


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for every purpose but its entry: it holds nothing and runs nothing
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rpartition(")")[2].split()[0] == "Z")


def _gone(pid: int, seconds: float = 5) -> bool:
    """`pid` has ended within `seconds`: a SIGKILL sent is delivered and acted on a moment later (a loaded
    machine made that moment visible), and nothing may outlive the wait."""
    ends = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < ends:
        time.sleep(0.05)
    return not _alive(pid)


def _wait_for(path: Path, seconds: float = 60) -> int:
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path.name} was never written: the stand-in did not start")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_bench_ends_its_child_build_and_the_child_s_children(tmp_path, signum):
    folder = tmp_path / "children"
    folder.mkdir()
    stand_in = _stand_in(folder)
    hook = tmp_path / "hook"
    hook.mkdir()
    # in the bench's own process only: its children are built from sys.executable, so they are the stand-in
    (hook / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import sys
        sys.executable = {str(stand_in)!r}
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(hook), str(REPO / "src"))), "TMPDIR": str(tmp_path)}
    task = subprocess.Popen([sys.executable, "-m", "invoke", "bench", "--repro", "--release", "dev"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        child = _wait_for(folder / "child.pid")
        grandchild = _wait_for(folder / "grandchild.pid")
        assert _alive(child) and _alive(grandchild)
        task.send_signal(signum)
        out, err = task.communicate(timeout=60)
    finally:
        if task.poll() is None:
            task.kill()
            task.communicate()
    assert task.returncode == (143 if signum == signal.SIGTERM else 130), (out, err)
    assert "Traceback" not in err, err
    ends = time.monotonic() + 10
    while (_alive(child) or _alive(grandchild)) and time.monotonic() < ends:
        time.sleep(0.05)
    assert not _alive(child), "the child build outlived the bench"
    assert not _alive(grandchild), "the child's own child outlived the bench"


def test_a_child_past_its_timeout_is_ended_with_its_group(tmp_path):
    stand_in = _stand_in(tmp_path)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_child([str(stand_in)], timeout=2, stop_wait_s=1)
    assert time.monotonic() - started < 10
    assert _gone(int((tmp_path / "child.pid").read_text()))
    assert _gone(int((tmp_path / "grandchild.pid").read_text()))


def test_a_child_that_ignores_sigterm_is_killed_after_the_short_wait(tmp_path):
    script = tmp_path / "stubborn"
    script.write_text(f"#!/bin/sh\ntrap '' TERM\necho $$ > {tmp_path}/child.pid\nwhile :; do sleep 0.1; done\n")
    script.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_child([str(script)], timeout=1, stop_wait_s=1)
    assert time.monotonic() - started < 10
    assert _gone(int((tmp_path / "child.pid").read_text()))


def test_a_child_that_ends_is_its_output_and_status(tmp_path):
    done = run_child([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


FAILING_STAND_IN = """#!/bin/sh
# the stand-in of `python -m invoke build ...` when the engine is unreachable: its one line, exit 1
echo "ngcbuild: cannot reach the Docker engine at unix:///gone.sock (no engine is running)" >&2
exit 1
"""


@pytest.mark.parametrize("stdout", ["open", "closed"])
def test_a_bench_whose_child_build_cannot_reach_the_engine_says_so_in_one_line(tmp_path, stdout):
    """Issue 54 item 5: `bench --repro` with the engine unreachable (its child build fails), with stdout open
    or closed (`>&-`): the child's own line, named, exit 1, never a traceback of the bench."""
    script = tmp_path / "stand-in"
    script.write_text(FAILING_STAND_IN)
    script.chmod(0o755)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(f"import sys\nsys.executable = {str(script)!r}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(hook), str(REPO / "src"))), "TMPDIR": str(tmp_path)}
    closing = (lambda: os.close(1)) if stdout == "closed" else None
    done = subprocess.run([sys.executable, "-m", "invoke", "bench", "--repro", "--release", "dev"], cwd=REPO, env=env,
                          stdout=subprocess.PIPE if stdout == "open" else None, stderr=subprocess.PIPE, text=True,
                          preexec_fn=closing, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and "cannot reach the Docker engine" in lines[0] and "exited 1" in lines[0], lines
