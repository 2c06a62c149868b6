"""build/R/record.json: what was built and pushed, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .atomic_dir import release_lock
from .errors import ManifestError, excerpt
from .inputs import read_text
from .outputs import make_dir, storing

RECORD = "record.json"


def record_path(directory: Path) -> Path:
    return directory / RECORD


MAX_BYTES = 50_000_000


def read_record(directory: Path) -> dict:
    """The record of build/R/ (a JSON object), read like every user file: build/R/ lies in the
    project, and a link out of it is refused."""
    path = record_path(directory)
    text = read_text(path, MAX_BYTES, "a build record (JSON object)",
                     f"no build record; run `invoke build --release {directory.name}` first",
                     within=directory.parent.parent)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(path, "", f"not valid JSON ({exc.msg} at line {exc.lineno}); "
                                      "rebuild to rewrite it") from None
    except RecursionError:
        raise ManifestError(path, "", "nested too deeply; rebuild to rewrite it") from None
    if not isinstance(record, dict):
        raise ManifestError(path, "", f"expected a JSON object, got {type(record).__name__}; rebuild to rewrite it")
    return record


def require(record: dict, directory: Path, key: str, kind: type, what: str):
    """record[key] when it is of `kind`; otherwise one clean error naming the file and the key."""
    value = record.get(key)
    if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
        raise ManifestError(record_path(directory), key, f"expected {what}, got {excerpt(value)}; "
                                                         f"rebuild (`invoke build --release {directory.name}`)")
    return value


def write_record(directory: Path, record: dict) -> Path:
    path = record_path(directory)
    make_dir(directory)
    # under the release's lock: a render swapping build/R/ carries the record over, and must not
    # do so while it is being replaced
    with storing(path), release_lock(directory):
        fd, tmp = tempfile.mkstemp(prefix=".record-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle, indent=2, sort_keys=True)
                handle.write("\n")
            os.replace(tmp, path)
        except BaseException:  # Ctrl-C or a full disk: leave the old record and no temporary file
            Path(tmp).unlink(missing_ok=True)
            raise
    return path
