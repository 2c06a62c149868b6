"""The records of a release's platform jobs, gathered into one for the multi-arch list.

In the release workflow each platform is built, smoke-tested and pushed on a runner of its own
architecture, and each job leaves its own build/R/record.json (an artifact). The publish job reads
them all: every platform the manifest lists must have a record of the current context, a smoke run
that passed on that very image, and a push to the registry being published; otherwise nothing is
written. The gathered record keeps each platform's image, pushes and smoke record, so promotion
can check every platform of the list, not one.
"""

from __future__ import annotations

import json
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.references import ImageRef, ReferenceProblem
from ngcbuild.engine.record import RECORD


class PlatformMissing(OperationError):
    pass


def load_records(directory: Path) -> list[tuple[Path, dict]]:
    """Every record.json under `directory` (one folder per downloaded artifact)."""
    if not directory.is_dir():
        raise UserError(f"--records {directory}: no such directory")
    found = []
    for path in sorted(directory.rglob(RECORD)):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"{path}: not a readable build record ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("platform"), str):
            raise UserError(f"{path}: not a build record (no `platform`)")
        found.append((path, record))
    if not found:
        raise UserError(f"--records {directory}: no {RECORD} under it (download the platform jobs' artifacts there)")
    return found


def smoke_failure(smoke: dict | None, image_id: str) -> str | None:
    """Why `smoke` does not prove `image_id`, or None when it does."""
    if not smoke:
        return "has no smoke record"
    if smoke.get("failed", 1) + smoke.get("errors", 1) or smoke.get("exit_code") != 0:
        return (f"failed its smoke run ({smoke.get('failed')} failed, {smoke.get('errors')} errors, "
                f"exit {smoke.get('exit_code')})")
    if smoke.get("image_id") != image_id:
        return f"has a smoke record of another image ({str(smoke.get('image_id'))[:19]})"
    return None


def gather(records: list[tuple[Path, dict]], name: str, platforms: tuple[str, ...], context_hash: str,
           host: str) -> tuple[dict, dict[str, tuple[str, str]]]:
    """(the gathered record, platform -> (pushed ref, digest) in `host`). Refuses, naming every
    platform and why, unless each listed platform was built from this context, smoke-tested and pushed."""
    by_platform: dict[str, tuple[Path, dict]] = {}
    for path, record in records:
        if record.get("release") != name:
            raise UserError(f"{path}: a record of release {record.get('release')!r}, not {name}")
        if record["platform"] in by_platform:
            raise UserError(f"{path}: a second record for {record['platform']} "
                            f"(the first is {by_platform[record['platform']][0]})")
        by_platform[record["platform"]] = (path, record)
    problems, pushed = [], {}
    for platform in platforms:
        if platform not in by_platform:
            problems.append(f"{platform}: no record (its build job did not finish)")
            continue
        path, record = by_platform[platform]
        if record.get("context_sha256") != context_hash:
            problems.append(f"{platform}: {path} is of context {str(record.get('context_sha256'))[:12]}, "
                            f"not {context_hash[:12]}")
            continue
        why = smoke_failure(record.get("smoke"), record["image_id"])
        if why:
            problems.append(f"{platform}: its image {record['image_id'][:19]} {why}")
            continue
        refs = sorted(ref for ref, entry in (record.get("pushed") or {}).items() if entry.get("registry") == host)
        if not refs:
            problems.append(f"{platform}: nothing pushed to {host}")
            continue
        try:
            ImageRef.parse(refs[-1], need_tag=True)
        except ReferenceProblem as exc:
            problems.append(f"{platform}: {path}: a pushed reference is no image reference ({exc})")
            continue
        pushed[platform] = (refs[-1], record["pushed"][refs[-1]]["digest"])
    if problems:
        raise PlatformMissing(f"{name} lists {', '.join(platforms)}; cannot publish: " + "; ".join(problems)
                              + ". Nothing was written.")
    first = by_platform[platforms[0]][1]
    gathered = {**first, "platforms": {
        platform: {
            "image_id": record["image_id"],
            "context_sha256": record["context_sha256"],
            "tags": record.get("tags", []),
            "pushed": record.get("pushed", {}),
            "smoke": record["smoke"],
            "record": str(path),
        }
        for platform, (path, record) in sorted(by_platform.items()) if platform in platforms
    }}
    return gathered, pushed
