"""Wheels that stand for distributions the base image holds and no index serves (25.12's torch, built
from source; everything of a base given as an image; what an NVIDIA release carries, for bump's
draft): metadata only, so that the resolver sees the base's distribution at the base's version (with
the requirements it declares, where known) and never reaches for an index's build instead. They live
in the resolver's scratch folder for one run; nothing installs them. The one maker of stand-ins.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

_WHEEL = "Wheel-Version: 1.0\nGenerator: ngcbuild (a stand-in for the base image's distribution)\n" \
         "Root-Is-Purelib: true\nTag: py3-none-any\n"
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")


@dataclass(frozen=True)
class StandIn:
    name: str
    version: str
    requires: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)


def write_stand_in(folder: Path, stand_in: StandIn) -> Path | None:
    """`folder`/NAME-VERSION-py3-none-any.whl declaring its requirements (each a PEP 508 requirement;
    one that does not parse is left out: the base image installed it, its own tools accepted it).
    None for a name or version no wheel can carry (nothing could require it by that version either)."""
    try:
        version = str(Version(stand_in.version))
    except InvalidVersion:
        return None
    if not _NAME.fullmatch(stand_in.name):
        return None
    stem = f"{re.sub(r'[-_.]+', '_', stand_in.name)}-{version}"
    declared = []
    for line in stand_in.requires:
        try:
            declared.append(str(Requirement(line)))
        except InvalidRequirement:
            continue
    metadata = "Metadata-Version: 2.1\n" f"Name: {stand_in.name}\nVersion: {version}\n" + \
        "".join(f"Requires-Dist: {r}\n" for r in declared)
    files = {f"{stem}.dist-info/METADATA": metadata, f"{stem}.dist-info/WHEEL": _WHEEL}
    record = [f"{path},sha256={_digest(text)},{len(text.encode())}" for path, text in files.items()]
    files[f"{stem}.dist-info/RECORD"] = "\n".join([*record, f"{stem}.dist-info/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))  # the same bytes every time
            archive.writestr(info, text)
    return wheel


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
