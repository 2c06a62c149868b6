"""What the image will run, as verify must match it: the interpreter's full version, the platform's
wheel tags and the PEP 508 marker values.

The full version matters: a marker `python_full_version < "3.11.4"` or a Requires-Python `>=3.12.4`
decides for 3.12.3 otherwise than for 3.12.0. pip's `--python-version` takes a full version for
Requires-Python, but pip evaluates the markers of what it resolves with the interpreter running it,
not the target's; verify evaluates them itself, for the interpreter the manifest pins."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from packaging.tags import Tag, compatible_tags, cpython_tags

from ngcbuild.manifest.platforms import MACHINES, OLDEST_GLIBC_MINOR, markers

# The legacy manylinux names pip matches literally, and the glibc each stands for.
_LEGACY = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}


@dataclass(frozen=True)
class Target:
    """R's interpreter (MAJOR.MINOR.PATCH, as the image has it) and one platform's wheel tags."""

    python_full: str  # 3.12.3
    platform: str  # linux/amd64
    glibc: str  # 2.39

    @property
    def python(self) -> str:
        """MAJOR.MINOR (3.12)."""
        return ".".join(self.python_full.split(".")[:2])

    @property
    def abi(self) -> str:
        major, minor = (int(p) for p in self.python.split("."))
        # CPython before 3.8 built with pymalloc carries the "m" ABI flag (cp36m).
        return f"cp{major}{minor}" + ("m" if (major, minor) < (3, 8) else "")

    @property
    def arch(self) -> str:
        """The machine name of the platform, as markers and wheel tags spell it (x86_64, aarch64)."""
        return MACHINES[self.platform]

    @property
    def platform_tags(self) -> list[str]:
        return platform_tags(self.platform, self.glibc)

    @cached_property
    def tag_priority(self) -> dict[Tag, int]:
        """Every tag a wheel may carry to install on the target, best first (0), as pip orders them
        for `--python-version X.Y --implementation cp --abi cpXY --platform ...` (its get_supported)."""
        version = tuple(int(p) for p in self.python.split("."))
        platforms = self.platform_tags
        tags = [*cpython_tags(version, abis=[self.abi], platforms=platforms),
                *compatible_tags(version, f"cp{version[0]}{version[1]}", platforms)]
        return {tag: rank for rank, tag in reversed(list(enumerate(tags)))}

    def markers(self) -> dict[str, str]:
        """PEP 508 marker values of the image's interpreter (Linux CPython) on this platform."""
        return markers(self.python_full, self.platform)


def platform_tags(platform: str, glibc: str) -> list[str]:
    """Every platform tag a wheel may carry to install on `platform` with this glibc, newest first.
    pip compares tags literally, so each manylinux_2_N (and the legacy names) must be listed."""
    arch, oldest = MACHINES[platform], OLDEST_GLIBC_MINOR[platform]
    major, newest = (int(p) for p in glibc.split("."))
    tags = [f"manylinux_{major}_{n}_{arch}" for n in range(newest, oldest - 1, -1)]
    tags += [f"{name}_{arch}" for name, n in _LEGACY.items() if oldest <= n <= newest]
    return tags + [f"linux_{arch}"]
