"""A distribution's core metadata (name, version, Requires-Dist, Requires-Python) and, for a wheel,
the tags of its WHEEL file: what `pip check` in the image will read. A wheel's is read without
downloading it: the metadata file the index serves beside it (PEP 658), its sha256 checked against the
index's, where there is one; else the wheel's own `.dist-info/METADATA` by range requests. The WHEEL
file of a platform wheel is always read by range (no index serves it apart)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.core.http import HttpFailure
from ngcbuild.verify.finder import file_version, is_platform_wheel, parsed
from ngcbuild.verify.index import IndexFile
from ngcbuild.verify.remote_zip import RemoteZipError, read_members
from ngcbuild.verify.web import HttpStatus, Web
from ngcbuild.verify.wheel_tags import tags_of

MAX_METADATA = 4 << 20  # a METADATA file with a long description is a few hundred kilobytes
MAX_WHEEL_FILE = 64 << 10  # a WHEEL file is a few lines


class MetadataError(Exception):
    """The metadata could not be read, or was refused (a hash or name that does not match)."""


@dataclass(frozen=True)
class Metadata:
    name: str  # as the distribution spells it
    version: str
    requires_dist: tuple[str, ...]
    requires_python: str
    tags: tuple[str, ...] | None  # the WHEEL file's tags (platform wheels); None where not read
    read: str  # how it was read, for the report


def parse_metadata(text: str, read: str, tags: tuple[str, ...] | None = None) -> Metadata:
    """Core metadata (METADATA, PKG-INFO): its headers, the description after them ignored."""
    headers = HeaderParser().parsestr(text)
    name, version = (headers.get("Name") or "").strip(), (headers.get("Version") or "").strip()
    if not name or not version:
        raise MetadataError("its metadata names no Name or Version")
    return Metadata(name=name, version=version,
                    requires_dist=tuple(r.strip() for r in headers.get_all("Requires-Dist") or [] if r.strip()),
                    requires_python=(headers.get("Requires-Python") or "").strip(), tags=tags, read=read)


def header_values(text: str, key: str) -> list[str]:
    return [v.strip() for v in HeaderParser().parsestr(text).get_all(key) or []]


def check_names(metadata: Metadata, file: IndexFile) -> Metadata:
    """The metadata must be the file's own: the name and version its file name gives."""
    info = parsed(file.filename)
    if info is None:
        raise MetadataError(f"{file.filename} is not a distribution's file name")
    try:
        same_version = Version(metadata.version) == info[1]
    except InvalidVersion:
        same_version = False
    if canonicalize_name(metadata.name) != info[0] or not same_version:
        raise MetadataError(f"its metadata says {metadata.name} {metadata.version}, not the file's "
                            f"{info[0]} {info[1]}: refused")
    return metadata


def wheel_metadata(file: IndexFile, web: Web) -> Metadata:
    """The wheel's METADATA (PEP 658 file where served, else by range) and, for a platform wheel, its
    WHEEL file's tags (by range)."""
    platform = is_platform_wheel(file)
    if file.metadata:
        text = _served_metadata(file, web)
        tags = tuple(tags_of(_by_range(file, web, {"WHEEL"})["WHEEL"])) if platform else None
        return check_names(parse_metadata(text, "its metadata file (PEP 658)", tags), file)
    wanted = {"METADATA", "WHEEL"} if platform else {"METADATA"}
    members = _by_range(file, web, wanted)
    tags = tuple(tags_of(members["WHEEL"])) if platform else None
    return check_names(parse_metadata(members["METADATA"], "range reads of the wheel", tags), file)


def _served_metadata(file: IndexFile, web: Web) -> str:
    try:
        body = web.get(file.url + ".metadata", limit=MAX_METADATA)
    except (HttpStatus, HttpFailure) as exc:
        raise MetadataError(f"its metadata file: {exc}") from None
    if file.metadata_sha256 and hashlib.sha256(body).hexdigest() != file.metadata_sha256:
        raise MetadataError(f"its metadata file's sha256 {hashlib.sha256(body).hexdigest()[:16]}... is not the "
                            f"{file.metadata_sha256[:16]}... the index gives for it: refused")
    return body.decode("utf-8", "replace")


def _by_range(file: IndexFile, web: Web, wanted: set[str]) -> dict[str, str]:
    """The named files of the wheel's one top-level `.dist-info` folder, by range requests."""
    try:
        members = read_members(file.url, web.fetch, _dist_info_file, MAX_METADATA)
    except RemoteZipError as exc:
        raise MetadataError(f"{file.filename}: {exc}") from None
    folders = {name.split("/", 1)[0] for name in members}
    if len(folders) != 1:
        raise MetadataError(f"{file.filename}: {len(folders)} .dist-info folders with metadata, expected one")
    found = {name.split("/", 1)[1]: data for name, data in members.items()}
    missing = sorted(wanted - set(found))
    if missing:
        raise MetadataError(f"{file.filename}: no {' or '.join(missing)} file in its .dist-info folder")
    if "WHEEL" in wanted and len(found["WHEEL"]) > MAX_WHEEL_FILE:
        raise MetadataError(f"{file.filename}: its WHEEL file is over {MAX_WHEEL_FILE} bytes")
    return {key: found[key].decode("utf-8", "replace") for key in wanted}


def _dist_info_file(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in ("METADATA", "WHEEL")


def version_of(file: IndexFile) -> str:
    version = file_version(file)
    return str(version) if version is not None else ""
