"""build/R/record.json: what was built and pushed, written atomically.

The build's part of the record is a `BuildRecord`, made in one place for a fresh build and for an
image reused by its context hash alike. Later steps (push, smoke, sbom, publish, promote) add their
own sections to the same file.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ngcbuild.core.errors import ManifestError, RecordDamaged, UserError, excerpt
from ngcbuild.core.files import exists, parse_json, read_text
from ngcbuild.core.names import ImageNames
from ngcbuild.workspace.atomic_dir import release_lock
from ngcbuild.workspace.release_dir import RECORD, ReleaseDir


def utc_timestamp(seconds: float | None = None) -> str:
    """The one timestamp format of our records: 2025-12-01T12:00:00Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass(frozen=True)
class BuildFacts:
    """What only a build that ran knows (a reused image has none of these)."""

    duration_s: float
    steps: int
    cached_steps: int
    step_log: list
    ca_bundle_used: bool
    wheels: list[str]
    source_revision: str | None
    stages: dict = field(default_factory=dict)  # builder stage -> its image id (the layer cache)
    cache_from: list = field(default_factory=list)  # cache images pulled from --cache-from


@dataclass(frozen=True)
class BuildRecord:
    release: str
    image_id: str
    tags: list[str]
    registry: str
    size_bytes: int
    layers: int
    context_sha256: str
    platform: str
    base_image: str
    built_at: str | None
    reused: bool = False
    facts: BuildFacts | None = None
    extra: dict = field(default_factory=dict)  # sections of later steps, kept as they are

    @classmethod
    def of_image(cls, names: ImageNames, image: dict, tags: list[str], registry: str, context_hash: str,
                 platform: str, facts: BuildFacts | None = None) -> "BuildRecord":
        """The record of `image` (the engine's inspect) built or reused for `names`."""
        return cls(release=names.release, image_id=image["Id"], tags=list(tags), registry=registry,
                   size_bytes=image["Size"], layers=len(image["RootFS"]["Layers"]), context_sha256=context_hash,
                   platform=platform, base_image=names.base_image,
                   built_at=image.get("Created") if facts is None else utc_timestamp(),
                   reused=facts is None, facts=facts, extra={"pushed": {}})

    def to_json(self) -> dict:
        data = {key: value for key, value in asdict(self).items() if key not in ("facts", "extra")}
        if self.facts is not None:
            del data["reused"]
            data.update(asdict(self.facts))
        return {**self.extra, **data}


def record_path(directory: Path) -> Path:
    return directory / RECORD


MAX_BYTES = 50_000_000


def read_record(directory: Path) -> dict:
    """The record of build/R/ (a JSON object), read like every user file: build/R/ lies in the
    project, and a link out of it is refused."""
    path = record_path(directory)
    if not exists(path):  # a step run before the build: the user's order, not a damaged record
        raise UserError(f"{path}: no build record; run `invoke build --release {directory.name}` first")
    try:
        text = read_text(path, MAX_BYTES, "a build record (JSON object)", "no build record",
                         within=directory.parent.parent)
    except ManifestError as exc:  # a link out of the project, a FIFO, a folder, too large, not UTF-8
        raise RecordDamaged(path, "", f"{exc.expected}; rebuild to rewrite it") from None
    record = parse_json(path, text, RecordDamaged, "rebuild to rewrite it")
    if not isinstance(record, dict):
        raise RecordDamaged(path, "", f"expected a JSON object, got {type(record).__name__}; rebuild to rewrite it")
    return record


def previous_record(directory: Path) -> dict:
    """The record now in build/R/, or an empty one."""
    return read_record(directory) if record_path(directory).is_file() else {}


def record_build(directory: Path, record: BuildRecord) -> dict:
    """Write the build's record, keeping what the previous record says of this very image (its smoke
    runs and pushes) and of the other platforms built from the same context (`invoke publish` needs
    every one). Returns what was written."""
    previous = previous_record(directory)
    data = record.to_json()
    if record.reused and previous.get("image_id") == record.image_id:
        # the same image again: its build facts and later sections stay; the tags add up
        known = previous.get("tags") if isinstance(previous.get("tags"), list) else []
        data = {**previous, "tags": sorted(set(known) | set(record.tags)), "reused": True}
    platforms = {
        platform: entry for platform, entry in (previous.get("platforms") or {}).items()
        if isinstance(entry, dict) and entry.get("context_sha256") == record.context_sha256
    }
    platforms[record.platform] = {"image_id": record.image_id, "context_sha256": record.context_sha256,
                                  "tags": data["tags"]}
    data["platforms"] = dict(sorted(platforms.items()))
    write_record(directory, data)
    return data


def require(record: dict, directory: Path, key: str, kind: type, what: str):
    """record[key] when it is of `kind`; otherwise one clean error naming the file and the key."""
    value = record.get(key)
    if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
        raise RecordDamaged(record_path(directory), key, f"expected {what}, got {excerpt(value)}; "
                                                         f"rebuild (`invoke build --release {directory.name}`)")
    return value


def write_record(directory: Path, record: dict) -> Path:
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    # under the release's lock: a render swapping build/R/ carries the record over, and must not
    # do so while it is being replaced
    with release_lock(directory):
        return ReleaseDir.of(directory).write(RECORD, text)
