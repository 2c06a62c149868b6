"""The lines of the image's own `pip check` a release tolerates, with why: a wheel whose WHEEL file
names another platform (pip.wrong_wheel_tags, on its platforms) and a requirement the base image meets
(pip.met_by_base, on every platform); never anything else. One answer for the rendered RUN step and
the smoke suite (render/plan.py words them into the image) and for verify's prediction of the same
check (verify/prediction.py), so the two can never disagree."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from ngcbuild.manifest.platforms import MACHINES


@dataclass(frozen=True)
class Tolerance:
    pattern: str  # a whole line, read alike by grep -x -E and re.fullmatch
    source: str  # the manifest's entry that allows it, for messages

    def matches(self, line: str) -> bool:
        return re.fullmatch(self.pattern, line) is not None


def literal(name: str) -> str:
    """A package name as a pattern of itself: its only special characters are . and +."""
    return name.replace(".", "[.]").replace("+", "[+]")


def tolerances(release, platform: str) -> list[Tolerance]:
    """What the image's pip check may print on `platform`, each with the entry that allows it."""
    found = []
    for wrong in release.pip.wrong_wheel_tags:
        if platform in wrong.platforms:
            found.append(Tolerance(f"{literal(wrong.distribution)} [^ ]+ is not supported on this platform",
                                   f"pip.wrong_wheel_tags: {wrong.distribution}"))
    for met in release.pip.met_by_base:
        found.append(Tolerance(f"{literal(canonicalize_name(met.distribution))} [^ ]+ requires "
                               f"{literal(canonicalize_name(met.requires))}, which is not installed[.]",
                               f"pip.met_by_base: {met.distribution} requires {met.requires}"))
    return found


def by_machine(release) -> dict[str, list[str]]:
    """machine (`uname -m`) -> the tolerated patterns, sorted: what the image's RUN step and the smoke
    suite read."""
    patterns = {MACHINES[platform]: sorted(t.pattern for t in tolerances(release, platform)) for platform in MACHINES}
    return {machine: lines for machine, lines in sorted(patterns.items()) if lines}
