"""A process that has imported ngcbuild, invoke and their libraries once, and forks one child per
command: `python -m invoke ARGS` (or `-m ngcbuild`) as a user runs it, without paying the interpreter's
start and the imports (about a second of CPU) for each of the hostile corpus's hundreds of commands.

The child is what a fresh process would be at the moment the interpreter hands over to the module:
its own descriptors 0, 1 and 2 (/dev/null and two files), its folder, its environment, its argv, the
default signal handlers, a process group of its own (killed whole at the time bound); then the module
runs as `python -m` runs it (runpy, `__main__`), and the child exits with what it raised. Only what a
case tests about the interpreter's own start (its locale and encodings, PYTHON* variables, closed
descriptors, signals in the first milliseconds) needs a real process: those cases say so
(`HostileCase.process`) and run as before.

The protocol is one JSON line each way on the zygote's stdin and stdout.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
from pathlib import Path

# what the commands import, loaded once (a child imports anything else itself, as a process would)
PRELOAD = ("invoke", "invoke.main", "invoke.program", "ngcbuild", "ngcbuild.cli", "ngcbuild.cli.program",
           "ngcbuild.cli.tasks", "ngcbuild.cli.commands", "ngcbuild.manifest.loader", "ngcbuild.manifest.series",
           "ngcbuild.render.context", "ngcbuild.render.changed", "ngcbuild.engine.build", "ngcbuild.engine.options",
           "ngcbuild.registry.client", "ngcbuild.supply.audit", "ngcbuild.supply.attest", "ngcbuild.docs.notes",
           "ngcbuild.docs.matrix", "ngcbuild.verify.run", "ngcbuild.publish.promote", "ngcbuild.workflow.rehearse",
           "requests", "yaml", "jinja2", "pydantic", "cryptography.hazmat.primitives.asymmetric.ed25519")

SERVE = r"""
import importlib, json, os, select, signal, sys
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
requests_in, answers = sys.stdin.buffer, sys.stdout.buffer


def child(request):
    os.setpgid(0, 0)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as the interpreter sets it at start
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    os.close(null)
    import io
    unbuffered = bool(request["env"].get("PYTHONUNBUFFERED"))
    def stream(fd, errors):
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw), encoding="utf-8", errors=errors,
                                write_through=unbuffered)
    sys.stdout = sys.__stdout__ = stream(1, "strict")
    sys.stderr = sys.__stderr__ = stream(2, "backslashreplace")
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    os.environ.clear()
    os.environ.update(request["env"])
    for step in request["cwd"]:
        os.chdir(step)
    sys.path[0] = ""
    sys.argv = ["-m", *request["argv"]]
    code = 0
    try:
        import runpy
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    try:
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code)


for line in requests_in:
    request = json.loads(line)
    answers.flush()
    pid = os.fork()
    if pid == 0:
        try:
            child(request)
        finally:
            os._exit(70)
    watch = os.pidfd_open(pid)
    ready, _, _ = select.select([watch], [], [], request["timeout"])
    hung = not ready
    if hung:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    os.close(watch)
    answers.write((json.dumps({"status": None if hung else os.waitstatus_to_exitcode(status)}) + "\n").encode())
    answers.flush()
"""


class Zygote:
    """One forking server: `run` one command at a time (each worker thread has its own)."""

    def __init__(self, env: dict):
        self.process = subprocess.Popen([sys.executable, "-c", SERVE, json.dumps(PRELOAD)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env, cwd="/")

    def run(self, module: str, argv: list[str], cwd: list[str], env: dict, capture: Path,
            timeout: float) -> tuple[int | None, str, str]:
        out, err = capture / "stdout", capture / "stderr"
        request = {"module": module, "argv": argv, "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err),
                   "timeout": timeout}
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("the zygote ended")
        status = json.loads(answer)["status"]
        texts = [path.read_bytes().decode("utf-8", "replace") if path.exists() else "" for path in (out, err)]
        for path in (out, err):
            path.unlink(missing_ok=True)
        return status, texts[0], texts[1]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Zygotes:
    """A pool of zygotes for the worker threads of one corpus run (the environment they import under:
    the code under test on PYTHONPATH)."""

    def __init__(self, env: dict):
        self.env = env
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        self._all: list[Zygote] = []

    def run(self, *args, **kwargs):
        try:
            zygote = self._idle.get_nowait()
        except queue.Empty:
            zygote = Zygote(self.env)
            self._all.append(zygote)
        try:
            return zygote.run(*args, **kwargs)
        finally:
            self._idle.put(zygote)

    def close(self) -> None:
        for zygote in self._all:
            zygote.close()


def zygote_env() -> dict:
    """The environment a zygote imports under: the code under test first on PYTHONPATH."""
    from ..conftest import REPO

    code = os.environ.get("NGCBUILD_CODE_UNDER_TEST") or str(REPO / "src")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH", "")) if p)
    return env
