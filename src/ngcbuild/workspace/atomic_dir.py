"""Replacing build/R/ whole: a new directory is written next to it and swapped into place.

Readers see the old directory or the new one, never a half-written one: the new content is written
into `build/.R.render-XXXX/`, what later steps keep in build/R/ (record.json, the build lock, the
journal of intermediate containers, notes, JUnit) is carried into it, and the two are exchanged with
renameat2(RENAME_EXCHANGE) (Linux; elsewhere two renames). Writers of one release take turns on
`build/.R.lock` (locks.release_lock), so two renders at once never fail and the later one wins whole.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def replace_dir(directory: Path, files: dict[str, bytes], executable: set[str], owned: set[str]) -> bool:
    """Make `directory` hold `files` (relative path -> bytes). Top-level entries named in `owned`
    belong to the new content and are replaced; every other entry of the old directory is carried
    over. Returns False when the directory already held exactly these files (nothing written).
    Call under `locks.release_lock`."""
    # a link in its place is not ours to follow: what it points at would be moved into the new one
    if os.path.lexists(directory) and (directory.is_symlink() or not directory.is_dir()):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory))
    if directory.is_dir() and _holds(directory, files, executable, owned):
        return False
    fresh = Path(tempfile.mkdtemp(prefix=f".{directory.name}.render-", dir=directory.parent))
    try:
        for rel, data in files.items():
            path = fresh / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o755 if rel in executable else 0o644)
        fresh.chmod(0o755)
        if directory.is_dir():
            _carry_over(directory, fresh, owned)
            _exchange(fresh, directory)  # `fresh` now names the old directory
        else:
            os.rename(fresh, directory)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return True


def _holds(directory: Path, files: dict[str, bytes], executable: set[str], owned: set[str]) -> bool:
    present = set()
    for name in owned:
        top = directory / name
        if top.is_dir() and not top.is_symlink():
            present |= {p.relative_to(directory).as_posix() for p in top.rglob("*") if not p.is_dir()}
        elif os.path.lexists(top):
            present.add(name)
    if present != set(files):
        return False
    for rel, data in files.items():
        path = directory / rel
        if path.is_symlink() or not path.is_file() or path.read_bytes() != data:
            return False
        if path.stat().st_mode & 0o777 != (0o755 if rel in executable else 0o644):
            return False
    return True


def _carry_over(old: Path, new: Path, owned: set[str]) -> None:
    """Files are hard-linked (the old directory keeps them until the swap), folders moved."""
    for entry in os.scandir(old):
        if entry.name in owned:
            continue
        target = new / entry.name
        if entry.is_dir(follow_symlinks=False):
            os.rename(entry.path, target)
        else:
            try:
                os.link(entry.path, target, follow_symlinks=False)
            except OSError:  # a file system without hard links
                shutil.copy2(entry.path, target, follow_symlinks=False)


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories in one step where the kernel can; otherwise in two renames."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is not None:
        done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
        if done == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(code, os.strerror(code), str(b))
    aside = Path(tempfile.mkdtemp(prefix=f".{b.name}.old-", dir=b.parent))
    os.rename(b, aside / "old")
    os.rename(a, b)
    os.rename(aside / "old", a)
    aside.rmdir()
