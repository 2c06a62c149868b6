"""The records of a release's platform jobs, gathered into one for the multi-arch list.

In the release workflow each platform is built, smoke-tested and pushed on a runner of its own
architecture, and each job leaves its own build/R/record.json (an artifact). The publish job reads
them all: every platform the manifest lists must have a record of the current context, a smoke run
that passed on that very image, and a push to the registry being published; otherwise nothing is
written. The gathered record keeps each platform's image, pushes and smoke record, so promotion
can check every platform of the list, not one.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ngcbuild.core.errors import ManifestError, OperationError, UserError, excerpt, shown_path
from ngcbuild.core.files import nesting, parse_json, read_text
from ngcbuild.core.references import ImageRef, ReferenceProblem
from ngcbuild.workspace.record import MAX_BYTES, RECORD, Record, parse_record
from ngcbuild.workspace.sections import FAILED, NOT_RUN, PASSED, PlatformBuild, SmokeRun, smoke_verdict


class PlatformMissing(OperationError):
    pass


MAX_RECORDS = 64  # platform jobs of one release: a handful; more is not a records folder
MAX_DEPTH = 4  # folders below DIR: one per downloaded artifact
MAX_NESTING = 32  # a record is a few levels deep; deeper JSON is not one


def load_records(directory: Path) -> list[tuple[Path, Record]]:
    """Every record.json in `directory` or a folder below it (one per downloaded artifact), each read
    through the project's one reader (a regular file inside DIR after links, bounded, never a FIFO or
    device) and checked field by field: a bad one is a ManifestError naming the file and the key."""
    if not directory.is_dir():
        raise UserError(f"--records {shown_path(directory)}: no such directory")
    found = []
    for path in _record_files(directory):
        text = read_text(path, MAX_BYTES, "a build record (JSON object)", "no such file", within=directory)
        record = parse_json(path, text, ManifestError, "expected a build record")
        found.append((path, _checked(path, record)))
    if not found:
        raise UserError(f"--records {shown_path(directory)}: no {RECORD} under it "
                        "(download the platform jobs' artifacts there)")
    return found


def _record_files(directory: Path) -> list[Path]:
    """record.json files at most MAX_DEPTH folders down; linked folders are not entered."""
    found = []
    for root, folders, files in os.walk(directory, onerror=None, followlinks=False):
        depth = len(Path(root).relative_to(directory).parts)
        if depth >= MAX_DEPTH:
            folders[:] = []
        folders.sort()
        if RECORD in files:
            found.append(Path(root) / RECORD)
            if len(found) > MAX_RECORDS:
                raise UserError(f"--records {shown_path(directory)}: more than {MAX_RECORDS} {RECORD} files; "
                                "expected one per platform job")
    return sorted(found)


def _checked(path: Path, data) -> Record:
    """The record when every field gather() reads has the type it must (the record's one reader,
    with ManifestError: the records are handed in); else a ManifestError naming the key."""
    if not isinstance(data, dict):
        raise ManifestError(path, "", f"expected a JSON object (a build record), got {type(data).__name__}")
    if nesting(data, MAX_NESTING) > MAX_NESTING:
        raise ManifestError(path, "", f"nested more than {MAX_NESTING} levels; expected a build record")
    record = parse_record(path, data, ManifestError, hint="")
    build = record.build
    for key, value in (("platform", build.platform), ("release", build.release), ("image_id", build.image_id),
                       ("context_sha256", build.context_sha256)):
        if value is None:
            raise ManifestError(path, key, "expected a string" + ("" if key in data else " (the key is missing)"))
    for ref, entry in record.pushed.items():
        if entry.registry is None or entry.digest is None:
            raise ManifestError(path, f"pushed.{excerpt(ref, 60)}", "expected {registry: string, digest: string}")
    return record


def smoke_failure(smoke: SmokeRun | None, image_id: str | None) -> str | None:
    """Why `smoke` does not prove `image_id`, or None when it does (sections.smoke_verdict)."""
    verdict = smoke_verdict(smoke, image_id)
    if verdict == NOT_RUN:
        return "has no smoke record"
    if verdict == FAILED:
        return f"failed its smoke run ({smoke.counts()})"
    if verdict != PASSED:
        return f"has a smoke record of another image ({str(smoke.image_id)[:19]})"
    return None


def gather(records: list[tuple[Path, Record]], name: str, platforms: tuple[str, ...], context_hash: str,
           host: str) -> tuple[Record, dict[str, tuple[str, str]]]:
    """(the gathered record, platform -> (pushed ref, digest) in `host`). Refuses, naming every
    platform and why, unless each listed platform was built from this context, smoke-tested and pushed.
    `context_hash` is the hash, or a function giving it for a record: a platform built FROM a mirror
    of the base (its record's `base_image`, e.g. an arm64 base bootstrapped here) renders another
    FROM line, so its context is the release rendered FROM that mirror."""
    by_platform: dict[str, tuple[Path, Record]] = {}
    for path, record in records:
        if record.build.release != name:
            raise UserError(f"{path}: a record of release {record.build.release!r}, not {name}")
        if record.build.platform in by_platform:
            raise UserError(f"{path}: a second record for {record.build.platform} "
                            f"(the first is {by_platform[record.build.platform][0]})")
        by_platform[record.build.platform] = (path, record)
    problems, pushed = [], {}
    for platform in platforms:
        if platform not in by_platform:
            problems.append(f"{platform}: no record (its build job did not finish)")
            continue
        path, record = by_platform[platform]
        expected = context_hash(record) if callable(context_hash) else context_hash
        if record.build.context_sha256 != expected:
            problems.append(f"{platform}: {path} is of context {str(record.build.context_sha256)[:12]}, "
                            f"not {expected[:12]}")
            continue
        why = smoke_failure(record.smoke, record.build.image_id)
        if why:
            problems.append(f"{platform}: its image {record.build.image_id[:19]} {why}")
            continue
        refs = sorted(ref for ref, entry in record.pushed.items() if entry.registry == host)
        if not refs:
            problems.append(f"{platform}: nothing pushed to {host}")
            continue
        try:
            ImageRef.parse(refs[-1], need_tag=True)
        except ReferenceProblem as exc:
            problems.append(f"{platform}: {path}: a pushed reference is no image reference ({exc})")
            continue
        pushed[platform] = (refs[-1], record.pushed[refs[-1]].digest)
    if problems:
        raise PlatformMissing(f"{name} lists {', '.join(platforms)}; cannot publish: " + "; ".join(problems)
                              + ". Nothing was written.")
    first = by_platform[platforms[0]][1]
    gathered = replace(first, platforms={
        platform: PlatformBuild.of(image_id=record.build.image_id, context_sha256=record.build.context_sha256,
                                   tags=record.build.tags or [], pushed=record.pushed, smoke=record.smoke,
                                   record=str(path))
        for platform, (path, record) in sorted(by_platform.items()) if platform in platforms
    })
    return gathered, pushed
