"""An image's zstd variant as data (issue 52 item 4): the same image, each layer the zstd blob of the same
uncompressed tar, for the engines that pull zstd layers (Docker 23 and later, containerd 1.5 and later,
Podman); publish/variant.py makes it at `promote --zstd` from the promoted image's own gzip blobs.

Its manifest is an OCI image manifest (Docker schema 2 has no zstd layer type) naming the image's own config
blob, the very bytes, under OCI's config media type: the config's diff ids are the sha256 of the uncompressed
tars, whatever compresses them, so the image id is the gzip image's and an engine that pulls either tag holds
the same image, each layer checked against the same diff id. A list gets an OCI index of one such manifest per
platform, the platforms as the list names them. Both are written in one fixed form (`manifest`, `index`): the
same blobs give the same digest.

The compression is deterministic. One zstd frame at LEVEL 3 (zstd's default level; libzstd's parameters for that
level and an unknown source size, since the layer is compressed as it streams and its size is known only at
its end), no dictionary and no dictionary id, a checksum (the frame's XXH64 of the tar, which every decoder
checks as it extracts), no content size in the frame header (it would be there only when known before the
first byte, which a stream never is: fixed "not written" rather than left to how the input arrives). It is
compressed by libzstd's multithreaded mode with WORKERS >= 1 workers, which cuts the input into jobs whose size
follows from the level's parameters alone (not from the number of workers, nor from the sizes of the chunks it
is fed): the frame is the same bytes with 1 worker or 8, whatever the reads were (zstd tests its own
determinism so: tests/cli-tests/determinism/multithread.sh, -T1 = -T2 = -T4; tests/unit/test_zstd_variant.py
tests it here across workers and chunk sizes). Single-threaded mode (0 workers) frames the input otherwise, so
it is never used.

A change of any of it (the level, a parameter, the checksum or content-size flag, 0 workers, another libzstd:
the `zstandard` wheel bundles its own, pinned in .ci/requirements.lock) makes other zstd blobs of the same
image, so another variant manifest digest: the gzip image, its digest and its attestations are untouched; a
promote that recorded the old variant finds it whole at its tag and keeps it, one without that record makes
the new variant and moves the `-zstd` tag to it.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import dataclass

import zstandard

from ngcbuild.image.media import OCI_CONFIG, OCI_INDEX, OCI_LAYER_ZSTD, OCI_MANIFEST

LEVEL = 3
WORKERS = max(1, min(8, os.cpu_count() or 1))  # never 0: single-threaded mode frames the input otherwise
INFLATE_BLOCK = 1 << 20  # the most tar one step of decompressing a gzip layer gives (bounded memory)


class LayerProblem(Exception):
    """A gzip layer that cannot be made into its zstd blob: not gzip, damaged, cut short, or a write failed.
    Its text completes "layer N ..." (publish/variant.py names the layer)."""


@dataclass(frozen=True)
class ZstdLayer:
    digest: str  # of the zstd blob
    size: int
    diff_id: str  # the sha256 of the tar it holds
    tar_size: int


def compressor(workers: int = WORKERS) -> zstandard.ZstdCompressor:
    """The one compressor of every zstd layer: the fixed parameters of the module's docstring."""
    return zstandard.ZstdCompressor(level=LEVEL, write_checksum=True, write_content_size=False,
                                    write_dict_id=False, threads=max(1, workers))


class ZstdWriter:
    """A layer tar, written to it in chunks of any size, compressed into `target` (a binary file) as one zstd
    frame; `close()` ends the frame and says what was written."""

    def __init__(self, target, workers: int = WORKERS):
        self._target = target
        self._frame = compressor(workers).compressobj()
        self._digest, self._plain = hashlib.sha256(), hashlib.sha256()
        self.size = self.tar_size = 0

    def write(self, data: bytes) -> None:
        if data:
            self._plain.update(data)
            self.tar_size += len(data)
            self._put(self._frame.compress(data))

    def close(self) -> ZstdLayer:
        self._put(self._frame.flush())
        return ZstdLayer("sha256:" + self._digest.hexdigest(), self.size, "sha256:" + self._plain.hexdigest(),
                         self.tar_size)

    def _put(self, data: bytes) -> None:
        if data:
            self._digest.update(data)
            self._target.write(data)
            self.size += len(data)


def compress(source, target, workers: int = WORKERS, chunk: int = 1 << 20) -> ZstdLayer:
    """`source` (a layer tar, read to its end `chunk` bytes at a time) as one zstd frame written to `target`."""
    writer = ZstdWriter(target, workers)
    while True:
        data = source.read(chunk)
        if not data:
            return writer.close()
        writer.write(data)


class GzipToZstd:
    """A gzip layer blob, fed as it arrives (`feed`), decompressed and compressed again into `target` as one zstd
    frame, never more than INFLATE_BLOCK of the tar held at once. A gzip stream may hold several members one after
    the other (Go's reader, the engines', reads them all); anything else after the last member is not gzip.

    `feed` never raises: the registry client calls it for each chunk it reads, and what a chunk raises there would
    read as a connection that broke. The first problem is kept (the rest of the blob is then only passed over)
    and `finish()` raises it as a LayerProblem, after the blob's digest was checked by the reader."""

    def __init__(self, target, workers: int = WORKERS):
        self._writer = ZstdWriter(target, workers)
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._read = 0
        self.problem: str | None = None

    def feed(self, chunk: bytes) -> None:
        if self.problem is not None:
            return
        try:
            rest = chunk
            while rest:
                if self._inflate.eof:  # a member ended: the next one begins here
                    self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                rest = self._inflate_all(rest)
        except zlib.error as exc:
            self.problem = (f"is not a gzip stream ({exc})" if not self._writer.tar_size
                            else f"is damaged gzip after {self._writer.tar_size} bytes of its tar ({exc})")
        except OSError as exc:
            self.problem = f"could not be written as zstd ({exc.strerror or exc})"
        self._read += len(chunk)

    def _inflate_all(self, data: bytes) -> bytes:
        """`data` decompressed into the writer, a block at a time; what follows the end of a member."""
        while True:
            plain = self._inflate.decompress(data, INFLATE_BLOCK)
            self._writer.write(plain)
            if self._inflate.eof:
                return self._inflate.unused_data
            data = self._inflate.unconsumed_tail
            if not data and len(plain) < INFLATE_BLOCK:
                return b""

    def finish(self) -> ZstdLayer:
        if self.problem is None and not self._inflate.eof:
            self.problem = ("is empty, not a gzip stream" if not self._read
                            else f"is a gzip stream cut short (it ends after {self._writer.tar_size} bytes of its tar)")
        if self.problem is not None:
            raise LayerProblem(self.problem)
        try:
            return self._writer.close()
        except OSError as exc:
            raise LayerProblem(f"could not be written as zstd ({exc.strerror or exc})") from None


def _document(value: dict) -> bytes:
    return json.dumps(value, indent=3).encode()


def manifest(config_digest: str, config_size: int, layers: list[ZstdLayer] | tuple[ZstdLayer, ...]) -> bytes:
    """The variant's OCI image manifest: the image's own config blob, and its zstd layers in order."""
    return _document({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": OCI_LAYER_ZSTD, "digest": layer.digest, "size": layer.size} for layer in layers],
    })


def index(entries: list[tuple[bytes, dict]]) -> bytes:
    """The variant of a list: an OCI index naming each platform's variant manifest (its bytes, and the platform
    as the list names it), in the list's order."""
    return _document({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": "sha256:" + hashlib.sha256(body).hexdigest(),
                       "size": len(body), "platform": platform} for body, platform in entries],
    })
