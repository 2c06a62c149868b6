"""What the smoke suite wrote in its out/ folder: the JUnit report and the measured performance figures.

The suite runs the image's own code (a container with out/ bind-mounted, or a GPU machine's Python in
host mode), so the files are read as hostile input, through the one reader of core/files: a link out of
the folder (to a host secret, say) is refused and never read, as are a FIFO, a device and a file over
its limit; the reason is one SmokeFailed line."""

from __future__ import annotations

import os
from pathlib import Path

from ngcbuild.core import files
from ngcbuild.core.errors import ManifestError, SmokeFailed
from ngcbuild.core.jsonload import JsonRefused, load_json

JUNIT_LIMIT = 64 * 1024 * 1024  # thousands of checks with their output are a few MB
FIGURES_LIMIT = 1024 * 1024  # a few dozen figures


def read_output(folder: Path, name: str, limit: int) -> bytes | None:
    """The bytes of out/NAME, or None where the suite wrote no such file."""
    path = folder / name
    if not os.path.lexists(path):
        return None
    try:
        return files.read_bytes(path, limit, f"the smoke suite's {name}", "not found", within=folder)
    except ManifestError as exc:
        raise SmokeFailed(f"the smoke suite's {name} was refused: {exc}") from None


def read_figures(folder: Path, name: str) -> dict | None:
    """The measured figures the suite wrote as JSON (an object), or None where it wrote none."""
    raw = read_output(folder, name, FIGURES_LIMIT)
    if raw is None:
        return None
    try:
        value = load_json(raw, f"the smoke suite's {name}")
    except JsonRefused as exc:
        raise SmokeFailed(str(exc)) from None
    if not isinstance(value, dict):
        raise SmokeFailed(f"the smoke suite's {name}: expected a JSON object, got {type(value).__name__}")
    return value
