"""Reading a user's input file (manifest, constraints): present, not huge, UTF-8 — or one clear error."""

from __future__ import annotations

from pathlib import Path

from .errors import ManifestError


def read_text(path: Path, limit: int, what: str, missing: str) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(path, "", missing) from None
    if len(raw) > limit:
        raise ManifestError(path, "", f"file is {len(raw)} bytes; {what} is expected under {limit}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(path, "", f"not UTF-8 text (byte {exc.start}: {raw[exc.start]:#04x})") from None
