"""A release's whole set at its newest, for `bump`: uv resolves (uv.py, in the run's clean room and
within its deadline), and each distribution it chose is described by verify's one reader of
metadata (verify/sources.py: the index's file list, PEP 658 metadata files, else range reads of the
wheel; never a whole wheel). The file verify's finder chooses is the file the image's pip installs,
so the resolver and verify judge the same files. Listings and metadata are read once per run and
shared by every target and every candidate leader."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.core.errors import OperationError
from ngcbuild.resolver import conflicts
from ngcbuild.resolver.deadline import Deadline
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.uv import Uv
from ngcbuild.verify.finder import parsed
from ngcbuild.verify.metadata import MetadataError
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target

REASON_LIMIT = 600


@dataclass(frozen=True)
class Dist:
    """One distribution of a resolved set: its name as published, version, Requires-Dist,
    Requires-Python and the file the target installs (empty for a stand-in)."""

    name: str
    version: str
    requires: tuple[str, ...]
    requires_python: str = ""
    url: str = ""

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)


class Unresolvable(OperationError):
    """No set meets the requirements: `reason` is the resolver's, in a line or two."""

    def __init__(self, reason: str, output: str = ""):
        super().__init__(reason)
        self.reason, self.output = reason, output


class WholeSet:
    """One bump's reads of its indexes. A context manager: uv's scratch folder and verify's workers
    live as long as it."""

    def __init__(self, indexes: list[str], web, scratch: Path, *, stand_ins: tuple[StandIn, ...] = (),
                 ca_bundle: Path | None = None, index_as_of: str | None = None, deadline: Deadline | None = None):
        self.indexes = list(indexes)
        self.stand_ins = {s.key: s for s in stand_ins}
        self.work = Work()
        self.sources = Sources(self.indexes, web, self.work, scratch, index_as_of)
        self.uv = Uv(self.indexes, stand_ins=stand_ins, ca_bundle=ca_bundle, index_as_of=index_as_of,
                     deadline=deadline)

    def __enter__(self) -> WholeSet:
        self.uv.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.work.cancel()
        self.uv.__exit__(*exc)

    def resolve(self, requirements: list[str], constraints: list[str], target: Target) -> dict[str, Dist]:
        """The newest set uv finds for `requirements` under `constraints` on `target` (Requires-Python
        judged for the target's interpreter), each distribution described."""
        run = self.uv.compile(requirements, constraints, target)
        if not run.ok:
            raise Unresolvable(_shown_reason(conflicts.explanation(run.message)), run.message)
        return self.described([(pin.name, pin.version) for pin in run.pins], target)

    def described(self, pins: list[tuple[str, str]], target: Target, *, missing_ok: bool = False) -> dict[str, Dist]:
        """canonical name -> Dist for (name, version) pins on `target`. A pin with no file for the
        target is left out when `missing_ok` (one only another platform installs), else refused."""
        asked = [(n, v) for n, v in pins if canonicalize_name(n) not in self.stand_ins]
        self.sources.read_listings([canonicalize_name(n) for n, _ in asked])
        files = {canonicalize_name(n): self.sources.choose(n, f"=={v}", target) for n, v in asked}
        self.sources.read_metadata([f for f in files.values() if f is not None])
        found: dict[str, Dist] = {}
        for name, version in pins:
            key = canonicalize_name(name)
            if key in self.stand_ins:
                found[key] = Dist(name, version, self.stand_ins[key].requires)
                continue
            file = files[key]
            if file is None:
                if missing_ok:
                    continue
                raise OperationError(f"{name}=={version}: the resolver chose it, but no file of it installs on "
                                     f"{target.platform} ({self._why_not_read(key)})")
            try:
                metadata = self.sources.metadata(file)
            except MetadataError as exc:
                raise OperationError(f"{name}=={version}: its metadata cannot be read ({exc})") from None
            found[key] = Dist(metadata.name, version, metadata.requires_dist, metadata.requires_python, file.url)
        return dict(sorted(found.items()))

    def metadata_of(self, pins: list[str], target: Target) -> dict[str, Dist]:
        """The distributions of these pins (NAME==VERSION), no dependencies resolved; a pin with no file
        for the target (one only another platform installs) is left out."""
        return self.described([tuple(p.split("==", 1)) for p in pins], target, missing_ok=True)

    def versions_on(self, name: str, target: Target) -> list[Version]:
        """Every final (not pre-release, not yanked) version with a file the target installs, newest
        first, over the run's indexes; OperationError when an index did not answer for it."""
        listing = self.sources.listing(canonicalize_name(name))
        if listing.failures and not listing.files:
            raise OperationError(f"{name}: {listing.failures[0]}")
        found: set[Version] = set()
        for file in listing.files:
            version = None if file.yanked else installs_on(file.filename, target)
            if version is not None and not version.is_prerelease and not version.is_devrelease:
                found.add(version)
        return sorted(found, reverse=True)

    def newest_versions(self, names: list[str], target: Target) -> dict[str, Version | None]:
        """The newest installable version of each name (None: none, or its index did not answer)."""
        self.sources.read_listings([canonicalize_name(n) for n in names])
        newest = {}
        for name in names:
            try:
                versions = self.versions_on(name, target)
            except OperationError:
                versions = []
            newest[name] = versions[0] if versions else None
        return newest

    def requires_python(self, name: str, version: Version, target: Target) -> str:
        """The Requires-Python the index gives for the file the target would install of NAME==VERSION."""
        file = self.sources.choose(name, f"=={version}", target)
        return file.requires_python if file is not None else ""

    def _why_not_read(self, key: str) -> str:
        failures = self.sources.listing(key).failures
        return "; ".join(failures) if failures else "its index lists none for this Python and platform"


def installs_on(filename: str, target: Target) -> Version | None:
    """The version of a wheel the target can install (its Python, ABI and platform tags), else None."""
    info = parsed(filename)
    if info is None or info[2] is None:
        return None
    if any(tag in target.tag_priority for tag in info[2]):
        try:
            return Version(str(info[1]))
        except InvalidVersion:
            return None
    return None


def _shown_reason(text: str) -> str:
    """The resolver's reason on one line, never huge (its lists of versions run to kilobytes)."""
    text = " ".join(text.split())
    return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT] + "..."
