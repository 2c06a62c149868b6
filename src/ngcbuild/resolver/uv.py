"""The one way ngcbuild runs uv: `uv pip compile` for one target (the base's Python, ABI and manylinux
tags on one platform) against the run's indexes, wheelhouse and stand-ins, in the clean room
(clean_room.py: an allow-listed environment, every line and path checked), within the run's one
deadline (deadline.py). uv reads neither pip's configuration nor the user's (--no-config): everything
it uses is given here.

uv rather than pip: it resolves the whole set at once, names the whole chain of a conflict, and reads
wheels' metadata (PEP 658, else range requests) instead of whole wheels.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.core.references import shown_url
from ngcbuild.manifest.lock import LockedPin, parse_entries
from ngcbuild.resolver.clean_room import checked_line, environment, path_option
from ngcbuild.resolver.deadline import Deadline, run_deadline
from ngcbuild.resolver.stand_ins import StandIn, write_stand_in
from ngcbuild.verify.target import Target

VERSION_TIMEOUT_S = 60
# The manylinux platforms uv names (`--python-platform ARCH-manylinux_2_N`), per glibc minor.
_UV_GLIBC = (17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()]+")
# uv's hints for an index that answered 401 or 403 (uv 0.5 to 0.13 word them so): the URL and the status
_REFUSED = re.compile(r"index (?:URL )?\(([^\s()]{1,2100})\) (?:could not be queried due to a lack of valid "
                      r"authentication credentials \(|returned an? )((?:401|403)(?: [A-Z][a-z]{1,20})?)")


@dataclass(frozen=True)
class Compiled:
    ok: bool
    pins: tuple[LockedPin, ...]  # the resolution when ok; `via`: who asked for each ("-r": a requirement)
    message: str  # uv's explanation when not (credentials masked)


class UnresolvedError(OperationError):
    """uv stopped for another reason than a conflict (an index unreachable, no such distribution)."""

    def __init__(self, message: str):
        self.reason = message
        super().__init__(f"uv could not resolve: {message}")


class IndexRefused(UnresolvedError):
    """An index answered 401 or 403: our credentials (or none) were refused. uv reports it as a hint
    under "no solution found", every distribution of that index then "not found": a failure of the run
    (exit 1), never a conflict of the team's requirements."""

    def __init__(self, host: str, status: str):
        self.reason = (f"the index at {host} refused our credentials ({status}); give its login in the index "
                       "URL (USER:PASSWORD@ before its host, in --index-url or UV_INDEX_URL/PIP_INDEX_URL) or in "
                       "~/.netrc (never printed); nothing was resolved")
        OperationError.__init__(self, self.reason)


def uv_binary() -> str:
    try:
        from uv import find_uv_bin
    except ImportError:
        raise OperationError("uv is not installed (`pip install uv`): ngcbuild resolves with it") from None
    try:
        return find_uv_bin()
    except FileNotFoundError:
        raise OperationError("the uv package is installed but its binary is missing; reinstall it "
                             "(`pip install --force-reinstall uv`)") from None


