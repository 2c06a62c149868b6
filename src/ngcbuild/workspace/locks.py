"""The locks of build/R/: who may write it, and who may build it.

`release_lock` (build/.R.lock, beside build/R/ so that it survives the swap of a render): one writer
of build/R/ at a time, waited for; a render swapping the folder and a step rewriting the record take
turns on it. `build_lock` (build/R/.build.lock): one build of a release at a time, never waited for:
a second build at once is refused (two would share the context, the record and the journal of
intermediate containers). Lock files are opened without following links (core/outputs.open_lock_file).
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from ngcbuild.core.errors import OperationError, shown_path
from ngcbuild.core.outputs import open_lock_file
from ngcbuild.workspace.release_dir import BUILD_LOCK


@contextmanager
def release_lock(directory: Path):
    """Hold build/.R.lock (blocking): one writer of build/R/ at a time."""
    fd = open_lock_file(directory.parent / f".{directory.name}.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


@contextmanager
def build_lock(directory: Path, name: str):
    """Hold build/R/.build.lock, or refuse at once when another build of R holds it."""
    fd = open_lock_file(directory / BUILD_LOCK)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OperationError(f"another build of {name} is running (it holds {shown_path(directory)}/{BUILD_LOCK}); "
                                 "wait for it to finish, or build another release") from None
        yield
    finally:
        os.close(fd)
