"""What a published wheel's module says of its own version: torch's `torch/version.py` says what
`torch.__version__` reports (2.15.0+cu132), which its metadata does not. Read with verify's one
reader of remote zips (verify/remote_zip.py: range requests, each answer checked, a few kilobytes of
a wheel of half a gigabyte), every request a core/http.fetch through the run's Web."""

from __future__ import annotations

from ngcbuild.core.errors import OperationError
from ngcbuild.verify.remote_zip import RemoteZipError
from ngcbuild.verify.wheel_module import literal_version


class WheelUnreadable(OperationError):
    pass


def module_version(url: str, module: str, web) -> str | None:
    """What `module.__version__` says in the wheel at `url` (its MODULE/version.py), or None when the
    wheel has no such file. `web`: the run's verify.web.Web (its bytes counted, its deadline kept)."""
    try:
        found = literal_version(url, module, web.fetch, ("version.py",))
    except RemoteZipError as exc:
        raise WheelUnreadable(f"{url}: {exc}") from None
    return found[0] if found else None
