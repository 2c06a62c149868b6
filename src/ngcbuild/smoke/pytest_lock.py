"""The pytest each image's Python runs the smoke suite with: one lock file per Python minor
(smoke/locks/pytest-pyX.Y.txt), every distribution pinned with the sha256 of its pure-Python wheel.

The set is the one resolver's (resolver/pure_wheels.py: uv picks the versions for the image's Python,
evaluating every marker for it, and the index's listing gives each pure wheel's sha256), read from the
index of the user's setting (core/indexes.py: PyPI unless UV_INDEX_URL or PIP_INDEX_URL names another).

Regenerate with `python -m ngcbuild.smoke.pytest_lock 3.6 3.8 ...` (needs the index) and review the diff.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.outputs import write_file

LOCKS_DIR = Path(__file__).parent / "locks"
ROOTS = ("pytest",)
# Pure-Python wheels only: the same files serve every image of that Python, any CPU architecture.
PIP_TARGET_ARGS = ("--only-binary=:all:", "--implementation", "py", "--abi", "none", "--platform", "any")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)((?:\s+--hash=sha256:[0-9a-f]{64})+)\s*$")
_MINOR = re.compile(r"^3\.[0-9]+$")


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    sha256: tuple[str, ...]


def python_minor(version: str) -> str:
    """'3.6' from a manifest's '3.6' or a host's '3.11.7'."""
    minor = ".".join(str(version).split(".")[:2])
    if not _MINOR.match(minor):
        raise UserError(f"smoke: {version!r} is not a Python 3 version (MAJOR.MINOR)")
    return minor


def lock_path(version: str) -> Path:
    return LOCKS_DIR / f"pytest-py{python_minor(version)}.txt"


def locked_pythons() -> list[str]:
    return sorted((p.stem.removeprefix("pytest-py") for p in LOCKS_DIR.glob("pytest-py*.txt")),
                  key=lambda v: tuple(map(int, v.split("."))))


def read_lock(version: str) -> list[Pin]:
    path = lock_path(version)
    if not path.is_file():
        raise UserError(f"smoke: no pytest lock for Python {python_minor(version)} ({path} is missing; locks exist "
                        f"for {', '.join(locked_pythons())}); make one with "
                        f"`python -m ngcbuild.smoke.pytest_lock {python_minor(version)}`")
    pins = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _PIN.match(line)
        if not match:
            raise UserError(f"{path}:{number}: expected `name==version --hash=sha256:<64 hex>`, got {line!r}")
        hashes = tuple(h.split(":", 1)[1] for h in match.group(3).split())
        pins.append(Pin(canonicalize_name(match.group(1)), match.group(2), hashes))
    if not pins:
        raise UserError(f"{path}: pins nothing; expected pytest and its dependencies")
    return pins


def resolve(version: str, roots=ROOTS, log=sys.stderr, indexes: list[str] | None = None) -> list[Pin]:
    """Pins of `roots` and everything they need on Python `version`, as the one resolver chooses them
    (resolver/pure_wheels.py), from `indexes` (default: the user's index setting)."""
    from ngcbuild.core.indexes import index_setting
    from ngcbuild.resolver.pure_wheels import resolve_pure

    if indexes is None:
        setting = index_setting()
        indexes = [setting.index_url, *setting.extra]
    pins = [Pin(w.name, w.version, w.sha256) for w in resolve_pure(list(roots), python_minor(version), indexes)]
    print(f"python {version}: " + ", ".join(f"{p.name}=={p.version}" for p in pins), file=log)
    return pins


def write_lock(version: str, pins: list[Pin]) -> Path:
    path = lock_path(version)
    lines = [f"# pytest and its dependencies for Python {python_minor(version)}, pure-Python wheels, resolved for",
             f"# that Python: `python -m ngcbuild.smoke.pytest_lock {python_minor(version)}`. Staged read-only",
             "# beside the smoke checks; nothing is installed into the image.",
             *(f"{p.name}=={p.version} " + " ".join(f"--hash=sha256:{h}" for h in p.sha256) for p in pins)]
    return write_file(path, "\n".join(lines) + "\n", within=LOCKS_DIR)


def main(argv=None) -> int:
    versions = list(argv if argv is not None else sys.argv[1:])
    if not versions:
        print("usage: python -m ngcbuild.smoke.pytest_lock 3.6 [3.8 ...]", file=sys.stderr)
        return 2
    try:
        for version in versions:
            print(write_lock(version, resolve(version)))
    except (UserError, OperationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
