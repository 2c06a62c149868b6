"""`invoke attest`: sign the provenance of what R pushed to a registry and attach it, with the SBOM
and the audit report, next to each pushed image; `verify_image`: check those attachments (promote,
`invoke verify-attestation`).

What a verified attestation proves: the holder of a trusted key signed this statement about this
very image manifest (its digest), and the SBOM and audit report attached are the ones it names. It
does not prove that the key was not stolen, nor that the files the statement lists are free of
defects; it is only as true as the machine that signed it (docs/trust-model.md).
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.files import exists
from ngcbuild.core.project import Project
from ngcbuild.core.references import registry_host
from ngcbuild.core.text import safe
from ngcbuild.registry.auth import check_environment
from ngcbuild.registry.client import DigestMismatch, Manifest, Registry, ShapeError
from ngcbuild.supply import attachments, provenance
from ngcbuild.supply.signing import (
    AttestationRejected,
    TrustedKey,
    load_signing_key,
    open_envelope,
    sign,
    signing_key_path,
)
from ngcbuild.supply.statement import Statement, read_statement
from ngcbuild.workspace.audit_report import read_audit
from ngcbuild.workspace.record import Record, read_record, write_record
from ngcbuild.workspace.release_dir import AUDIT, SBOM
from ngcbuild.workspace.sbom import read_sbom
from ngcbuild.workspace.sections import AttachedDocument, Attested, utc_timestamp

MAX_JSON_NESTING = 64


@dataclass(frozen=True)
class Verified:
    digest: str
    statement: Statement
    key: TrustedKey
    found: dict  # kind -> attachments.Attachment


def pushed_digests(record: Record, host: str) -> dict[str, list[str]]:
    """digest -> the references of it that R pushed to `host` (its tags share one manifest)."""
    found: dict[str, list[str]] = {}
    for ref, entry in sorted(record.pushed.items()):
        if ref.startswith(f"{host}/") and entry.digest is not None:
            found.setdefault(entry.digest, []).append(ref)
    return found


def rendered_from_current_files(project: Project, loaded, record: Record) -> None:
    """The statement lists the files as they are now: only true when they render to exactly the
    context the image was built from. The render stamp says so at once when nothing changed since
    the render; otherwise the release is rendered in memory (nothing written) and its context hash
    compared (a change to ngcbuild's code elsewhere leaves the context, and the statement, true)."""
    from ngcbuild.render.context import render_files
    from ngcbuild.render.stamp import current_stamp

    name, built = loaded.release.release, record.build.context_sha256
    for base in (None, record.build.base_image):
        stamp = current_stamp(project, name, base)
        if stamp is not None and stamp.context_hash == built:
            return
    for base in (None, record.build.base_image):
        if render_files(project, loaded, base=base).context_hash == built:
            return
    raise UserError(f"the files of {name} (manifest chain, constraints, image templates) changed since its image "
                    f"was built (context {str(built)[:12]}), so a provenance of them would not be true; rebuild "
                    f"and push (`invoke build --release {name}`) before attesting")


def documents_of(project: Project, name: str, record: Record) -> list[tuple[str, bytes, str]]:
    """(kind, bytes, file name) of the documents to attach beside the provenance: the SBOM and the audit
    report, when each exists, each read by its one reader (workspace/sbom.py, workspace/audit_report.py):
    the ones the record names, of this image."""
    directory = project.out(name)
    found = []
    if exists(directory / SBOM):
        sbom = read_sbom(directory, project.root, record)
        if record.sbom.image_id != record.build.image_id:
            raise OperationError(f"{SBOM} of {name} is not the SBOM recorded for its image; run `invoke sbom "
                                 f"--release {name}` again")
        found.append(("sbom", sbom.data, SBOM))
    # the report recorded for this image's SBOM, as for the SBOM itself: a report left from an earlier
    # image must not be signed as this one's
    audit = read_audit(directory, project.root, record)
    if audit is not None:
        found.append(("audit", audit.data, AUDIT))
    return found


def attest_release(project: Project, name: str, host: str, key: str | None, out=sys.stdout) -> dict[str, Attested]:
    from ngcbuild.engine.image_build import git_revision
    from ngcbuild.manifest.loader import load_release

    host = registry_host(host)
    check_environment()
    private = load_signing_key(signing_key_path(key), project.root)
    loaded = load_release(project, name)
    repository = loaded.release.image.repository
    directory = project.out(name)
    record = read_record(directory)
    digests = pushed_digests(record, host)
    if not digests:
        raise UserError(f"nothing of {name} was pushed to {host}; push it first (`invoke push --release {name} "
                        f"--registry {host}`)")
    rendered_from_current_files(project, loaded, record)
    documents = documents_of(project, name, record)
    files = provenance.materials(project, loaded)
    base = provenance.base_image(record.build.base_image or loaded.release.base.image)
    registry = Registry(host)
    byproducts = [{"name": file_name, "digest": {"sha256": hashlib.sha256(data).hexdigest()},
                   "mediaType": attachments.KINDS[kind][0]} for kind, data, file_name in documents]
    attested = {}
    for digest, refs in digests.items():
        subject = registry.manifest(repository, digest)
        if subject is None:
            raise OperationError(f"{host}/{repository}@{digest} is no longer in the registry; push it again")
        payload = json.dumps(provenance.statement(
            subject_name=f"{host}/{repository}", digest=digest, release=name, record=record, files=files,
            base=base, byproducts=byproducts, registry=host, checkout=git_revision(project),
            attached=["provenance", *[kind for kind, _, _ in documents]], now=utc_timestamp()),
            indent=2, sort_keys=True).encode()
        envelope = sign(payload, private)
        made = attachments.push(registry, repository, subject, [
            ("provenance", envelope, {attachments.PREDICATE_ANNOTATION: provenance.PREDICATE_TYPE}),
            *[(kind, data, {}) for kind, data, _ in documents]])
        key_id = json.loads(envelope)["signatures"][0]["keyid"]
        attested[f"{host}/{repository}@{digest}"] = Attested.of(
            refs=refs, key_id=key_id, referrers_tag=attachments.referrers_tag(digest),
            attachments={a.kind: AttachedDocument.of(manifest=a.digest, sha256=a.sha256) for a in made},
            at=utc_timestamp())
        print(f"attested {host}/{repository}@{digest}: {', '.join(a.kind for a in made)} "
              f"(signed by {key_id[:23]}...; found by the tag {attachments.referrers_tag(digest)[:19]}...)",
              file=out, flush=True)
    missing = [kind for kind in ("sbom", "audit") if kind not in {k for k, _, _ in documents}]
    if missing:
        print(f"not attached (no build/{name}/ file): {', '.join(missing)}", file=out, flush=True)
    write_record(directory, replace(record, attested={**record.attested, **attested}))
    return attested


def verify_image(registry: Registry, repository: str, digest: str, trusted: list[TrustedKey]) -> Verified:
    """The attachments of one image manifest, checked: a provenance signed by a trusted key, whose
    statement (read through supply/statement.py) is about this digest, and any SBOM or audit report
    the one that statement names."""
    where = f"{registry.host}/{repository}@{digest}"
    found = attachments.read(registry, repository, digest)
    payload, key = open_envelope(found["provenance"].data, trusted, f"{where}: provenance")
    statement = read_statement(payload, where)
    if digest.removeprefix("sha256:") not in statement.named:
        raise AttestationRejected(f"{where}: the signed statement is about {', '.join(sorted(statement.named))[:140]}, "
                                  "not this image")
    for kind in ("sbom", "audit"):
        if kind not in found:
            continue
        signed = statement.byproduct_sha256(attachments.KINDS[kind][1])
        if signed != found[kind].sha256:
            raise AttestationRejected(f"{where}: the attached {kind} ({found[kind].sha256[:12]}) is not the one the "
                                      f"signed statement names ({str(signed)[:12]})")
    return Verified(digest, statement, key, found)


def subjects_of(manifest: Manifest) -> list[str]:
    """The image manifests an attestation must exist for: each platform's of a list (each once), else
    the one."""
    if not manifest.is_list:
        return [manifest.digest]
    return [entry.digest for entry in manifest.entries()]


def describe(verified: Verified, where: str) -> list[str]:
    """What a consumer wants to know of a verified image, one line each; every value the statement
    holds is escaped (a signer's text may carry escape sequences)."""
    statement = verified.statement
    files = [d for d in statement.dependencies if d.uri.startswith("file:")]
    base = next((d for d in statement.dependencies if d.name == "base image"), None)
    commit = next((d.digest["gitCommit"] for d in statement.dependencies if "gitCommit" in d.digest), None)
    smoke = (statement.byproducts.get("smoke") or (None, {}))[1]
    name, sha = next((s for s in statement.subjects if f"sha256:{s[1]}" == verified.digest), statement.subjects[0])
    lines = [
        f"image:     {safe(where, 300)}",
        f"subject:   {safe(name, 300)}@sha256:{sha} (matches)",
        f"signed by: {verified.key.key_id} ({safe(verified.key.path, 300)})",
        f"builder:   {safe(statement.builder, 300)}",
        f"release:   {safe(statement.release, 80)} ({safe(statement.platform, 40)}), context "
        f"{safe(statement.context, 80)}, ngcbuild {safe(statement.version, 40)}, commit "
        f"{safe(commit, 80) if commit else 'not recorded'}",
        f"base:      {safe(base.uri, 300) if base else None} "
        f"sha256:{safe(base.digest.get('sha256'), 80) if base else None}",
        f"materials: {len(files)} files",
    ]
    lines += [f"  {safe(d.uri[len('file:'):], 300)} sha256:{safe(d.digest.get('sha256'), 80)}" for d in files]
    lines.append(f"smoke:     {safe(smoke.get('verdict', 'not recorded'), 40)} ({safe(smoke.get('passed'), 20)} "
                 f"passed, {safe(smoke.get('failed'), 20)} failed, {safe(smoke.get('errors'), 20)} errors, at "
                 f"{safe(smoke.get('at'), 40)})")
    attached = ", ".join(f"{kind} sha256:{a.sha256[:12]}" for kind, a in sorted(verified.found.items()))
    lines.append(f"attached:  {attached}; not attached: "
                 f"{', '.join(k for k in attachments.KINDS if k not in verified.found) or 'nothing'}")
    return lines


def trusted_keys(options, root: Path) -> list[TrustedKey]:
    from ngcbuild.supply.signing import load_trusted_keys, trusted_key_paths

    return load_trusted_keys(trusted_key_paths(options), root)


def verify_command(root: Path, image: str, trusted_options, out=sys.stdout) -> list[Verified]:
    """`invoke verify-attestation --registry-image HOST/REPO[:TAG|@DIGEST]`: exit 0 verified, 2 refused (or bad
    input), 1 the registry could not be asked."""
    from ngcbuild.core.references import image_ref

    ref = image_ref(image, "--registry-image")
    if ref.host is None:
        raise UserError(f"--registry-image {ref}: expected a reference with its registry host (HOST[:PORT]/name:tag), "
                        "the registry the attestations are read from")
    trusted = trusted_keys(trusted_options, root)
    check_environment()
    registry = Registry(ref.host)
    try:
        manifest = registry.manifest(ref.path, ref.digest or ref.tag or "latest")
        if manifest is None:
            raise AttestationRejected(f"{ref} is not in the registry")
        subjects = subjects_of(manifest)
    except (DigestMismatch, ShapeError) as exc:  # other bytes than it names, a list of the wrong shape: refused
        raise AttestationRejected(str(exc)) from None
    results = []
    for digest in subjects:
        try:
            verified = verify_image(registry, ref.path, digest, trusted)
        except (DigestMismatch, ShapeError) as exc:
            raise AttestationRejected(str(exc)) from None
        for line in describe(verified, f"{ref.host}/{ref.path}@{digest}"):
            print(line, file=out)
        results.append(verified)
    print(f"verified: {ref} ({len(results)} image manifest{'s' if len(results) != 1 else ''})", file=out, flush=True)
    return results


def key_root(project_finder) -> Path:
    """Where key files must be: the project, or (a consumer outside any project) the current folder."""
    try:
        return project_finder().root
    except UserError:
        return Path.cwd().resolve()

