"""The engine's save of an image (`GET /images/{name}/get`), read once as it streams: its config and
each layer's tar, handed on without a copy on disk.

The save is a tar of a few large members. tarfile's stream mode reads it in 10 KB pieces and copies
what is left of its buffer on every read, which cost a third of the time of reading a 6 GB save; this
reader parses the headers itself (with tarfile's header parser) and reads the members straight from
one large buffer.
"""

from __future__ import annotations

import io
import tarfile

from ngcbuild.core.errors import OperationError

_CHUNK = 1 << 20
_BLOCK = tarfile.BLOCKSIZE
_MAX_CONFIG = 64 << 20  # an image config is kilobytes; a save that says more is not one
_MAX_EXTENDED = 1 << 20  # a PAX or GNU long-name header's own data


class SaveUnreadable(OperationError):
    """The engine's save is not the tar it should be (cut short, a damaged header, an oversized entry)."""


class ChunkReader(io.RawIOBase):
    """A file over the chunks of a streamed response (read through io.BufferedReader)."""

    def __init__(self, chunks):
        self.chunks, self.pending = iter(chunks), memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.pending = memoryview(chunk)
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


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
        while self.read(_CHUNK):
            pass


def read_save(client, image_id: str, on_layer) -> bytes:
    """The engine's save of `image_id`, streamed: `on_layer(source)` for each layer's tar (a file to read
    to its end; what it leaves unread is passed over), in the save's order; the config's bytes are
    returned (empty when the save holds none)."""
    stream = io.BufferedReader(ChunkReader(client.get_image(image_id, chunk_size=_CHUNK)), _CHUNK)
    return read_members(stream, f"{image_id[7:]}.json", on_layer, f"the engine's save of {image_id[:19]}")


def read_members(stream, config_name: str, on_layer, what: str) -> bytes:
    """The walk of `read_save` over the tar `stream` (a buffered file)."""
    config = b""
    for name, kind, member in _members(stream, what):
        if kind not in (tarfile.REGTYPE, tarfile.AREGTYPE):
            pass
        elif name == config_name:
            if member.left > _MAX_CONFIG:
                raise SaveUnreadable(f"{what}: its config {name} says {member.left} bytes")
            config = member.read()
        elif name.endswith("/layer.tar"):
            on_layer(member)
        member.skip()
    return config  # what follows the end marker (padding) is not waited for: an engine may hold the line open


def _members(stream, what: str):
    """(name, type, Member) for each entry of the tar `stream`, PAX and GNU long names applied."""
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
            raise SaveUnreadable(f"{what}: a damaged tar header ({exc})") from None
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
            continue
        name = extended.pop("path", info.name)
        if "size" in extended:
            try:
                member = Member(stream, int(extended.pop("size")), what)
            except ValueError:
                raise SaveUnreadable(f"{what}: a PAX size that is not a number") from None
        extended.clear()
        size = member.left
        yield name, info.type, member
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
