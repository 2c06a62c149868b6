"""The pip-check row: the image's own last check, `pip check` after every install, predicted on one
platform before any build. The image will hold every pin of the constraints file (each installed with
--no-deps: a wheel, or a source archive pip builds), the distributions its source builds install and
those of its base image; pip_check.py (pure) predicts what pip check prints for that set.

Every line it would print fails the row, unless the manifest tolerates it (manifest/pip_tolerances.py:
pip.wrong_wheel_tags on this platform, pip.met_by_base; the very lines the image's RUN step lets pass);
a tolerance no predicted line uses is an error too: it would hide the next real failure of that name.
What is not known here (a pin on an unreachable index, a source build whose requirements are not
declared, a conda environment's own distributions) makes the row "not verified" with the reason, unless a
line already fails it."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.manifest.pip_tolerances import tolerances
from ngcbuild.verify.finder import is_wheel
from ngcbuild.verify.installed import base_distributions, source_builds
from ngcbuild.verify.pins import Chosen
from ngcbuild.verify.pip_check import Installed, predict
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target


def prediction_row(loaded: LoadedRelease, target: Target, sources: Sources, chosen: dict[str, Chosen]) -> Row:
    release = loaded.release
    installed, unknown, counts = image_distributions(loaded, sources, chosen)
    found = predict(installed, target.markers(), set(target.tag_priority))
    allowed = tolerances(release, target.platform)
    failing = [line for line in found.lines if not any(t.matches(line) for t in allowed)]
    used = [line for line in found.lines if any(t.matches(line) for t in allowed)]
    unused = [t for t in allowed if not any(t.matches(line) for line in found.lines)]
    # a tolerance of a distribution whose metadata was not read: cannot say whether it is needed
    undecided = [t for t in unused if canonicalize_name(t.source.split(": ", 1)[1].split()[0]) in unknown]
    unused = [t for t in unused if t not in undecided]
    gaps = [f"the requirements of {installed[key].name} {installed[key].version} ({why})"
            for key, why in sorted(unknown.items())]
    if release.python.conda is not None:
        gaps.append(f"the distributions of the conda environment itself "
                    f"({release.python.conda.installer.rsplit('/', 1)[-1]}), which verify does not read")
    elif release.base.python_distributions is None:
        gaps.append(f"the Python distributions of the base image {release.base.image} (base.python_distributions "
                    "is not declared, and verify does not read images)")
    gaps += _archives_read_instead_of_wheels(sources, chosen)
    gaps += [f"whether {t.source} is needed" for t in undecided]
    size = f"{len(installed)} distributions ({counts})"

    def row(status: str, reason: str) -> Row:
        return Row("pip-check", "pip check", f"{len(installed)} distributions", target.platform, status, reason)

    problems = []
    if failing:
        problems.append("the image's pip check would print: " + " | ".join(failing))
    if unused:
        problems.append(", ".join(t.source for t in unused) + f": tolerated on {target.platform}, but pip check "
                        "prints no line of it there: a tolerance nothing needs hides the next real failure of that "
                        "name; remove it")
    if problems:
        return row(FAILED, f"{size}: " + "; ".join(problems) + (f"; besides, {'; '.join(gaps)}" if gaps else ""))
    # the manifest's keys that allowed the lines printed, each once
    keys = sorted({t.source.split(":", 1)[0] for t in allowed if any(t.matches(line) for line in used)})
    said = (f"prints only the tolerated line(s) {' | '.join(used)} ({', '.join(keys)})"
            if used else "prints no broken requirement")
    if not found.platform_checked:
        said += " (the image's pip predates the platform check of pip 23.3)"
    if gaps:
        return row(NOT_VERIFIED, f"{size}: pip check {said} for what is known; not known here: " + "; ".join(gaps))
    return row(VERIFIED, f"{size}: pip check {said}")


def image_distributions(loaded: LoadedRelease, sources: Sources, chosen: dict[str, Chosen]):
    """(canonical name -> Installed for everything the image will hold, canonical name -> why its
    requirements are not known, a count of where they come from). A pin overrides the base's."""
    installed: dict[str, Installed] = {}
    unknown: dict[str, str] = {}
    base = base_distributions(loaded.release)
    for key, beside in (base or {}).items():
        installed[key] = Installed(beside.name, beside.version, beside.requires, None, beside.origin)
    for key, pin in chosen.items():
        metadata = pin.metadata
        if metadata is None:
            installed[key] = Installed(pin.name, pin.version, None)
            unknown[key] = pin.problem or "no file on a reachable index"
            if sources.unreachable and (pin.file is None or not is_wheel(pin.file)):
                unknown[key] += f"; {', '.join(sources.unreachable.values())}"
        else:
            installed[key] = Installed(metadata.name, metadata.version, metadata.requires_dist, metadata.tags)
    builds = source_builds(loaded, {key: pin.version for key, pin in chosen.items()})
    for key, beside in builds.items():
        installed[key] = Installed(beside.name, beside.version, beside.requires, None, beside.origin)
        if beside.requires is None:
            unknown[key] = beside.unknown
    return installed, unknown, f"{len(chosen)} pinned, {len(builds)} built from source, {_base_count(loaded, base)}"


def _base_count(loaded: LoadedRelease, base: dict | None) -> str:
    """How many the base image adds, as far as that is known."""
    if base is None:
        return "the base image's not known"
    if loaded.release.python.conda is not None:
        return "none of the base image (conda's interpreter is its own)"
    return f"{len(base)} of the base image"


def _archives_read_instead_of_wheels(sources: Sources, chosen: dict[str, Chosen]) -> list[str]:
    """Where an index is unreachable, a pin read from a source archive may be a wheel there, which the
    image's pip would prefer (and whose metadata may say otherwise)."""
    built = sorted(pin.metadata.name for pin in chosen.values()
                   if pin.metadata is not None and pin.file is not None and not is_wheel(pin.file))
    if not (sources.unreachable and built):
        return []
    return [f"{', '.join(built)} read from a source archive, while {', '.join(sources.unreachable)} (unreachable "
            "here) may hold a wheel of it that pip would prefer"]
