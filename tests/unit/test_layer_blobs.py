"""ngcbuild's own compression of layers and the manifest naming them (image/blobs.py), and the
retries of its push (publish/push.py): the same layer gives the same blob, gzip reads it back, the
manifest has one form."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import zlib

import pytest

from ngcbuild.core.errors import PushFailed
from ngcbuild.image.blobs import BLOCK, GZIP_HEADER, LEVEL, MEMORY_LEVEL, Blob, ImageBlobs, compress
from ngcbuild.image.media import DOCKER_CONFIG, DOCKER_LAYER
from ngcbuild.publish.push import _with_retries
from ngcbuild.registry.client import DigestMismatch, RegistryError

from ..helpers import SavingClient, docker_20_10_save


def _compressed(data: bytes, workers: int = 2) -> tuple[bytes, str, int, str]:
    target = io.BytesIO()
    digest, size, diff_id = compress(io.BytesIO(data), target, workers)
    return target.getvalue(), digest, size, diff_id


@pytest.mark.parametrize("data", [b"", b"a", os.urandom(3 << 20), b"\0" * (5 << 20) + b"tail",
                                  os.urandom(BLOCK), os.urandom(BLOCK + 1), os.urandom(2 * BLOCK - 1)])
def test_a_layer_compresses_to_a_gzip_that_reads_back_and_names_itself(data, tmp_path):
    blob, digest, size, diff_id = _compressed(data)
    assert gzip.decompress(blob) == data
    assert digest == "sha256:" + hashlib.sha256(blob).hexdigest() and size == len(blob)
    assert diff_id == "sha256:" + hashlib.sha256(data).hexdigest()
    (tmp_path / "layer.gz").write_bytes(blob)  # the system's gzip agrees (CRC and length trailer)
    assert subprocess.run(["gzip", "-t", str(tmp_path / "layer.gz")], capture_output=True).returncode == 0


def test_the_same_layer_is_the_same_blob_with_a_fixed_header():
    data = os.urandom(1 << 20) * 3
    first, second = _compressed(data), _compressed(data)
    assert first == second
    assert first[0][:10] == GZIP_HEADER  # no name, no time: nothing of the machine or the moment


def test_the_blob_does_not_depend_on_the_number_of_threads():
    # blocks that repeat what came before them (the primer must carry it) and blocks that do not
    data = os.urandom(BLOCK // 2) * 5 + b"layer " * 400_000 + os.urandom(100)
    blobs = {_compressed(data, workers)[0] for workers in (1, 2, 3, 8)}
    assert len(blobs) == 1
    assert gzip.decompress(blobs.pop()) == data


class _Trickle(io.RawIOBase):
    """A stream that answers each read with at most a few bytes, as a layer streamed from a save may."""

    def __init__(self, data: bytes, most: int):
        self.data, self.most, self.at = data, most, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = self.most if size < 0 else min(size, self.most)
        part = self.data[self.at:self.at + size]
        self.at += len(part)
        return part


@pytest.mark.parametrize("most", [1, 4096, 65537, BLOCK - 1])
def test_a_stream_of_short_reads_gives_the_same_blob_as_the_whole_file(most):
    data = os.urandom(BLOCK // 3) * 7 + b"tail"
    whole = _compressed(data)
    target = io.BytesIO()
    digest, size, diff_id = compress(_Trickle(data, most), target, 2)
    assert (target.getvalue(), digest, size, diff_id) == whole
    assert gzip.decompress(target.getvalue()) == data


def test_the_level_is_the_one_named_and_as_small_as_one_stream_at_that_level():
    # text-like and binary-like input across several blocks: cutting into primed blocks costs (almost) nothing
    data = b"".join(b"layer %d of a tar, a path /usr/lib/python3/dist-packages/x%d.py\n" % (i, i % 977)
                    for i in range(120_000)) + bytes(range(256)) * 8000
    blob = _compressed(data)[0]
    assert gzip.decompress(blob) == data
    assert len(blob) <= len(zlib.compress(data, LEVEL)) * 1.002 + 64
    assert len(blob) < len(zlib.compress(data, 1))  # smaller than the level 1 it replaced
    # a change of LEVEL or BLOCK changes every blob: the rule is named in one place and this test pins it
    assert (LEVEL, MEMORY_LEVEL, BLOCK) == (5, 8, 1 << 20)


def test_the_manifest_names_the_config_and_every_layer_in_order_in_one_form(tmp_path):
    config = b'{"rootfs": {}}'
    one, two = Blob("sha256:" + "1" * 64, 10, tmp_path / "1"), Blob("sha256:" + "2" * 64, 20, tmp_path / "2")
    blobs = ImageBlobs(config, (one, two, one))  # a layer the image holds twice is named twice
    body = blobs.manifest()
    document = json.loads(body)
    assert document["config"] == {"mediaType": DOCKER_CONFIG, "size": len(config),
                                  "digest": "sha256:" + hashlib.sha256(config).hexdigest()}
    assert [layer["digest"] for layer in document["layers"]] == [one.digest, two.digest, one.digest]
    assert {layer["mediaType"] for layer in document["layers"]} == {DOCKER_LAYER}
    assert body == ImageBlobs(config, (one, two, one)).manifest()
    assert blobs.size == len(config) + 40


def _failing(*messages, then=None):
    calls = []

    def action():
        calls.append(len(calls))
        if len(calls) <= len(messages):
            raise messages[len(calls) - 1]
        return then

    return action, calls


def test_a_transient_failure_is_retried_on_the_schedule_with_a_line_each():
    out, waits = io.StringIO(), []
    action, calls = _failing(RegistryError("127.0.0.1:5000: PUT blob sha256:1: HTTP 503"),
                             RegistryError("127.0.0.1:5000: POST blob upload: cannot be reached after 1 attempt(s) "
                                           "(ConnectionError: [Errno 111] Connection refused)"), then=7)
    assert _with_retries("127.0.0.1:5000/nvidia/pytorch:dev-py3", action, out, waits.append) == 7
    assert len(calls) == 3 and waits == [2.0, 4.0]
    assert out.getvalue().count("retry ") == 2 and "retry 1/3 in 2s" in out.getvalue()


def test_a_registry_that_stays_down_fails_after_every_attempt_and_says_where():
    out, waits = io.StringIO(), []
    down = RegistryError("127.0.0.1:9: HEAD blob sha256:1: cannot be reached after 1 attempt(s) "
                         "(ConnectionError: [Errno 111] Connection refused)")
    action, calls = _failing(*[down] * 4)
    with pytest.raises(PushFailed) as failed:
        _with_retries("127.0.0.1:9/nvidia/pytorch:dev-py3", action, out, waits.append)
    assert len(calls) == 4 and len(waits) == 3
    assert "push failed after 4 attempt(s)" in str(failed.value)
    assert "is a registry running at 127.0.0.1:9?" in str(failed.value)
    assert "the local image is kept" in str(failed.value)


@pytest.mark.parametrize("refusal, expected", [
    (RegistryError("127.0.0.1:5000: POST blob upload: access denied (401) (UNAUTHORIZED); log in"),
     "the registry rejected the credentials"),
    (DigestMismatch("127.0.0.1:5000/nvidia/pytorch:dev-py3: the registry says the manifest is sha256:0, but its "
                    "bytes are sha256:1; refused"), "nothing was recorded"),
    (RegistryError("127.0.0.1:5000: PUT blob sha256:1: HTTP 400 (DIGEST_INVALID)"), "after 1 attempt(s)"),
])
def test_what_retrying_cannot_mend_fails_at_once(refusal, expected):
    out, waits = io.StringIO(), []
    action, calls = _failing(refusal)
    with pytest.raises(PushFailed) as failed:
        _with_retries("127.0.0.1:5000/nvidia/pytorch:dev-py3", action, out, waits.append)
    assert len(calls) == 1 and waits == [] and "retry" not in out.getvalue()
    assert expected in str(failed.value)
    assert str(failed.value).startswith("127.0.0.1:5000/nvidia/pytorch:dev-py3: ")


def test_each_blob_is_its_whole_layer_and_a_compression_that_stops_short_pushes_nothing(tmp_path, monkeypatch):
    from ngcbuild.core.errors import OperationError
    from ngcbuild.image.store import LayerStore
    from ngcbuild.publish import layer_blobs

    image_id, save, layers, diff_ids = docker_20_10_save()
    client = SavingClient(image_id, save, diff_ids)
    made = layer_blobs.image_blobs(client, image_id, tmp_path / "ok", lambda line: None, store=None)
    assert [gzip.decompress(blob.path.read_bytes()) for blob in made.layers] == layers

    def first_block_only(source, target, workers=2):  # the fault the first blocked compression had
        return compress(io.BytesIO(source.read(7)), target, workers)

    monkeypatch.setattr(layer_blobs, "compress", first_block_only)
    for store in (None, LayerStore.open(tmp_path / "store-short", 1 << 30)):  # without the store, and with one that lacks them
        with pytest.raises(OperationError, match="is not that layer's bytes .*nothing pushed"):
            layer_blobs.image_blobs(client, image_id, tmp_path / "short", lambda line: None, store=store)
