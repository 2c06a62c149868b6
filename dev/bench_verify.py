"""`invoke bench --verify BASELINE`: `invoke verify` of cuda-dev and 25.12 as processes, this checkout's
against BASELINE's (a git revision, unpacked with `git archive` into a temporary folder), alternating in
one run; each process's every byte counted by a proxy of our own on the loopback (https_proxy and
http_proxy: HTTPS tunnels and plain HTTP alike, pip's and ours), against the total size of the wheels
the release's pins name (the files verify chooses, their sizes from the index pages). Written to
BENCHMARKS.md, in its own section."""

from __future__ import annotations

import io
import os
import platform
import select
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import urlsplit

from ngcbuild.core.children import run_child
from ngcbuild.core.errors import UserError
from ngcbuild.core.indexes import release_indexes
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.verify.finder import is_wheel
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web

RELEASES = ("cuda-dev", "25.12")
TARGET_S = 60
TARGET_SHARE = 0.02
BEGIN, END = "<!-- invoke bench --verify -->", "<!-- end verify -->"


@dataclass
class Counted:
    """Bytes through the proxy: down (to verify), per host."""

    down: int = 0
    hosts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, host: str, size: int) -> None:
        with self.lock:
            self.down += size
            self.hosts[host] = self.hosts.get(host, 0) + size


class CountingProxy:
    """CONNECT tunnels and plain-HTTP GETs, each byte sent back to the client counted in `counted`."""

    def __init__(self):
        self.counted = Counted()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> Counted:
        done, self.counted = self.counted, Counted()
        return done

    def _accept(self) -> None:
        while True:
            client, _ = self.server.accept()
            threading.Thread(target=self._serve, args=(client, self.counted), daemon=True).start()

    def _serve(self, client: socket.socket, counted: Counted) -> None:
        upstream = None
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.decode("latin-1").split(" ", 2)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                upstream = socket.create_connection((host, int(port)), timeout=60)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                first = b""
            else:  # plain HTTP through a proxy: an absolute URL on the request line
                parts = urlsplit(target)
                host = parts.hostname
                upstream = socket.create_connection((host, parts.port or 80), timeout=60)
                headers = [h for h in rest.split(b"\r\n") if h and not h.lower().startswith((b"proxy-", b"connection"))]
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                first = (f"{method} {path} {version}\r\n".encode() + b"\r\n".join(headers)
                         + b"\r\nConnection: close\r\n\r\n")
            if first:
                upstream.sendall(first)
            self._pipe(client, upstream, host, counted)
        except (OSError, ValueError):
            pass
        finally:
            client.close()
            if upstream is not None:
                upstream.close()

    @staticmethod
    def _pipe(client, upstream, host, counted) -> None:
        while True:
            ready, _, _ = select.select([client, upstream], [], [], 120)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(1 << 16)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
                if sock is upstream:
                    counted.add(host, len(data))


def wheel_bytes(project: Project, release: str) -> tuple[int, int]:
    """(the total size of the files verify chooses for the release's pins on every platform it builds,
    how many of them are wheels), from the index pages."""
    loaded = load_release(project, release)
    python = loaded.release.python.interpreter_version
    platforms = dict.fromkeys((loaded.release.build.platform, *loaded.release.build.published_platforms))
    with tempfile.TemporaryDirectory() as scratch:
        sources = Sources(release_indexes(loaded.release), Web(), Work(), Path(scratch))
        sources.read_listings([pin.key for pin in loaded.constraints.pins])
        total = count = 0
        for platform_ in platforms:
            target = Target(python, platform_, loaded.release.os.glibc)
            for pin in loaded.constraints.pins:
                file = sources.choose(pin.name, f"=={pin.version}", target)
                if file is not None and is_wheel(file) and file.size:
                    total += file.size
                    count += 1
    return total, count


def _timed(tree: Path, release: str, proxy: CountingProxy) -> tuple[float, Counted, int]:
    address = f"http://127.0.0.1:{proxy.port}"
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "https_proxy": address, "HTTPS_PROXY": address,
           "http_proxy": address, "HTTP_PROXY": address, "NO_PROXY": "", "no_proxy": ""}
    proxy.reset()
    started = time.monotonic()
    result = run_child([sys.executable, "-m", "invoke", "verify", "--release", release, "--json"], cwd=tree, env=env)
    seconds = time.monotonic() - started
    time.sleep(0.5)  # the last tunnels close
    return seconds, proxy.reset(), result.returncode


