"""A retried push's shortcut verifies what it skips (issue 54 item 3): "already in the registry" is a blob
present at its digest and size, and "the image held whole" is the manifest our push writes, byte for byte,
every blob it names there, each layer read back to its diff id. Against the fake registry of the corpus."""

from __future__ import annotations

import time

import pytest

from ngcbuild.publish.push import _held_whole
from ngcbuild.registry import client
from ngcbuild.registry.client import BlobMismatch, Registry, RegistryError

from ..corpus import fakes
from ..corpus.push_hostile import (
    _LAYER,
    IMAGE_ID,
    _config_other_bytes,
    _held,
    _held_as,
    _held_but,
    _layer_gone,
    _layer_other_bytes,
    _ours,
)

BLOBS = f"/v2/{fakes.REPOSITORY}/blobs/"


def test_a_blob_is_held_only_at_its_digest_and_size(served):
    content = fakes.Content()
    digest = content.add_blob(b"twelve bytes")
    registry = Registry(served(content).address)
    assert registry.holds_blob(fakes.REPOSITORY, digest, 12)
    assert not registry.holds_blob(fakes.REPOSITORY, digest, 13)
    assert not registry.holds_blob(fakes.REPOSITORY, "sha256:" + "0" * 64, 12)
    naming_another = served(content, raw={f"HEAD {BLOBS}{digest}": lambda h: fakes.send(
        h, 200, b"twelve bytes", {"Docker-Content-Digest": "sha256:" + "1" * 64})})
    assert not Registry(naming_another.address).holds_blob(fakes.REPOSITORY, digest, 12)
    no_length = served(content, raw={f"HEAD {BLOBS}{digest}": lambda h: (
        h.send_response(200), h.send_header("Content-Length", "twelve"), h.end_headers())})
    assert not Registry(no_length.address).holds_blob(fakes.REPOSITORY, digest, 12)


def test_a_blob_read_back_streams_through_its_digest_and_size(served):
    content = fakes.Content()
    data = bytes(range(256)) * 1024
    digest = content.add_blob(data)
    chunks = []
    Registry(served(content).address).read_blob(fakes.REPOSITORY, digest, len(data), chunks.append)
    assert b"".join(chunks) == data and len(chunks) > 1  # streamed, never one answer held whole
    with pytest.raises(BlobMismatch, match="(over the|holds) "):
        Registry(served(content).address).read_blob(fakes.REPOSITORY, digest, len(data) - 1, lambda chunk: None)
    with pytest.raises(BlobMismatch, match="truncated or replaced"):
        Registry(served(content, swap={digest: bytes(len(data))}).address).read_blob(
            fakes.REPOSITORY, digest, len(data), lambda chunk: None)
    with pytest.raises(BlobMismatch, match="not in the registry"):
        Registry(served(content).address).read_blob(fakes.REPOSITORY, "sha256:" + "0" * 64, 1, lambda chunk: None)


