"""One small file read out of a published wheel with HTTP range requests (the zip's directory at the
end, then that member): torch's `torch/version.py` says what `torch.__version__` reports (2.15.0+cu132),
which its metadata does not, in a few kilobytes of a wheel of half a gigabyte.

Every request goes through core/http.fetch: one deadline per request, a size cap, the one session
policy; an answer that is not the range asked for is refused, never read whole."""

from __future__ import annotations

import io
import re
import zipfile

from ngcbuild.core.errors import OperationError
from ngcbuild.core.http import HttpFailure, fetch, new_session

DEADLINE_S = 60
BLOCK = 256 * 1024  # one range request per block: a wheel's directory usually fits in one or two
MAX_RANGE = 64 * 1024 * 1024  # torch's directory (tens of thousands of files) is a few megabytes
MAX_MEMBER = 64 * 1024  # a version.py is a few lines
_CONTENT_RANGE = re.compile(r"bytes [0-9]+-[0-9]+/([0-9]{1,15})")
_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([0-9A-Za-z.+!_-]{1,100})['"]""", re.M)


class WheelUnreadable(OperationError):
    pass


class _Ranges(io.RawIOBase):
    """The remote file as a seekable stream, each read one range request."""

    def __init__(self, session, url: str, size: int):
        self.session, self.url, self.size, self.position = session, url, size, 0

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
        wanted = last - self.position + 1
        if wanted > MAX_RANGE:
            raise WheelUnreadable(f"{self.url}: a read of {wanted} bytes, over {MAX_RANGE}")
        answer = fetch(self.session, "GET", self.url, limit=wanted, deadline_s=DEADLINE_S,
                       headers={"Range": f"bytes={self.position}-{last}", "Accept-Encoding": "identity"})
        if answer.status != 206 or len(answer.body) != wanted:
            raise WheelUnreadable(f"{self.url}: asked for bytes {self.position}-{last}, got HTTP {answer.status} "
                                  f"with {len(answer.body)} bytes")
        buffer[:wanted] = answer.body
        self.position += wanted
        return wanted


def read_member(url: str, member: str, bundle: str | None = None) -> str | None:
    """The text of `member` (a path inside the wheel) or None when the wheel has no such file."""
    session = new_session()
    if bundle:
        session.verify = bundle
    try:
        # a suffix range: the end of the file, where the zip's directory is, and the whole size
        tail = fetch(session, "GET", url, limit=BLOCK, deadline_s=DEADLINE_S,
                     headers={"Range": f"bytes=-{BLOCK}", "Accept-Encoding": "identity"})
        total = _CONTENT_RANGE.fullmatch(tail.headers.get("Content-Range", "").strip())
        if tail.status != 206 or total is None:
            raise WheelUnreadable(f"{url}: HTTP {tail.status}, not the range asked for (the server must answer "
                                  "range requests)")
        with zipfile.ZipFile(io.BufferedReader(_Ranges(session, url, int(total.group(1))), buffer_size=BLOCK)) as wheel:
            info = next((i for i in wheel.infolist() if i.filename == member), None)
            if info is None:
                return None
            if info.file_size > MAX_MEMBER:
                raise WheelUnreadable(f"{url}: {member} is {info.file_size} bytes, over {MAX_MEMBER}")
            return wheel.read(info).decode("utf-8", "replace")
    except zipfile.BadZipFile as exc:
        raise WheelUnreadable(f"{url}: not a zip file ({exc})") from None
    except HttpFailure as exc:
        raise WheelUnreadable(str(exc)) from None
    finally:
        session.close()


def module_version(url: str, module: str, bundle: str | None = None) -> str | None:
    """What `module.__version__` says in the wheel at `url` (its MODULE/version.py), or None."""
    text = read_member(url, module.replace(".", "/") + "/version.py", bundle)
    match = _VERSION.search(text or "")
    return match.group(1) if match else None
