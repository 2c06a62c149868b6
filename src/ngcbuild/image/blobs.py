"""An image as the blobs a registry stores: its config (the very bytes whose sha256 is the image id) and
each layer compressed by ngcbuild, not by the engine, and the manifest naming them, so the blobs and the
manifest are the same bytes on any engine of any version (docs/reproducible.md). publish/layer_blobs.py
feeds it an engine's save.

The compression is one gzip member with a fixed header (no name, no time, no extra flags, OS "unknown")
around zlib's raw deflate at one fixed level and memory level: the same layer gives the same blob
wherever zlib is zlib (a Python built on zlib-ng deflates otherwise, and says so in zlib.ZLIB_VERSION).
Level 1: measured on dev's layers, 3x faster than level 6 for blobs 15% larger (BENCHMARKS.md).
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.image.media import DOCKER_CONFIG, DOCKER_LAYER, DOCKER_MANIFEST

LEVEL = 1
MEMORY_LEVEL = 8  # zlib's default, named: a change of it is a change of every blob
# ID1 ID2, deflate, no flags (no name, no comment, no extra field), mtime 0, XFL 0, OS 255 (unknown)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Blob:
    digest: str
    size: int
    path: Path  # the compressed bytes, in the caller's temporary folder


@dataclass(frozen=True)
class ImageBlobs:
    config: bytes
    layers: tuple[Blob, ...]  # in the order of the config's diff ids

    def manifest(self) -> bytes:
        """The image manifest (Docker schema 2, as the engine pushes) naming the config and the blobs, in one
        fixed form: the same blobs give the same manifest digest."""
        document = {
            "schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
            "config": {"mediaType": DOCKER_CONFIG, "size": len(self.config),
                       "digest": "sha256:" + hashlib.sha256(self.config).hexdigest()},
            "layers": [{"mediaType": DOCKER_LAYER, "size": blob.size, "digest": blob.digest} for blob in self.layers],
        }
        return json.dumps(document, indent=3).encode()

    @property
    def size(self) -> int:
        return len(self.config) + sum(blob.size for blob in self.layers)


def compress(source, target) -> tuple[str, int, str]:
    """`source` (a file read to its end) as one deterministic gzip member written to `target`: the sha256
    and size of what was written, and the sha256 of what was read (its diff id)."""
    digest, size = hashlib.sha256(), 0
    plain, crc, length = hashlib.sha256(), 0, 0
    deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, MEMORY_LEVEL, zlib.Z_DEFAULT_STRATEGY)

    def put(data: bytes) -> None:
        nonlocal size
        if data:
            digest.update(data)
            target.write(data)
            size += len(data)

    put(GZIP_HEADER)
    while chunk := source.read(_CHUNK):
        plain.update(chunk)
        crc, length = zlib.crc32(chunk, crc), length + len(chunk)
        put(deflate.compress(chunk))
    put(deflate.flush())
    put(struct.pack("<II", crc & 0xFFFFFFFF, length & 0xFFFFFFFF))
    return "sha256:" + digest.hexdigest(), size, "sha256:" + plain.hexdigest()
