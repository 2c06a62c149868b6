"""Choose, from a local wheelhouse, the wheels a release pins (and only those)."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from ngcbuild.core.errors import UserError
from ngcbuild.manifest.constraints import Constraints


def select_wheels(directory: Path, constraints: Constraints, python_tag: str) -> list[Path]:
    """Wheels in `directory` whose name and version a pin matches and whose tags fit `python_tag`
    (cp311: cp311 or py3 wheels)."""
    if not directory.is_dir():
        raise UserError(f"--wheelhouse {directory}: not a directory")
    chosen = []
    for wheel in sorted(directory.glob("*.whl")):
        try:
            name, version, _build, tags = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            continue
        pin = constraints.get(canonicalize_name(name))
        if pin is None or not _same_version(version, pin.version):
            continue
        if any(tag.interpreter in (python_tag, "py3", f"py{python_tag[2]}") for tag in tags):
            chosen.append(wheel)
    return chosen


def _same_version(version: Version, pinned: str) -> bool:
    try:
        return version == Version(pinned)
    except ValueError:  # InvalidVersion, or a number too long for int()
        return False
