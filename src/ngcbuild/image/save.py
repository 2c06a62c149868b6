"""An engine's save of an image (what `GET /images/{name}/get` streams: engine/image_save.py), read once
as it streams, and read by what it declares: its `manifest.json` (docker-archive) or `index.json` (OCI
image layout) names the config and each layer, never one engine version's file names. What engines
write (docs/engines.md):

- Docker 20.10: `<v1 id>/layer.tar` per layer, `<config digest>.json`, `manifest.json`;
- Podman 4: `<diff id>.tar` per layer (`<v1 id>/layer.tar` a symbolic link to it), `manifest.json`;
- Docker 25+: the OCI layout, every file a blob `blobs/sha256/<digest>` (layers uncompressed), `index.json`
  and `manifest.json` naming the blobs;
- Docker with the containerd image store: the same layout with the layers as the store holds them
  (gzip), the image named by its manifest's (or index's) digest, not its config's.

The members come in no order we can rely on (`manifest.json` comes last in most), so each member is
judged by what it holds as it passes: a tar (by its header's checksum) or a gzip stream is a layer and
goes to the caller's `on_layer` at once, decompressed; anything else small is kept as a document (config,
manifests, index). Links are followed inside the save only. At the end the declared image is picked: the
one whose config, manifest or index digest is the inspected image's id and whose config lists the
inspected layers; each declared layer must be a member whose content has the config's diff id (and, in
an OCI layout, whose bytes have the blob's digest).

The tar is parsed here, not by tarfile's stream mode (which reads 10 KB at a time and copies its buffer on
every read: a third of the time of reading a 6 GB save); members are read straight from one large buffer.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import tarfile
import time
import zlib
from dataclasses import dataclass

from ngcbuild.core.errors import OperationError
from ngcbuild.core.jsonload import JsonRefused, load_json
from ngcbuild.core.text import safe
from ngcbuild.image.media import LISTS

CHUNK = 1 << 20  # read at once: of the engine's stream, of a member
_BLOCK = tarfile.BLOCKSIZE
_MAX_DOCUMENT = 64 << 20  # an image config is kilobytes; a save that says more is not one
_MAX_DOCUMENTS = 128 << 20  # all the documents a save holds, together
_MAX_MEMBERS = 1 << 16  # entries of a save: an image of a thousand layers has a few thousand
_MAX_EXTENDED = 1 << 20  # a PAX or GNU long-name header's own data
_MAX_HOPS = 16  # links followed to reach a declared file
_MAX_NESTING = 4  # OCI indexes within indexes
_DOCUMENT_NAMES = ("manifest.json", "index.json", "repositories", "oci-layout")
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class SaveUnreadable(OperationError):
    """The engine's save is not the tar it should be (cut short, a damaged header, an oversized entry), or
    does not hold the image it was asked for as it declares it."""


@dataclass(frozen=True)
class SavedLayer:
    diff_id: str  # sha256:<hex> of the layer's tar, uncompressed
    result: object  # what `on_layer` returned for the member that holds it


@dataclass(frozen=True)
class Saved:
    config: bytes  # the very bytes the save holds
    layers: tuple[SavedLayer, ...]  # in the config's order
    layout: str  # "docker-archive" or "oci-layout": how the save declared the image


class ChunkReader(io.RawIOBase):
    """A file over the chunks of a streamed response (read through io.BufferedReader). `deadline`: (seconds,
    what they were sized to, what is read) for the whole stream, not per read: a stream that trickles past
    it is a SaveUnreadable saying so, whatever each chunk's pace."""

    def __init__(self, chunks, deadline: tuple[float, str, str] | None = None, most: int | None = None):
        self.chunks, self.pending = iter(chunks), memoryview(b"")
        self.deadline = deadline
        self.ends = time.monotonic() + deadline[0] if deadline else None
        self.most, self.count = most, 0  # the most bytes the stream may hold, and how many came

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending:
            if self.ends is not None and time.monotonic() > self.ends:
                raise too_slow(self.deadline)
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.pending = memoryview(chunk)
            self.count += len(chunk)
            if self.most is not None and self.count > self.most:
                what = self.deadline[2] if self.deadline else "the stream"
                raise SaveUnreadable(f"{what}: more than {self.most} bytes, more than the image holds")
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


