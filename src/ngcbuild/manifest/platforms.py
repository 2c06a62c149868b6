"""The platforms a release builds for, as the rest of the world names them: the machine (`uname -m`,
PEP 508's platform_machine, wheel tags), the oldest manylinux glibc of each, and the PEP 508 marker
values of a Linux CPython on one. Declared once for render, verify and derive alike."""

from __future__ import annotations

MACHINES = {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}
# The oldest manylinux glibc per platform (manylinux1 is glibc 2.5; aarch64 wheels start at 2.17).
OLDEST_GLIBC_MINOR = {"linux/amd64": 5, "linux/arm64": 17}


def interpreter(release) -> str:
    """MAJOR.MINOR.PATCH of the image's Python, as markers and Requires-Python must see it; where the
    manifest does not say it, MAJOR.MINOR.0."""
    return release.python.interpreter_version or f"{release.python.version}.0"


def markers(python_full: str, platform: str) -> dict[str, str]:
    """PEP 508 marker values of the image's interpreter (Linux CPython, MAJOR.MINOR.PATCH) on `platform`."""
    python = ".".join(python_full.split(".")[:2])
    return {"implementation_name": "cpython", "implementation_version": python_full, "os_name": "posix",
            "platform_machine": MACHINES[platform], "platform_python_implementation": "CPython",
            "platform_release": "", "platform_system": "Linux", "platform_version": "",
            "python_full_version": python_full, "python_version": python, "sys_platform": "linux"}
