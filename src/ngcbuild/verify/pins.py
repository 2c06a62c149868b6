"""Each pip pin of a release resolved alone with pip's dry run, for the release's Python and each
platform it builds, against the indexes it names; a wheel whose own WHEEL file names no tag of the
platform; why a pin has no distribution (from the index's file list)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.core.references import shown_url
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import Web
from ngcbuild.verify.wheel_tags import WheelMetadataError, platforms_of

PYPI = "https://pypi.org/simple"


# The oldest manylinux glibc per architecture (manylinux1 is glibc 2.5; aarch64 wheels start at 2.17).
_ARCH = {"linux/amd64": ("x86_64", 5), "linux/arm64": ("aarch64", 17)}


# The legacy manylinux names pip matches literally, and the glibc each stands for.
_LEGACY = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}


@dataclass(frozen=True)
class Target:
    """What pip must match: R's interpreter and one platform's wheel tags."""

    python: str  # 3.12
    platform: str  # linux/amd64
    glibc: str  # 2.39

    @property
    def abi(self) -> str:
        major, minor = (int(p) for p in self.python.split("."))
        # CPython before 3.8 built with pymalloc carries the "m" ABI flag (cp36m).
        return f"cp{major}{minor}" + ("m" if (major, minor) < (3, 8) else "")

    @property
    def arch(self) -> str:
        """The machine name of the platform, as markers and wheel tags spell it (x86_64, aarch64)."""
        return _ARCH[self.platform][0]

    @property
    def platform_tags(self) -> list[str]:
        return platform_tags(self.platform, self.glibc)


def release_indexes(release) -> list[str]:
    """The indexes a release's pins come from: PyPI first, then the manifest's extra ones."""
    return [PYPI, *release.pip.extra_index_urls]


def platform_tags(platform: str, glibc: str) -> list[str]:
    """Every platform tag a wheel may carry to install on `platform` with this glibc, newest first.
    pip compares tags literally, so each manylinux_2_N (and the legacy names) must be listed."""
    arch, oldest = _ARCH[platform]
    major, newest = (int(p) for p in glibc.split("."))
    tags = [f"manylinux_{major}_{n}_{arch}" for n in range(newest, oldest - 1, -1)]
    tags += [f"{name}_{arch}" for name, n in _LEGACY.items() if oldest <= n <= newest]
    return tags + [f"linux_{arch}"]


def parse_report(report: dict) -> dict[str, tuple[str, str, str, str]]:
    """pip's installation report: canonical name -> (version, file name, Requires-Python or "", URL)."""
    resolved = {}
    for item in report.get("install", []):
        metadata = item["metadata"]
        url = item.get("download_info", {}).get("url", "")
        resolved[canonicalize_name(metadata["name"])] = (metadata["version"], url.rsplit("/", 1)[-1],
                                                         metadata.get("requires_python") or "", url)
    return resolved


def wheel_tag_row(name: str, version: str, filename: str, url: str, target: Target, known: dict[str, str],
                  read_tags) -> Row | None:
    """The row of a platform wheel whose own WHEEL file names no tag of the target platform (pip
    picks by file name; `pip check` in the image tests the WHEEL file): failed, or verified with
    the evidence when the manifest knows the tag is wrong (pip.wrong_wheel_tags). None when fine
    or when the wheel is for any platform."""
    if filename.endswith("-any.whl") or not filename.endswith(".whl"):
        return None
    try:
        tags = read_tags(url)
    except WheelMetadataError as exc:
        return Row("wheel-tags", name, version, target.platform, NOT_VERIFIED,
                   f"{filename}: its WHEEL file could not be read ({exc})")
    declared = platforms_of(tags)
    if declared & (set(target.platform_tags) | {"any"}):
        return None
    says = ", ".join(sorted(declared)) or "no tag"
    key = canonicalize_name(name)
    if key in known:
        return Row("wheel-tags", name, version, target.platform, VERIFIED,
                   f"{filename}: its WHEEL file says {says}, no tag of {target.platform}; known and tolerated "
                   f"by the image's pip check (pip.wrong_wheel_tags: {known[key]})")
    return Row("wheel-tags", name, version, target.platform, FAILED,
               f"{filename}: its WHEEL file says {says}, no tag of {target.platform}: pip installs it by its "
               "file name and `pip check` in the image then fails; if the wheel is known to work, name it "
               "in pip.wrong_wheel_tags with the evidence")


