"""A derived release's lock (constraints/R.lock): every distribution the team's requirements add to
the base (or move, under an override), pinned exactly, with the hashes the index gives.

The file is a pip requirements file (`pip install --no-deps --require-hashes -r`): one entry per
distribution, `NAME==VERSION` (with an environment marker where the platforms resolve differently),
its `--hash` lines after it. Its header records the digest of every input of the resolve (the base's
pins, the requirements, the overrides, the indexes, the Python and platforms): when that digest is
not the one the inputs give now, the lock is stale and `build` refuses it. It records the digest of its
own body too (`body-sha256`: the entries exactly as resolve wrote them), so that an entry edited by hand
in a way no rule of derive/lock_check.py sees (a `# via` forged, a version moved within the team's
specifier) is refused all the same: a lock is exactly what `resolve` writes. (A digest, not a signature:
it stops an edit, not someone who recomputes it; the review of the lock's diff does that.) Written only
by `ngcbuild resolve` (derive/lockfile.py); read here, by the loader.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.markers import InvalidMarker, Marker
from packaging.utils import canonicalize_name

from ngcbuild.core.errors import ManifestError, excerpt
from ngcbuild.core.files import read_text
from ngcbuild.manifest.constraints import parse_pin

MAX_BYTES = 5_000_000
INPUTS_KEY = "inputs-sha256"
BODY_KEY = "body-sha256"
_HASH_LINE = re.compile(r"--hash=sha256:([0-9a-f]{64})( \\)?")
_VIA = re.compile(r"# via (\S.*)")
_INLINE_VIA = re.compile(r"(.*?\S)\s+# via (\S.*)")
_KEYED = re.compile(r"# ([a-z][a-z0-9-]*): (.*)")


@dataclass(frozen=True)
class LockedPin:
    name: str
    version: str | None  # None for a direct reference (NAME @ URL)
    hashes: tuple[str, ...]
    marker: str | None = None
    url: str | None = None
    # Who asked for it, as the resolver said: "-r" (a requirement of the resolve) or a distribution's
    # canonical name. The lock's check follows these from the team's requirements (lock_check.py).
    via: tuple[str, ...] = ()
    line: int = field(default=0, compare=False)  # where its entry begins in the file it was read from

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)

    @property
    def requirement(self) -> str:
        """The entry's first line without its hashes: NAME==VERSION [; marker]."""
        head = f"{self.name} @ {self.url}" if self.url else f"{self.name}=={self.version}"
        return f"{head} ; {self.marker}" if self.marker else head

    def text(self, requirements: str = "") -> str:
        """The entry as the lock writes it; `requirements` names the file a "-r" requirer stands for."""
        lines = [self.requirement] + [f"--hash=sha256:{h}" for h in self.hashes]
        ordered = sorted(set(self.via), key=lambda who: (who != "-r", who))
        via = [f"-r {requirements}" if who == "-r" else who for who in ordered]
        return " \\\n    ".join(lines) + "\n" + (f"    # via {', '.join(via)}\n" if via else "")


@dataclass(frozen=True)
class Lock:
    path: Path
    inputs: str
    header: dict[str, list[str]]  # the keyed comment lines: resolver, target, override...
    pins: tuple[LockedPin, ...]
    body_sha256: str | None = None  # what the header says the body's digest is (None: it says nothing)
    body_actual: str = ""  # the digest of the body as read

    @property
    def body_as_written(self) -> bool:
        return self.body_sha256 is not None and self.body_sha256 == self.body_actual

    def get(self, name: str) -> tuple[LockedPin, ...]:
        key = canonicalize_name(name)
        return tuple(p for p in self.pins if p.key == key)


def lock_path(constraints_dir: Path, release: str) -> Path:
    return constraints_dir / f"{release}.lock"


def lock_text(inputs: str, header: list[tuple[str, str]], pins: list[LockedPin], intro: list[str],
              requirements: str = "") -> str:
    """The lock file: the introduction, the keyed header (inputs digest first), the entries by name,
    each with who asked for it (`requirements`: the team's file, for a requirement of its own)."""
    lines = [f"# {line}" for line in intro]
    lines.append(f"# {INPUTS_KEY}: {inputs}")
    body = "".join(p.text(requirements) for p in sorted(pins, key=lambda p: (p.key, p.marker or "")))
    lines.append(f"# {BODY_KEY}: {body_digest(body)}")
    lines += [f"# {key}: {value}" for key, value in header]
    return "\n".join(lines) + "\n" + body


