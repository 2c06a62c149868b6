"""The closure row: is the whole pin set closed under its own requirements on one platform? pip
resolves it with its dependencies; closure.py (pure) walks pip's report with the target's markers."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.verify import closure, pins
from ngcbuild.verify.pins import Target, release_indexes, unmatched_requirement
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import Web


def closure_row(loaded: LoadedRelease, target: Target, web: Web, pip_rows: list[Row]) -> Row:
    """Is the pin set closed on this platform? pip resolves every pin WITH its dependencies, the
    constraints file as constraints, against the release's reachable indexes; closure.walk then names
    each distribution the pins need that the file does not pin, or pins at a version a requirement
    excludes. The image installs each pin with --no-deps, so only its final `pip check` would say."""
    release, constraints = loaded.release, loaded.constraints
    pinned = {p.key: p.version for p in constraints.pins}
    name, count = f"constraints/{constraints.path.name}", f"{len(pinned)} pins"

    def row(status: str, reason: str) -> Row:
        return Row("closure", name, count, target.platform, status, reason)

    # A pin whose own row did not verify (an unreachable index, a source archive only) has no metadata
    # here: it is left out of the requirements and the constraints (pip could not satisfy a pin that
    # another requires, and would stop there), its version is still compared with what requires it,
    # and the set is at best "not verified".
    unread = {canonicalize_name(r.name): r for r in pip_rows if r.kind == "pip" and r.status != VERIFIED}
    without = ", ".join(f"{r.name}=={r.pin} (pip row: {r.status})" for r in unread.values())
    indexes, unreachable = [], []
    for index in release_indexes(release):
        why = web.unreachable(index)
        if why:
            unreachable.append(why)
        else:
            indexes.append(index)
    wanted = [str(p) for p in constraints.pins if p.key not in unread]
    if not indexes or not wanted:
        return row(NOT_VERIFIED, "; ".join(unreachable) or f"no pin could be read here: {without}")
    outside = _installed_beside_constraints(loaded, pinned)
    with tempfile.TemporaryDirectory(prefix="ngcbuild-closure-") as scratch:
        path = Path(scratch) / "constraints.txt"
        path.write_text(replace(constraints, pins=tuple(p for p in constraints.pins if p.key not in unread)).text())
        try:
            result = pins.run_pip(["--constraint", str(path), *wanted], indexes, target, web, Path(scratch),
                                  quiet=False)
        except OperationError as exc:
            return row(NOT_VERIFIED, str(exc))
        report = json.loads((Path(scratch) / "report.json").read_text()) if result.returncode == 0 else None
    # An unreachable index matters only where a pin needed it (every pin that resolved did so elsewhere).
    caveat = "; ".join([f"the requirements of {without} are not read here", *unreachable]) if unread else ""
    if report is None:
        output = result.stdout + "\n" + result.stderr
        why = excerpt(closure.conflict_reason(output), 600)
        missing = unmatched_requirement(output)
        refused = closure.dependency_conflict(output) or (missing is not None and missing not in pinned)
        if refused and not caveat:
            return row(FAILED, f"pip cannot resolve the pinned set with its dependencies: {why}")
        if not caveat:  # each pin resolved alone, pip found no file of one now: an index did not answer as before
            caveat = "each pin resolved alone, so an index did not answer as it did"
        return row(NOT_VERIFIED, f"pip could not resolve the pinned set: {why}; {caveat}")
    environment = closure.marker_environment(target.python, target.arch)
    found = closure.walk(report, pinned, environment, unread=frozenset(unread), outside=outside)
    size = f"{len(found.reached)} distributions"
    problems = []
    if found.unpinned:
        problems.append(f"{len(found.unpinned)} not pinned: " + ", ".join(
            f"{dep}{' ' + version if version else ''} (required by {', '.join(sorted(by))})"
            for dep, (version, by) in sorted(found.unpinned.items())))
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
    beside = f"; {beside} (built by the image) compared with what requires them, their own needs not read" \
        if beside else ""
    if caveat:
        return row(NOT_VERIFIED, f"{size}, all pinned{beside}; {caveat}")
    return row(VERIFIED, f"{size}, all pinned{beside}")


def _installed_beside_constraints(loaded: LoadedRelease, pins: dict[str, str]) -> dict[str, str]:
    """Distributions the image installs outside the constraints file: components built from source
    (25.12's torch) with the version pip lists for them."""
    outside = {}
    for name, component in loaded.release.components.items():
        entry = loaded.catalog.get(name)
        package = component.package or (entry.pip_package if entry else None)
        if component.install == "source" and package and canonicalize_name(package) not in pins:
            outside[canonicalize_name(package)] = str(component.module_version or component.version)
    return outside
