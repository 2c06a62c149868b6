"""build/R/record.json: what was built and pushed, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .errors import UserError

RECORD = "record.json"


def record_path(directory: Path) -> Path:
    return directory / RECORD


def read_record(directory: Path) -> dict:
    path = record_path(directory)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no build record; run `invoke build --release {directory.name}` first") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); rebuild to rewrite it") from None


def write_record(directory: Path, record: dict) -> Path:
    path = record_path(directory)
    directory.mkdir(parents=True, exist_ok=True)
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
