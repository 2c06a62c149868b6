"""Which versions of a distribution the release's indexes offer for a target: read from each index's
file list (verify's `index.Pages`: PEP 691 or PEP 503, shape-checked), counting only wheels whose tags
the target installs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ngcbuild.core.errors import OperationError
from ngcbuild.verify.index import Pages
from ngcbuild.verify.target import Target

READERS = 8  # index pages read side by side (each one request)


def installs_on(filename: str, target: Target) -> Version | None:
    """The version of a wheel the target can install (its Python, ABI and platform tags), else None."""
    try:
        _, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    major, minor = target.python.split(".")
    interpreters = {f"cp{major}{minor}", f"py{major}", f"py{major}{minor}"}
    abis = {target.abi, "none"}
    platforms = {*target.platform_tags, "any"}
    for tag in tags:
        if tag.platform not in platforms:
            continue
        if tag.interpreter in interpreters and tag.abi in abis:
            return version
        # the stable ABI: a cp3N-abi3 wheel installs on every CPython from 3.N on
        since = tag.interpreter[len(f"cp{major}"):]
        if tag.abi == "abi3" and tag.interpreter.startswith(f"cp{major}") and since.isdigit() and \
                int(since) <= int(minor):
            return version
    return None


def versions_on(name: str, indexes: list[str], target: Target, web) -> list[Version]:
    """Every final (not pre-release, not yanked) version with a wheel for the target, newest first,
    over the indexes given (each reachable one is read)."""
    found: set[Version] = set()
    pages = Pages(web)
    for index in indexes:
        for file in pages.files(index, name):
            version = None if file.yanked else installs_on(file.filename, target)
            if version is not None and not version.is_prerelease and not version.is_devrelease:
                found.add(version)
    return sorted(found, reverse=True)


def newest_versions(names: list[str], indexes: list[str], target: Target, web) -> dict[str, Version | None]:
    """The newest installable version of each name (None: none, or its index did not answer)."""

    def newest(name: str) -> Version | None:
        try:
            versions = versions_on(name, indexes, target, web)
        except OperationError:
            return None
        return versions[0] if versions else None

    with ThreadPoolExecutor(READERS) as pool:
        return dict(zip(names, pool.map(newest, names), strict=True))
