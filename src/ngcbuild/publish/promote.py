"""Promote a pushed image from one registry to another by digest, without rebuilding.

Only an image whose smoke suite passed is promoted: the smoke record in build/R/record.json must
exist, have passed, and describe the very image the promoted digest holds. And only an image whose
attestation holds (supply/attest.py): each image manifest promoted (each platform's of a list) has a
provenance signed by a trusted key and about that very digest, and any SBOM or audit report attached
is the one the signed statement names; these are copied with the image (after it: they name it),
and nothing is copied when one fails. skopeo copies the manifest (every platform of a list) with its
digest preserved; the target's digest is then read back through the registry API and must be the same.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

from ngcbuild.core.errors import OperationError, RecordDamaged, UserError
from ngcbuild.core.project import Project
from ngcbuild.core.references import registry_host
from ngcbuild.manifest.loader import load_release
from ngcbuild.registry.client import Registry, base_url, credentials
from ngcbuild.workspace.record import Record, read_record, record_path, write_record
from ngcbuild.workspace.sections import (
    FAILED,
    NOT_RUN,
    PASSED,
    Promoted,
    PromotedAttestation,
    Published,
    Pushed,
    SmokeRun,
    smoke_verdict,
    utc_timestamp,
)

COPY_TIMEOUT_S = 3600


class PromoteRefused(OperationError):
    pass


def source_entry(record: Record, ref: str) -> tuple[Published | Pushed, set[str]] | None:
    """What the record says was put at `ref` (a published list first, else a pushed tag), and the
    ids of the images it holds."""
    published = record.published.get(ref)
    if published:
        images = {record.platforms[p].image_id for p in published.platforms}
        return published, images
    pushed = record.pushed.get(ref)
    if pushed:
        return pushed, {record.build.image_id}
    return None


def check_smoke(record: Record, name: str, images: set[str]) -> SmokeRun:
    """The passing smoke record of one of `images`, or PromoteRefused saying why there is none."""
    smoke = record.smoke
    verdict = smoke_verdict(smoke, images)
    if verdict == NOT_RUN:
        raise PromoteRefused(f"{name} has no smoke record; run `invoke smoke --release {name}` before promoting")
    if verdict == FAILED:
        raise PromoteRefused(f"the smoke suite of {name} failed ({smoke.counts()}); not promoting")
    if verdict != PASSED:
        raise PromoteRefused(f"the smoke record of {name} is for image {str(smoke.image_id)[:19]}, not for "
                             "the image being promoted; run `invoke smoke` on it first")
    return smoke


def check_every_platform(record: Record, name: str, published: Published) -> SmokeRun:
    """A multi-arch list is promoted only when every platform's image passed its own smoke run: the
    list gathered from the platform jobs carries one smoke record per platform; a list published from
    one machine has the record's one smoke run, which proves its own platform only."""
    from ngcbuild.publish.platform_records import smoke_failure

    passed = None
    for platform in published.platforms:
        entry = record.platforms[platform]
        smoke = entry.own_smoke(record.smoke)
        why = smoke_failure(smoke, entry.image_id)
        if why:
            raise PromoteRefused(f"{name} ({platform}): the image {str(entry.image_id)[:19]} {why}; not promoting "
                                 f"(run `invoke smoke --release {name}` on a {platform} runner)")
        passed = smoke
    return passed


