"""Is a release's pin set closed on one platform? The pure half of verify's closure check.

The image installs every pin with `--no-deps` and its last step runs `pip check`: a requirement of a
pinned distribution that the constraints do not pin (or pin at a version the requirement excludes) is
found only there, at the end of a long build. verify resolves the whole set with pip's dry run
(`--report`), and this module walks that report from the pins along each distribution's Requires-Dist.

The walk evaluates environment markers for the *target* (its Python, its machine), not pip's: pip
evaluates them for the interpreter that runs it, so checking aarch64 or Python 3.12 from an x86_64
Python 3.11 would otherwise add requirements the image never has (`overrides; python_version < "3.12"`)
and miss the ones only the target has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


def marker_environment(python: str, machine: str) -> dict[str, str]:
    """PEP 508 marker values of a Linux CPython `python` (3.12) on `machine` (x86_64, aarch64). The
    patch level is unknown: python_full_version is MAJOR.MINOR.0."""
    return {"implementation_name": "cpython", "implementation_version": f"{python}.0", "os_name": "posix",
            "platform_machine": machine, "platform_python_implementation": "CPython", "platform_release": "",
            "platform_system": "Linux", "platform_version": "", "python_full_version": f"{python}.0",
            "python_version": python, "sys_platform": "linux"}


@dataclass
class Closure:
    """What the walk found. `reached`: every distribution the pins need on the target, pins included."""

    reached: set[str] = field(default_factory=set)
    # canonical name -> (the version pip resolved, or "" when pip did not resolve it, and who requires it)
    unpinned: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)  # "A 1.0 requires B<2, pinned B==2.1"


def report_items(report: dict) -> dict[str, tuple[str, str, list[str]]]:
    """pip's installation report: canonical name -> (name as published, version, Requires-Dist)."""
    items = {}
    for item in report.get("install", []):
        metadata = item["metadata"]
        items[canonicalize_name(metadata["name"])] = (metadata["name"], metadata["version"],
                                                      list(metadata.get("requires_dist") or []))
    return items


def walk(report: dict, pins: dict[str, str], environment: dict[str, str], *,
         unread: frozenset[str] = frozenset(), outside: dict[str, str] | None = None) -> Closure:
    """Walk from every pin (canonical name -> version) along the requirements active on the target.
    `unread`: pins whose metadata could not be read here (not walked into; their version is still
    compared with what requires them). `outside`: what the image installs beside the constraints
    (a component built from source: name -> version), compared the same way, not walked into."""
    outside = outside or {}
    items = report_items(report)
    found = Closure()
    todo = [(key, "") for key in pins if key not in unread]
    seen: set[tuple[str, str]] = set()
    while todo:
        key, extra = todo.pop()
        if (key, extra) in seen:
            continue
        seen.add((key, extra))
        found.reached.add(key)
        if key not in items:
            continue  # an unpinned requirement pip did not resolve: already listed by whoever needs it
        name, version, requires = items[key]
        for text in requires:
            requirement = _requirement(text)
            if requirement is None or not _active(requirement, environment, extra):
                continue
            dep = canonicalize_name(requirement.name)
            have = pins.get(dep, outside.get(dep))
            if have is not None:
                if not requirement.specifier.contains(have, prereleases=True):
                    where = "pinned" if dep in pins else "installed by the image at"
                    found.excluded.append(f"{name} {version} requires {requirement.name}{requirement.specifier}, "
                                          f"{where} {requirement.name}=={have}")
                if dep in outside or dep in unread:
                    continue
            else:
                resolved = items[dep][1] if dep in items else ""
                found.unpinned.setdefault(dep, (resolved, set()))[1].add(name)
            todo += [(dep, "")] + [(dep, canonicalize_name(e)) for e in requirement.extras]
    return found


def _requirement(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None  # pip would not have installed a distribution it cannot read either


def _active(requirement: Requirement, environment: dict[str, str], extra: str) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**environment, "extra": extra})
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True  # a marker we cannot decide: count the requirement, as the stricter reading


def dependency_conflict(output: str) -> bool:
    """Whether pip's conflict names what a distribution requires ("A 1.0 depends on B<2"). A conflict
    of only "The user requested X" lines means pip found no file of a pin at all: pip 23 reads an index
    answering 500 as one without files, so for a pin that resolved alone this is the index, not the set."""
    if "The conflict is caused by:" not in output:
        return False
    causes = output.split("The conflict is caused by:", 1)[1].split("To fix this", 1)[0]
    return " depends on " in causes


_CAUSE = re.compile(r"^\s*(?P<line>\S.*\b(?:depends on|requested|requires)\b.*)$")


def conflict_reason(output: str, limit: int = 3) -> str:
    """pip's reason for a resolution that failed, in one or two lines: its ERROR line and the first
    lines under "The conflict is caused by:"."""
    lines = output.splitlines()
    error = next((line.removeprefix("ERROR: ").strip() for line in lines
                  if line.startswith("ERROR:") and "ResolutionImpossible" not in line), "")
    causes = []
    if "The conflict is caused by:" in output:
        after = output.split("The conflict is caused by:", 1)[1].splitlines()
        causes = [m["line"].strip() for m in map(_CAUSE.match, after) if m]
        causes = sorted(causes, key=lambda line: "depends on" not in line)[:limit]  # the dependency first
    text = error or next((line.strip() for line in reversed(lines) if line.strip()), "no message")
    return text + (f" ({'; '.join(causes)})" if causes else "")
