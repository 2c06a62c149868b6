"""The pytest each image's Python runs the smoke suite with: one lock file per Python minor
(smoke/locks/pytest-pyX.Y.txt), every distribution pinned with the sha256 of its pure-Python wheel.

pip's --python-version selects wheels for another Python but evaluates dependency markers for the
Python running pip (pypa/pip#11010), so `tomli; python_version < "3.11"` would be dropped for a 3.8
image when resolved on 3.11. The lock is therefore resolved here: pip picks each version (for the
target Python, pure wheels only) and the markers of every dependency are evaluated for the target.

Regenerate with `python -m ngcbuild.smoke.pytest_lock 3.6 3.8 ...` (needs PyPI) and review the diff.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

from ngcbuild.core.errors import UserError
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


def target_environment(version: str) -> dict[str, str]:
    """PEP 508 marker values of a CPython `version` on Linux (the images' interpreter)."""
    minor = python_minor(version)
    return {"python_version": minor, "python_full_version": f"{minor}.0", "implementation_name": "cpython",
            "implementation_version": f"{minor}.0", "platform_python_implementation": "CPython",
            "os_name": "posix", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_release": "", "platform_version": ""}


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """Requires-Dist of a wheel, read from its METADATA."""
    name, version, _, _ = parse_wheel_filename(wheel.name)
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        headers = Parser().parsestr(archive.read(metadata).decode("utf-8"))
    return [Requirement(r) for r in headers.get_all("Requires-Dist") or []]


def needed(requirements: list[Requirement], extras: set[str], environment: dict[str, str]) -> list[Requirement]:
    """The requirements whose markers hold in `environment`, for the extras asked of the distribution."""
    kept = []
    for requirement in requirements:
        if requirement.marker is None or any(requirement.marker.evaluate({**environment, "extra": extra})
                                             for extra in {"", *extras}):
            kept.append(requirement)
    return kept


def resolve(version: str, roots=ROOTS, log=sys.stderr) -> list[Pin]:
    """Pins of `roots` and everything they need on Python `version`, by rounds until nothing changes:
    pip downloads (without dependencies) the newest wheel that fits every specifier met so far; the
    markers of what those wheels require are evaluated for the target."""
    environment = target_environment(version)
    wanted = {canonicalize_name(r): (SpecifierSet(), set()) for r in roots}
    for _ in range(20):
        with tempfile.TemporaryDirectory(prefix="ngcbuild-lock-") as tmp:
            wheels = _download(version, [_requirement(n, s, e) for n, (s, e) in sorted(wanted.items())], Path(tmp))
            chosen = {}
            following = {canonicalize_name(r): (SpecifierSet(), set()) for r in roots}
            for wheel in wheels:
                name, dist_version, _, _ = parse_wheel_filename(wheel.name)
                chosen[name] = Pin(name, str(dist_version), (hashlib.sha256(wheel.read_bytes()).hexdigest(),))
                for requirement in needed(wheel_requirements(wheel), wanted[name][1], environment):
                    key = canonicalize_name(requirement.name)
                    specifier, extras = following.get(key, (SpecifierSet(), set()))
                    following[key] = (specifier & requirement.specifier, extras | set(requirement.extras))
        if following == wanted:
            print(f"python {version}: " + ", ".join(f"{p.name}=={p.version}" for p in chosen.values()), file=log)
            return sorted(chosen.values(), key=lambda p: p.name)
        wanted = following
    raise UserError(f"smoke: pytest's dependencies for Python {version} did not settle in 20 rounds")


def _requirement(name: str, specifier: SpecifierSet, extras: set[str]) -> str:
    return name + (f"[{','.join(sorted(extras))}]" if extras else "") + str(specifier)


def _download(version: str, requirements: list[str], dest: Path) -> list[Path]:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
               "--python-version", python_minor(version), *PIP_TARGET_ARGS, "-d", str(dest), *requirements]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise UserError(f"smoke: pip could not download {requirements} for Python {version}: "
                        f"{done.stderr.strip()[-800:]}")
    return sorted(dest.glob("*.whl"))


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
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
