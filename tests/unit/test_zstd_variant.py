"""The zstd variant of an image (issue 52 item 4): the layer compression (image/zstd_variant.py) is the same bytes
whatever the number of workers, the chunks it is fed and the run, reads back to its tar, and its frame has the
fixed parameters; a gzip blob is recompressed as it streams (several members read, damage kept as one problem,
never raised into the reader); the manifest and index have one form; and the variant made on a registry
(publish/variant.py, against the fake registry of the corpus) names the image's own config, writes its tag last,
and a second run sends nothing."""

from __future__ import annotations

import gzip
import io
import json
import random
import shutil
import subprocess

import pytest
import zstandard

from ngcbuild.image.blobs import compress as gzip_compress
from ngcbuild.image.media import (
    DOCKER_CONFIG,
    DOCKER_LAYER,
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_LAYER_ZSTD,
    OCI_MANIFEST,
)
from ngcbuild.image.zstd_variant import (
    INFLATE_BLOCK,
    LEVEL,
    GzipToZstd,
    LayerProblem,
    ZstdLayer,
    compress,
    index,
    manifest,
)
from ngcbuild.registry.client import Manifest, Registry

from ..corpus.fakes import REPOSITORY, Content, FakeRegistry, digest_of


def _layer_like(size: int, seed: int = 7) -> bytes:
    """`size` bytes that compress as a layer does: text of a small vocabulary with runs of random bytes."""
    chooser = random.Random(seed)
    words = [bytes(chooser.choice(b"abcdefghijklmnop _/.") for _ in range(chooser.randint(3, 12))) for _ in range(500)]
    parts, total = [], 0
    while total < size:
        part = chooser.randbytes(chooser.randint(500, 60_000)) if chooser.random() < 0.3 else \
            b" ".join(chooser.choice(words) for _ in range(chooser.randint(100, 6000)))
        parts.append(part)
        total += len(part)
    return b"".join(parts)[:size]


# over three of libzstd's jobs at level 3 (8 MiB each): the workers' split of the frame is exercised
BIG = _layer_like(26 << 20)


def _zstd(data: bytes, workers: int, chunk: int = 1 << 20) -> tuple[bytes, ZstdLayer]:
    target = io.BytesIO()
    made = compress(io.BytesIO(data), target, workers=workers, chunk=chunk)
    return target.getvalue(), made


def test_the_same_bytes_whatever_the_workers_and_the_chunks():
    digests = {_zstd(BIG, workers, chunk)[1].digest for workers, chunk in
               ((1, 1 << 20), (2, 65_536), (4, 997), (8, 8 << 20), (3, 1 << 20))}
    assert len(digests) == 1, digests


def test_the_same_bytes_run_after_run_and_single_threaded_mode_is_never_used():
    first, made = _zstd(BIG, 2)
    assert _zstd(BIG, 2)[0] == first
    # zstd's single-threaded mode (0 workers) frames the input otherwise: 0 is taken as 1, never as 0
    assert _zstd(BIG, 0)[1].digest == made.digest


@pytest.mark.parametrize("data", [b"", b"a", _layer_like(3 << 20, 1), bytes(5 << 20) + b"tail",
                                  random.Random(3).randbytes(1 << 20)])
def test_a_layer_reads_back_to_its_tar_and_names_itself(data, tmp_path):
    blob, made = _zstd(data, 2)
    assert zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob)).read() == data
    assert made.digest == digest_of(blob) and made.size == len(blob)
    assert made.diff_id == digest_of(data) and made.tar_size == len(data)
    if shutil.which("zstd"):  # the system's zstd agrees (its checksum checked)
        (tmp_path / "layer.zst").write_bytes(blob)
        assert subprocess.run(["zstd", "-t", "-q", str(tmp_path / "layer.zst")]).returncode == 0


def test_the_frame_has_the_fixed_parameters():
    blob, _ = _zstd(BIG[: 4 << 20], 2)
    frame = zstandard.get_frame_parameters(blob)
    assert frame.has_checksum and frame.dict_id == 0
    assert frame.content_size == zstandard.CONTENTSIZE_UNKNOWN  # never written: a stream's size is known at its end
    assert frame.window_size == 2 << 20  # level 3's window for an unknown size
    assert LEVEL == 3
    assert len(zstandard.ZstdDecompressor().decompressobj().decompress(blob)) == 4 << 20  # one frame holds it all


