"""What is attached to a pushed image in its registry, laid out as OCI 1.1 artifacts.

Each attachment (the signed provenance, the SBOM, the audit report) is one OCI image manifest whose
`artifactType` says what it is, whose config is the empty descriptor (`{}`), whose one layer is the
document, and whose `subject` is the image manifest it describes. Distribution 2.8 (Debian's
docker-registry, the local registry) has no referrers API, so the artifacts are found the way OCI
1.1 prescribes for such registries, the referrers tag schema: an OCI index tagged `sha256-<hex of
the image digest>` lists every artifact of that image (with its artifactType and annotations). The
index also keeps the artifacts from garbage collection (they are pushed by digest, untagged).

Everything goes through the project's one registry session (registry/client.py: retries,
deadlines, credentials). Every manifest and blob read back is checked against its digest and size:
a truncated or replaced document is refused, never parsed; the referrers index and the artifact
manifests are read through the client's one reader of each (`Manifest.entries`, `Manifest.image`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ngcbuild.image.media import OCI_EMPTY, OCI_INDEX, OCI_MANIFEST
from ngcbuild.registry.client import (
    BlobMismatch,
    Descriptor,
    Manifest,
    Registry,
    ShapeError,
    digest_of,
)
from ngcbuild.supply.signing import AttestationRejected
from ngcbuild.workspace.release_dir import AUDIT, SBOM

EMPTY = b"{}"
KIND_ANNOTATION = "io.ngcbuild.attachment"
TITLE_ANNOTATION = "org.opencontainers.image.title"
PREDICATE_ANNOTATION = "in-toto.io/predicate-type"
# kind -> (artifactType and layer media type, file name)
KINDS = {
    "provenance": ("application/vnd.dsse.envelope.v1+json", "provenance.intoto.dsse.json"),
    "sbom": ("application/vnd.cyclonedx+json", SBOM),
    "audit": ("application/vnd.ngcbuild.audit.v1+json", AUDIT),
}
MAX_MANIFEST = 1 << 20
MAX_DOCUMENT = 64 << 20  # an SBOM of a CUDA image is a few MB


@dataclass(frozen=True)
class Attachment:
    kind: str
    data: bytes
    manifest: bytes  # the artifact manifest, as stored
    digest: str  # of the artifact manifest

    @property
    def sha256(self) -> str:
        return digest_of(self.data).removeprefix("sha256:")


def referrers_tag(digest: str) -> str:
    return digest.replace(":", "-")


def subject_of(manifest: Manifest) -> dict:
    return {"mediaType": manifest.media_type, "digest": manifest.digest, "size": len(manifest.body)}


def artifact_manifest(kind: str, layer_digest: str, size: int, subject: dict, annotations: dict) -> bytes:
    artifact_type, title = KINDS[kind]
    body = {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
        "config": {"mediaType": OCI_EMPTY, "digest": digest_of(EMPTY), "size": len(EMPTY)},
        "layers": [{"mediaType": artifact_type, "digest": layer_digest, "size": size,
                    "annotations": {TITLE_ANNOTATION: title}}],
        "subject": subject,
        "annotations": {KIND_ANNOTATION: kind, **annotations},
    }
    return json.dumps(body, sort_keys=True).encode()


def push(registry: Registry, repository: str, subject: Manifest, documents: list[tuple[str, bytes, dict]]
         ) -> list[Attachment]:
    """Push each (kind, document, annotations) as an artifact of `subject`, then the referrers index
    (an earlier artifact of the same kind is replaced in it; artifacts of other tools are kept)."""
    registry.put_blob(repository, EMPTY)
    made = []
    for kind, data, notes in documents:
        layer = registry.put_blob(repository, data)
        body = artifact_manifest(kind, layer, len(data), subject_of(subject), notes)
        registry.put_manifest(repository, digest_of(body), body, OCI_MANIFEST)
        made.append(Attachment(kind, data, body, digest_of(body)))
    _replace_in_index(registry, repository, subject.digest, made)
    return made


def _replace_in_index(registry: Registry, repository: str, digest: str, attachments: list[Attachment]) -> None:
    """The referrers index of `digest` with `attachments` in it: an earlier artifact of the same kind is
    replaced, artifacts of other tools are kept; an index that cannot be read is replaced whole."""
    kinds = {a.kind for a in attachments}
    kept = [entry.raw for entry in _index_entries(registry, repository, digest, strict=False)
            if entry.annotations.get(KIND_ANNOTATION) not in kinds]
    _put_index(registry, repository, digest, kept + [_descriptor(a) for a in attachments])


def _descriptor(attachment: Attachment) -> dict:
    document = json.loads(attachment.manifest)
    return {"mediaType": OCI_MANIFEST, "digest": attachment.digest, "size": len(attachment.manifest),
            "artifactType": document["artifactType"], "annotations": document["annotations"]}


def _put_index(registry: Registry, repository: str, digest: str, entries: list[dict]) -> None:
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}, sort_keys=True).encode()
    registry.put_manifest(repository, referrers_tag(digest), body, OCI_INDEX)


def _index_entries(registry: Registry, repository: str, digest: str, strict: bool = True) -> list[Descriptor]:
    """The entries of the referrers index of `digest` (each once). One that cannot be read is refused
    when verifying (`strict`), and replaced when writing ours."""
    where = f"{registry.host}/{repository}:{referrers_tag(digest)}"
    index = None
    try:
        index = registry.manifest(repository, referrers_tag(digest))
        return index.entries() if index is not None else []
    except ShapeError as exc:
        if not strict:
            return []
        raise AttestationRejected(f"{where}: not an OCI index of artifacts (altered or truncated): "
                                  f"{_after(str(exc), index.where if index else where)}") from None


def read(registry: Registry, repository: str, digest: str) -> dict[str, Attachment]:
    """The attachments of the image manifest `digest`, by kind, each checked: the artifact manifest is
    the one its descriptor names, its subject is this very image, its document whole."""
    where = f"{registry.host}/{repository}@{digest}"
    entries = _index_entries(registry, repository, digest)
    found: dict[str, Attachment] = {}
    for entry in entries:
        kind = entry.annotations.get(KIND_ANNOTATION)
        if kind not in KINDS or kind in found:
            continue
        found[kind] = _read_one(registry, repository, digest, kind, entry, where)
    if "provenance" not in found:
        raise AttestationRejected(f"{where} has no attestation (no signed provenance in "
                                  f"{repository}:{referrers_tag(digest)}); run `invoke attest` where it was pushed")
    return found


def _read_one(registry: Registry, repository: str, digest: str, kind: str, entry: Descriptor,
              where: str) -> Attachment:
    named = entry.digest
    manifest = registry.manifest(repository, named)  # its bytes hash to `named`, or DigestMismatch
    if manifest is None:
        raise AttestationRejected(f"{where}: the {kind} artifact {named} listed for it is not in the registry")
    if len(manifest.body) > MAX_MANIFEST:
        raise AttestationRejected(f"{where}: the {kind} artifact manifest is over {MAX_MANIFEST} bytes")
    artifact_type = KINDS[kind][0]
    try:
        artifact = manifest.image()
    except ShapeError:
        artifact = None
    if artifact is None or artifact.artifact_type != artifact_type or not artifact.layers or artifact.subject is None:
        raise AttestationRejected(f"{where}: the {kind} artifact {named[:19]} is not an OCI artifact manifest of "
                                  f"{artifact_type}")
    subject, layer = artifact.subject.digest, artifact.layers[0]
    layer_digest, size = layer.digest, layer.size
    if subject != digest:
        raise AttestationRejected(f"{where}: the {kind} artifact is about {subject}, not this image")
    if not 0 <= size <= MAX_DOCUMENT:
        raise AttestationRejected(f"{where}: the {kind} document says it is {size} bytes (at most {MAX_DOCUMENT})")
    try:
        data = registry.blob(repository, str(layer_digest), size)
    except BlobMismatch as exc:
        raise AttestationRejected(f"{where}: the {kind} document is damaged: {exc}") from None
    if data is None:
        raise AttestationRejected(f"{where}: the {kind} document {layer_digest} is not in the registry")
    if len(data) != size:
        raise AttestationRejected(f"{where}: the {kind} document is {len(data)} bytes, its manifest says {size} "
                                  "(truncated)")
    return Attachment(kind, data, manifest.body, named)


def copy(target: Registry, repository: str, digest: str, attachments: dict[str, Attachment]) -> None:
    """Put the attachments (already read and checked from the source) next to the same image in
    `target`, and the referrers index that finds them."""
    target.put_blob(repository, EMPTY)
    for attachment in attachments.values():
        target.put_blob(repository, attachment.data)
        target.put_manifest(repository, attachment.digest, attachment.manifest, OCI_MANIFEST)
    _replace_in_index(target, repository, digest, list(attachments.values()))


def _after(message: str, prefix: str) -> str:
    return message[len(prefix) + 2:] if message.startswith(f"{prefix}: ") else message
