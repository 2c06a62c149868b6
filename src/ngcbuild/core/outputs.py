"""Writing what ngcbuild makes (build/R/, notes, the site, records): one place that turns the file
system's refusals into one message naming the path.

`build` or `build/R` being a file, a read-only or full disk, an output path that is a directory, a
path longer than the system allows: each is an OutputError (exit status 1), never a traceback.
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from pathlib import Path

from ngcbuild.core.errors import OperationError, shown_path

MAX_SHOWN_PATH = 160


class OutputError(OperationError):
    """The file system refused to store an output (exit status 1)."""


def printer(out):
    """say(line): one line of progress on `out`, shown at once (a long build streams for minutes)."""
    def say(line: str) -> None:
        print(line, file=out, flush=True)
    return say


def describe(exc: OSError, path=None) -> str:
    """`PATH: what went wrong`, the path shortened when it is very long."""
    where = path if path is not None else (exc.filename or "")
    shown = short_path(where)
    reason = exc.strerror or (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    hint = _HINTS.get(exc.errno, "")
    return f"{shown}: {reason}{hint}" if shown else f"{reason}{hint}"


def short_path(path) -> str:
    text = shown_path(path) if path not in (None, "") else ""
    if len(text) <= MAX_SHOWN_PATH:
        return text
    return f"{text[:40]}...{text[-100:]} ({len(text)} characters)"


_HINTS = {
    errno.ENOTDIR: " (a file is where a directory is needed)",
    errno.EISDIR: " (a directory is where this file must be written)",
    errno.EEXIST: " (something else is in the way)",
    errno.ENOSPC: " (the disk is full)",
    errno.EROFS: " (the file system is read-only)",
    errno.EACCES: " (no permission)",
    errno.ENAMETOOLONG: " (the path is longer than the system allows)",
}


@contextmanager
def storing(path):
    """Run the block that writes `path`; an OSError becomes an OutputError naming it."""
    try:
        yield
    except OSError as exc:
        raise OutputError(describe(exc, exc.filename if exc.filename else path)) from None


def make_dir(path: Path) -> Path:
    with storing(path):
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file (or a dangling link) is where the directory goes
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    with storing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def replace_text(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `path` whole or not at all: a temporary file beside it, renamed over it (a reader, or a
    Ctrl-C, never sees half of it). The temporary file is made with mode 0600 and keeps it unless
    `mode` says otherwise (a private key is never readable by others, not even for an instant)."""
    import tempfile

    with storing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path
