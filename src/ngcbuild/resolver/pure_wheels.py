"""A set of pure-Python wheels for one Python, asked of the one resolver: the smoke suite's pytest
(smoke/pytest_lock.py), staged unpacked beside the checks for every image of that Python, any CPU.

uv picks the versions for that Python, wheels only, evaluating every dependency's markers for it (pip's
--python-version selects files for the target but evaluates markers for the Python running pip,
pypa/pip#11010: a 3.6 image would lose its backports). The indexes' listings, read by verify's one
reader, then give each chosen version's pure wheels (tags `none-any` the Python installs) and their
sha256: uv's own hashes would name every file of a version, platform wheels and source archives too.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.core.errors import OperationError
from ngcbuild.resolver import conflicts
from ngcbuild.resolver.deadline import Deadline, run_deadline
from ngcbuild.resolver.uv import Uv
from ngcbuild.verify.finder import parsed
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web

# The images' interpreter, for the markers (Linux CPython on x86_64, patch 0: the lock is per minor);
# a pure wheel installs on every platform, so this one names no file.
PLATFORM = "linux/amd64"
GLIBC = "2.17"


@dataclass(frozen=True)
class PureWheel:
    name: str  # canonical
    version: str
    sha256: tuple[str, ...]  # of each pure wheel of that version the indexes list (one, as a rule)


def resolve_pure(roots: list[str], python: str, indexes: list[str], *, web: Web | None = None,
                 deadline: Deadline | None = None) -> list[PureWheel]:
    """`roots` and everything they need on Python `python` (MAJOR.MINOR), by name; OperationError when
    no set of wheels fits, or a chosen version has no pure wheel with its sha256 on the indexes."""
    deadline = deadline if deadline is not None else run_deadline()
    target = Target(python_full=f"{python}.0", platform=PLATFORM, glibc=GLIBC)
    with Uv(indexes, deadline=deadline) as uv:
        run = uv.compile(list(roots), [], target, wheels_only=True)
    if not run.ok:
        raise OperationError(f"no set of wheels of {', '.join(roots)} for Python {python}: "
                             f"{conflicts.explanation(run.message)[:600]}")
    work = Work()
    try:
        with tempfile.TemporaryDirectory(prefix="ngcbuild-pure-") as scratch:
            sources = Sources(indexes, web or Web(run_deadline=deadline), work, Path(scratch))
            sources.read_listings([canonicalize_name(pin.name) for pin in run.pins])
            supported = target.tag_priority
            return sorted((_pure(sources, pin.name, pin.version, python, supported) for pin in run.pins),
                          key=lambda wheel: wheel.name)
    finally:
        work.cancel()


def _pure(sources: Sources, name: str, version: str, python: str, supported) -> PureWheel:
    key = canonicalize_name(name)
    listing = sources.listing(key)
    hashes = []
    for file in listing.files:
        info = parsed(file.filename)
        if info is None or info[2] is None or file.yanked or not file.sha256 or not _same(info[1], version):
            continue
        if all(tag.abi == "none" and tag.platform == "any" for tag in info[2]) and any(t in supported for t in info[2]):
            hashes.append(file.sha256)
    if not hashes:
        why = f" ({'; '.join(listing.failures)})" if listing.failures else ""
        raise OperationError(f"{key}=={version}: the resolver chose it for Python {python}, but no index lists a "
                             f"pure-Python wheel of it with its sha256{why}")
    return PureWheel(key, version, tuple(dict.fromkeys(hashes)))


def _same(found, version: str) -> bool:
    try:
        return Version(str(found)) == Version(version)
    except InvalidVersion:
        return False
