"""The closure row: is the whole pin set closed under its own requirements on one platform? Every
pin's metadata is read (pins.py), closure.py (pure) walks it with the target's markers, and a
requirement the constraints do not pin is given the version pip would choose for it, whose own
requirements are walked in turn, so that the row names everything left to pin at once."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.verify import closure
from ngcbuild.verify.installed import source_builds
from ngcbuild.verify.metadata import MetadataError, version_of
from ngcbuild.verify.pins import Chosen
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target

MAX_ROUNDS = 10  # requirements of requirements of unpinned distributions, this deep at most
MAX_UNPINNED = 200  # distributions left unpinned that are looked up at most


def closure_row(loaded: LoadedRelease, target: Target, sources: Sources, chosen: dict[str, Chosen]) -> Row:
    """Is the pin set closed on this platform? Names each distribution the pins need that the
    constraints do not pin, or pin at a version a requirement excludes. The image installs each pin
    with --no-deps, so only its final `pip check` would say."""
    release, constraints = loaded.release, loaded.constraints
    pinned = {key: pin.version for key, pin in chosen.items()}
    name, count = f"constraints/{constraints.path.name}", f"{len(pinned)} pins"

    def row(status: str, reason: str) -> Row:
        return Row("closure", name, count, target.platform, status, reason)

    # A pin whose metadata could not be read here (an unreachable index) is not walked into; its
    # version is still compared with what requires it, and the set is at best "not verified".
    unread = {key: pin for key, pin in chosen.items() if pin.metadata is None}
    without = ", ".join(f"{pin.name}=={pin.version}" for pin in unread.values())
    if not sources.reachable or len(unread) == len(chosen):
        why = "; ".join(sources.unreachable.values()) or f"no pin's metadata could be read here: {without}"
        return row(NOT_VERIFIED, why)
    items = {key: (pin.metadata.name, pin.metadata.version, pin.metadata.requires_dist)
             for key, pin in chosen.items() if pin.metadata is not None}
    outside = {key: build.version for key, build in source_builds(loaded, pinned).items()}
    environment = target.markers()
    # the requirements the base image meets: the image's pip check tolerates exactly their lines
    met = frozenset((canonicalize_name(m.distribution), canonicalize_name(m.requires)) for m in release.pip.met_by_base)
    found, versions = _walk_with_unpinned(items, pinned, environment, frozenset(unread), outside, met, target,
                                          sources)
    caveat = "; ".join([f"the requirements of {without} are not read here",
                        *sources.unreachable.values()]) if unread else ""
    size = f"{len(found.reached)} distributions"
    problems = []
    if found.unpinned:
        problems.append(f"{len(found.unpinned)} not pinned: " + ", ".join(
            f"{dep}{' ' + (version or versions.get(dep, '')) if version or dep in versions else ''} "
            f"(required by {', '.join(sorted(by))})" for dep, (version, by) in sorted(found.unpinned.items())))
    if found.excluded:
        problems.append("pinned at a version a requirement excludes: " + "; ".join(sorted(set(found.excluded))))
    if found.unpinned and not found.excluded and release.python.conda is not None:
        # A conda Python's installer brings distributions of its own (pip, requests, six...) that the
        # constraints do not list and verify does not read: an unpinned one may be among them.
        return row(NOT_VERIFIED, f"{size} needed on {target.platform}; " + "; ".join(problems)
                   + f": unless the conda environment ({release.python.conda.installer.rsplit('/', 1)[-1]}) "
                   "carries them, which verify does not read" + (f"; {caveat}" if caveat else ""))
    if problems:
        return row(FAILED, f"{size} needed on {target.platform}; " + "; ".join(problems)
                   + ": the image's pip check would fail at the end of the build")
    beside = ", ".join(f"{dep} {version}" for dep, version in sorted(outside.items()))
    beside = f"; {beside} (built by the image) compared with what requires them, their own needs not walked" \
        if beside else ""
    beside += "".join(f"; {m.requires} of {m.distribution} met by the base image (pip.met_by_base)"
                      for m in release.pip.met_by_base)
    if caveat:
        return row(NOT_VERIFIED, f"{size}, all pinned{beside}; {caveat}")
    return row(VERIFIED, f"{size}, all pinned{beside}")


def _walk_with_unpinned(items, pinned, environment, unread, outside, met, target: Target, sources: Sources):
    """closure.walk, and again after each round of unpinned requirements given a version (the best
    file pip would choose for all their specifiers together) and their metadata. Also returns the
    version of each file chosen (its metadata may not be readable: a placeholder archive)."""
    found = closure.walk(items, pinned, environment, unread=unread, outside=outside, met=met)
    tried: set[str] = set()
    versions: dict[str, str] = {}
    for _ in range(MAX_ROUNDS):
        new = sorted(dep for dep in found.unpinned if dep not in items and dep not in tried)[:MAX_UNPINNED - len(tried)]
        if not new:
            break
        tried.update(new)
        sources.read_listings(new)
        files = {dep: sources.choose(dep, ",".join(s for s in found.wanted[dep] if s), target) for dep in new}
        readable = [f for f in files.values() if f is not None]
        sources.read_metadata(readable)
        for dep, file in files.items():
            if file is not None:
                versions[dep] = version_of(file)
        for file in readable:
            try:
                metadata = sources.metadata(file)
            except MetadataError:
                continue
            items[canonicalize_name(metadata.name)] = (metadata.name, metadata.version, metadata.requires_dist)
        found = closure.walk(items, pinned, environment, unread=unread, outside=outside, met=met)
    return found, versions
