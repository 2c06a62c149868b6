"""An image as the blobs a registry stores: its config (the very bytes whose sha256 is the image id) and
each layer compressed by ngcbuild, not by the engine, and the manifest naming them, so the blobs and the
manifest are the same bytes on any engine of any version (docs/reproducible.md). publish/layer_blobs.py
feeds it an engine's save.

The compression is one gzip member with a fixed header (no name, no time, no extra flags, OS "unknown")
around zlib's raw deflate at one fixed level and memory level: the same layer gives the same blob
wherever zlib is zlib (a Python built on zlib-ng deflates otherwise, and says so in zlib.ZLIB_VERSION).
Level 5: a release is pushed once and pulled by every node, so its blobs are at least as small as the
engine's own push makes them (Go's gzip at its default level; level 1 made dev's torch layer 15% larger),
and a push is not slower than it has to be: on cuda-dev's CUDA libraries level 5 deflates 1.56× as fast
as level 6 for 1.4% more bytes, still 4% under the engine's (BENCHMARKS.md). To pay for it on every
core, the input is cut into blocks of BLOCK bytes, each deflated on its own thread primed with the 32 KiB
before it (as pigz does) and ended on a byte boundary (a sync flush), the last one finishing the stream:
the blocks are a fixed function of the input, so the blob is the same bytes whatever the number of threads.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.image.media import DOCKER_CONFIG, DOCKER_LAYER, DOCKER_MANIFEST

LEVEL = 5
MEMORY_LEVEL = 8  # zlib's default, named: a change of it is a change of every blob
BLOCK = 1 << 20  # input bytes per deflate block: a change of it is a change of every blob
_WINDOW = 32 << 10  # deflate's window: each block is primed with this much of the input before it
# ID1 ID2, deflate, no flags (no name, no comment, no extra field), mtime 0, XFL 0, OS 255 (unknown)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
WORKERS = max(1, min(8, os.cpu_count() or 1))


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

    @property
    def image_id(self) -> str:
        """The image's id: its config's digest."""
        return "sha256:" + hashlib.sha256(self.config).hexdigest()


class Stopped(Exception):
    """compress() was asked to stop (its caller is being interrupted): what it wrote is not a blob."""


def compress(source, target, workers: int = WORKERS, stop=None) -> tuple[str, int, str]:
    """`source` (a file read to its end) as one deterministic gzip member written to `target`: the sha256
    and size of what was written, and the sha256 of what was read (its diff id). `workers` threads deflate
    at once (the bytes do not depend on it); at most twice as many blocks are held in memory. `stop()`,
    when given, is asked before each block is read: True raises Stopped (a thread compressing for an
    interrupted command ends within a block or two)."""
    digest, size = hashlib.sha256(), 0
    plain, crc, length = hashlib.sha256(), 0, 0

    def put(data: bytes) -> None:
        nonlocal size
        if data:
            digest.update(data)
            target.write(data)
            size += len(data)

    put(GZIP_HEADER)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="deflate") as pool:
        pending: deque = deque()
        primer, block = b"", _read_block(source)
        while True:
            if stop is not None and stop():
                raise Stopped("compression stopped")
            following = _read_block(source) if len(block) == BLOCK else b""
            plain.update(block)
            crc, length = zlib.crc32(block, crc), length + len(block)
            last = not following
            pending.append(pool.submit(_deflate_block, block, primer, last))
            if last:
                break
            primer, block = block[-_WINDOW:], following
            while len(pending) > 2 * max(1, workers):
                put(pending.popleft().result())
        while pending:
            put(pending.popleft().result())
    put(struct.pack("<II", crc & 0xFFFFFFFF, length & 0xFFFFFFFF))
    return "sha256:" + digest.hexdigest(), size, "sha256:" + plain.hexdigest()


def _read_block(source) -> bytes:
    """BLOCK bytes of `source`, fewer only at its end: a stream (a layer as the save passes it) may answer a
    read with less than was asked, and the blocks must not depend on how the bytes arrived."""
    parts, wanted = [], BLOCK
    while wanted:
        part = source.read(wanted)
        if not part:
            break
        parts.append(part)
        wanted -= len(part)
    return b"".join(parts)


def _deflate_block(block: bytes, primer: bytes, last: bool) -> bytes:
    """One block of the raw deflate stream: primed with the input before it, ended on a byte boundary
    (a sync flush, so the next block's bytes follow on) or, for the last, with the stream's final block."""
    options = {"zdict": primer} if primer else {}
    deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, MEMORY_LEVEL, zlib.Z_DEFAULT_STRATEGY,
                               **options)
    return deflate.compress(block) + deflate.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