def uv_version() -> str:
    done = subprocess.run([uv_binary(), "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                          env=environment(os.environ, [], None), stdin=subprocess.DEVNULL)
    return done.stdout.strip() or "uv (version unknown)"


def python_platform(target: Target) -> str:
    """uv's name of the target's platform: the newest manylinux uv knows that the target's glibc runs."""
    major, minor = (int(p) for p in target.glibc.split("."))
    known = [n for n in _UV_GLIBC if major == 2 and n <= minor] or [17]
    return f"{target.arch}-manylinux_2_{known[-1]}"


class Uv:
    """uv for one run: its indexes (the first is the index URL), wheelhouse, stand-ins, CA bundle,
    the day the index is read as of, and the run's deadline. Use as a context manager: its scratch
    folder (requirements, constraints, stand-ins) lives as long as the run."""

    def __init__(self, indexes: list[str], *, find_links: tuple[Path, ...] = (), stand_ins: tuple[StandIn, ...] = (),
                 ca_bundle: Path | None = None, index_as_of: str | None = None, deadline: Deadline | None = None,
                 environ=os.environ):
        self.indexes = list(indexes)
        self.find_links = tuple(find_links)
        self.stand_ins = tuple(stand_ins)
        self.index_as_of = index_as_of
        self.deadline = deadline if deadline is not None else run_deadline(environ)
        self.env = environment(environ, self.indexes, ca_bundle)
        self._scratch: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Uv:
        self._scratch = tempfile.TemporaryDirectory(prefix="ngcbuild-resolve-")
        folder = Path(self._scratch.name) / "stand-ins"
        folder.mkdir()
        for stand_in in self.stand_ins:
            write_stand_in(folder, stand_in)
        self.find_links = (*self.find_links, folder)
        return self

    def __exit__(self, *exc) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    @property
    def scratch(self) -> Path:
        if self._scratch is None:
            raise RuntimeError("Uv is used as a context manager")
        return Path(self._scratch.name)

    def compile(self, requirements: list[str], constraints: list[str], target: Target, *,
                hashes: bool = False, wheels_only: bool = False) -> Compiled:
        """Resolve `requirements` under `constraints` (lines of each file) for `target`; `wheels_only`:
        no source archive is a candidate (a set staged unpacked, never built: pure_wheels.py)."""
        scratch = self.scratch
        requirements_file, constraints_file = scratch / "requirements.in", scratch / "constraints.txt"
        output = scratch / "resolved.txt"
        requirements_file.write_text("".join(f"{checked_line(r, 'a requirement given to the resolver')}\n"
                                             for r in requirements))
        constraints_file.write_text("".join(f"{checked_line(c, 'a constraint of the base')}\n" for c in constraints))
        output.unlink(missing_ok=True)
        command = [uv_binary(), "pip", "compile", "--no-config", "--no-header", "--quiet", "--color=never",
                   "--annotation-style=line", f"--python-version={target.python_full}",
                   f"--python-platform={python_platform(target)}", path_option("--constraint", constraints_file),
                   path_option("--output-file", output)]
        command += [path_option("--find-links", folder) for folder in self.find_links]
        if hashes:
            command.append("--generate-hashes")
        if wheels_only:
            command.append("--only-binary=:all:")
        if self.index_as_of:
            command.append(f"--exclude-newer={self.index_as_of}")
        command += ["--", str(requirements_file.resolve())]
        code, text = self._run(command)
        text = self.scrubbed(text.strip())
        if code == 0:
            return Compiled(True, tuple(_normalised(parse_entries(output, output.read_text()))), "")
        refused = _REFUSED.search(text)
        if refused:  # before the conflict: "not found" here only means the index would not answer
            raise IndexRefused(shown_url(urlsplit(refused.group(1)).netloc.rpartition("@")[2] or refused.group(1)),
                               refused.group(2))
        if "No solution found" not in text and "unsatisfiable" not in text:
            # not a conflict: an index that did not answer, a distribution that cannot be built...
            raise UnresolvedError(_last_lines(text))
        return Compiled(False, (), text)

    def _run(self, command: list[str]) -> tuple[int, str]:
        """uv in its own process group, killed with its children (a build backend) at the deadline or
        when this process is interrupted."""
        left = self.deadline.remaining()
        if left <= 0:
            raise self.deadline.passed(f"no resolution from {self.hosts()}")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env=self.env, stdin=subprocess.DEVNULL, start_new_session=True,
                                   cwd=self.scratch)
        try:
            out, _ = process.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise self.deadline.passed(f"no whole answer from {self.hosts()} (an index that answers slowly, or "
                                       "never ends its answer)") from None
        except BaseException:
            _kill(process)
            raise
        return process.returncode, out

    def hosts(self) -> str:
        """The hosts of the run's indexes, for a message (never their credentials)."""
        hosts = [urlsplit(i).netloc.rpartition("@")[2] for i in self.indexes]
        return ", ".join(dict.fromkeys(shown_url(h) for h in hosts if h)) or "the wheelhouse"

    def scrubbed(self, text: str) -> str:
        """uv's words with every URL masked (core/references.shown_url) and the credentials of the
        run's indexes removed wherever they appear."""
        text = _URL.sub(lambda m: shown_url(m.group(0)), text)
        for index in self.indexes:
            userinfo = urlsplit(index).netloc.rpartition("@")[0]
            for secret in (userinfo, userinfo.partition(":")[2]):
                if len(secret) >= 3:
                    text = text.replace(secret, "***")
        return text


def _normalised(pins: list[LockedPin]) -> list[LockedPin]:
    """Who asked for each pin, as the lock records it: "-r" for a requirement of the run, a canonical
    name for a distribution; the constraints file ("-c") is nobody's requirer."""
    return [replace(pin, via=tuple(who for who in pin.via if who != "-c")) for pin in pins]


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        pass


def _last_lines(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return excerpt(" ".join(lines[-4:]) or "no message", 600).strip("'\"")
