"""build/R/record.json: what was built and what each later step did with it, as one typed `Record`.

The build's fields lie at the top of the file, each later step's section beside them (sections.py).
`read_record` is the one reader: the file through core/files (inside the project, bounded, never a
FIFO), parsed, every section checked against its type (schema.py); a damaged one is RecordDamaged
naming its key (exit 1: the record is our output). `write_record` is the one writer (whole, under the
release's lock). A step takes the record, reads attributes, and writes `dataclasses.replace(record,
SECTION=...)` back: the JSON is the one the stages have always written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ngcbuild.core.errors import ManifestError, RecordDamaged, UserError, excerpt
from ngcbuild.core.files import exists, parse_json, read_text
from ngcbuild.core.references import ImageRef
from ngcbuild.workspace.locks import release_lock
from ngcbuild.workspace.release_dir import RECORD, ReleaseDir
from ngcbuild.workspace.schema import Malformed, Section
from ngcbuild.workspace.sections import (  # the types of Record's fields and the forms of their keys
    DIGEST,
    PLATFORM,
    REFERENCE,
    Attested,
    AuditEntry,
    BuildRecord,
    PlatformBuild,
    Promoted,
    Published,
    Pushed,
    SbomEntry,
    SmokeRun,
    form,
)


@dataclass(frozen=True)
class Record(Section):
    """The whole record: the build (its keys at the top of the file) and every later step's section."""

    FLAT = ("build",)

    build: BuildRecord = field(default_factory=BuildRecord)
    smoke: SmokeRun | None = None
    pushed: dict[str, Pushed] = form(None, dict, keys=REFERENCE)
    cache_pushed: dict[str, str] = form(DIGEST, dict, keys=REFERENCE)  # cache image ref -> digest
    sbom: SbomEntry | None = None
    audit: AuditEntry | None = None
    attested: dict[str, Attested] = form(None, dict, keys=REFERENCE)
    published: dict[str, Published] = form(None, dict, keys=REFERENCE)
    promoted: dict[str, Promoted] = form(None, dict, keys=REFERENCE)
    platforms: dict[str, PlatformBuild] = form(None, dict, keys=PLATFORM)


def record_path(directory: Path) -> Path:
    return directory / RECORD


MAX_BYTES = 50_000_000
HINT = "rebuild to rewrite it"


REFUSED_HINT = "not what ngcbuild writes: remove the file, then rebuild"


def parse_record(path: Path, data, error=RecordDamaged, hint: str = HINT) -> Record:
    """`data` (the parsed JSON of `path`) as a Record, every section checked; the first value that is
    not of its type raises `error(path, key, ...)`: RecordDamaged for our own record, ManifestError
    for a record the user hands in (a platform job's). A value of its type in another form (a tag
    holding a newline, a digest that is no digest: sections.py) is refused as bad input (ManifestError,
    exit 2) wherever the record came from: build/ may be another job's artifact."""
    if not isinstance(data, dict):
        raise error(path, "", f"expected a JSON object, got {type(data).__name__}" + (f"; {hint}" if hint else ""))
    try:
        return Record.from_json(data)
    except Malformed as exc:
        if exc.refused:
            raise ManifestError(path, exc.key, f"expected {exc.expected}, got {_shown(exc.value)}; "
                                               f"{REFUSED_HINT if error is RecordDamaged else hint}") from None
        raise error(path, exc.key, f"expected {exc.expected}" + (f"; {hint}" if hint else "")) from None


def _shown(value: str) -> str:
    """A refused value, escaped and short; never one that may hold a credential (user:password@host)."""
    if "@" in value.split("/", 1)[0] or "://" in value:
        return "a value that may hold credentials (not shown)"
    return excerpt(value)


def read_record(directory: Path) -> Record:
    """The record of build/R/, read like every user file: build/R/ lies in the project, and a link
    out of it is refused."""
    path = record_path(directory)
    if not exists(path):  # a step run before the build: the user's order, not a damaged record
        raise UserError(f"{path}: no build record; run `invoke build --release {directory.name}` first")
    try:
        text = read_text(path, MAX_BYTES, "a build record (JSON object)", "no build record",
                         within=directory.parent.parent)
    except ManifestError as exc:  # a link out of the project, a FIFO, a folder, too large, not UTF-8
        raise RecordDamaged(path, "", f"{exc.expected}; {HINT}") from None
    return parse_record(path, parse_json(path, text, RecordDamaged, HINT))


def previous_record(directory: Path) -> Record:
    """The record now in build/R/, or an empty one."""
    return read_record(directory) if record_path(directory).is_file() else Record()


def image_by_digest(record: Record) -> str | None:
    """The record's image named so that it cannot move: `REPOSITORY@sha256:...` of its latest push
    (a base pushed to staging, then to the registry a team pulls from: the latter), else its image id;
    None when the record holds no build. What a derived image is built FROM (render/derived.py). Every
    value comes checked by the reader (sections.py forms): a FROM line gets nothing else."""
    if record.build.image_id is None:
        return None
    pushed = sorted((entry.at or "", ref, entry.digest) for ref, entry in record.pushed.items() if entry.digest)
    if not pushed:
        return record.build.image_id
    _, ref, digest = pushed[-1]
    return f"{ImageRef.parse(ref).repository}@{digest}"


def record_build(directory: Path, build: BuildRecord) -> Record:
    """Write the build's record, keeping what the previous record says of this very image (its smoke
    runs and pushes) and of the other platforms built from the same context (`invoke publish` needs
    every one). Returns what was written."""
    previous = previous_record(directory)
    record = Record.of(build=build, pushed={})
    if build.reused and previous.build.image_id == build.image_id:
        # the same image again: its build facts and later sections stay; the tags add up
        known = previous.build.tags or []
        record = replace(previous, build=replace(previous.build, tags=sorted(set(known) | set(build.tags)),
                                                 reused=True))
    platforms = {platform: entry for platform, entry in previous.platforms.items()
                 if entry.context_sha256 == build.context_sha256}
    platforms[build.platform] = PlatformBuild.of(image_id=build.image_id, context_sha256=build.context_sha256,
                                                 tags=record.build.tags)
    record = replace(record, platforms=dict(sorted(platforms.items())))
    write_record(directory, record)
    return record


def require(value, directory: Path, key: str, what: str):
    """`value` (a field of the record) when the record holds it; otherwise one clean error naming the
    file and the key: a step that needs what the record lacks."""
    if value is None:
        raise RecordDamaged(record_path(directory), key, f"expected {what}, got {excerpt(value)}; "
                                                         f"rebuild (`invoke build --release {directory.name}`)")
    return value


def write_record(directory: Path, record: Record) -> Path:
    text = json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n"
    # under the release's lock: a render swapping build/R/ carries the record over, and must not
    # do so while it is being replaced
    with release_lock(directory):
        return ReleaseDir.of(directory).write(RECORD, text)