def promote_release(project: Project, name: str, source: str, target: str, trusted_options=None,
                    out=sys.stdout) -> Promoted:
    from ngcbuild.supply import attachments
    from ngcbuild.supply.attest import subjects_of, trusted_keys, verify_image

    source, target = registry_host(source, "--from"), registry_host(target, "--to")
    if source == target:
        raise UserError(f"--from and --to are both {source}")
    trusted = trusted_keys(trusted_options, project.root)
    release = load_release(project, name).release
    directory = project.out(name)
    record = read_record(directory)
    repository, tag = release.image.repository, release.tag
    try:
        found = source_entry(record, f"{source}/{repository}:{tag}")
    except (KeyError, TypeError, AttributeError):  # a platform of the list that the record does not hold
        raise RecordDamaged(record_path(directory), "published",
                            "does not say which images the published list holds; rebuild and publish again") from None
    if found is None:
        raise PromoteRefused(f"{source}/{repository}:{tag} is not in the record of {name}: push or publish it "
                             f"there first (`invoke push --release {name} --registry {source}`)")
    entry, images = found
    smoke = check_every_platform(record, name, entry) if isinstance(entry, Published) \
        else check_smoke(record, name, images)
    digest = entry.digest
    source_registry = Registry(source)
    manifest = source_registry.manifest(repository, digest)
    if manifest is None:
        raise PromoteRefused(f"{source}/{repository}@{digest} is no longer in the source registry")
    verified = [verify_image(source_registry, repository, subject, trusted) for subject in subjects_of(manifest)]
    print(f"attestation of {source}/{repository}@{digest} verified: "
          + "; ".join(f"{v.digest[:19]} signed by {v.key.key_id[:23]}... ({', '.join(sorted(v.found))})"
                      for v in verified), file=out, flush=True)

    print(f"promoting {source}/{repository}@{digest} to {target}/{repository}:{tag} "
          f"(smoke passed {smoke.at}: {smoke.passed} passed)", file=out, flush=True)
    started = time.monotonic()
    copy(f"{source}/{repository}@{digest}", f"{target}/{repository}:{tag}", source, target, credentials())
    target_registry = Registry(target, credentials())
    served = target_registry.digest(repository, tag)
    if served != digest:
        raise OperationError(f"{target}/{repository}:{tag} serves {served} after the copy, expected {digest}")
    for checked in verified:
        attachments.copy(target_registry, repository, checked.digest, checked.found)
    result = Promoted.of(digest=digest, source=source, at=utc_timestamp(),
                         attestations={v.digest: PromotedAttestation.of(key_id=v.key.key_id, attached=sorted(v.found))
                                       for v in verified})
    write_record(directory, replace(record, promoted={**record.promoted, f"{target}/{repository}:{tag}": result}))
    print(f"promoted {target}/{repository}:{tag}@{digest} in {time.monotonic() - started:.1f}s "
          "(digest verified on the target; attestations copied)", file=out, flush=True)
    return result


def copy(source_ref: str, target_ref: str, source_host: str, target_host: str, target_auth: dict | None) -> None:
    """skopeo copy, every platform, digests preserved. The target's credentials go in a private auth
    file (never on the command line); the source is read with the Docker config's or anonymously."""
    if shutil.which("skopeo") is None:
        raise UserError("promote needs skopeo (Debian: apt-get install skopeo)")
    command = ["skopeo", "copy", "--all", "--preserve-digests", "--retry-times", "3",
               f"--src-tls-verify={str(base_url(source_host).startswith('https')).lower()}",
               f"--dest-tls-verify={str(base_url(target_host).startswith('https')).lower()}"]
    with tempfile.TemporaryDirectory(prefix="ngcbuild-promote-") as tmp:
        if target_auth:
            authfile = os.path.join(tmp, "auth.json")
            token = base64.b64encode(f"{target_auth['username']}:{target_auth['password']}".encode()).decode()
            fd = os.open(authfile, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as handle:
                json.dump({"auths": {target_host: {"auth": token}}}, handle)
            command += ["--dest-authfile", authfile]
        command += [f"docker://{source_ref}", f"docker://{target_ref}"]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=COPY_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise OperationError(f"skopeo copy of {source_ref} did not finish in {COPY_TIMEOUT_S}s") from None
    if result.returncode != 0:
        raise OperationError(f"skopeo copy {source_ref} -> {target_ref} failed: "
                             f"{(result.stderr or result.stdout).strip()[-800:]}")