def lock_body(text: str) -> str:
    """The entries of a lock: everything after its header (the comment lines it starts with)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "".join(lines[start:])


def body_digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def read_lock(path: Path, *, within: Path) -> Lock:
    text = read_text(path, MAX_BYTES, "a lock written by `ngcbuild resolve`", "no lock", within=within)
    return parse_lock(path, text)


def parse_lock(path: Path, text: str) -> Lock:
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        keyed = _KEYED.fullmatch(line)
        if keyed:
            header.setdefault(keyed[1], []).append(keyed[2])
    pins = parse_entries(path, text)
    inputs = header.get(INPUTS_KEY, [])
    if len(inputs) != 1 or not re.fullmatch(r"[0-9a-f]{64}", inputs[0]):
        raise ManifestError(path, INPUTS_KEY, f"expected one line `# {INPUTS_KEY}: <64 hex digits>`{_AGAIN}")
    seen = set()
    for pin in pins:
        if (pin.key, pin.marker) in seen:
            raise ManifestError(path, pin.name, f"locked twice{' for ' + pin.marker if pin.marker else ''}{_AGAIN}")
        seen.add((pin.key, pin.marker))
    bodies = header.get(BODY_KEY, [])
    if len(bodies) > 1 or (bodies and not re.fullmatch(r"[0-9a-f]{64}", bodies[0])):
        raise ManifestError(path, BODY_KEY, f"expected one line `# {BODY_KEY}: <64 hex digits>`{_AGAIN}")
    return Lock(path, inputs[0], header, tuple(pins), bodies[0] if bodies else None, body_digest(lock_body(text)))


_AGAIN = "; resolve again to rewrite it (ngcbuild resolve)"


def parse_entries(path: Path, text: str) -> list[LockedPin]:
    """The entries of a requirements file as a resolver writes it: NAME==VERSION [; marker], each
    followed by its --hash lines and `# via A, B` (after them, or on the entry's line without hashes);
    other comment lines skipped."""
    pins: list[LockedPin] = []
    current: dict | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"line {number}"
        if current is not None:  # the hash lines of an entry
            match = _HASH_LINE.fullmatch(line.strip())
            if not match:
                raise ManifestError(path, where, f"{excerpt(line)} is not a --hash=sha256:<64 hex> line{_AGAIN}")
            current["hashes"].append(match[1])
            if not match[2]:
                pins.append(_pin(current))
                current = None
            continue
        via = _VIA.fullmatch(line.strip())
        if via and pins and line.startswith(" "):
            pins[-1] = replace(pins[-1], via=_via_names(via[1]))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        body, continued = (line[:-2], True) if line.endswith(" \\") else (line, False)
        inline = _INLINE_VIA.fullmatch(body)
        body = inline[1] if inline else body
        entry = _entry(path, where, body, _AGAIN)
        entry["line"] = number
        if inline:
            entry["via"] = _via_names(inline[2])
        if continued:
            current = entry
        else:
            pins.append(_pin(entry))
    if current is not None:
        raise ManifestError(path, "", f"ends inside the entry of {current['name']}{_AGAIN}")
    return pins


def _pin(entry: dict) -> LockedPin:
    return LockedPin(**{**entry, "hashes": tuple(entry["hashes"]), "via": tuple(entry.get("via", ()))})


def _via_names(text: str) -> tuple[str, ...]:
    """`-r FILE, accelerate, -c FILE` -> ("-r", "accelerate", "-c"): a requirements file is "-r", whatever its name."""
    names = []
    for item in text.split(","):
        item = item.strip()
        if item.startswith(("-r", "-c")):
            names.append(item[:2])
        elif item:
            names.append(canonicalize_name(item))
    return tuple(dict.fromkeys(names))


def _entry(path: Path, where: str, body: str, again: str) -> dict:
    head, _, marker = body.partition(";")
    head, marker = head.strip(), marker.strip() or None
    if marker is not None:
        try:
            Marker(marker)
        except InvalidMarker:
            raise ManifestError(path, where, f"{excerpt(marker)} is not an environment marker{again}") from None
    if " @ " in head:
        name, _, url = head.partition(" @ ")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or not url.startswith(("https://", "git+https://")):
            raise ManifestError(path, where, f"{excerpt(head)} is not NAME @ URL{again}")
        return {"name": name, "version": None, "hashes": [], "marker": marker, "url": url}
    pin = parse_pin(head, 0)
    if pin is None:
        raise ManifestError(path, where, f"{excerpt(head)} is not NAME==VERSION{again}")
    return {"name": pin.name, "version": pin.version, "hashes": [], "marker": marker}


def inputs_digest(*, base: str, base_pins: list[str], requirements: list[str], overrides: list[str],
                  protected: list[str], indexes: list[str], targets: list[str], index_as_of: str | None) -> str:
    """The digest of what a resolve reads: the same inputs give the same lock, other inputs a stale one."""
    data = {"base": base, "base_pins": sorted(base_pins), "requirements": list(requirements),
            "overrides": sorted(overrides), "protected": sorted(protected), "indexes": list(indexes),
            "targets": list(targets), "index_as_of": index_as_of}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
