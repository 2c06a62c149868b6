"""Each pip pin of a release, for the release's interpreter and each platform it builds: the file pip
installs from the release's indexes (finder.py chooses as pip's finder does), its metadata read
without downloading it (sources.py), its Requires-Python against the image's interpreter, a wheel
whose own WHEEL file names no tag of the platform, and why a pin has no distribution (from the
index's file list)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.core.references import shown_url
from ngcbuild.verify.finder import is_wheel, parsed
from ngcbuild.verify.index import IndexFile
from ngcbuild.verify.metadata import Metadata, MetadataError
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.sdist import PLACEHOLDER
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target
from ngcbuild.verify.wheel_tags import platforms_of


@dataclass(frozen=True)
class Chosen:
    """A pin on one platform: the file pip installs (None: none), its metadata (None: not read), and
    why either is missing."""

    name: str
    version: str
    file: IndexFile | None
    metadata: Metadata | None
    problem: str = ""  # why the metadata is missing


def choose_pins(pins, target: Target, sources: Sources) -> dict[str, Chosen]:
    """canonical name -> Chosen, for every pin (NAME==VERSION) on `target`."""
    chosen = {}
    for pin in pins:
        file = sources.choose(pin.name, f"=={pin.version}", target)
        metadata, problem = None, ""
        if file is not None:
            try:
                metadata = sources.metadata(file)
            except MetadataError as exc:
                problem = str(exc)
        chosen[pin.key] = Chosen(pin.name, pin.version, file, metadata, problem)
    return chosen


def pip_rows(chosen: dict[str, Chosen], target: Target, sources: Sources, wrong_tags: dict[str, str]) -> list[Row]:
    """One row per pin, and a wheel-tags row for a wheel whose WHEEL file names another platform.
    `wrong_tags`: canonical name -> evidence (pip.wrong_wheel_tags of this platform)."""
    rows = []
    unreachable = [f"{shown_url(index)} ({why})" for index, why in sources.unreachable.items()]
    for key, pin in sorted(chosen.items()):
        listing = sources.listing(key)
        if pin.file is not None and is_wheel(pin.file):
            rows.append(_wheel_row(pin, target))
            tag_row = wheel_tag_row(pin, target, wrong_tags)
            if tag_row is not None:
                rows.append(tag_row)
            continue
        status, reason = explain_missing(pin.version, [f.filename for f in listing.files if not f.yanked], target)
        if pin.file is not None and pin.problem.startswith(PLACEHOLDER):  # NVIDIA's wheel_stub
            status, reason = FAILED, f"only the source archive {pin.file.filename}, {pin.problem}"
        elif pin.file is not None and status == NOT_VERIFIED:  # a source archive the image builds
            how = (f"its metadata {pin.metadata.read}" if pin.metadata is not None
                   else f"its metadata could not be read ({pin.problem})")
            reason = f"{reason}; {how}"
        beyond = unreachable + listing.failures
        if beyond:
            status = NOT_VERIFIED
            reason = f"{reason}; not checked on the release's other index {', '.join(beyond)}"
        rows.append(Row("pip", pin.name, pin.version, target.platform, status, reason))
    return rows


def _wheel_row(pin: Chosen, target: Target) -> Row:
    where = f"{pin.file.filename} from {shown_url(pin.file.index)}"
    if pin.metadata is None:
        return Row("pip", pin.name, pin.version, target.platform, NOT_VERIFIED,
                   f"{where}; its metadata could not be read: {pin.problem}")
    requires_python = pin.file.requires_python or pin.metadata.requires_python
    if not supports_python(requires_python, target.python_full):
        return Row("pip", pin.name, pin.version, target.platform, FAILED,
                   f"{pin.file.filename} requires Python {requires_python}, not {target.python_full}")
    return Row("pip", pin.name, pin.version, target.platform, VERIFIED, where)


def wheel_tag_row(pin: Chosen, target: Target, known: dict[str, str]) -> Row | None:
    """The row of a platform wheel whose own WHEEL file names no tag of the target platform (pip
    picks by file name; `pip check` in the image tests the WHEEL file): failed, or verified with
    the evidence when the manifest knows the tag is wrong (pip.wrong_wheel_tags). None when fine,
    when the wheel is for any platform, or when its metadata was not read (the pip row says so)."""
    if pin.metadata is None or pin.metadata.tags is None:
        return None
    declared = platforms_of(pin.metadata.tags)
    if declared & (set(target.platform_tags) | {"any"}):
        return None
    says = ", ".join(sorted(declared)) or "no tag"
    filename = pin.file.filename
    key = canonicalize_name(pin.name)
    if key in known:
        return Row("wheel-tags", pin.name, pin.version, target.platform, VERIFIED,
                   f"{filename}: its WHEEL file says {says}, no tag of {target.platform}; known and tolerated "
                   f"by the image's pip check (pip.wrong_wheel_tags: {known[key]})")
    return Row("wheel-tags", pin.name, pin.version, target.platform, FAILED,
               f"{filename}: its WHEEL file says {says}, no tag of {target.platform}: pip installs it by its "
               "file name and `pip check` in the image then fails; if the wheel is known to work, name it "
               "in pip.wrong_wheel_tags with the evidence")


def supports_python(requires_python: str, python: str) -> bool:
    """Whether a distribution's Requires-Python admits the image's interpreter (its full version, as
    pip tests it: `>=3.12.4` refuses 3.12.3)."""
    try:
        return not requires_python or SpecifierSet(requires_python).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True  # pip ignores a Requires-Python it cannot parse


def explain_missing(version: str, files: list[str], target: Target) -> tuple[str, str]:
    """Why a pin has no wheel for `target`, from the index's file list (PEP 691): (status, reason).
    A version that exists only as a source distribution, of a project that ships platform wheels for
    other versions, is a failure (a placeholder or a native build nobody planned); a pure-Python sdist
    is left to the build, so not verified."""
    mine, binary_elsewhere = [], []
    for filename in files:
        info = parsed(filename)
        if info is None:
            continue
        _, file_version, tags = info
        if file_version == _version(version):
            mine.append((filename, tags))
        elif tags and any(t.platform != "any" for t in tags):
            binary_elsewhere.append(str(file_version))
    where = f"Python {target.python} on {target.platform} (glibc {target.glibc})"
    if not mine:
        known = sorted({str(p[1]) for p in map(parsed, files) if p}, key=_sort_key)
        return FAILED, f"no release {version} on the index (it has {_few(known)})"
    wheels = [filename for filename, tags in mine if tags]
    if wheels:
        return FAILED, f"no wheel of {version} for {where}; its wheels: {_few(wheels)}"
    sdist = mine[0][0]
    if binary_elsewhere:
        newer = sorted(set(binary_elsewhere), key=_sort_key)
        return FAILED, (f"no wheel of {version} for {where}, only the source archive {sdist}, while the project "
                        f"ships platform wheels for other versions ({_few(newer)}): a placeholder or a native build")
    return NOT_VERIFIED, f"only the source archive {sdist} (pure Python?); the build compiles it, verify does not"


def _version(text: str):
    try:
        return Version(text)
    except InvalidVersion:
        return text


def _sort_key(text: str):
    try:
        return (0, Version(text), "")
    except InvalidVersion:
        return (1, None, text)


def _few(items: list[str], limit: int = 4) -> str:
    items = list(items)
    shown = items[-limit:]
    return ("..., " if len(items) > limit else "") + ", ".join(shown) if items else "none"
