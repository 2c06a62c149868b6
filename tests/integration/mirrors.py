"""Real package mirrors on the loopback, as a site runs them: devpi-server's mirror of PyPI (`root/pypi`)
and Debian's apt-cacher-ng, each started by a test session on a free port with folders of its own
(installed by `bash .ci/mirrors`), each read back from its own log: which files it handed out. With
CI=true a missing mirror program fails the test; elsewhere it skips, saying how to install it.

devpi reads PyPI through this machine's HTTPS proxy (its CA bundle from the environment, as every
client here); apt-cacher-ng reads Debian's archive over plain HTTP. Neither is told about the other.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from ..conftest import fail_in_ci_else_skip

DEVPI_VENV = Path(os.environ.get("NGCBUILD_DEVPI_VENV", "/opt/ngcbuild-devpi"))
APT_CACHER = Path("/usr/sbin/apt-cacher-ng")
START_S = 120  # devpi's first start writes its database; a busy CI machine takes a while
# apt-cacher-ng takes no port above 32767; devpi any: both from a range the kernel does not hand out
PORTS = range(20000, 32000)
# a devpi log line for a file it served: "GET /root/pypi/+f/c29/3e525e6fef9c2/tqdm-4.70.1-py3-none-any.whl"
_DEVPI_FILE = re.compile(r"\bGET /root/pypi/\+f/\S+/([^/\s]+)$", re.M)
# an apt-cacher-ng log line for a file it delivered: "TIME|O|BYTES|CLIENT|deb.debian.org/debian/pool/.../x.deb"
_ACNG_OUT = re.compile(r"^\d+\|O\|\d+\|[^|]*\|(\S+)$", re.M)


def missing(what: str) -> None:
    fail_in_ci_else_skip(what, "install it with `bash .ci/mirrors`")


def free_port() -> int:
    for port in random.Random(os.getpid()).sample(PORTS, 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port for a mirror")


def _wait_for(check, seconds: float, what: str, log: Path) -> None:
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        if check():
            return
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise RuntimeError(f"{what} did not come up within {seconds:.0f} s; its log ends:\n{tail}")


class Server:
    """A mirror's process, its log, stopped (and waited for) by `stop`."""

    log: Path
    process: subprocess.Popen | None = None

    def _start(self, command: list[str]) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, cwd="/")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class Devpi(Server):
    """devpi-server's mirror of PyPI at `url` (a simple index, as pip and uv read it)."""

    def __init__(self, folder: Path):
        if not (DEVPI_VENV / "bin" / "devpi-server").exists():
            missing(f"no devpi-server in {DEVPI_VENV}")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.log, self.port = folder, folder / "devpi.log", free_port()
        self.url = f"http://127.0.0.1:{self.port}/root/pypi/+simple"
        subprocess.run([str(DEVPI_VENV / "bin" / "devpi-init"), "--serverdir", str(folder / "server")], check=True,
                       capture_output=True, timeout=START_S, stdin=subprocess.DEVNULL)
        self._start([str(DEVPI_VENV / "bin" / "devpi-server"), "--serverdir", str(folder / "server"),
                     "--host", "127.0.0.1", "--port", str(self.port)])
        _wait_for(self._answers, START_S, "devpi-server", self.log)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/+api", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def files_served(self) -> set[str]:
        """The names of the distribution files it handed out."""
        return set(_DEVPI_FILE.findall(self.text()))


class AptCacherNg(Server):
    """apt-cacher-ng as an HTTP proxy at `proxy`, with no remapping of archives: it fetches what it is asked
    from the host named (deb.debian.org here) and caches it under that name."""

    def __init__(self, folder: Path):
        if not APT_CACHER.exists():
            missing(f"no {APT_CACHER}")
        (folder / "cache").mkdir(parents=True, exist_ok=True)
        (folder / "logs").mkdir(exist_ok=True)
        self.folder, self.log, self.port = folder, folder / "apt-cacher-ng.out", free_port()
        self.proxy = f"http://127.0.0.1:{self.port}"
        # a configuration of its own: the package's names Debian's archive by a mirror list (ftp.debian.org)
        # that a machine behind a site's proxy may not resolve
        (folder / "acng.conf").write_text(
            f"CacheDir: {folder / 'cache'}\nLogDir: {folder / 'logs'}\nSupportDir: /usr/lib/apt-cacher-ng\n"
            f"Port: {self.port}\nBindAddress: 127.0.0.1\nPidFile: {folder / 'pid'}\nSocketPath: {folder / 'socket'}\n"
            "ForeGround: 1\nExThreshold: 4\n")
        self._start([str(APT_CACHER), "-c", str(folder)])
        _wait_for(self._listens, START_S, "apt-cacher-ng", self.log)

    def _listens(self) -> bool:
        with socket.socket() as probe:
            probe.settimeout(2)
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def files_served(self) -> set[str]:
        """The paths (host/path) of the files it delivered, as its transfer log names them."""
        log = self.folder / "logs" / "apt-cacher.log"
        return set(_ACNG_OUT.findall(log.read_text(errors="replace"))) if log.exists() else set()


class Mirrors:
    """Both mirrors, started in `folder`; `stop` ends both (their logs stay)."""

    def __init__(self, folder: Path):
        self.pypi = Devpi(folder / "devpi")
        try:
            self.apt = AptCacherNg(folder / "apt-cacher-ng")
        except BaseException:
            self.pypi.stop()
            raise

    def stop(self) -> None:
        self.pypi.stop()
        self.apt.stop()


def debian_name(path: str) -> tuple[str, str] | None:
    """(package, version) of a .deb's path in an archive (`pool/main/p/python3.11/python3.11_3.11.2-6+deb12u6_amd64.deb`:
    the pool's names leave out a version's epoch), or None for another file."""
    from urllib.parse import unquote

    name = unquote(path.rsplit("/", 1)[-1])
    if not name.endswith(".deb") or name.count("_") != 2:
        return None
    package, version, _ = name[:-4].split("_")
    return package, version


def torch_wheelhouse() -> Path:
    """The wheelhouse our machines carry ($PIP_FIND_LINKS): dev's torch (2.13.0+cpu) is on no index we can
    mirror here (download.pytorch.org is unreachable), so it comes from there; everything else from the
    mirror. In CI a machine without it fails the test."""
    value = os.environ.get("PIP_FIND_LINKS", "")
    if not value or not Path(value).is_dir() or not list(Path(value).glob("torch-*.whl")):
        fail_in_ci_else_skip("no wheelhouse with torch's wheel in $PIP_FIND_LINKS", "dev's torch is on no index we mirror")
    return Path(value)
