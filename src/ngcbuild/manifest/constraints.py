"""Per-release pip constraints (constraints/R.txt): exact pins, one per line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from ngcbuild.core.errors import ManifestError, excerpt
from ngcbuild.core.files import read_text

# PEP 508's project name; no nested quantifier, so a failed match costs linear time.
_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# What a PEP 440 version may hold, checked before `packaging` parses it (no space, quote or shell character).
_VERSION_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+!_-")
MAX_BYTES = 200_000


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    line: int

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"


def parse_pin(body: str, line: int) -> Pin | None:
    """`name==version` with a PEP 440 version (parsed by `packaging`), or None."""
    name, sep, version = body.partition("==")
    if not sep or not _NAME_RE.fullmatch(name) or not version or not set(version) <= _VERSION_CHARS:
        return None
    try:
        Version(version)
    except ValueError:  # InvalidVersion, or a number too long for int()
        return None
    return Pin(name, version, line)


@dataclass(frozen=True)
class Constraints:
    path: Path
    pins: tuple[Pin, ...]

    def get(self, package: str) -> Pin | None:
        key = canonicalize_name(package)
        return next((p for p in self.pins if p.key == key), None)

    def text(self) -> str:
        """The pins as pip reads them, sorted by name: the constraints file staged into the build."""
        return "".join(f"{p}\n" for p in sorted(self.pins, key=lambda p: p.key))


def load_constraints(path: Path, manifest: Path | None = None, *, within: Path) -> Constraints:
    owner = f" (needed by {manifest})" if manifest else ""
    text = read_text(path, MAX_BYTES, "a constraints file",
                     f"constraints file not found{owner}; expected lines such as numpy==2.3.4", within=within)
    pins: dict[str, Pin] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        pin = parse_pin(body, number)
        if pin is None:
            raise ManifestError(path, f"line {number}",
                                f"{excerpt(body)} is not an exact pin; expected NAME==VERSION (e.g. numpy==2.3.4)")
        if pin.key in pins:
            first = pins[pin.key]
            what = "duplicate pin" if first.version == pin.version else "conflicting pin"
            raise ManifestError(path, f"line {number}",
                                f"{what} {pin}; line {first.line} already pins {first}")
        pins[pin.key] = pin
    if not pins:
        raise ManifestError(path, "", "no pins; expected lines such as numpy==2.3.4")
    return Constraints(path, tuple(pins.values()))