def supports_python(requires_python: str, python: str) -> bool:
    """Whether a distribution's Requires-Python admits the target's MAJOR.MINOR (as pip's --python-version)."""
    try:
        return not requires_python or SpecifierSet(requires_python).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True  # pip ignores a Requires-Python it cannot parse


_NO_MATCH = re.compile(r"No matching distribution found for (?P<req>\S+)")


def unmatched_requirement(stderr: str) -> str | None:
    """The requirement pip stopped at ("No matching distribution found for NAME==V"), canonical name."""
    match = _NO_MATCH.search(stderr)
    if not match:
        return None
    return canonicalize_name(re.split(r"[=<>!~\[;]", match["req"], maxsplit=1)[0])


def explain_missing(name: str, version: str, files: list[str], target: Target) -> tuple[str, str]:
    """Why a pin has no distribution for `target`, from the index's file list (PEP 691): (status, reason).
    A version that exists only as a source distribution, of a project that ships platform wheels for
    other versions, is a failure (a placeholder or a native build nobody planned); a pure-Python sdist
    is left to the build, so not verified."""
    mine, binary_elsewhere = [], []
    for filename in files:
        parsed = _parse_filename(filename)
        if parsed is None:
            continue
        file_version, tags = parsed
        if file_version == _version(version):
            mine.append((filename, tags))
        elif tags and any(t.platform != "any" for t in tags):
            binary_elsewhere.append(str(file_version))
    where = f"Python {target.python} on {target.platform} (glibc {target.glibc})"
    if not mine:
        known = sorted({str(p[0]) for p in map(_parse_filename, files) if p}, key=_sort_key)
        return FAILED, f"no release {version} on the index (it has {_few(known)})"
    wheels = [filename for filename, tags in mine if tags]
    if wheels:
        return FAILED, f"no wheel of {version} for {where}; its wheels: {_few(wheels)}"
    sdist = mine[0][0]
    if binary_elsewhere:
        newer = sorted(set(binary_elsewhere), key=_sort_key)
        return FAILED, (f"no wheel of {version} for {where}, only the source archive {sdist}, while the project "
                        f"ships platform wheels for other versions ({_few(newer)}): a placeholder or a native build")
    return NOT_VERIFIED, f"only the source archive {sdist} (pure Python?); the build compiles it, verify does not"


def _parse_filename(filename: str):
    try:
        if filename.endswith(".whl"):
            _, version, _, tags = parse_wheel_filename(filename)
            return version, tags
        _, version = parse_sdist_filename(filename)
        return version, None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def _version(text: str):
    try:
        return Version(text)
    except InvalidVersion:
        return text


def _sort_key(text: str):
    return (0, Version(text), "") if _is_version(text) else (1, None, text)


def _is_version(text: str) -> bool:
    try:
        Version(text)
        return True
    except InvalidVersion:
        return False


def _few(items: list[str], limit: int = 4) -> str:
    items = list(items)
    shown = items[-limit:]
    return ("..., " if len(items) > limit else "") + ", ".join(shown) if items else "none"


def run_pip(arguments: list[str], indexes: list[str], target: Target, web: Web, scratch: Path, *,
            quiet: bool = True) -> subprocess.CompletedProcess:
    """The one way verify runs pip: `pip install --dry-run` for `target` against `indexes` (the first is
    the index URL), its report written to scratch/report.json. Both checks pass their own arguments."""
    command = [sys.executable, "-m", "pip", "install", "--isolated", "--disable-pip-version-check",
               "--dry-run", "--ignore-installed", "--only-binary", ":all:",
               # pip would test Requires-Python against the interpreter running it, not the
               # target's: parse_report's caller tests it against the target instead.
               "--ignore-requires-python",
               "--target", str(scratch / "target"), "--report", str(scratch / "report.json"),
               *(["--quiet"] if quiet else []),
               "--python-version", target.python, "--implementation", "cp", "--abi", target.abi,
               "--index-url", indexes[0]]
    for index in indexes[1:]:
        command += ["--extra-index-url", index]
    for tag in target.platform_tags:
        command += ["--platform", tag]
    if web.bundle:
        command += ["--cert", web.bundle]
    # --isolated ignores PIP_* variables and the user's config, not the machine's (/etc/pip.conf
    # may name constraints or indexes): PIP_CONFIG_FILE=/dev/null makes pip read no config file.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    try:
        return subprocess.run(command + arguments, capture_output=True, text=True, timeout=1800,
                              env={**environ, "PIP_CONFIG_FILE": os.devnull})
    except subprocess.TimeoutExpired:
        where = ", ".join(shown_url(i) for i in indexes)
        raise OperationError(f"pip did not finish checking the pins against {where} in 30 minutes") from None


