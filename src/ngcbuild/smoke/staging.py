"""Stage the locked pytest of an image's Python (smoke/locks/) into a folder that the image's
interpreter puts on sys.path: pure-Python wheels, fetched once into a cache under build/ and
verified by their sha256 there, then unpacked. Nothing is installed into the image.

The wheels come from the index of the one index rule (core/indexes.py; PyPI unless $UV_INDEX_URL or
$PIP_INDEX_URL names a mirror), or a wheelhouse named by PIP_FIND_LINKS, through the host's pip."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name, parse_wheel_filename

from ngcbuild.core.errors import SmokeFailed
from ngcbuild.core.indexes import index_setting
from ngcbuild.core.text import safe
from ngcbuild.smoke.pytest_lock import PIP_TARGET_ARGS, Pin, lock_path, python_minor, read_lock
from ngcbuild.workspace.release_dir import EXPECTED

CACHE_DIR = "smoke-wheels"  # under build/: one folder per Python minor
# Pure modules of ngcbuild the checks share with the host (the standard library only, Python 3.6's), staged
# beside the expectations, whose folder the checks' conftest puts on sys.path: the one version rule.
SHARED_MODULES = (Path(__file__).resolve().parent.parent / "manifest" / "version_rule.py",)


def stage_expectations(directory: Path, expected_json: bytes) -> None:
    """The folder the checks read their expectations from: expected.json, and the shared modules they import."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / EXPECTED).write_bytes(expected_json)
    for module in SHARED_MODULES:
        shutil.copyfile(module, directory / module.name)


def stage_pytest(target: Path, python: str, build_dir: Path) -> list[Pin]:
    """Unpack the locked pytest of Python `python` into target; the wheels' cache is build_dir/smoke-wheels."""
    pins = read_lock(python)
    cache = build_dir / CACHE_DIR / f"py{python_minor(python)}"
    wheels = cached_wheels(cache, pins)
    if len(wheels) != len(pins):
        _drop_unverified(cache, pins)
        _fetch(python, cache)
        wheels = cached_wheels(cache, pins)
    missing = sorted({p.name for p in pins} - {canonicalize_name(parse_wheel_filename(w.name)[0]) for w in wheels})
    if missing:
        raise SmokeFailed(f"smoke: no wheel with the locked sha256 in {cache} for {', '.join(missing)} "
                          f"(lock {lock_path(python)})")
    target.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        unpack_wheel(wheel, target)
    return pins


def cached_wheels(cache: Path, pins: list[Pin]) -> list[Path]:
    """The cached wheel of each pin whose sha256 is one the lock names (others are ignored)."""
    found = []
    for pin in pins:
        for wheel in sorted(cache.glob("*.whl")) if cache.is_dir() else ():
            name, version, _, _ = parse_wheel_filename(wheel.name)
            if canonicalize_name(name) == pin.name and str(version) == pin.version \
                    and hashlib.sha256(wheel.read_bytes()).hexdigest() in pin.sha256:
                found.append(wheel)
                break
    return found


def _drop_unverified(cache: Path, pins: list[Pin]) -> None:
    """A cached file of a pinned name and version whose sha256 the lock does not name is removed
    (a truncated download, a changed file), so that pip fetches it again."""
    wanted = {(p.name, p.version): p.sha256 for p in pins}
    for wheel in sorted(cache.glob("*.whl")) if cache.is_dir() else ():
        name, version, _, _ = parse_wheel_filename(wheel.name)
        hashes = wanted.get((canonicalize_name(name), str(version)))
        if hashes is not None and hashlib.sha256(wheel.read_bytes()).hexdigest() not in hashes:
            wheel.unlink()


def _fetch(python: str, cache: Path) -> None:
    """pip downloads exactly the locked files (--require-hashes) for that Python."""
    cache.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--disable-pip-version-check",
               "-q", "--python-version", python_minor(python), *PIP_TARGET_ARGS, "-d", str(cache),
               "-r", str(lock_path(python))]
    # the one index rule (core/indexes.py: $UV_INDEX_URL before $PIP_INDEX_URL, as every step reads them),
    # handed to pip in its environment, never on its command line (which other users may read)
    setting = index_setting()
    env = {**os.environ, "PIP_INDEX_URL": setting.index_url, "PIP_EXTRA_INDEX_URL": " ".join(setting.extra)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        raise SmokeFailed(f"smoke: could not fetch the locked pytest wheels for Python {python_minor(python)} "
                          f"({lock_path(python).name}); the index {setting.described()}, or a wheelhouse in "
                          f"PIP_FIND_LINKS, must serve them: {safe(done.stderr.strip()[-600:], 600)}")


def unpack_wheel(wheel: Path, target: Path) -> None:
    """A pure-Python wheel is its files at the root of site-packages: unzip it, refusing anything else."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            path = PurePosixPath(member.filename)
            if path.is_absolute() or ".." in path.parts or path.parts[0].endswith(".data"):
                raise SmokeFailed(f"smoke: {wheel.name} is not a plain pure-Python wheel ({member.filename})")
            if member.is_dir():
                continue
            destination = target.joinpath(*path.parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(archive.read(member))
