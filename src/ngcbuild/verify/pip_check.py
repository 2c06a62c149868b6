"""The lines the image's own `pip check` will print, predicted from the metadata of every distribution
the image will hold (pure: no network). It follows pip's check command (pip 25.3's
operations/check.py and commands/check.py, the same since pip 20 but for the platform check of 23.3):

- a distribution's requirements are its Requires-Dist whose markers hold for the image's interpreter
  with `extra` empty: the extras of a requirement (`foo[bar]`) are not followed;
- one that names no installed distribution is "NAME VERSION requires DEP, which is not installed.";
- one whose installed version its specifier excludes (pre-releases admitted) is "NAME VERSION has
  requirement REQ, but you have DEP VERSION.";
- a Requires-Dist pip cannot parse makes the check fail ("Error parsing dependencies of NAME");
- from pip 23.3, an installed wheel whose WHEEL file names no tag the interpreter supports is
  "NAME VERSION is not supported on this platform".

NAME and DEP are canonical names (pip prints its package set's keys) except in the platform line,
which prints the name as the distribution spells it."""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

PLATFORM_CHECK_SINCE = Version("23.3")  # pip check reports wheels not supported on the platform


@dataclass(frozen=True)
class Installed:
    """One distribution the image will hold."""

    name: str  # as it spells itself
    version: str
    requires: tuple[str, ...] | None  # Requires-Dist; None: not known here
    tags: tuple[str, ...] | None = None  # its WHEEL file's tags; None: not a wheel's, or not read
    origin: str = "pin"  # pin, source build, base


@dataclass
class Prediction:
    lines: list[str] = field(default_factory=list)  # what pip check prints, in its order
    unknown: list[str] = field(default_factory=list)  # distributions whose requirements are not known here
    platform_checked: bool = True  # False where the image's pip predates the platform check (or is unknown)


def predict(installed: dict[str, Installed], markers: dict[str, str], supported: set[Tag]) -> Prediction:
    """`installed`: canonical name -> the distribution; `markers`: the image interpreter's marker values;
    `supported`: the tags that interpreter's pip supports."""
    found = Prediction()
    missing, conflicting, broken = [], [], []
    parsed: dict[str, list[Requirement]] = {}
    for key in sorted(installed):
        dist = installed[key]
        if dist.requires is None:
            found.unknown.append(f"{dist.name} {dist.version}")
            continue
        try:
            parsed[key] = [Requirement(text) for text in dist.requires]
        except InvalidRequirement as exc:
            broken.append(f"Error parsing dependencies of {key}: {exc}")
    # pip leaves a distribution whose requirements it cannot parse out of its package set: to the
    # others it is not installed
    present = {key: dist for key, dist in installed.items() if key in parsed or dist.requires is None}
    for key, requirements in parsed.items():
        dist = installed[key]
        for requirement in requirements:
            if not _active(requirement, markers):
                continue
            dep = canonicalize_name(requirement.name)
            if dep not in present:
                missing.append(f"{key} {_shown(dist.version)} requires {dep}, which is not installed.")
                continue
            have = present[dep].version
            if not _contains(requirement, have):
                conflicting.append(f"{key} {_shown(dist.version)} has requirement {requirement}, but you have "
                                   f"{dep} {_shown(have)}.")
    unsupported = []
    pip = installed.get("pip")
    found.platform_checked = bool(pip and _at_least(pip.version, PLATFORM_CHECK_SINCE))
    if found.platform_checked:
        for key in sorted(installed):
            dist = installed[key]
            if dist.tags is not None and _tags(dist.tags).isdisjoint(supported):
                unsupported.append(f"{dist.name} {_shown(dist.version)} is not supported on this platform")
    found.lines = broken + missing + conflicting + unsupported
    return found



def _active(requirement: Requirement, markers: dict[str, str]) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**markers, "extra": ""})
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True  # the stricter reading


def _contains(requirement: Requirement, version: str) -> bool:
    try:
        return requirement.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return requirement.specifier.contains(version, prereleases=True)


def _shown(version: str) -> str:
    """A version as pip prints it (normalised: 1.0.0-rc1 is 1.0.0rc1)."""
    try:
        return str(Version(version))
    except InvalidVersion:
        return version


def _at_least(version: str, floor: Version) -> bool:
    try:
        return Version(version) >= floor
    except InvalidVersion:
        return False


def _tags(tags: tuple[str, ...]) -> set[Tag]:
    found: set[Tag] = set()
    for text in tags:
        try:
            found |= parse_tag(text)
        except ValueError:
            continue
    return found
