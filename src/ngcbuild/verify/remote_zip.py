"""Members of a remote zip (a wheel) read with HTTP range requests: the end of the file first (the zip's
directory, and in a wheel usually its `.dist-info` files too), then only what is still missing, each
read checked against what was asked: a few kilobytes of a wheel that may weigh a gigabyte.

A server that ignores Range (devpi's mirror of PyPI does: it answers 200 and the whole file) is read
whole instead, once, within the same MAX_READ as all the range reads of one file: an ordinary wheel
fits, and a larger one is refused saying why rather than downloaded.

The one reader of remote zips: verify reads each wheel's METADATA and WHEEL files here where the index
serves no metadata file of its own (PEP 658)."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

from ngcbuild.core.http import AnswerTooLarge, HttpFailure

TAIL = 16 << 10  # the first read, from the end: the end record, and in most wheels the directory and .dist-info too
BLOCK = 8 << 10  # every later read is at least this long: zipfile reads a member in small pieces
MAX_READ = 64 << 20  # all reads of one file (torch's directory, tens of thousands of entries, is a few MB)
MAX_MEMBERS = 200_000

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


class RemoteZipError(Exception):
    """The remote zip could not be read: no answer, an answer that is not the range asked for, not a
    zip, a member too large or missing."""


class _MoreThanAsked(RemoteZipError):
    """An answer longer than its request's limit (AnswerTooLarge): to a request of the end of the file, a
    server that ignores Range and sends the whole file."""


class RangeFile(io.RawIOBase):
    """A remote file, read-only and seekable. What was read is kept; what is missing is one range
    request, its answer checked against the range asked for (status, Content-Range, length)."""

    def __init__(self, url: str, fetch: Callable[..., object], budget: int = MAX_READ):
        self.url = url
        self.fetch = fetch  # Web.fetch(url, limit=..., headers=...) -> Answer
        self.budget = budget
        self.spans: list[tuple[int, bytes]] = []  # (offset, bytes read there), sorted
        self.position = 0
        self.size = self._read_tail()

    # --- io.RawIOBase ---------------------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer) -> int:
        wanted = min(len(buffer), self.size - self.position)
        if wanted <= 0:
            return 0
        data = self._cached(self.position, wanted)
        if data is None:
            self._read_range(self.position, wanted)
            data = self._cached(self.position, wanted)
        buffer[:wanted] = data
        self.position += wanted
        return wanted

    # --- the reads ------------------------------------------------------------------------------------
    def _cached(self, first: int, length: int) -> bytes | None:
        for offset, data in self.spans:
            if offset <= first and first + length <= offset + len(data):
                return data[first - offset:first - offset + length]
        return None

    def _spend(self, length: int) -> None:
        self.budget -= length
        if self.budget < 0:
            raise RemoteZipError(f"more than {MAX_READ} bytes would be read")

    def _get(self, range_header: str | None, limit: int, statuses: tuple[int, ...] = (200, 206)):
        """One request of at most `limit` bytes: of a range, or without `range_header` of the whole file. A
        failure is a RemoteZipError (_MoreThanAsked: a longer answer), as is an answer of another status."""
        headers = {} if range_header is None else {"headers": {"Range": range_header}}
        try:
            answer = self.fetch(self.url, limit=limit, **headers)
        except AnswerTooLarge as exc:
            raise _MoreThanAsked(str(exc)) from None
        except HttpFailure as exc:
            raise RemoteZipError(str(exc)) from None
        if answer.status not in statuses:
            raise RemoteZipError(f"HTTP {answer.status}")
        return answer

    def _read_tail(self) -> int:
        """The last TAIL bytes (all of a smaller file): the file's size from the answer's Content-Range."""
        self._spend(TAIL)
        try:
            answer = self._get(f"bytes=-{TAIL}", TAIL)
        except _MoreThanAsked:  # the server ignores Range and sends the whole file
            return self._read_whole()
        body = answer.body
        if answer.status == 200:  # the whole file: a server may answer so when it is no longer than asked
            self.spans = [(0, body)]
            return len(body)
        first, last, size = self._content_range(answer)
        if last != size - 1 or first != max(0, size - TAIL) or len(body) != last - first + 1:
            raise RemoteZipError(f"asked for its last {TAIL} bytes, the answer says bytes {first}-{last}/{size} "
                                 f"and holds {len(body)}")
        self.spans = [(first, body)]
        return size

    def _read_whole(self) -> int:
        """The whole file in one answer, within what is left of MAX_READ."""
        try:
            answer = self._get(None, self.budget, statuses=(200,))
        except _MoreThanAsked:
            raise RemoteZipError(f"the index ignores range requests, and the whole file is over the {MAX_READ} "
                                 "bytes read") from None
        self._spend(len(answer.body))
        self.spans = [(0, answer.body)]
        return len(answer.body)

    def _read_range(self, first: int, length: int) -> None:
        last = min(first + max(length, BLOCK), self.size) - 1
        for offset, _data in self.spans:  # stop short of what is already here, when what is asked fits
            if first + length <= offset <= last:
                last = offset - 1
        self._spend(last - first + 1)
        answer = self._get(f"bytes={first}-{last}", last - first + 1)
        got = self._content_range(answer) if answer.status == 206 else None
        if got != (first, last, self.size) or len(answer.body) != last - first + 1:
            says = f"bytes {got[0]}-{got[1]}/{got[2]}" if got else f"HTTP {answer.status} without a range"
            raise RemoteZipError(f"asked for bytes {first}-{last} of {self.size}, the answer says {says} "
                                 f"and holds {len(answer.body)}")
        self.spans = sorted([*self.spans, (first, answer.body)])

    @staticmethod
    def _content_range(answer) -> tuple[int, int, int]:
        match = _CONTENT_RANGE.fullmatch(answer.headers.get("Content-Range", "").strip())
        if not match:
            raise RemoteZipError("a partial answer without a Content-Range the size can be read from")
        first, last, size = (int(g) for g in match.groups())
        if not first <= last < size:
            raise RemoteZipError(f"a Content-Range that cannot be: bytes {first}-{last}/{size}")
        return first, last, size


def read_members(url: str, fetch, wanted: Callable[[str], bool], limit: int) -> dict[str, bytes]:
    """The members of the zip at `url` whose names `wanted` accepts, each at most `limit` bytes once
    uncompressed (a larger one is refused before it is read)."""
    try:
        with zipfile.ZipFile(RangeFile(url, fetch)) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise RemoteZipError(f"{len(infos)} members, over {MAX_MEMBERS}")
            found = {}
            for info in infos:
                if not wanted(info.filename):
                    continue
                if info.file_size > limit:
                    raise RemoteZipError(f"its {info.filename} is {info.file_size} bytes, over the {limit} read")
                with archive.open(info) as member:
                    found[info.filename] = member.read(limit + 1)
            return found
    except zipfile.BadZipFile as exc:
        raise RemoteZipError(f"not a zip file ({exc})") from None
    except (zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError, OSError) as exc:
        raise RemoteZipError(f"its zip cannot be read ({exc})") from None
