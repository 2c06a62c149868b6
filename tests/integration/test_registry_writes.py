"""The registry client's writes against a real registry (Debian's docker-registry, distribution 2.8):
what the registry answers while a write of the same object is still in flight.

Found by test_attestation's interrupted promotes: a promote interrupted while it wrote an attestation
left the registry finishing that write when the rerun wrote the same attestation and then the
referrers index naming it; distribution's filesystem store rewrites a manifest's link file in place, and
a read meanwhile finds it empty, so the index was refused (DIGEST_INVALID, MANIFEST_BLOB_UNKNOWN) and the
rerun failed though everything it named was written.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from ngcbuild.image.media import OCI_INDEX, OCI_MANIFEST
from ngcbuild.registry import client as registry_client
from ngcbuild.registry.client import Registry, RegistryError, digest_of

from .private import PrivateRegistry

pytestmark = [pytest.mark.engine]

REPOSITORY = "nvidia/pytorch"


@pytest.fixture()
def registry():
    private = PrivateRegistry()
    private.start()
    try:
        yield private
    finally:
        private.close()


def _image_and_artifact(client: Registry) -> tuple[str, bytes, bytes]:
    """An image manifest stored by digest, and an artifact manifest about it (not yet stored)."""
    empty, layer = b"{}", b'{"statement": 1}'
    client.put_blob(REPOSITORY, empty)
    client.put_blob(REPOSITORY, layer)
    config = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": digest_of(empty), "size": len(empty)}
    layers = [{"mediaType": "application/octet-stream", "digest": digest_of(layer), "size": len(layer)}]
    image = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": layers}).encode()
    client.put_manifest(REPOSITORY, digest_of(image), image, OCI_MANIFEST)
    artifact = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/x-test",
                           "config": config, "layers": layers,
                           "subject": {"mediaType": OCI_MANIFEST, "digest": digest_of(image), "size": len(image)}}
                          ).encode()
    return digest_of(image), image, artifact


def _index(*artifacts: bytes) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
        {"mediaType": OCI_MANIFEST, "digest": digest_of(a), "size": len(a)} for a in artifacts]}).encode()


def test_an_index_is_stored_while_a_write_of_what_it_names_is_in_flight(registry, monkeypatch):
    """Two other clients rewrite the artifact for a second while the index naming it is written again and
    again: every index write succeeds (the registry's unsettled answers are retried), and the race was
    really met (at least one retry) or the test proves nothing."""
    client = Registry(registry.address)
    image_digest, _, artifact = _image_and_artifact(client)
    client.put_manifest(REPOSITORY, digest_of(artifact), artifact, OCI_MANIFEST)
    waits = []
    real_sleep = time.sleep  # registry_client.time is this very module: the spy calls the original
    monkeypatch.setattr(registry_client.time, "sleep", lambda s: (waits.append(s), real_sleep(s))[1])
    ends = time.monotonic() + 1.0

    def rewrite():
        other = Registry(registry.address)
        while time.monotonic() < ends:
            other.put_manifest(REPOSITORY, digest_of(artifact), artifact, OCI_MANIFEST)

    writers = [threading.Thread(target=rewrite) for _ in range(2)]
    for writer in writers:
        writer.start()
    written = 0
    try:
        while time.monotonic() < ends:
            client.put_manifest(REPOSITORY, "sha256-" + image_digest[len("sha256:"):], _index(artifact), OCI_INDEX)
            written += 1
    finally:
        for writer in writers:
            writer.join()
    assert written > 0
    assert waits, "no write of the index met an unsettled registry: the race was not provoked"
    served = client.manifest(REPOSITORY, "sha256-" + image_digest[len("sha256:"):])
    assert served is not None and served.digest == digest_of(_index(artifact))


def test_an_index_naming_what_was_never_written_fails_after_the_retries(registry, monkeypatch):
    client = Registry(registry.address)
    image_digest, _, artifact = _image_and_artifact(client)  # the artifact is never stored
    waits = []
    monkeypatch.setattr(registry_client.time, "sleep", waits.append)  # the schedule, without its waiting
    with pytest.raises(RegistryError) as failed:
        client.put_manifest(REPOSITORY, "sha256-" + image_digest[len("sha256:"):], _index(artifact), OCI_INDEX)
    assert "HTTP 400 (MANIFEST_BLOB_UNKNOWN)" in str(failed.value), failed.value
    assert f"the same after {registry_client.ATTEMPTS - 1} retries" in str(failed.value), failed.value
    assert waits == [registry_client.BACKOFF_S * 2 ** n for n in range(registry_client.ATTEMPTS - 1)]