def _gzip_ours(data: bytes) -> bytes:
    target = io.BytesIO()
    gzip_compress(io.BytesIO(data), target)
    return target.getvalue()


def _fed(blob: bytes, chunk: int, workers: int = 2) -> tuple[GzipToZstd, io.BytesIO]:
    target = io.BytesIO()
    made = GzipToZstd(target, workers)
    for start in range(0, len(blob), chunk):
        made.feed(blob[start:start + chunk])
    return made, target


@pytest.mark.parametrize("chunk", [1, 4096, 65_536, 10 << 20])
def test_a_gzip_blob_streams_into_the_zstd_blob_of_its_tar(chunk):
    data = BIG[: 3 << 20] if chunk > 1 else BIG[:200_000]
    made, target = _fed(_gzip_ours(data), chunk)
    result = made.finish()
    assert result == _zstd(data, 4)[1] and target.getvalue() == _zstd(data, 1)[0]


@pytest.mark.parametrize("blob", [
    gzip.compress(b"first member " * 1000, mtime=0) + gzip.compress(b"second " * 5000, mtime=0),  # pigz -i, cat a b
    gzip.compress(b"", mtime=0),
    gzip.compress(b"x", compresslevel=1, mtime=0),
])
def test_every_gzip_member_is_read(blob):
    made, _ = _fed(blob, 777)
    assert made.finish().diff_id == digest_of(gzip.decompress(blob))


def test_no_more_than_a_block_of_tar_at_once():
    """A blob of 64 kB that inflates to 40 MB (zeros) passes through in blocks of INFLATE_BLOCK at most."""
    written = []
    blob = gzip.compress(bytes(40 << 20), mtime=0)
    made = GzipToZstd(io.BytesIO(), 1)
    write = made._writer.write
    made._writer.write = lambda data: (written.append(len(data)), write(data))
    made.feed(blob)
    assert made.finish().tar_size == 40 << 20
    assert max(written) <= INFLATE_BLOCK and len(blob) < 100_000


@pytest.mark.parametrize("blob, says", [
    (b"", "is empty, not a gzip stream"),
    (b"PK\x03\x04 a zip, not gzip" * 10, "is not a gzip stream"),
    (_gzip_ours(BIG[:300_000])[:-9], "is a gzip stream cut short"),
    (_gzip_ours(BIG[:300_000])[:5_000], "is a gzip stream cut short"),
    (_gzip_ours(BIG[:300_000]) + b"\0" * 512, "is damaged gzip after 300000 bytes"),
    (_gzip_ours(BIG[:300_000]) + b"<html>502</html>", "is damaged gzip after 300000 bytes"),
    (_gzip_ours(BIG[:300_000])[:100] + b"\xff" * 200 + _gzip_ours(BIG[:300_000])[300:], "damaged gzip"),
])
def test_a_blob_that_is_not_whole_gzip_is_one_problem_never_raised_while_fed(blob, says):
    made, _ = _fed(blob, 1000)  # feeding raised nothing
    with pytest.raises(LayerProblem, match=says.replace("(", r"\(")):
        made.finish()


def test_a_write_that_fails_is_kept_as_the_problem():
    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(28, "No space left on device")

    made = GzipToZstd(Full(), 1)
    made.feed(gzip.compress(BIG[: 2 << 20], mtime=0))
    with pytest.raises(LayerProblem, match="No space left on device"):
        made.finish()


