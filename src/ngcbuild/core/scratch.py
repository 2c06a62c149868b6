"""A scratch folder for gigabytes (an image's layers, saved, rewritten or compressed) that never outlives
the block it serves (issue 54 item 5): made in $TMPDIR when it is set (the user's choice of a temporary
folder), else in /var/tmp (on disk: /tmp is often memory), and removed when the block ends, whatever
ended it (a failure, an interrupt: core/interrupts.py raises in the block, so the removal runs).

One removal that a thread still writing into the folder could defeat (a file made after the walk) is
tried again for a moment; what still cannot be removed is named in a warning, never left in silence."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LARGE_DEFAULT = "/var/tmp"
_ATTEMPTS = 5


def scratch_root() -> str:
    """Where scratch folders go: $TMPDIR when it names a folder, else /var/tmp, else the system's."""
    chosen = os.environ.get("TMPDIR", "")
    if chosen and os.path.isdir(chosen):
        return chosen
    return LARGE_DEFAULT if os.path.isdir(LARGE_DEFAULT) else tempfile.gettempdir()


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new folder (mode 0700) named `prefix`..., removed with all it holds when the block ends."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_root()))
    try:
        yield folder
    finally:
        remove_folder(folder)


def remove_folder(folder: Path) -> None:
    """`folder` and all it holds removed; a folder inside made read-only (by what was unpacked there) made
    writable first."""
    def writable(function, path, _info) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
            function(path)
        except OSError:
            pass  # looked at again below

    for attempt in range(_ATTEMPTS):
        if os.path.lexists(folder):
            shutil.rmtree(folder, onerror=writable)
        if not os.path.lexists(folder):
            return
        time.sleep(0.05 * (attempt + 1))
    print(f"warning: could not remove the scratch folder {folder}; remove it by hand", file=sys.stderr, flush=True)
