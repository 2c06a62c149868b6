"""image/save.py: the engine's save read as it streams and by what it declares, against saves laid
out as each engine writes them (built here to the engine's published format, docs/engines.md), cut into
chunks of any size, and against saves that are cut short, damaged or that lie about what they hold."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import tarfile

import pytest

from ngcbuild.image.save import ChunkReader, SaveUnreadable, read_members


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(*files: tuple[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


LAYERS = [_layer(("etc/base", b"the base\n")), _layer(("usr/lib/x", bytes(range(256)) * 40 + b"x")),
          _layer(), _layer(("d" * 120 + "/long", b"long" * 300))]
DIFF_IDS = [_digest(layer) for layer in LAYERS]
CONFIG = json.dumps({"architecture": "amd64", "os": "linux",
                     "rootfs": {"type": "layers", "diff_ids": DIFF_IDS}}, sort_keys=True).encode()
CONFIG_ID = _digest(CONFIG)


class Entry:
    """One member of a save: a file, a folder or a symbolic link."""

    def __init__(self, name: str, data: bytes = b"", kind=tarfile.REGTYPE, link: str = ""):
        self.name, self.data, self.kind, self.link = name, data, kind, link


def _tar(entries: list[Entry], fmt=tarfile.PAX_FORMAT) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type, info.linkname = entry.kind, entry.link
            info.size = len(entry.data) if entry.kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(entry.data) if entry.kind == tarfile.REGTYPE else None)
    return out.getvalue()


def _v1(index: int) -> str:
    return f"{index + 1:x}" * 64


def docker_20_10(fmt=tarfile.PAX_FORMAT) -> tuple[str, bytes]:
    """Docker 20.10's save: `<v1 id>/layer.tar` per layer, `<config digest>.json`, manifest.json, in the
    order of its folder walk."""
    entries = []
    for index, layer in enumerate(LAYERS):
        entries += [Entry(_v1(index), kind=tarfile.DIRTYPE), Entry(f"{_v1(index)}/VERSION", b"1.0"),
                    Entry(f"{_v1(index)}/json", b'{"id": "x"}'), Entry(f"{_v1(index)}/layer.tar", layer)]
    entries += [Entry(f"{CONFIG_ID[7:]}.json", CONFIG),
                Entry("manifest.json", json.dumps([{"Config": f"{CONFIG_ID[7:]}.json", "RepoTags": ["r:t"],
                                                    "Layers": [f"{_v1(i)}/layer.tar" for i in range(4)]}]).encode()),
                Entry("repositories", b'{"r": {"t": "x"}}')]
    return CONFIG_ID, _tar(entries, fmt)


def podman_4() -> tuple[str, bytes]:
    """Podman 4.3's docker-archive (as its API's save wrote it here): `<diff id>.tar` per layer, then the
    config, then per layer a folder whose layer.tar is a symbolic link to the file."""
    entries = [Entry(f"{d[7:]}.tar", layer) for d, layer in zip(DIFF_IDS, LAYERS, strict=True)]
    entries.append(Entry(f"{CONFIG_ID[7:]}.json", CONFIG))
    for index, diff_id in enumerate(DIFF_IDS):
        entries += [Entry(f"{_v1(index)}/layer.tar", kind=tarfile.SYMTYPE, link=f"../{diff_id[7:]}.tar"),
                    Entry(f"{_v1(index)}/VERSION", b"1.0"), Entry(f"{_v1(index)}/json", b"{}")]
    entries += [Entry("manifest.json", json.dumps([{"Config": f"{CONFIG_ID[7:]}.json", "RepoTags": ["r:t"],
                                                    "Layers": [f"{d[7:]}.tar" for d in DIFF_IDS]}]).encode()),
                Entry("repositories", b"{}")]
    return CONFIG_ID, _tar(entries)


def _oci(layer_blobs: list[bytes], layer_media: str, index_too: bool, legacy_manifest: bool) -> tuple[str, bytes, str]:
    """An OCI image layout as `docker save` writes it from Docker 25 on: (manifest digest, save, index digest)."""
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": CONFIG_ID, "size": len(CONFIG)},
                           "layers": [{"mediaType": layer_media, "digest": _digest(b), "size": len(b)}
                                      for b in layer_blobs]}).encode()
    blobs = {_digest(b): b for b in [*layer_blobs, CONFIG, manifest]}
    top = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                              "digest": _digest(manifest), "size": len(manifest),
                                              "platform": {"architecture": "amd64", "os": "linux"}}]}
    index_digest = ""
    if index_too:  # a multi-platform image: its index, the arm64 manifest left out of a save of one platform
        top["manifests"].append({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "e" * 64,
                                 "size": 500, "platform": {"architecture": "arm64", "os": "linux"}})
        index = json.dumps({**top, "mediaType": "application/vnd.oci.image.index.v1+json"}).encode()
        blobs[_digest(index)] = index
        index_digest = _digest(index)
        top = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.index.v1+json",
                                                  "digest": index_digest, "size": len(index)}]}
    entries = [Entry("blobs", kind=tarfile.DIRTYPE), Entry("blobs/sha256", kind=tarfile.DIRTYPE)]
    entries += [Entry(f"blobs/sha256/{d[7:]}", b) for d, b in sorted(blobs.items())]
    entries.append(Entry("index.json", json.dumps(top).encode()))
    if legacy_manifest:
        entries.append(Entry("manifest.json", json.dumps([{"Config": f"blobs/sha256/{CONFIG_ID[7:]}",
                                                           "Layers": [f"blobs/sha256/{_digest(b)[7:]}"
                                                                      for b in layer_blobs]}]).encode()))
    entries.append(Entry("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'))
    return _digest(manifest), _tar(entries), index_digest


def docker_25() -> tuple[str, bytes]:
    """Docker 25+ (graph drivers): the OCI layout, layers uncompressed; the image is named by its config."""
    _, saved, _ = _oci(LAYERS, "application/vnd.oci.image.layer.v1.tar", False, True)
    return CONFIG_ID, saved


def docker_29_containerd(by_index: bool = False, legacy_manifest: bool = True) -> tuple[str, bytes]:
    """Docker 29 with the containerd image store: the layers as the store holds them (gzip), the image named
    by its manifest's digest (or its index's, for an image of several platforms)."""
    compressed = [gzip.compress(layer, mtime=0) for layer in LAYERS]
    manifest_digest, saved, index_digest = _oci(compressed, "application/vnd.oci.image.layer.v1.tar+gzip",
                                                by_index, legacy_manifest)
    return (index_digest if by_index else manifest_digest), saved


ENGINES = {"docker 20.10": docker_20_10, "podman 4.3": podman_4, "docker 25": docker_25,
           "docker 29 containerd": docker_29_containerd,
           "docker 29 containerd, by index": lambda: docker_29_containerd(by_index=True),
           "containerd, index.json alone": lambda: docker_29_containerd(legacy_manifest=False)}


def _read(saved: bytes, image_id: str = CONFIG_ID, chunk: int = 7919, take=None, diff_ids=DIFF_IDS):
    """(Saved, [what on_layer read of each layer member, in the save's order])."""
    chunks = [saved[i:i + chunk] for i in range(0, len(saved), chunk)]
    stream = io.BufferedReader(ChunkReader(chunks), 1 << 16)
    seen = []

    def on_layer(source):
        seen.append(source.read() if take is None else source.read(take))
        return len(seen) - 1

    return read_members(stream, on_layer, "the save", image_id, diff_ids), seen


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("chunk", [1, 511, 7919, 1 << 20])
def test_each_engines_save_is_read_by_what_it_declares(engine, chunk):
    image_id, saved = ENGINES[engine]()
    found, seen = _read(saved, image_id, chunk=1 if chunk == 1 and engine != "docker 20.10" else chunk)
    assert found.config == CONFIG
    assert [layer.diff_id for layer in found.layers] == DIFF_IDS
    assert [seen[layer.result] for layer in found.layers] == LAYERS  # every layer handed on uncompressed
    # an image named by its config is found through manifest.json; one named by its manifest or index, in index.json
    assert found.layout == ("docker-archive" if image_id == CONFIG_ID else "oci-layout")


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_every_tar_format_of_the_save_reads_alike(fmt):
    found, seen = _read(docker_20_10(fmt)[1])
    assert found.config == CONFIG
    assert [seen[layer.result] for layer in found.layers] == LAYERS


def test_what_a_layer_leaves_unread_is_passed_over_and_still_hashed():
    found, seen = _read(podman_4()[1], take=100)
    assert [layer.diff_id for layer in found.layers] == DIFF_IDS
    assert [seen[layer.result] for layer in found.layers] == [layer[:100] for layer in LAYERS]


def test_a_save_of_another_image_is_refused():
    with pytest.raises(SaveUnreadable, match="no image whose config is the inspected image's"):
        _read(docker_20_10()[1], image_id="sha256:" + "a" * 64)


def test_a_config_listing_other_layers_than_the_inspect_is_refused():
    with pytest.raises(SaveUnreadable, match="lists 4 layers, not the 3"):
        _read(docker_20_10()[1], diff_ids=DIFF_IDS[:3])


def test_a_layer_file_holding_another_layer_is_refused():
    image_id, saved = podman_4()
    swapped = saved.replace(f'"{DIFF_IDS[1][7:]}.tar", "{DIFF_IDS[2][7:]}.tar"'.encode(),
                            f'"{DIFF_IDS[2][7:]}.tar", "{DIFF_IDS[1][7:]}.tar"'.encode())
    assert swapped != saved
    with pytest.raises(SaveUnreadable, match="not the layer"):
        _read(swapped, image_id)


def _manifest_naming(layers: list[str], extra: list[Entry]) -> bytes:
    return _tar([Entry(f"{CONFIG_ID[7:]}.json", CONFIG), *extra,
                 Entry("manifest.json", json.dumps([{"Config": f"{CONFIG_ID[7:]}.json", "Layers": layers}]).encode())])


def test_links_are_followed_inside_the_save_only():
    linked = [Entry(f"{d[7:]}.tar", layer) for d, layer in zip(DIFF_IDS, LAYERS, strict=True)]
    outward = _manifest_naming([f"x/{i}" for i in range(4)],
                               linked + [Entry(f"x/{i}", kind=tarfile.SYMTYPE, link=f"../../etc/{i}") for i in range(4)])
    with pytest.raises(SaveUnreadable, match="leads out of the save"):
        _read(outward)
    looped = _manifest_naming(["a"] * 4, [Entry("a", kind=tarfile.SYMTYPE, link="b"),
                                          Entry("b", kind=tarfile.SYMTYPE, link="a")])
    with pytest.raises(SaveUnreadable, match="hops"):
        _read(looped)
    hard = _manifest_naming([f"h{i}" for i in range(4)],
                            linked + [Entry(f"h{i}", kind=tarfile.LNKTYPE, link=f"{d[7:]}.tar")
                                      for i, d in enumerate(DIFF_IDS)])
    assert [layer.diff_id for layer in _read(hard)[0].layers] == DIFF_IDS


def test_a_declared_layer_that_is_missing_or_not_a_tar_is_refused():
    with pytest.raises(SaveUnreadable, match="not in the save"):
        _read(_manifest_naming(["nowhere.tar"] * 4, []))
    with pytest.raises(SaveUnreadable, match="not a tar"):
        _read(_manifest_naming(["text"] * 4, [Entry("text", b"just some text, no layer")]))


def test_a_save_declaring_nothing_is_refused():
    with pytest.raises(SaveUnreadable, match="declares no image"):
        _read(_tar([Entry(f"{CONFIG_ID[7:]}.json", CONFIG), Entry("1/layer.tar", LAYERS[0])]))


def test_an_oci_blob_holding_other_bytes_is_refused():
    image_id, saved = docker_29_containerd(legacy_manifest=False)
    bad = saved.replace(b'"architecture": "amd64", "os": "linux", "rootfs"', b'"architecture": "arm64", "os": "linux", "rootfs"')
    assert bad != saved
    with pytest.raises(SaveUnreadable, match="holds other bytes"):
        _read(bad, image_id)


def test_a_damaged_or_cut_gzip_layer_is_refused():
    compressed = gzip.compress(LAYERS[1], mtime=0)
    for broken, words in ((compressed[:len(compressed) // 2], "cut short"),
                          (compressed[:20] + b"\xff" * 40 + compressed[60:], "damaged gzip")):
        with pytest.raises(SaveUnreadable, match=words):
            _read(_manifest_naming(["l"] * 4, [Entry("l", broken)]))


def test_a_gzip_layer_of_several_members_reads_as_one():
    split = gzip.compress(LAYERS[1][:5000], mtime=0) + gzip.compress(LAYERS[1][5000:], mtime=0) + bytes(512)
    plain = [Entry(f"{i}", layer) for i, layer in enumerate(LAYERS) if i != 1]
    found, seen = _read(_manifest_naming(["0", "split", "2", "3"], [*plain, Entry("split", split)]))
    assert [layer.diff_id for layer in found.layers] == DIFF_IDS
    assert seen[found.layers[1].result] == LAYERS[1]


@pytest.mark.parametrize("seed", range(40))
def test_a_save_cut_anywhere_is_refused_as_unreadable(seed):
    saved = docker_20_10()[1]
    end = saved.index(bytes(1024), len(saved) - 10240 - 1024)  # where the end marker starts
    cut = random.Random(seed).randrange(0, end)
    with pytest.raises(SaveUnreadable, match="the save"):
        _read(saved[:cut])


def test_a_damaged_header_is_refused():
    saved = bytearray(docker_20_10()[1])
    saved[150] ^= 0x55  # inside the first header's checksum
    with pytest.raises(SaveUnreadable, match="damaged tar header"):
        _read(bytes(saved))


def test_a_config_that_says_more_than_a_config_holds_is_refused_before_it_is_read():
    info = tarfile.TarInfo(f"{CONFIG_ID[7:]}.json")
    info.size = 10 << 30
    with pytest.raises(SaveUnreadable, match="says 10737418240 bytes"):
        _read(info.tobuf(format=tarfile.GNU_FORMAT) + b"{}")


def test_a_document_too_large_to_be_one_is_refused_when_declared():
    big = b"{" + b" " * (64 << 20)
    with pytest.raises(SaveUnreadable, match="says 67108865 bytes"):
        _read(_tar([Entry("blobs/sha256/" + CONFIG_ID[7:], big), Entry("manifest.json", json.dumps(
            [{"Config": "blobs/sha256/" + CONFIG_ID[7:], "Layers": []}]).encode())]))


def test_more_entries_than_a_save_has_are_refused():
    header = tarfile.TarInfo("x").tobuf(format=tarfile.USTAR_FORMAT)
    with pytest.raises(SaveUnreadable, match="more than 65536 entries"):
        _read(header * 65537 + bytes(1024))


@pytest.mark.parametrize("records", [b"x" * 600, b"99999 path=a\n", b"12 path=a\n", b"0 =\n", b"6 path\n",
                                     b"-5 path=a\n", b" 9 path=a\n"])
def test_a_damaged_pax_header_is_refused(records):
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, len(records)
    block = info.tobuf(format=tarfile.USTAR_FORMAT) + records + bytes(-len(records) % 512) + bytes(1024)
    with pytest.raises(SaveUnreadable, match="PAX"):
        _read(block)


def test_an_extended_header_of_megabytes_is_refused_unread():
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, 50 << 20
    with pytest.raises(SaveUnreadable, match="extended header of 52428800 bytes"):
        _read(info.tobuf(format=tarfile.USTAR_FORMAT))


def test_a_pax_size_that_is_not_a_number_is_refused():
    info = tarfile.TarInfo("x")
    info.pax_headers = {"size": "ten"}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info)
    with pytest.raises(SaveUnreadable, match="PAX size"):
        _read(out.getvalue())
