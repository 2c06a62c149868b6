"""A process that has imported ngcbuild, invoke and their libraries once, and forks one child per
command: `python -m invoke ARGS` (or `-m ngcbuild`) as a user runs it, without paying the interpreter's
start and the imports (about a second of CPU) for each of the hostile corpus's hundreds of commands.

The child is what a fresh process would be at the moment the interpreter hands over to the module:
its own descriptors 0, 1 and 2 (/dev/null and two files; descriptor 1 closed for `>&-`, or a pipe the
zygote reads one byte of and closes for `| head -c1`), its folder, its environment and locale (LC_ALL:
an ASCII locale gives ASCII streams, as the interpreter would choose them), its argv, the default signal
handlers, a process group of its own (killed whole at the time bound); then the module runs as
`python -m` runs it (runpy, `__main__`), and the child exits with what it raised. What a case tests of
the interpreter's own start (PYTHON* variables other than PYTHONUTF8 and PYTHONIOENCODING, signals in
the first milliseconds) needs a real process: those cases say so (`HostileCase.process`), and a few
cases of each kind the zygote stands in for run so as well (tests/corpus/every_task.py).

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
import importlib, json, os, select, signal, sys, time
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
requests_in, answers = sys.stdin.buffer, sys.stdout.buffer
STDOUT = (sys.stdout.encoding, sys.stdout.errors)  # what the interpreter chose for a pipe, in this environment


def child(request, pipe):
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
    if pipe:  # | head -c1: the reader is the zygote, which takes one byte and closes its end
        os.dup2(pipe[1], 1)
        os.close(pipe[0])
        os.close(pipe[1])
    import io
    import locale
    os.environ.clear()
    os.environ.update(request["env"])
    encoding, errors = STDOUT
    if "LC_ALL" in request["env"]:
        # the locale the interpreter would start in: an ASCII one (C or POSIX with UTF-8 mode off) gives
        # ASCII streams, and ASCII to every text the process decodes or encodes by the locale
        locale.setlocale(locale.LC_ALL, "")
        if request["env"].get("PYTHONUTF8") == "0" and locale.setlocale(locale.LC_CTYPE) in ("C", "POSIX"):
            encoding, errors = "ascii", "surrogateescape"
    unbuffered = bool(request["env"].get("PYTHONUNBUFFERED"))
    def stream(fd, encoding, errors):
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw), encoding=encoding, errors=errors,
                                write_through=unbuffered)
    sys.stdout = sys.__stdout__ = stream(1, encoding, errors)
    if request["mode"] == "closed":  # >&-: the interpreter finds no descriptor 1 and has no sys.stdout
        os.close(1)
        sys.stdout = sys.__stdout__ = None
    sys.stderr = sys.__stderr__ = stream(2, encoding, "backslashreplace")
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                                 encoding=encoding, errors=errors)
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
    pipe = os.pipe() if request["mode"] == "head1" else None
    pid = os.fork()
    if pid == 0:
        try:
            child(request, pipe)
        finally:
            os._exit(70)
    watch = os.pidfd_open(pid)
    ends = time.monotonic() + request["timeout"]
    if pipe:
        os.close(pipe[1])
        while True:  # one byte, or the end of the command, whichever comes first; then the reader goes
            ready, _, _ = select.select([pipe[0], watch], [], [], max(0.0, ends - time.monotonic()))
            if not ready or pipe[0] in ready:
                if pipe[0] in ready:
                    os.read(pipe[0], 1)
                break
            if watch in ready:
                break
        os.close(pipe[0])
    ready, _, _ = select.select([watch], [], [], max(0.0, ends - time.monotonic()))
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
            timeout: float, mode: str = "captured") -> tuple[int | None, str, str]:
        """`python -m MODULE ARGV` in the folder the steps of `cwd` lead to, with `env`; its output in
        files under `capture`, its stdout as `mode` says (captured, closed, head1: see hostile.py)."""
        out, err = capture / "stdout", capture / "stderr"
        request = {"module": module, "argv": argv, "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err),
                   "timeout": timeout, "mode": mode}
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