def run_verify_bench(project: Project, baseline: str, runs: int = 1, log=print) -> Path:
    resolved = subprocess.run(["git", "-C", str(project.root), "rev-parse", "--verify", "--end-of-options",
                               f"{baseline}^{{commit}}"], capture_output=True, text=True)
    if resolved.returncode != 0:
        raise UserError(f"--verify {baseline!r}: not a commit of this checkout")
    baseline = resolved.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="ngcbuild-bench-verify-") as folder:
        before = Path(folder) / "baseline"
        before.mkdir()
        archive = subprocess.run(["git", "-C", str(project.root), "archive", "--format=tar", baseline],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(before, filter="data")
        commit = subprocess.run(["git", "-C", str(project.root), "rev-parse", "--short", baseline], capture_output=True,
                                text=True, check=True).stdout.strip()
        now = subprocess.run(["git", "-C", str(project.root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        proxy = CountingProxy()
        rows = []
        started = time.monotonic()
        for release in RELEASES:
            total, wheels = wheel_bytes(project, release)
            samples = {"before": [], "after": []}
            for _ in range(runs):
                for label, tree in (("before", before), ("after", project.root)):
                    seconds, counted, code = _timed(tree, release, proxy)
                    samples[label].append((seconds, counted, code))
                    log(f"bench --verify: {release} {label}: {seconds:.1f}s, {counted.down / 1e6:.1f} MB, exit {code}")
            rows.append((release, total, wheels, samples))
        minutes = (time.monotonic() - started) / 60
    path = project.root / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(_with_section(text, _report(rows, commit, now, runs, minutes)))
    return path


def _report(rows, commit: str, now: str, runs: int, minutes: float) -> str:
    lines = ["## `invoke verify`: reading metadata, not wheels",
             "",
             f"Written by `invoke bench --verify {commit}` on {date.today()} (vm: {platform.machine()}, "
             f"{os.cpu_count()} cores), {runs} run(s) of each, {minutes:.0f} minutes in all.",
             "",
             f"Method: `invoke verify --release R --json` as a process, this checkout ({now}) and the one at {commit}",
             "alternating in one run, each with its own manifests. Every byte the process and its children (pip)",
             "received went through a proxy of the benchmark's own on the loopback (https_proxy, http_proxy), and",
             "is counted there: index pages, range reads, apt indexes, source archives and build requirements.",
             "\"Wheels\" is the total size of the files verify chooses for the release's pins on every platform it",
             "builds. Values are medians.",
             "",
             "The goal (issue 36): under 60 s, and what is read of the distribution files (files.pythonhosted.org:",
             "range reads, metadata files, source archives, and the build requirements pip installs for their",
             "metadata) under 2% of the wheels' size; the index pages and apt indexes are shown beside it.",
             "",
             "| release | | time | fetched in all | PyPI's index pages | distribution files | apt and other hosts "
             "| files / wheels | all / wheels | target | |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for release, total, _wheels, samples in rows:
        for label in ("before", "after"):
            seconds = statistics.median(s[0] for s in samples[label])
            down = statistics.median(s[1].down for s in samples[label])
            pages = statistics.median(s[1].hosts.get("pypi.org", 0) for s in samples[label])
            files = statistics.median(s[1].hosts.get("files.pythonhosted.org", 0) for s in samples[label])
            other = down - pages - files
            met = "" if label == "before" else (
                "met" if seconds < TARGET_S and files / total < TARGET_SHARE else "**missed**")
            lines.append(f"| {release} | {label} | {seconds:.1f} s | {down / 1e6:.1f} MB | {pages / 1e6:.1f} MB | "
                         f"{files / 1e6:.1f} MB | {other / 1e6:.1f} MB | {files / total:.2%} | {down / total:.2%} | "
                         f"< {TARGET_S} s, < 2% | {met} |")
    lines += ["", f"Wheels: {', '.join(f'{r} {t / 1e6:.0f} MB ({w} files)' for r, t, w, _ in rows)}.", "",
              "Where the bytes go now: verify reads each project page of the release's indexes once (whole PEP 691",
              "documents: this machine's proxy serves them uncompressed; pydantic-core's alone is 7 MB) and each",
              "apt suite's Packages index (whole, xz); of each wheel it reads the end of the zip, its directory where",
              "that lies further, and its .dist-info files; of a source archive, the archive, and the build",
              "requirements its backend needs (25.12's tensorrt-cu13: setuptools, wheel, pip). Before, pip's dry run",
              "downloaded every wheel twice (each pin alone, then the whole set)."]
    return "\n".join(lines) + "\n"


def _with_section(text: str, report: str) -> str:
    section = f"{BEGIN}\n{report.rstrip()}\n{END}\n"
    if BEGIN in text and END in text:
        head, _, rest = text.partition(BEGIN)
        return head + section + rest.partition(END)[2].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + section