def pip_resolve(pins: list[str], index: str, target: Target, web: Web) -> tuple[dict, dict[str, str]]:
    """Resolve `pins` (NAME==VERSION) with pip's dry run for `target` against one index. Returns
    (resolved: name -> (version, file), unmatched: name -> pip's complaint). pip stops at the first pin
    it cannot match, so that pin is set aside and the rest tried again."""
    remaining = list(pins)
    unmatched: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ngcbuild-verify-") as scratch:
        while remaining:
            result = run_pip(["--no-deps", *remaining], [index], target, web, Path(scratch))
            if result.returncode == 0:
                return parse_report(json.loads((Path(scratch) / "report.json").read_text())), unmatched
            name = unmatched_requirement(result.stderr)
            keys = [canonicalize_name(p.split("==")[0]) for p in remaining]
            if name is None or name not in keys:
                tail = result.stderr.strip().splitlines()[-1:] or ["no message"]
                raise OperationError(f"pip could not check the pins against {shown_url(index)}: "
                                     f"{excerpt(tail[0], 200)}")
            unmatched[name] = "no distribution pip can install"
            remaining = [p for p, key in zip(remaining, keys, strict=True) if key != name]
    return {}, unmatched


def index_files(index: str, name: str, web: Web) -> list[str]:
    """The file names an index (PEP 691 JSON) holds for a project; [] when it has none."""
    try:
        data = json.loads(web.get(f"{index.rstrip('/')}/{name}/", accept="application/vnd.pypi.simple.v1+json"))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []
        raise OperationError(f"{shown_url(index)}: {name}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise OperationError(f"{shown_url(index)}: {name}: {excerpt(str(exc), 200)}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("filename"), str)
                                              for f in files):
        raise OperationError(f"{shown_url(index)}: {name}: the answer is not a PEP 691 project page")
    return [f["filename"] for f in files if not f.get("yanked")]


def pip_rows(loaded: LoadedRelease, target: Target, web: Web) -> list[Row]:
    release = loaded.release
    pins = {p.key: p for p in loaded.constraints.pins}
    indexes = release_indexes(release)
    rows, left = [], dict(pins)
    known_wrong = {canonicalize_name(w.distribution): w.evidence for w in release.pip.wrong_wheel_tags
                   if target.platform in w.platforms}
    unreachable = []
    last_reason: dict[str, tuple[str, str]] = {}
    for index in indexes:
        if not left:
            break
        why = web.unreachable(index)
        if why:
            unreachable.append(f"{shown_url(index)} ({why})")
            continue
        try:
            resolved, unmatched = pip_resolve([str(p) for p in left.values()], index, target, web)
        except OperationError as exc:  # it answered 500 or garbage: its pins are not verified, with why
            unreachable.append(f"{shown_url(index)} ({exc})")
            continue
        for key, (_version, filename, requires_python, url) in resolved.items():
            pin = left.pop(key, None)
            if pin is None:
                continue
            if supports_python(requires_python, target.python):
                rows.append(Row("pip", pin.name, pin.version, target.platform, VERIFIED,
                                f"{filename} from {shown_url(index)}"))
            else:
                rows.append(Row("pip", pin.name, pin.version, target.platform, FAILED,
                                f"{filename} requires Python {requires_python}, not {target.python}"))
            tag_row = wheel_tag_row(pin.name, pin.version, filename, url, target, known_wrong, web.wheel_tags)
            if tag_row is not None:
                rows.append(tag_row)
        for key in unmatched:
            pin = left[key]
            try:
                last_reason[key] = explain_missing(key, pin.version, index_files(index, key, web), target)
            except OperationError as exc:
                last_reason[key] = (NOT_VERIFIED, str(exc))
    for key, pin in left.items():
        status, reason = last_reason.get(key, (NOT_VERIFIED, "no index was reachable"))
        if unreachable:
            status = NOT_VERIFIED
            reason = f"{reason}; not checked on the release's other index {', '.join(unreachable)}"
        rows.append(Row("pip", pin.name, pin.version, target.platform, status, reason))
    return sorted(rows, key=lambda r: canonicalize_name(r.name))
