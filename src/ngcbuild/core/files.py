"""Reading a file a user controls (manifest, part, constraints, catalog, record): one reader for all.

The file must be a regular file inside the project once links are resolved (a link out of the
project is refused and never read, so its content cannot reach a message), no bigger than its limit
(checked with fstat before reading, so /dev/zero cannot fill memory), never a FIFO, device or
directory (opened non-blocking, so a FIFO with no writer cannot hang us), and UTF-8 text.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ngcbuild.core.errors import ManifestError, OperationError, shown_path
from ngcbuild.core.outputs import short_path


def read_text(path: Path, limit: int, what: str, missing: str, *, within: Path | None) -> str:
    """The text of `path`, or a ManifestError naming it. `within` is the folder it must resolve into (None:
    a file the user named wherever it lives, such as a team's requirements given to `fit`)."""
    raw = read_bytes(path, limit, what, missing, within=within)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(path, "", f"not UTF-8 text (byte {exc.start}: {raw[exc.start]:#04x})") from None


def read_bytes(path: Path, limit: int, what: str, missing: str, *, within: Path | None) -> bytes:
    """The bytes of `path`, read as `read_text` reads (a regular file inside `within` unless it is None,
    at most `limit` bytes, never a FIFO or device), for a file hashed rather than parsed."""
    path = Path(path)
    real = Path(os.path.realpath(path))
    if within is not None:
        inside = Path(os.path.realpath(within))
        if real != inside and inside not in real.parents:
            # a link only when the path as written lies inside: a plain path outside is no link
            named = Path(os.path.abspath(path))
            if _under(named, Path(os.path.abspath(within))) or _under(named, inside):
                raise ManifestError(path, "", f"is a link to a file outside {_folder(inside)}; expected {what} "
                                              "inside the project (the target was not read)")
            raise ManifestError(path, "", f"is outside {_folder(inside)}; expected {what} inside the project "
                                          "(it was not read)")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ManifestError(path, "", missing) from None
    except OSError as exc:
        raise _unreadable(path, exc, what) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ManifestError(path, "", f"is {_kind(info.st_mode)}, not a regular file; expected {what}")
        if info.st_size > limit:
            raise ManifestError(path, "", f"file is {info.st_size} bytes; {what} is expected under {limit}")
        raw = _read_at_most(fd, limit + 1)
    except OSError as exc:
        raise _unreadable(path, exc, what) from None
    finally:
        os.close(fd)
    if len(raw) > limit:  # grew after the stat
        raise ManifestError(path, "", f"file is over {limit} bytes; {what} is expected under {limit}")
    return raw


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def parse_json(path: Path, text: str, error, hint: str):
    """`text` (read from `path`) as JSON (core/jsonload.load_json: bounded in depth); invalid or too deeply
    nested JSON raises `error(path, "", problem + hint)`: ManifestError for a user's file, RecordDamaged
    for our own record."""
    from ngcbuild.core.jsonload import JsonRefused, load_json

    try:
        return load_json(text, shown_path(path))
    except JsonRefused as exc:
        raise error(path, "", f"{exc.problem}; {hint}") from None


def nesting(value, limit: int, depth: int = 0) -> int:
    """How deep a parsed JSON value nests, counted no further than just past `limit` (a record or
    stamp of the right shape is a few levels deep; the depth says it is not one)."""
    if depth > limit:
        return depth
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((nesting(child, limit, depth + 1) for child in children), default=depth)


def _folder(path: Path) -> str:
    shown = shown_path(path)
    return "the project" if shown == "." else shown


def exists(path: Path) -> bool:
    """Something is at `path` (a dangling link or a FIFO too): the reader, not a 'no such file', says what.
    A path the system cannot look up (too long, a loop of links) is no 'missing file': UnusablePath."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise UnusablePath(path, unusable_reason(path, exc)) from None
    except ValueError:  # a NUL byte, or a character no file name can hold (a lone surrogate)
        raise UnusablePath(path, "the path holds a character no file name can hold") from None
    return True


class UnusablePath(OperationError):
    """The system cannot look `path` up: a name or the whole path longer than it allows, a loop of
    links. Exit 1 where the project's own place is the cause; a loader that took the path from a
    file names that file and key instead (exit 2). `reason` says which limit, in numbers."""

    def __init__(self, path, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"{short_path(path)}: {reason}")


def unusable_reason(path, exc: OSError) -> str:
    """Why the system refused to look `path` up, with the limit it hit (NAME_MAX, PATH_MAX)."""
    if exc.errno == errno.ENAMETOOLONG:
        whole = os.path.abspath(path)
        longest = max(Path(whole).parts, key=len)
        name_max = _limit("PC_NAME_MAX", 255)
        if len(longest.encode()) > name_max:
            return (f"a name in the path is {len(longest.encode())} bytes, longer than the {name_max} "
                    "the file system allows")
        # PATH_MAX counts the terminating NUL: the longest path the system takes is one byte less
        return (f"the path is {len(whole.encode())} bytes, longer than the {_limit('PC_PATH_MAX', 4096) - 1} "
                "the system allows")
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (a loop of links)"
    return _reason(exc)


def _limit(name: str, default: int) -> int:
    try:
        return os.pathconf("/", name)
    except (OSError, ValueError):
        return default


def _read_at_most(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _unreadable(path: Path, exc: OSError, what: str) -> Exception:
    """A file the system cannot give us: the machine's trouble (exit 1) when the path is too long or
    the disk fails, the input's (exit 2) otherwise (a loop of links, no permission)."""
    if exc.errno in _MACHINE_TROUBLE:
        return OperationError(f"{short_path(path)}: cannot be read ({unusable_reason(path, exc)})")
    return ManifestError(path, "", f"cannot be read ({unusable_reason(path, exc)}); expected {what}")


_MACHINE_TROUBLE = {errno.ENAMETOOLONG, errno.EIO, errno.ENOMEM, errno.EMFILE, errno.ENFILE}


def _reason(exc: OSError) -> str:
    return exc.strerror or errno.errorcode.get(exc.errno or 0, type(exc).__name__)
