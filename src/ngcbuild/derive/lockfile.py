"""The lock's entries from the resolutions of every target: each distribution the base does not
already hold at its pin, one entry when every platform resolved the same version (the hashes of all
its files, who asked for it on any platform), one entry per platform with a `platform_machine`
marker where they differ."""

from __future__ import annotations

from ngcbuild.manifest.lock import LockedPin
from ngcbuild.manifest.platforms import MACHINES


def lock_entries(resolved: dict[str, list[LockedPin]], unchanged: set[str]) -> list[LockedPin]:
    """`resolved`: platform -> the distributions uv resolved there; `unchanged`: canonical names of
    the base's pins that hold (they stay in the base's layers, not in the lock)."""
    by_name: dict[str, dict[str, LockedPin]] = {}
    for platform, pins in sorted(resolved.items()):
        for pin in pins:
            if pin.key not in unchanged:
                by_name.setdefault(pin.key, {})[platform] = pin
    entries = []
    for _key, found in sorted(by_name.items()):
        first = next(iter(found.values()))
        same = len(found) == len(resolved) and len({(p.version, p.url) for p in found.values()}) == 1
        if same:
            hashes = tuple(sorted({h for p in found.values() for h in p.hashes}))
            via = tuple(dict.fromkeys(who for p in found.values() for who in p.via))
            entries.append(LockedPin(first.name, first.version, hashes, first.marker, first.url, via))
            continue
        for platform, pin in sorted(found.items()):
            marker = f'platform_machine == "{MACHINES[platform]}"'
            if pin.marker:
                marker = f"({pin.marker}) and {marker}"
            entries.append(LockedPin(pin.name, pin.version, pin.hashes, marker, pin.url, pin.via))
    return entries
