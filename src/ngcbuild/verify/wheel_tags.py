"""The tags a wheel declares in its own metadata (`*.dist-info/WHEEL`, `Tag:` lines; read with the
wheel's METADATA, by range, in metadata.py).

Why: pip picks a wheel by its file name, but `pip check` (pip 23.3 on) tests the installed
distribution's WHEEL tags against the platform. NVIDIA's aarch64 wheels are named
`..._aarch64.whl` and some say `Tag: py3-none-manylinux2014_sbsa` inside: they install, and the
image's `pip check` then fails at the end of a long build on an arm64 runner."""

from __future__ import annotations

from packaging.tags import parse_tag


def tags_of(wheel_file: str) -> list[str]:
    """The `Tag:` lines of a WHEEL file, each compressed set expanded, in order
    (`cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64` is two)."""
    tags: list[str] = []
    for line in wheel_file.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "tag" and value.strip():
            try:
                tags += sorted(str(tag) for tag in parse_tag(value.strip()))
            except ValueError:
                tags.append(value.strip())
    return tags


def platforms_of(tags: list[str] | tuple[str, ...]) -> set[str]:
    """The platform parts of `tags` (`manylinux2014_sbsa`, `any`)."""
    return {tag.rsplit("-", 1)[-1] for tag in tags}
