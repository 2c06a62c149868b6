"""What a published wheel's module says of its own version, read with verify's one reader of remote
zips (remote_zip.py: range requests, each answer checked, a few kilobytes of a wheel of half a gigabyte):
the literal `__version__` of MODULE/version.py (torch, torchvision), MODULE/__about__.py (thunder) or
MODULE/__init__.py (DALI, Polygraphy, Triton), the first file of those that has one."""

from __future__ import annotations

import re

from ngcbuild.verify.remote_zip import read_members

MAX_MEMBER = 256 * 1024  # an __init__.py of a few hundred lines at most
VERSION_FILES = ("version.py", "_version.py", "__about__.py", "__init__.py")
_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([0-9A-Za-z.+!_-]{1,100})['"]""", re.M)


def literal_version(url: str, module: str, fetch, files: tuple[str, ...] = VERSION_FILES) -> tuple[str, str] | None:
    """(the version, the member it was read from) of `module` in the wheel at `url`, or None when none of
    `files` under the module's folder holds a literal `__version__` (a module that reads its metadata, one
    that another distribution carries). Raises remote_zip.RemoteZipError where the wheel cannot be read."""
    folder = module.replace(".", "/")
    members = [f"{folder}/{name}" for name in files]
    found = read_members(url, fetch, lambda name: name in members, MAX_MEMBER)
    for member in members:
        match = _VERSION.search(found[member].decode("utf-8", "replace")) if member in found else None
        if match:
            return match.group(1), member
    return None
