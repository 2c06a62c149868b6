"""What a published wheel's module says of its own version: torch's `torch/version.py` says what
`torch.__version__` reports (2.15.0+cu132), which its metadata does not. Read with verify's one
reader of remote zips (verify/remote_zip.py: range requests, each answer checked, a few kilobytes of
a wheel of half a gigabyte), every request a core/http.fetch through the run's Web."""

from __future__ import annotations

import re

from ngcbuild.core.errors import OperationError
from ngcbuild.verify.remote_zip import RemoteZipError, read_members

MAX_MEMBER = 64 * 1024  # a version.py is a few lines
_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([0-9A-Za-z.+!_-]{1,100})['"]""", re.M)


class WheelUnreadable(OperationError):
    pass


def module_version(url: str, module: str, web) -> str | None:
    """What `module.__version__` says in the wheel at `url` (its MODULE/version.py), or None when the
    wheel has no such file. `web`: the run's verify.web.Web (its bytes counted, its deadline kept)."""
    member = module.replace(".", "/") + "/version.py"
    try:
        found = read_members(url, web.fetch, lambda name: name == member, MAX_MEMBER)
    except RemoteZipError as exc:
        raise WheelUnreadable(f"{url}: {exc}") from None
    match = _VERSION.search(found[member].decode("utf-8", "replace")) if member in found else None
    return match.group(1) if match else None
