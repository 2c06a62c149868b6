"""The one way ngcbuild runs uv: `uv pip compile` for one target (the base's Python, ABI and manylinux
tags on one platform) against the given indexes and wheelhouse, with no configuration of the machine
or the user (uv reads neither pip's config nor $PIP_FIND_LINKS: everything it uses is on its command
line) and the CA bundle handed over as SSL_CERT_FILE.

uv rather than pip: it resolves the whole set at once, names the whole chain of a conflict, and reads
wheels' metadata (PEP 658) instead of whole wheels.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.core.references import shown_url
from ngcbuild.verify.target import Target

TIMEOUT_S = 900
# The manylinux platforms uv names (`--python-platform ARCH-manylinux_2_N`), per glibc minor.
_UV_GLIBC = (17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40)


@dataclass(frozen=True)
class Compiled:
    ok: bool
    output: str  # the resolution (requirements-file text) when ok
    message: str  # uv's explanation when not


def uv_binary() -> str:
    try:
        from uv import find_uv_bin
    except ImportError:
        raise OperationError("uv is not installed (`pip install uv`): derived releases are resolved with it") from None
    try:
        return find_uv_bin()
    except FileNotFoundError:
        raise OperationError("the uv package is installed but its binary is missing; reinstall it "
                             "(`pip install --force-reinstall uv`)") from None


def uv_version() -> str:
    done = subprocess.run([uv_binary(), "--version"], capture_output=True, text=True, timeout=60, env=_environ(None))
    return done.stdout.strip() or "uv (version unknown)"


def python_platform(target: Target) -> str:
    """uv's name of the target's platform: the newest manylinux uv knows that the target's glibc runs."""
    major, minor = (int(p) for p in target.glibc.split("."))
    known = [n for n in _UV_GLIBC if major == 2 and n <= minor] or [17]
    return f"{target.arch}-manylinux_2_{known[-1]}"


def compile_requirements(requirements: Path, constraints: Path, target: Target, indexes: list[str],
                         find_links: list[Path], scratch: Path, *, ca_bundle: Path | None,
                         index_as_of: str | None = None, hashes: bool = True) -> Compiled:
    """Resolve `requirements` under `constraints` for `target`. The first index is the index URL."""
    command = [uv_binary(), "pip", "compile", "--no-config", "--no-header", "--no-annotate", "--quiet",
               "--color", "never", "--python-version", target.python, "--python-platform", python_platform(target),
               "--index-url", indexes[0], "--constraint", str(constraints), str(requirements),
               "--output-file", str(scratch / "resolved.txt")]
    for index in indexes[1:]:
        command += ["--extra-index-url", index]
    for folder in find_links:
        command += ["--find-links", str(folder)]
    if hashes:
        command.append("--generate-hashes")
    if index_as_of:
        command += ["--exclude-newer", index_as_of]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, env=_environ(ca_bundle),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        where = ", ".join(shown_url(i) for i in indexes)
        raise OperationError(f"uv did not finish resolving against {where} in {TIMEOUT_S // 60} minutes") from None
    text = (done.stdout + done.stderr).strip()
    if done.returncode == 0:
        return Compiled(True, (scratch / "resolved.txt").read_text(), "")
    if "No solution found" not in text and "unsatisfiable" not in text:
        # not a conflict: an index that did not answer, a distribution that cannot be built...
        raise UnresolvedError(_last_lines(text))
    return Compiled(False, "", text)


class UnresolvedError(OperationError):
    """uv stopped for another reason than a conflict (an index unreachable, no such distribution)."""

    def __init__(self, message: str):
        self.reason = message
        super().__init__(f"uv could not resolve: {message}")


def _last_lines(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return excerpt(" ".join(lines[-4:]) or "no message", 600).strip("'\"")


def _environ(ca_bundle: Path | None) -> dict:
    """The machine's environment without uv's and pip's settings (a UV_INDEX_URL or UV_CONSTRAINT set
    for the user's own work must not change what a release resolves to); the CA bundle as uv reads it.
    The cache stays where the user keeps it (UV_CACHE_DIR): it saves fetching metadata again."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_")) or k == "UV_CACHE_DIR"}
    if ca_bundle is not None:
        environ["SSL_CERT_FILE"] = str(ca_bundle)
    environ["UV_NO_PROGRESS"] = "1"
    return environ