def test_the_manifest_names_the_images_own_config_and_zstd_layers_in_one_form():
    layers = [ZstdLayer("sha256:" + "a" * 64, 10, "sha256:" + "b" * 64, 20),
              ZstdLayer("sha256:" + "c" * 64, 30, "sha256:" + "d" * 64, 40)]
    body = manifest("sha256:" + "e" * 64, 1234, layers)
    assert body == manifest("sha256:" + "e" * 64, 1234, list(layers))
    document = json.loads(body)
    assert document == {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                        "config": {"mediaType": OCI_CONFIG, "digest": "sha256:" + "e" * 64, "size": 1234},
                        "layers": [{"mediaType": OCI_LAYER_ZSTD, "digest": "sha256:" + "a" * 64, "size": 10},
                                   {"mediaType": OCI_LAYER_ZSTD, "digest": "sha256:" + "c" * 64, "size": 30}]}
    read = Manifest(body, OCI_MANIFEST, digest_of(body), "here").image()  # what the registry client reads
    assert [layer.digest for layer in read.layers] == [layer.digest for layer in layers]
    assert OCI_LAYER_ZSTD == "application/vnd.oci.image.layer.v1.tar+zstd"


def test_the_index_names_each_platforms_manifest():
    amd, arm = b'{"a": 1}', b'{"b": 2}'
    body = index([(amd, {"architecture": "amd64", "os": "linux"}),
                  (arm, {"architecture": "arm64", "os": "linux", "variant": "v8"})])
    entries = Manifest(body, OCI_INDEX, digest_of(body), "here").entries()
    assert [(e.media_type, e.digest, e.size, str(e.platform)) for e in entries] == [
        (OCI_MANIFEST, digest_of(amd), len(amd), "linux/amd64"), (OCI_MANIFEST, digest_of(arm), len(arm), "linux/arm64")]
    assert json.loads(body)["mediaType"] == OCI_INDEX


# --- the variant made on a registry (publish/variant.py) -------------------------------------------------

def _image(content: Content, arch: str, tars: list[bytes], tag: str | None = None) -> tuple[str, bytes]:
    """An image as ngcbuild's push writes it (gzip by image/blobs.py) stored in `content`: its manifest's digest
    and bytes."""
    config = json.dumps({"architecture": arch, "os": "linux",
                         "rootfs": {"type": "layers", "diff_ids": [digest_of(t) for t in tars]}}).encode()
    content.add_blob(config)
    layers = []
    for tar in tars:
        blob = _gzip_ours(tar)
        content.add_blob(blob)
        layers.append({"mediaType": DOCKER_LAYER, "digest": digest_of(blob), "size": len(blob)})
    body = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                       "config": {"mediaType": DOCKER_CONFIG, "digest": digest_of(config), "size": len(config)},
                       "layers": layers}, indent=3).encode()
    return content.add_manifest(body, DOCKER_MANIFEST, tag=tag), body


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    made = FakeRegistry(tmp_path / "registry.log", Content())
    yield made
    made.close()


def _requests(fake: FakeRegistry) -> list[tuple[str, str]]:
    return [(r["method"], r["path"]) for r in fake.requests()]


def test_the_variant_of_an_image_is_made_its_tag_last_and_a_second_run_sends_nothing(fake, tmp_path):
    from ngcbuild.publish.variant import make_variant

    tars = [BIG[:400_000], BIG[400_000:900_000], BIG[:400_000]]  # the first layer named twice
    digest, _ = _image(fake.content, "amd64", tars, tag="dev-py3")
    registry = Registry(fake.address)
    out = io.StringIO()
    made = make_variant(registry, REPOSITORY, "dev-py3", digest, out=out)
    assert made.tag == "dev-py3-zstd" and made.made_from == digest and made.media_type == OCI_MANIFEST
    assert fake.content.tags["dev-py3-zstd"] == made.digest
    body, _ = fake.content.manifests[made.digest]
    document = json.loads(body)
    assert document["config"]["digest"] == json.loads(fake.content.manifests[digest][0])["config"]["digest"]
    for layer, tar in zip(document["layers"], tars, strict=True):
        assert zstandard.ZstdDecompressor().stream_reader(io.BytesIO(fake.content.blobs[layer["digest"]])).read() == tar
    log = _requests(fake)
    tag_put = log.index(("PUT", f"/v2/{REPOSITORY}/manifests/dev-py3-zstd"))
    assert all(i < tag_put for i, (method, path) in enumerate(log) if method in ("POST", "PUT") and "/blobs/" in path)
    assert sum(method == "POST" for method, _ in log) == 2  # two distinct layers, each sent once
    assert "2 blob(s) sent, 0 already in the registry" in out.getvalue()
    assert not list((tmp_path / "tmp").iterdir())  # the scratch folder removed

    # again without the record: the same blobs, each held, the tag already the variant's: nothing sent
    before = len(fake.requests())
    again = make_variant(registry, REPOSITORY, "dev-py3", digest, out=io.StringIO())
    assert again.digest == made.digest
    assert not [r for r in _requests(fake)[before:] if r[0] in ("POST", "PUT", "PATCH")]
    # again with the record: nothing read but the tag's manifest and HEADs
    before = len(fake.requests())
    out = io.StringIO()
    assert make_variant(registry, REPOSITORY, "dev-py3", digest, recorded=made, out=out) == made
    assert {method for method, _ in _requests(fake)[before:]} <= {"GET", "HEAD"}
    assert not [path for method, path in _requests(fake)[before:] if method == "GET" and "/blobs/" in path]
    assert "nothing read or sent" in out.getvalue()


