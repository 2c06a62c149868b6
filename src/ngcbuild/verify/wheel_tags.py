"""The tags a published wheel declares in its own metadata (`*.dist-info/WHEEL`, `Tag:` lines),
read with HTTP range requests: the zip's directory at the end, then that one member, a few
kilobytes of a wheel that may weigh hundreds of megabytes.

Why: pip picks a wheel by its file name, but `pip check` (pip 23.3 on) tests the installed
distribution's WHEEL tags against the platform. NVIDIA's aarch64 wheels are named
`..._aarch64.whl` and some say `Tag: py3-none-manylinux2014_sbsa` inside: they install, and the
image's `pip check` then fails at the end of a long build on an arm64 runner."""

from __future__ import annotations

import io
import urllib.error
import urllib.request
import zipfile

from packaging.tags import parse_tag

MAX_WHEEL_FILE = 64 * 1024  # a WHEEL file is a few lines
READ_BLOCK = 256 * 1024  # one range request per block: the zip's directory usually fits in one
MAX_RANGE = 64 * 1024 * 1024  # torch's directory (tens of thousands of files) is a few megabytes


class WheelMetadataError(Exception):
    """The wheel could not be read (HTTP error, not a zip, no WHEEL file)."""


class RangeFile(io.RawIOBase):
    """A remote file, read-only and seekable, each read one HTTP range request (`get_range`)."""

    def __init__(self, size: int, get_range):
        self.size = size
        self.position = 0
        self.get_range = get_range  # (first, last) -> bytes, inclusive as in a Range header

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
        if self.position >= self.size:
            return 0
        last = min(self.position + len(buffer), self.size) - 1
        data = self.get_range(self.position, last)
        if len(data) != last - self.position + 1:
            raise WheelMetadataError(f"asked for {last - self.position + 1} bytes, got {len(data)}")
        buffer[:len(data)] = data
        self.position += len(data)
        return len(data)


def declared_tags(url: str, opener, timeout: float) -> list[str]:
    """Every tag the wheel at `url` declares in its WHEEL file, compressed tag sets expanded
    (`cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64` is two)."""

    def request(method: str, headers: dict, limit: int = 0) -> tuple[bytes, object]:
        try:
            with opener(urllib.request.Request(url, method=method, headers=headers), timeout=timeout) as response:
                body = response.read(limit + 1) if method == "GET" else b""  # +1: a server ignoring Range shows
                return body, response.headers  # case-insensitive: proxies lower-case names
        except urllib.error.HTTPError as exc:
            raise WheelMetadataError(f"HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise WheelMetadataError(str(getattr(exc, "reason", exc))) from None

    _, headers = request("HEAD", {})
    try:
        size = int(headers.get("Content-Length", ""))
    except ValueError:
        raise WheelMetadataError("the server gives no size") from None

    def get_range(first: int, last: int) -> bytes:
        if last - first + 1 > MAX_RANGE:  # a zip directory of this size is no wheel we can check
            raise WheelMetadataError(f"a read of {last - first + 1} bytes, over {MAX_RANGE}")
        body, _ = request("GET", {"Range": f"bytes={first}-{last}"}, limit=last - first + 1)
        return body

    try:
        with zipfile.ZipFile(io.BufferedReader(RangeFile(size, get_range), buffer_size=READ_BLOCK)) as wheel:
            members = [m for m in wheel.infolist()
                       if m.filename.count("/") == 1 and m.filename.endswith(".dist-info/WHEEL")]
            if len(members) != 1:
                raise WheelMetadataError(f"{len(members)} WHEEL files in the wheel, expected one")
            if members[0].file_size > MAX_WHEEL_FILE:
                raise WheelMetadataError(f"its WHEEL file is {members[0].file_size} bytes")
            text = wheel.read(members[0]).decode("utf-8", "replace")
    except zipfile.BadZipFile as exc:
        raise WheelMetadataError(f"not a zip file ({exc})") from None
    return tags_of(text)


def tags_of(wheel_file: str) -> list[str]:
    """The `Tag:` lines of a WHEEL file, each compressed set expanded, in order."""
    tags: list[str] = []
    for line in wheel_file.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "tag" and value.strip():
            try:
                tags += sorted(str(tag) for tag in parse_tag(value.strip()))
            except ValueError:
                tags.append(value.strip())
    return tags


def platforms_of(tags: list[str]) -> set[str]:
    """The platform parts of `tags` (`manylinux2014_sbsa`, `any`)."""
    return {tag.rsplit("-", 1)[-1] for tag in tags}
