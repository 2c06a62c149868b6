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

from ngcbuild.core.errors import OperationError, UserError, shown_path

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


class UnsafeOutput(UserError):
    """An output path where writing would harm something else: a link (its target would be
    replaced), a FIFO or device (a write would hang or reach hardware), a path that leaves the folder
    it must stay in. Exit 2: something the user (or someone else) put there, nothing was written."""


def write_file(path: Path, data: bytes | str, *, within: Path, mode: int | None = None,
               verbatim: bool = False) -> Path:
    """The one writer of every file ngcbuild makes: whole or not at all, never through a link.

    `path` must stay inside `within` (the project, or build/R/) once every folder on the way is
    resolved; the name itself must be nothing or a regular file (never followed when it is a link,
    never opened when it is a FIFO or device: UnsafeOutput, exit 2; a folder there is the file
    system's state, as everywhere else: OutputError, exit 1). The data goes to a temporary file beside it
    (O_EXCL, mode 0600 from the start), is flushed to the disk and renamed over the name, so a reader,
    a Ctrl-C or a crash sees the old file or the new one. The file's mode is `mode`, or what the
    umask gives a new file (0644 under the usual 022): a private key is never readable by others,
    not even for an instant.

    Text (a str: a page, a report, a record, a table) is masked by core/redact.mask as a last net, so
    that no credential a value carried reaches a file; `verbatim` writes it as given (a credentials file
    made for a tool). Bytes are written as they are (a signed document's bytes are what was signed)."""
    import tempfile

    if isinstance(data, str):
        from ngcbuild.core.redact import mask

        data = (data if verbatim else mask(data)).encode("utf-8")
    path = Path(path)
    with storing(path):
        _refuse_outside(path, path.parent, within)  # before a folder is made through a link
        folder = make_dir(path.parent)
        _refuse_unsafe(path, folder, within)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode if mode is not None else 0o666 & ~_umask())
            _refuse_unsafe(path, folder, within)  # again: the name may have changed while we wrote
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _sync_folder(folder)
    return path


def _refuse_outside(path: Path, folder: Path, within: Path) -> None:
    """realpath resolves every link on the way and keeps the folders not made yet as they are."""
    inside = os.path.realpath(within)
    real_folder = os.path.realpath(folder)
    if real_folder != inside and not real_folder.startswith(inside.rstrip(os.sep) + os.sep):
        raise UnsafeOutput(f"{short_path(path)}: its folder leads outside {short_path(within) or '.'} "
                           f"(to {short_path(real_folder)}); ngcbuild writes only inside it, nothing was written")


def _refuse_unsafe(path: Path, folder: Path, within: Path) -> None:
    import stat

    _refuse_outside(path, folder, within)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeOutput(f"{short_path(path)}: is a symbolic link; ngcbuild never writes through a link "
                           "(remove it and run again), nothing was written")
    if stat.S_ISDIR(info.st_mode):  # the file system's state, as `build` being a file is: exit 1
        raise OutputError(f"{short_path(path)}: is a folder, where ngcbuild writes a file (a directory is where this "
                          "file must be written); remove it and run again, nothing was written")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) \
            else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a regular file"
        raise UnsafeOutput(f"{short_path(path)}: is {kind}, where ngcbuild writes a file (remove it and run "
                           "again), nothing was written")


def _umask() -> int:
    """The process's umask: Linux tells it in /proc; elsewhere it is read by setting it back at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (a crash after it must not bring the old file back)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a folder: the rename stands anyway
        pass
    finally:
        os.close(fd)


def open_lock_file(path: Path) -> int:
    """A descriptor of the lock file `path` (made when missing), for flock. Never through a link (its
    target would be made or locked), never a FIFO (opening one would hang): such a name is refused."""
    import stat

    with storing(path):
        make_dir(path.parent)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeOutput(f"{short_path(path)}: is a symbolic link; ngcbuild never writes through a link "
                                   "(remove it and run again)") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnsafeOutput(f"{short_path(path)}: is not a regular file, where ngcbuild keeps a lock (remove it "
                               "and run again)")
    return fd
