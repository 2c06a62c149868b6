"""Promote a pushed image from one registry to another by digest, without rebuilding.

Only an image whose smoke suite passed is promoted: the smoke record in build/R/record.json must
exist, have passed, and describe the very image the promoted digest holds. And only an image whose
attestation holds (supply/attest.py): each image manifest promoted (each platform's of a list) has a
provenance signed by a trusted key and about that very digest, and any SBOM or audit report attached
is the one the signed statement names; nothing is copied when one fails.

All or nothing, in an order that an interrupt at any moment leaves either the target as it was or
the whole new state: first the attestations (they name the image's digest, and alone they change
nothing anyone pulls), then the image by skopeo, which writes every blob and manifest by digest and
the tag last (every platform of a list, digests preserved), then the tag read back through the
registry API (its bytes must hash to the digest promoted), and last the record. A rerun after an
interrupt finds what was copied and finishes. With `zstd`, the zstd variant is then made on the target from
the promoted image's own blobs and tagged `<tag>-zstd` (publish/variant.py: every blob first, the tag last),
and the record's entry gets it: a variant that fails leaves the promotion recorded, the `-zstd` tag as it was.

Each side is read with its own credentials (registry/auth.py): skopeo gets one private auth file per
side holding that host's credentials alone, never a command-line argument (which `ps` shows).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ngcbuild.core.errors import OperationError, RecordDamaged, UserError
from ngcbuild.core.outputs import write_file
from ngcbuild.core.project import Project
from ngcbuild.core.references import registry_host, same_registry
from ngcbuild.core.text import safe
from ngcbuild.manifest.loader import load_release
from ngcbuild.registry.auth import Credentials, check_environment, keychain
from ngcbuild.registry.client import Registry, base_url
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
                    out=sys.stdout, zstd: bool = False) -> Promoted:
    from ngcbuild.publish.variant import VariantFailed, make_variant, variant_tag
    from ngcbuild.supply import attachments
    from ngcbuild.supply.attest import subjects_of, trusted_keys, verify_image

    source, target = registry_host(source, "--from"), registry_host(target, "--to")
    if same_registry(source, target):
        raise UserError(f"--from {source} and --to {target} name the same registry")
    check_environment()
    trusted = trusted_keys(trusted_options, project.root)
    release = load_release(project, name).release
    repository, tag = release.image.repository, release.tag
    if zstd:
        variant_tag(tag)  # a tag too long for its variant: refused before anything is copied
    directory = project.out(name)
    record = read_record(directory)
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
          f"(smoke passed {safe(smoke.at, 40)}: {safe(smoke.passed, 20)} passed)", file=out, flush=True)
    started = time.monotonic()
    target_registry = Registry(target)
    for checked in verified:  # first: they name the digest, and nothing points at them yet
        attachments.copy(target_registry, repository, checked.digest, checked.found)
    copy(f"{source}/{repository}@{digest}", f"{target}/{repository}:{tag}", source, target)  # the tag last
    served = target_registry.digest(repository, tag)
    if served != digest:
        raise OperationError(f"{target}/{repository}:{tag} serves {served} after the copy, expected {digest}")
    ref = f"{target}/{repository}:{tag}"
    earlier = record.promoted.get(ref)
    kept = earlier.zstd if earlier is not None and earlier.zstd is not None \
        and earlier.zstd.made_from == digest else None  # a variant of this very image, made before
    result = Promoted.of(digest=digest, source=source, at=utc_timestamp(),
                         attestations={v.digest: PromotedAttestation.of(key_id=v.key.key_id, attached=sorted(v.found))
                                       for v in verified}, **({"zstd": kept} if kept is not None else {}))
    record = replace(record, promoted={**record.promoted, ref: result})
    write_record(directory, record)
    print(f"promoted {ref}@{digest} in {time.monotonic() - started:.1f}s "
          "(digest verified on the target; attestations copied)", file=out, flush=True)
    if not zstd:
        if earlier is not None and earlier.zstd is not None and kept is None:
            print(f"note: {target}/{repository}:{earlier.zstd.tag or variant_tag(tag)} still names the zstd variant of "
                  f"{earlier.zstd.made_from}, not of this image; promote with --zstd to make it anew",
                  file=out, flush=True)
        return result
    try:
        variant = make_variant(target_registry, repository, tag, digest, kept, out=out)
    except OperationError as exc:  # a registry's failure or refusal, an image the variant cannot be made of
        raise VariantFailed(f"the zstd variant was not made, {target}/{repository}:{variant_tag(tag)} not "
                            f"written (the promotion of {tag} is done and recorded): {exc}") from None
    result = replace(result, zstd=variant, present=result.present | {"zstd"})
    write_record(directory, replace(record, promoted={**record.promoted, ref: result}))
    return result


def copy(source_ref: str, target_ref: str, source_host: str, target_host: str) -> None:
    """skopeo copy, every platform, digests preserved. Each side's credentials (the keychain's for that
    host) go in a private auth file of that side alone (never on the command line); a side without
    credentials gets an empty one, so that skopeo reads no other file's."""
    if shutil.which("skopeo") is None:
        raise UserError("promote needs skopeo (Debian: apt-get install skopeo)")
    command = ["skopeo", "copy", "--all", "--preserve-digests", "--retry-times", "3",
               f"--src-tls-verify={str(base_url(source_host).startswith('https')).lower()}",
               f"--dest-tls-verify={str(base_url(target_host).startswith('https')).lower()}"]
    with tempfile.TemporaryDirectory(prefix="ngcbuild-promote-") as tmp:
        for side, host in (("src", source_host), ("dest", target_host)):
            command += [f"--{side}-authfile", str(auth_file(Path(tmp) / f"{side}-auth.json", host,
                                                            keychain().for_host(host)))]
        command += [f"docker://{source_ref}", f"docker://{target_ref}"]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=COPY_TIMEOUT_S, check=False,
                                    stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise OperationError(f"skopeo copy of {source_ref} did not finish in {COPY_TIMEOUT_S}s") from None
    if result.returncode != 0:
        said = (result.stderr or result.stdout).strip()
        raise OperationError(f"skopeo copy {source_ref} -> {target_ref} failed: {safe(said[-800:], 800)}")


def auth_file(path: Path, host: str, credentials: Credentials | None) -> Path:
    """A containers-auth.json for `host` alone (mode 0600 from the start)."""
    auths = {}
    if credentials is not None and credentials.identity_token:
        auths[host] = {"identitytoken": credentials.identity_token}
    elif credentials is not None:
        auths[host] = {"auth": base64.b64encode(f"{credentials.username}:{credentials.password}".encode()).decode()}
    return write_file(path, json.dumps({"auths": auths}), within=path.parent, mode=0o600, verbatim=True)