def _trickle_blob(handler, size: int = 4096) -> None:
    """The whole blob's length declared, then a byte every 50 ms: each read answers, the whole never comes."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(size))
    handler.end_headers()
    try:
        for _ in range(size):
            handler.wfile.write(b"x")
            handler.wfile.flush()
            time.sleep(0.05)
    except OSError:
        pass
    handler.close_connection = True


def test_a_trickled_blob_is_cut_at_one_deadline_for_the_whole_read(served, monkeypatch):
    monkeypatch.setattr(client, "blob_deadline_s", lambda size: 2.0)
    digest = "sha256:" + "2" * 64
    trickling = served(fakes.Content(), raw={f"GET {BLOBS}{digest}": _trickle_blob})
    started = time.monotonic()
    with pytest.raises(RegistryError, match="no whole answer within 2s") as caught:
        Registry(trickling.address).read_blob(fakes.REPOSITORY, digest, 4096, lambda chunk: None)
    assert time.monotonic() - started < 10
    assert "4096 bytes" in str(caught.value)  # the message says what the deadline was sized to


def test_the_deadline_of_a_blob_grows_with_its_size():
    assert client.blob_deadline_s(0) == client.MANIFEST_DEADLINE_S
    assert client.blob_deadline_s(10 * client.MIN_RATE) == client.MANIFEST_DEADLINE_S + 10
    assert client.blob_deadline_s(788) == client.MANIFEST_DEADLINE_S + 1  # whole seconds, said as they are


def _held_in(served, before) -> bytes | None:
    content = fakes.Content()
    digest = before(content)
    registry = Registry(served(content).address).without_retries()
    return _held_whole(registry, fakes.REPOSITORY, IMAGE_ID, [digest])


def test_the_image_held_whole_is_our_manifest_byte_for_byte(served):
    assert _held_in(served, _held) == _ours(_LAYER)[1]


@pytest.mark.parametrize("before", [
    _held_as([]),  # this image's config, no layers
    _held_as([_LAYER[:512] + bytes(len(_LAYER) - 512)]),  # another image's layer, gzipped our way
    _held_as([_LAYER, _LAYER]),  # one layer more than the config names
    _held_as([_LAYER], indent=2),  # the same descriptors in a form our push never writes
    _held_as([_LAYER], size_of=lambda blob: len(blob) + 1),  # a size the registry does not hold it at
    _held_but(_layer_gone),
    _held_but(_layer_other_bytes),  # a HEAD cannot tell: reading it back does
    _held_but(_config_other_bytes),
    lambda content: _held(content, "sha256:" + "e" * 64),  # another image's config
], ids=["no-layers", "another-images-layer", "a-layer-more", "another-form", "another-size", "layer-gone",
        "layer-other-bytes", "config-other-bytes", "another-config"])
def test_what_is_not_the_image_held_whole_is_never_taken_for_it(served, before):
    assert _held_in(served, before) is None


def test_a_trickled_small_blob_has_a_deadline_sized_to_it_not_the_old_fifteen_minutes(served, monkeypatch):
    """verify-attestation's signature blob, 788 bytes trickled a byte at a time: cut at a deadline sized to
    its 788 bytes (here the minute made a second), said in the message, never 900 s whatever its size."""
    monkeypatch.setattr(client, "MANIFEST_DEADLINE_S", 1)
    digest = "sha256:" + "3" * 64
    trickling = served(fakes.Content(), raw={f"GET {BLOBS}{digest}": lambda h: _trickle_blob(h, 788)})
    started = time.monotonic()
    with pytest.raises(RegistryError, match=r"788 bytes: 2s allowed") as caught:
        Registry(trickling.address).blob(fakes.REPOSITORY, digest, 788)
    assert time.monotonic() - started < 8
    assert "no whole answer within 2s" in str(caught.value)


def test_a_blob_claimed_with_other_bytes_of_its_size_is_sent_and_read_back(served, tmp_path):
    """The fallback push's "already in the registry" (put_blob_file, put_blob): a HEAD with the digest and
    size, then the bytes read back; a registry that answers the HEAD right but holds other bytes is sent
    the blob, and one that still serves other bytes after it was sent is a DigestMismatch."""
    data = bytes(range(256)) * 64
    path = tmp_path / "blob"
    path.write_bytes(data)
    digest = client.digest_of(data)
    honest = fakes.Content()
    honest.add_blob(data)
    assert not Registry(served(honest).address).put_blob_file(fakes.REPOSITORY, path, digest, len(data))
    lying = fakes.Content()
    lying.blobs[digest] = bytes(len(data))  # the HEAD says this digest at this size; the bytes are zeros
    assert Registry(served(lying).address).put_blob_file(fakes.REPOSITORY, path, digest, len(data))
    assert lying.blobs[digest] == data
    small = fakes.Content()
    small.blobs[client.digest_of(b"config")] = b"CONFIG"
    Registry(served(small).address).put_blob(fakes.REPOSITORY, b"config")
    assert small.blobs[client.digest_of(b"config")] == b"config"
    keeps_lying = fakes.Content()
    keeps_lying.blobs[digest] = bytes(len(data))
    with pytest.raises(client.DigestMismatch, match="before and after it was sent"):
        Registry(served(keeps_lying, swap={digest: bytes(len(data))}).address).put_blob_file(
            fakes.REPOSITORY, path, digest, len(data))