def too_slow(deadline: tuple[float, str, str]) -> SaveUnreadable:
    """The error of a save not whole within its deadline ((seconds, what they were sized to, what is read))."""
    seconds, sized, what = deadline
    return SaveUnreadable(f"{what}: not whole within {seconds:.0f}s ({sized}); the engine stalls, trickles it "
                          "or streams more than the image holds")


class Member:
    """One member's data, read at most to its end (`read(size)` as a file's; -1 or no size: the rest)."""

    def __init__(self, stream, size: int, what: str):
        self.stream, self.left, self.what = stream, size, what

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > self.left:
            size = self.left
        if size == 0:
            return b""
        data = self.stream.read(size)
        if len(data) != size:
            raise SaveUnreadable(f"{self.what}: the save ended inside {self.left} bytes still to come")
        self.left -= size
        return data

    def skip(self) -> None:
        while self.read(CHUNK):
            pass


class LayerSource:
    """A layer member as its uncompressed tar (gzip undone as it is read), hashed as it passes: `finish()`
    reads what the caller left and gives the diff id and the digest of the member's own bytes."""

    def __init__(self, member: Member, head: bytes, what: str):
        self.member, self.what, self.head = member, what, head
        self.compressed = head.startswith(_GZIP_MAGIC)
        self.blob = hashlib.sha256(head) if self.compressed else None
        self.plain = hashlib.sha256()
        self.inflate = zlib.decompressobj(zlib.MAX_WBITS | 16) if self.compressed else None
        self.spare = b""  # inflated bytes not yet handed out

    def _raw(self, size: int) -> bytes:
        if self.head:
            data, self.head = self.head[:size], self.head[size:]
            return data
        data = self.member.read(size)
        if self.blob is not None:
            self.blob.update(data)
        return data

    def read(self, size: int = -1) -> bytes:
        want = CHUNK if size is None or size < 0 else size
        if self.inflate is None:
            data = self._raw(want) if size is not None and size >= 0 else self._rest()
        else:
            data = self._inflated(want)
        self.plain.update(data)
        return data

    def _rest(self) -> bytes:
        parts = []
        while part := self._raw(CHUNK):
            parts.append(part)
        return b"".join(parts)

    def _inflated(self, want: int) -> bytes:
        while len(self.spare) < want:
            raw = self._raw(CHUNK)
            try:
                if not raw:
                    if not self.inflate.eof:
                        raise SaveUnreadable(f"{self.what}: a gzip layer cut short")
                    break
                self.spare += self.inflate.decompress(raw, want)
                if self.inflate.unconsumed_tail:  # read again, not hashed again
                    self.head = self.inflate.unconsumed_tail + self.head
                elif self.inflate.eof and self.inflate.unused_data.strip(b"\0"):  # several gzip members
                    rest = self.inflate.unused_data
                    self.inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    self.head = rest + self.head
            except zlib.error as exc:
                raise SaveUnreadable(f"{self.what}: a damaged gzip layer ({exc})") from None
        data, self.spare = self.spare[:want], self.spare[want:]
        return data

    def finish(self) -> tuple[str, str]:
        while self.read(CHUNK):
            pass
        plain = "sha256:" + self.plain.hexdigest()
        return plain, ("sha256:" + self.blob.hexdigest() if self.blob is not None else plain)


def read_members(stream, on_layer, what: str, image_id: str, diff_ids: list[str]) -> Saved:
    """The image `image_id` (its layers `diff_ids`, as the engine's inspect lists them) as the save in the
    tar `stream` (a buffered file) declares it: `on_layer(source)` for each layer member (a LayerSource:
    its uncompressed tar; what it leaves unread is passed over), in the save's order."""
    walked = _Walked(what)
    for name, kind, linkname, member in _members(stream, what):
        walked.take(name, kind, linkname, member, on_layer)
    # what follows the end marker (padding) is not waited for: an engine may hold the line open
    return walked.declared(image_id, list(diff_ids))


