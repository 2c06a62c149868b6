"""Which file of an index's list pip installs for a requirement on the target, chosen as pip's finder
chooses (pure: no network): the candidates the specifier admits, a yanked file only when nothing else
fits, the highest version (a local version such as 2.11.0+cu130 above 2.11.0), then the wheel whose
tag ranks best for the target's interpreter and platform, then the build tag; a source archive only
when no wheel fits (the image's pip builds it)."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ngcbuild.verify.index import IndexFile
from ngcbuild.verify.target import Target


def parsed(filename: str):
    """(canonical name, version, tags or None for a source archive), or None for a file pip ignores."""
    try:
        if filename.endswith(".whl"):
            name, version, _build, tags = parse_wheel_filename(filename)
            return name, version, tags
        name, version = parse_sdist_filename(filename)
        return name, version, None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def best_file(files: list[IndexFile], name: str, specifier: str, target: Target, *,
              prereleases: bool | None = None) -> IndexFile | None:
    """The file pip would install for `name` + `specifier` (`==2.11.0`, `>=1.21,<3`) on `target`."""
    try:
        wanted = SpecifierSet(specifier)
    except InvalidSpecifier:
        return None
    key = canonicalize_name(name)
    ranked = []
    for file in files:
        info = parsed(file.filename)
        if info is None or info[0] != key:
            continue
        _, version, tags = info
        if not wanted.contains(version, prereleases=prereleases):
            continue
        if tags is None:
            rank = len(target.tag_priority)  # below every wheel that fits
        else:
            rank = min((target.tag_priority[t] for t in tags if t in target.tag_priority), default=None)
            if rank is None:
                continue
        build = parse_wheel_filename(file.filename)[2] if tags is not None else ()
        ranked.append(((not file.yanked, version, -rank, build), file))
    return max(ranked, key=lambda pair: pair[0])[1] if ranked else None


def file_version(file: IndexFile) -> Version | None:
    info = parsed(file.filename)
    return info[1] if info else None


def is_wheel(file: IndexFile) -> bool:
    return file.filename.endswith(".whl")


def is_platform_wheel(file: IndexFile) -> bool:
    info = parsed(file.filename)
    return bool(info and info[2] and any(tag.platform != "any" for tag in info[2]))
