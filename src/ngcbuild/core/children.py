"""A child process that never outlives the task that started it (issue 54 item 5): `run_child` starts it
in a process group of its own and, whenever the task leaves before the child has ended (Ctrl-C, SIGTERM,
a failure of its own, a timeout), ends the whole group: SIGTERM first, so that a child of ours puts back
what it half did (core/interrupts.py: its tags, containers, temporary folders), then, after
STOP_WAIT_S, SIGKILL; the child is reaped before the task goes on. What the child builds in an engine
is the engine's; what it runs as processes ends with it."""

from __future__ import annotations

import os
import signal
import subprocess

STOP_WAIT_S = 5.0  # what a child is given to put things back after SIGTERM, before SIGKILL


def run_child(argv: list[str], *, cwd=None, env: dict | None = None, timeout: float | None = None,
              stop_wait_s: float = STOP_WAIT_S, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """`argv` run to its end, its output captured as text (as subprocess.run(capture_output=True,
    text=True)), `stdin` a file it reads (none by default); the child and everything it started ended
    when the caller leaves first. A timeout is subprocess.TimeoutExpired, after the group was ended."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:
        end_group(process, stop_wait_s)
        raise
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def end_group(process: subprocess.Popen, stop_wait_s: float = STOP_WAIT_S) -> None:
    """The process group `process` leads ended: SIGTERM, up to `stop_wait_s` for it to end, then SIGKILL
    to whatever of the group is left; the child reaped. Safe to call when it has ended already."""
    _signal_group(process, signal.SIGTERM)
    try:
        process.communicate(timeout=stop_wait_s)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass
    _signal_group(process, signal.SIGKILL)  # the leader's children too, though the leader itself is gone
    try:
        process.communicate(timeout=stop_wait_s)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