class _Walked:
    """What a walk of the save kept: documents by name, layers by name, links by name."""

    def __init__(self, what: str):
        self.what = what
        self.documents: dict[str, bytes] = {}
        self.oversized: dict[str, int] = {}
        self.layers: dict[str, tuple[object, str, str]] = {}  # name -> (result, diff id, blob digest)
        self.links: dict[str, str] = {}
        self.kept = self.count = 0

    def take(self, name: str, kind: bytes, linkname: str, member: Member, on_layer) -> None:
        self.count += 1
        if self.count > _MAX_MEMBERS:
            raise SaveUnreadable(f"{self.what}: more than {_MAX_MEMBERS} entries")
        name = _inside(name)
        if name is None:
            return  # an entry out of the save's own folder names nothing we read
        if kind == tarfile.SYMTYPE:
            self.links[name] = posixpath.join(posixpath.dirname(name), linkname)
            return
        if kind == tarfile.LNKTYPE:
            self.links[name] = linkname
            return
        if kind not in (tarfile.REGTYPE, tarfile.AREGTYPE):
            return
        if _is_document_name(name) and member.left > _MAX_DOCUMENT:
            raise SaveUnreadable(f"{self.what}: its {safe(name)} says {member.left} bytes")
        head = member.read(min(member.left, _BLOCK))
        if _is_layer(head):
            source = LayerSource(member, head, f"{self.what}: {safe(name)}")
            result = on_layer(source)
            diff_id, blob = source.finish()
            self.layers[name] = (result, diff_id, blob)
        elif member.left + len(head) > _MAX_DOCUMENT:
            self.oversized[name] = member.left + len(head)
        else:
            data = head + member.read()
            self.kept += len(data)
            if self.kept > _MAX_DOCUMENTS:
                raise SaveUnreadable(f"{self.what}: more than {_MAX_DOCUMENTS} bytes of files that are not layers")
            self.documents[name] = data

    def resolve(self, name: str) -> str:
        """`name` with the links that lead from it followed (inside the save only)."""
        seen = 0
        path = _inside(name)
        while path is not None and path in self.links:
            seen += 1
            if seen > _MAX_HOPS:
                raise SaveUnreadable(f"{self.what}: {safe(name)} is a link of more than {_MAX_HOPS} hops")
            path = _inside(self.links[path])
        if path is None:
            raise SaveUnreadable(f"{self.what}: {safe(name)} leads out of the save")
        return path

    def document(self, name: str, why: str) -> bytes:
        path = self.resolve(name)
        if path in self.oversized:
            raise SaveUnreadable(f"{self.what}: its {why} {safe(name)} says {self.oversized[path]} bytes")
        if path not in self.documents:
            raise SaveUnreadable(f"{self.what}: its {why} {safe(name)} is not in the save")
        return self.documents[path]

    def json(self, name: str, why: str):
        try:
            return load_json(self.document(name, why), f"{self.what}: its {why} {safe(name)}", max_depth=16)
        except JsonRefused as exc:
            raise SaveUnreadable(str(exc)) from None

    def declared(self, image_id: str, diff_ids: list[str]) -> Saved:
        candidates = list(self._docker_archive()) + list(self._oci_layout())
        if not candidates:
            raise SaveUnreadable(f"{self.what}: it declares no image (neither manifest.json nor index.json)")
        for names, config, layers, layout in candidates:
            if image_id not in names:
                continue
            found = _diff_ids_of(config, self.what)
            if found != diff_ids:
                raise SaveUnreadable(f"{self.what}: its config lists {len(found)} layers, not the "
                                     f"{len(diff_ids)} the engine's inspect of the image lists")
            if len(layers) != len(found):
                raise SaveUnreadable(f"{self.what}: it declares {len(layers)} layer files for "
                                     f"{len(found)} layers")
            return Saved(config, tuple(self._layer(path, digest, diff_id)
                                       for (path, digest), diff_id in zip(layers, found, strict=True)), layout)
        raise SaveUnreadable(f"{self.what}: it declares no image whose config is the inspected image's "
                             f"({safe(image_id[:19])})")

    def _layer(self, name: str, blob_digest: str | None, diff_id: str) -> SavedLayer:
        path = self.resolve(name)
        if path not in self.layers:
            held = path in self.documents or path in self.oversized
            raise SaveUnreadable(f"{self.what}: its layer {safe(name)} is {'not a tar' if held else 'not in the save'}")
        result, found, blob = self.layers[path]
        if found != diff_id or (blob_digest is not None and blob != blob_digest):
            raise SaveUnreadable(f"{self.what}: its layer {safe(name)} holds {found[:19]}, not the layer "
                                 f"{diff_id[:19]} its config names")
        return SavedLayer(diff_id, result)

    def _docker_archive(self):
        """(names, config, [(layer path, None)], layout) per entry of `manifest.json`."""
        if "manifest.json" not in self.documents and "manifest.json" not in self.links:
            return
        entries = self.json("manifest.json", "manifest")
        if not isinstance(entries, list):
            raise SaveUnreadable(f"{self.what}: its manifest.json is not a list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("Config"), str) \
                    or not isinstance(entry.get("Layers"), list) \
                    or not all(isinstance(layer, str) for layer in entry["Layers"]):
                raise SaveUnreadable(f"{self.what}: an entry of its manifest.json without Config or Layers")
            config = self.document(entry["Config"], "config")
            yield {_digest(config)}, config, [(layer, None) for layer in entry["Layers"]], "docker-archive"

    def _oci_layout(self):
        """(names, config, [(layer path, blob digest)], layout) per image manifest `index.json` leads to;
        names: the digests of the manifest, of the indexes above it and of its config."""
        if "index.json" not in self.documents and "index.json" not in self.links:
            return
        yield from self._index(self.json("index.json", "index"), set(), 0)

    def _index(self, index, above: set[str], depth: int):
        if depth > _MAX_NESTING:
            raise SaveUnreadable(f"{self.what}: indexes nested more than {_MAX_NESTING} deep")
        manifests = index.get("manifests") if isinstance(index, dict) else None
        if not isinstance(manifests, list):
            raise SaveUnreadable(f"{self.what}: an index without a list of manifests")
        for descriptor in manifests:
            digest = _descriptor_digest(descriptor, self.what)
            body = self._blob(digest, "manifest")
            if body is None:
                continue  # another platform's, left out of a save of one platform
            document = self.json(_blob_path(digest), "manifest")
            media = document.get("mediaType") if isinstance(document, dict) else None
            if media in LISTS or (isinstance(document, dict) and "manifests" in document):
                yield from self._index(document, above | {digest}, depth + 1)
                continue
            config_digest = _descriptor_digest(document.get("config") if isinstance(document, dict) else None,
                                               self.what)
            config = self._blob(config_digest, "config")
            if config is None:
                raise SaveUnreadable(f"{self.what}: its config {config_digest[:19]} is not in the save")
            layers = document.get("layers")
            if not isinstance(layers, list):
                raise SaveUnreadable(f"{self.what}: a manifest without a list of layers")
            paths = []
            for layer in layers:
                layer_digest = _descriptor_digest(layer, self.what)
                paths.append((_blob_path(layer_digest), layer_digest))
            yield above | {digest, config_digest}, config, paths, "oci-layout"

    def _blob(self, digest: str, why: str) -> bytes | None:
        path = self.resolve(_blob_path(digest))
        if path not in self.documents and path not in self.oversized:
            return None
        data = self.document(path, why)
        if _digest(data) != digest:
            raise SaveUnreadable(f"{self.what}: its {why} blob {digest[:19]} holds other bytes")
        return data


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _blob_path(digest: str) -> str:
    return "blobs/sha256/" + digest[7:]


def _descriptor_digest(descriptor, what: str) -> str:
    digest = descriptor.get("digest") if isinstance(descriptor, dict) else None
    if not isinstance(digest, str) or len(digest) != 71 or not digest.startswith("sha256:") \
            or any(c not in "0123456789abcdef" for c in digest[7:]):
        raise SaveUnreadable(f"{what}: a descriptor without a sha256 digest")
    return digest


def _diff_ids_of(config: bytes, what: str) -> list[str]:
    try:
        document = load_json(config, f"{what}: its config", max_depth=32)
    except JsonRefused as exc:
        raise SaveUnreadable(str(exc)) from None
    rootfs = document.get("rootfs") if isinstance(document, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(isinstance(d, str) for d in diff_ids):
        raise SaveUnreadable(f"{what}: its config has no rootfs.diff_ids")
    return diff_ids


def _inside(name: str) -> str | None:
    """`name` as a path inside the save (no `.`, no empty parts), or None where it leads out of it."""
    if name.startswith("/"):
        return None
    path = posixpath.normpath(name)
    if path == ".." or path.startswith("../"):
        return None
    return path.removeprefix("./")


def _is_document_name(name: str) -> bool:
    return name in _DOCUMENT_NAMES or name.endswith((".json", "/json", "/VERSION"))


def _is_layer(head: bytes) -> bool:
    """A tar (its first header's checksum holds, or it is the empty tar's zeros) or a gzip stream."""
    if head.startswith(_GZIP_MAGIC):
        return True
    if head.startswith(_ZSTD_MAGIC):
        return False  # read as a document and refused by name when declared: see _layer
    if len(head) < _BLOCK:
        return False
    if head == bytes(_BLOCK):
        return True
    try:
        tarfile.TarInfo.frombuf(head, "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def _members(stream, what: str):
    """(name, type, link name, Member) for each entry of the tar `stream`, PAX and GNU long names applied."""
    extended: dict[str, str] = {}
    while True:
        block = stream.read(_BLOCK)
        if len(block) < _BLOCK:
            raise SaveUnreadable(f"{what}: the save ended before the tar's end marker")
        if block == bytes(_BLOCK):
            return
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            raise SaveUnreadable(f"{what}: a damaged tar header ({safe(str(exc))})") from None
        if info.size < 0:
            raise SaveUnreadable(f"{what}: an entry of {info.size} bytes")
        member = Member(stream, info.size, what)
        if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            if info.size > _MAX_EXTENDED:
                raise SaveUnreadable(f"{what}: an extended header of {info.size} bytes")
            data = member.read()
            _padding(stream, info.size, what)
            if info.type == tarfile.XHDTYPE:
                extended.update(_pax_records(data, what))
            elif info.type == tarfile.GNUTYPE_LONGNAME:
                extended["path"] = data.rstrip(b"\0").decode("utf-8", "surrogateescape")
            elif info.type == tarfile.GNUTYPE_LONGLINK:
                extended["linkpath"] = data.rstrip(b"\0").decode("utf-8", "surrogateescape")
            continue
        name = extended.pop("path", info.name)
        linkname = extended.pop("linkpath", info.linkname)
        if "size" in extended:
            try:
                member = Member(stream, int(extended.pop("size")), what)
            except ValueError:
                raise SaveUnreadable(f"{what}: a PAX size that is not a number") from None
        extended.clear()
        size = member.left
        yield name, info.type, linkname, member
        member.skip()
        _padding(stream, size, what)


def _padding(stream, size: int, what: str) -> None:
    pad = -size % _BLOCK
    if pad and len(stream.read(pad)) != pad:
        raise SaveUnreadable(f"{what}: the save ended inside an entry's padding")


def _pax_records(data: bytes, what: str) -> dict[str, str]:
    """The records of a PAX extended header: `LEN key=value\\n`, LEN counting the whole record."""
    records, at = {}, 0
    while at < len(data):
        space = data.find(b" ", at)
        try:
            length = int(data[at:space]) if space > at else 0
        except ValueError:
            length = 0
        record = data[space + 1:at + length]
        if length <= 0 or at + length > len(data) or not record.endswith(b"\n") or b"=" not in record:
            raise SaveUnreadable(f"{what}: a damaged PAX header")
        key, _, value = record[:-1].partition(b"=")
        records[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        at += length
    return records
