"""Blobs sent while the image is still being made (publish/blob_sender.py), against the fake registry of the
corpus over real HTTP: what the registry lacks is sent once, what it claims is left to the upload after (which
reads it back), a failure is left to the upload after too, and leaving the block cuts a blob being sent."""

from __future__ import annotations

import threading
import time

import pytest

from ngcbuild.image.blobs import Blob
from ngcbuild.publish.blob_sender import BlobSender
from ngcbuild.registry.client import Registry, UploadStopped

from ..corpus import fakes

UPLOADS = f"/v2/{fakes.REPOSITORY}/blobs/uploads/"


def _blob(tmp_path, data: bytes) -> Blob:
    path = tmp_path / f"{fakes.digest_of(data)[7:19]}.gz"
    path.write_bytes(data)
    return Blob(fakes.digest_of(data), len(data), path)


def _puts(server) -> list[str]:
    return [entry["path"] for entry in server.requests() if entry["method"] == "PUT"]


def test_what_the_registry_lacks_is_sent_once_and_what_it_claims_is_left(served, tmp_path):
    content = fakes.Content()
    held = _blob(tmp_path, b"held already")
    content.add_blob(held.path.read_bytes())
    server = served(content)
    first, second = _blob(tmp_path, b"first layer" * 1000), _blob(tmp_path, b"second layer" * 1000)
    said = []
    with BlobSender(Registry(server.address).without_retries(), fakes.REPOSITORY, said.append) as sender:
        for blob in (first, held, first, second):
            sender.offer(blob)
        sent = sender.finish()
        assert sent == {first.digest, second.digest}
        sender.offer(_blob(tmp_path, b"after a finish"))  # the thread goes on serving offers
        again = sender.finish()
    assert len(again) == 3
    assert content.blobs[first.digest] == first.path.read_bytes()
    assert content.blobs[second.digest] == second.path.read_bytes()
    assert len(_puts(server)) == 3  # one PUT per blob sent: none for the held one, none twice
    assert sum("while the image is made" in line for line in said) == 3


def test_a_blob_it_could_not_send_is_left_to_the_upload_after_and_nothing_is_raised(served, tmp_path):
    content = fakes.Content()
    refused = served(content, raw={f"POST {UPLOADS}": lambda h: fakes.send(h, 503, b"{}")})
    blobs = [_blob(tmp_path, b"one" * 100), _blob(tmp_path, b"two" * 100)]
    said = []
    with BlobSender(Registry(refused.address).without_retries(), fakes.REPOSITORY, said.append) as sender:
        for blob in blobs:
            sender.offer(blob)
        assert sender.finish() == frozenset()
    assert not content.blobs and not said
    posts = [entry for entry in refused.requests() if entry["method"] == "POST"]
    assert len(posts) == 1  # after one failure the rest waits for the upload after (its retry schedule)


def test_leaving_the_block_cuts_a_blob_being_sent(served, tmp_path):
    content = fakes.Content()
    opened, answer = threading.Event(), threading.Event()

    def slow_open(handler):
        opened.set()
        answer.wait(10)
        fakes.send(handler, 202, b"", {"Location": f"{UPLOADS}upload-slow"})

    server = served(content, raw={f"POST {UPLOADS}": slow_open})
    blob = _blob(tmp_path, b"x" * (4 << 20))
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), BlobSender(Registry(server.address).without_retries(),
                                                      fakes.REPOSITORY, lambda line: None) as sender:
        sender.offer(blob)
        assert opened.wait(10)
        threading.Timer(0.3, answer.set).start()  # the upload opens once the block has been left
        raise KeyboardInterrupt
    assert not sender._thread.is_alive() and time.monotonic() - started < 8
    assert blob.digest not in content.blobs and len(_puts(server)) <= 1  # its body cut before a byte was read


def test_an_upload_asked_to_stop_ends_between_reads_of_its_file(served, tmp_path):
    content = fakes.Content()
    server = served(content)
    blob = _blob(tmp_path, bytes(range(256)) * 8192)  # 2 MiB: many reads
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(UploadStopped):
        Registry(server.address).put_blob_file(fakes.REPOSITORY, blob.path, blob.digest, blob.size, stop=stop)
    assert len(asked) == 4 and blob.digest not in content.blobs
    assert Registry(server.address).put_blob_file(fakes.REPOSITORY, blob.path, blob.digest, blob.size,
                                                  stop=lambda: False)
    assert content.blobs[blob.digest] == blob.path.read_bytes()


class _Broken:
    """A registry client with a fault of ours in it (not a registry's or a file's failure)."""

    def holds_blob(self, repository, digest, size):
        raise KeyError("a fault of ours")


def test_a_fault_of_ours_is_raised_by_finish_not_hidden_by_the_upload_after(tmp_path):
    with BlobSender(_Broken(), fakes.REPOSITORY, lambda line: None) as sender:
        sender.offer(_blob(tmp_path, b"some layer"))
        with pytest.raises(KeyError, match="a fault of ours"):
            sender.finish()
