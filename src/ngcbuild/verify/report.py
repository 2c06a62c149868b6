"""What verify found: one row per check, and the table and JSON a user or CI reads."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ngcbuild.core.errors import OperationError

VERIFIED, FAILED, NOT_VERIFIED = "verified", "failed", "not verified"


class VerifyFailed(OperationError):
    """A pin that will not install: exit status 1."""


@dataclass(frozen=True)
class Row:
    kind: str  # pip, wheel-tags, closure, pip-check, module, git, url, base, apt, apt-key, apt-list, conda
    name: str
    pin: str
    platform: str  # linux/amd64, or "" where the platform does not matter
    status: str
    reason: str = ""


def summary(rows: list[Row]) -> dict[str, int]:
    return {status: sum(r.status == status for r in rows) for status in (VERIFIED, FAILED, NOT_VERIFIED)}


def json_text(release: str, rows: list[Row]) -> str:
    return json.dumps({"release": release, "summary": summary(rows), "rows": [asdict(r) for r in rows]},
                      indent=2) + "\n"


def table_text(release: str, rows: list[Row]) -> str:
    header = ("kind", "name", "pin", "platform", "status", "reason")
    lines = [f"verify {release}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join((r.kind, r.name, r.pin, r.platform, r.status, r.reason)) + " |")
    counts = summary(rows)
    lines += ["", ", ".join(f"{n} {status}" for status, n in counts.items())]
    return "\n".join(lines) + "\n"