def test_the_variant_of_a_list_is_an_index_of_each_platforms_variant(fake):
    from ngcbuild.publish.variant import make_variant

    amd, amd_body = _image(fake.content, "amd64", [BIG[:300_000]])
    arm, arm_body = _image(fake.content, "arm64", [BIG[300_000:600_000], BIG[:300_000]])
    listed = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_LIST, "manifests": [
        {"mediaType": DOCKER_MANIFEST, "digest": amd, "size": len(amd_body),
         "platform": {"architecture": "amd64", "os": "linux"}},
        {"mediaType": DOCKER_MANIFEST, "digest": arm, "size": len(arm_body),
         "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}}]}).encode()
    digest = fake.content.add_manifest(listed, DOCKER_LIST, tag="dev-py3")
    made = make_variant(Registry(fake.address), REPOSITORY, "dev-py3", digest, out=io.StringIO())
    assert made.media_type == OCI_INDEX and fake.content.tags["dev-py3-zstd"] == made.digest
    entries = json.loads(fake.content.manifests[made.digest][0])["manifests"]
    assert [e["platform"] for e in entries] == [{"architecture": "amd64", "os": "linux"},
                                                {"architecture": "arm64", "os": "linux", "variant": "v8"}]
    for entry, gzip_digest in zip(entries, (amd, arm), strict=True):
        child = json.loads(fake.content.manifests[entry["digest"]][0])
        assert child["config"] == {**json.loads(fake.content.manifests[gzip_digest][0])["config"],
                                   "mediaType": OCI_CONFIG}
    children = [json.loads(fake.content.manifests[entry["digest"]][0]) for entry in entries]
    distinct = {layer["digest"]: layer["size"] for child in children for layer in child["layers"]}
    assert len(distinct) == 2 and made.layer_bytes == sum(distinct.values())  # the shared layer counted once


def test_a_tag_too_long_for_its_variant_is_refused():
    from ngcbuild.core.errors import UserError
    from ngcbuild.publish.variant import variant_tag

    assert variant_tag("25.12-py3") == "25.12-py3-zstd"
    with pytest.raises(UserError, match="over the 128"):
        variant_tag("t" * 124)



@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_an_interrupt_or_a_failure_between_two_layers_leaves_no_tag_and_no_scratch(fake, tmp_path, monkeypatch, stop):
    from ngcbuild.publish import variant

    digest, _ = _image(fake.content, "amd64", [BIG[:300_000], BIG[300_000:600_000]], tag="dev-py3")
    sent = []

    def upload(self, repository, path, blob_digest, size):
        if sent:
            raise stop("stopped between two layers")
        sent.append(blob_digest)
        return True

    monkeypatch.setattr(Registry, "put_blob_file", upload)
    with pytest.raises(stop):
        variant.make_variant(Registry(fake.address), REPOSITORY, "dev-py3", digest, out=io.StringIO())
    assert len(sent) == 1 and "dev-py3-zstd" not in fake.content.tags
    assert not [r for r in fake.requests() if r["method"] == "PUT" and "/manifests/" in r["path"]]
    assert not list((tmp_path / "tmp").iterdir())
