"""Per-release pip constraints (constraints/R.txt): exact pins, one per line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from .errors import ManifestError
from .inputs import read_text

_PIN_RE = re.compile(r"(?P<name>[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)"
                     r"==(?P<version>[0-9]+(\.[0-9]+)*([.+_-]?[A-Za-z0-9]+)*)")
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


def load_constraints(path: Path, manifest: Path | None = None) -> Constraints:
    owner = f" (needed by {manifest})" if manifest else ""
    text = read_text(path, MAX_BYTES, "a constraints file",
                     f"constraints file not found{owner}; expected lines such as numpy==2.3.4")
    pins: dict[str, Pin] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        match = _PIN_RE.fullmatch(body)
        if not match:
            raise ManifestError(path, f"line {number}",
                                f"{body!r} is not an exact pin; expected NAME==VERSION (e.g. numpy==2.3.4)")
        pin = Pin(match["name"], match["version"], number)
        if pin.key in pins:
            first = pins[pin.key]
            what = "duplicate pin" if first.version == pin.version else "conflicting pin"
            raise ManifestError(path, f"line {number}",
                                f"{what} {pin}; line {first.line} already pins {first}")
        pins[pin.key] = pin
    if not pins:
        raise ManifestError(path, "", "no pins; expected lines such as numpy==2.3.4")
    return Constraints(path, tuple(pins.values()))
