"""Is a release's pin set closed on one platform? The pure half of verify's closure check.

The image installs every pin with `--no-deps` and its last step runs `pip check`: a requirement of a
pinned distribution that the constraints do not pin (or pin at a version the requirement excludes) is
found only there, at the end of a long build. verify reads every pinned distribution's metadata
(closure_check.py) and this module walks it from the pins along each distribution's Requires-Dist,
into the extras a requirement names (which pip check does not follow, but an import does).

The walk evaluates environment markers for the *target* (its interpreter's full version, its
machine; target.py), never for the Python running verify: checking aarch64 or Python 3.12 from an
x86_64 Python 3.11 would otherwise add requirements the image never has and miss the ones it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

# canonical name -> (name as published, version, Requires-Dist)
Items = dict[str, tuple[str, str, tuple[str, ...]]]


@dataclass
class Closure:
    """What the walk found. `reached`: every distribution the pins need on the target, pins included."""

    reached: set[str] = field(default_factory=set)
    # canonical name -> (the version chosen for it here, or "" when none was, and who requires it)
    unpinned: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)  # "A 1.0 requires B<2, pinned B==2.1"
    # canonical name -> the specifiers its requirements give (to choose a version of an unpinned one)
    wanted: dict[str, list[str]] = field(default_factory=dict)


def walk(items: Items, pins: dict[str, str], environment: dict[str, str], *,
         unread: frozenset[str] = frozenset(), outside: dict[str, str] | None = None,
         met: frozenset[tuple[str, str]] = frozenset()) -> Closure:
    """Walk from every pin (canonical name -> version) along the requirements active on the target.
    `items`: the metadata known here (every pin's, and of unpinned ones chosen so far).
    `unread`: pins whose metadata could not be read here (not walked into; their version is still
    compared with what requires them). `outside`: what the image installs beside the constraints
    (a component built from source: name -> version), compared the same way, not walked into.
    `met`: (distribution, requirement) pairs the base image meets (pip.met_by_base): not followed."""
    outside = outside or {}
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
            continue  # an unpinned requirement with no metadata here: already listed by whoever needs it
        name, version, requires = items[key]
        for text in requires:
            requirement = _requirement(text)
            if requirement is None or not _active(requirement, environment, extra):
                continue
            dep = canonicalize_name(requirement.name)
            if (key, dep) in met:
                continue
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
                found.wanted.setdefault(dep, []).append(str(requirement.specifier))
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
