"""How conflicts read: one entry per conflict (the team's requirement, the base pin, the chain, the
override that would accept it, the traps), as text for people and JSON for CI."""

from __future__ import annotations

import json

from ngcbuild.core.errors import UserError
from ngcbuild.resolver.conflicts import Conflict


class Conflicts(UserError):
    """The requirements do not fit the base: exit 2, nothing locked, nothing built or pulled."""


def conflicts_text(release: str, base: str, manifest: str, found: list[Conflict], where: str) -> str:
    lines = [f"{release}: {len(found)} conflict{'s' if len(found) != 1 else ''} with {base} ({where}); "
             "nothing was locked"]
    for number, conflict in enumerate(found, start=1):
        lines.append(f"conflict {number}: {conflict.requirement}")
        if conflict.collides_with:
            kinds = [f"{pin} (protected)" if pin.key in conflict.protected else str(pin)
                     for pin in conflict.collides_with]
            lines.append(f"  collides with {base}'s pin{'s' if len(kinds) > 1 else ''} {', '.join(kinds)}")
        lines.append(f"  chain: {conflict.chain}")
        for trap in conflict.traps:
            lines.append(f"  trap: {trap}")
        entry = conflict.override_entry(f"<why {release} needs {conflict.requirement}>")
        if entry is None:
            why = "its pins are not what stops it" if not conflict.collides_with else "it fails with them released too"
            lines.append(f"  no override accepts it ({why}); resolver: {conflict.explanation}")
        else:
            gives = ", ".join(f"{name} {version}" for name, version in sorted(conflict.accepted_with.items()))
            lines.append(f"  accepted (with {gives}) by this entry of derive.overrides in {manifest}:")
            lines += [f"    {line}" for line in entry.splitlines()]
    return "\n".join(lines) + "\n"


def conflicts_json(release: str, base: str, found: list[Conflict], where: str) -> str:
    return json.dumps({"release": release, "base": base, "fits": not found, "target": where,
                       "conflicts": [c.to_json(base) for c in found]}, indent=2) + "\n"
