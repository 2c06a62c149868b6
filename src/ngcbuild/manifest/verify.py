"""`invoke verify --release R`: is every pin of R there to be installed, before a GPU runner tries?

Each pip pin is resolved with pip's own resolver in dry-run mode, for R's Python and each platform R
builds, against the indexes R names; each git ref must be a full commit dated before the release (a
short hash, as NVIDIA gives some, is resolved where GitHub answers, else "not verified" with the command
that resolves it); a base image known to be gone is refused with the way out. What this machine cannot reach is reported
as "not verified" with the reason, never as verified.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, replace
from datetime import date, datetime
from pathlib import Path
from urllib.parse import urlsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ngcbuild.core.errors import ManifestError, OperationError, excerpt
from ngcbuild.core.references import shown_url
from ngcbuild.manifest import apt_index, closure
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.manifest.wheel_tags import WheelMetadataError, declared_tags, platforms_of

PYPI = "https://pypi.org/simple"
VERIFIED, FAILED, NOT_VERIFIED = "verified", "failed", "not verified"
FULL_COMMIT = re.compile(r"[0-9a-f]{40}")
# A commit NVIDIA gives in short (b4e4ee81d3): resolved where GitHub answers, else left "not verified".
SHORT_COMMIT = re.compile(r"[0-9a-f]{7,39}")
TIMEOUT = 15
# The oldest manylinux glibc per architecture (manylinux1 is glibc 2.5; aarch64 wheels start at 2.17).
_ARCH = {"linux/amd64": ("x86_64", 5), "linux/arm64": ("aarch64", 17)}
# The legacy manylinux names pip matches literally, and the glibc each stands for.
_LEGACY = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}


class VerifyFailed(OperationError):
    """A pin that will not install: exit status 1."""


@dataclass(frozen=True)
class Row:
    kind: str  # pip, wheel-tags, closure, git, url, base, apt, conda
    name: str
    pin: str
    platform: str  # linux/amd64, or "" where the platform does not matter
    status: str
    reason: str = ""


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
    def platform_tags(self) -> list[str]:
        return platform_tags(self.platform, self.glibc)


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


def release_cutoff(name: str) -> date | None:
    """The first day after a YY.MM release's month: its git refs must be older. None for named releases."""
    match = re.fullmatch(r"([0-9]{2})\.([0-9]{2})", name)
    if not match:
        return None
    year, month = 2000 + int(match[1]), int(match[2])
    return date(year + month // 12, month % 12 + 1, 1)


# --- the outside world -------------------------------------------------------------------------


class Web:
    """HTTPS reads with the host's CA bundle (behind an intercepting proxy) and a short timeout."""

    def __init__(self, environ=os.environ):
        self.bundle = next((environ[k] for k in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
                            if environ.get(k) and Path(environ[k]).is_file()), None)
        self.context = ssl.create_default_context(cafile=self.bundle)
        self._reachable: dict[str, str | None] = {}

    def get(self, url: str, accept: str | None = None, method: str = "GET") -> bytes:
        request = urllib.request.Request(url, headers={"Accept": accept} if accept else {}, method=method)
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context) as response:
            return response.read()

    def wheel_tags(self, url: str) -> list[str]:
        """The tags the wheel at `url` declares in its WHEEL file (range requests)."""
        return declared_tags(url, lambda request, timeout: urllib.request.urlopen(
            request, timeout=timeout, context=self.context), TIMEOUT)

    def unreachable(self, url: str) -> str | None:
        """None when the host answers (any HTTP status), else why not."""
        # the host alone: an index URL's user:password@ is no part of a host name (it never resolved)
        host = urlsplit(url).netloc.rpartition("@")[2]
        if host not in self._reachable:
            try:
                self.get(f"https://{host}/" if url.startswith("https") else f"http://{host}/")
                self._reachable[host] = None
            except urllib.error.HTTPError:
                self._reachable[host] = None
            except (urllib.error.URLError, OSError) as exc:
                self._reachable[host] = (f"{shown_url(host)} is unreachable from here "
                                         f"({excerpt(str(getattr(exc, 'reason', exc)), 200)})")
        return self._reachable[host]


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


# --- the checks --------------------------------------------------------------------------------


def verify_release(loaded: LoadedRelease, web: Web, base: str | None = None) -> list[Row]:
    release = loaded.release
    if release.os.glibc is None:
        raise ManifestError(loaded.path, "os.glibc",
                            "required by verify: the C library version (e.g. '2.39') that says which "
                            "manylinux wheels the image can install")
    platforms = list(dict.fromkeys((release.build.platform, *release.build.published_platforms)))
    rows = [_base_row(release, base)]
    for platform in platforms:
        target = Target(release.python.version, platform, release.os.glibc)
        pip_rows = _pip_rows(loaded, target, web)
        rows += pip_rows
        if loaded.constraints is not None and loaded.constraints.pins:
            rows.append(closure_row(loaded, target, web, pip_rows))
        rows += _apt_rows(release, platform, web)
    rows += _git_rows(release, web)
    rows += _other_rows(release, web)
    return rows


def _base_row(release, base: str | None) -> Row:
    image = release.base.image
    if base:
        must = "; ".join(release.base.mirror_must)
        return Row("base", image, base, "", NOT_VERIFIED,
                   f"built FROM the mirror {base}, which verify does not query" + (f"; it must {must}" if must else ""))
    if release.base.removed:
        way_out = f"build FROM a mirror of it: invoke build --release {release.release} --base-image MIRROR/IMAGE:TAG"
        if release.base.mirror_must:
            way_out += "; the mirror must also " + "; and ".join(release.base.mirror_must)
        return Row("base", image, image, "", FAILED, f"{release.base.removed}. Way out: {way_out}")
    return Row("base", image, image, "", NOT_VERIFIED, "verify does not query registries; the build pulls it")


def _pip_rows(loaded: LoadedRelease, target: Target, web: Web) -> list[Row]:
    release = loaded.release
    pins = {p.key: p for p in loaded.constraints.pins}
    indexes = [PYPI, *release.pip.extra_index_urls]
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


def closure_row(loaded: LoadedRelease, target: Target, web: Web, pip_rows: list[Row]) -> Row:
    """Is the pin set closed on this platform? pip resolves every pin WITH its dependencies, the
    constraints file as constraints, against the release's reachable indexes; closure.walk then names
    each distribution the pins need that the file does not pin, or pins at a version a requirement
    excludes. The image installs each pin with --no-deps, so only its final `pip check` would say."""
    release, constraints = loaded.release, loaded.constraints
    pins = {p.key: p.version for p in constraints.pins}
    name, count = f"constraints/{constraints.path.name}", f"{len(pins)} pins"

    def row(status: str, reason: str) -> Row:
        return Row("closure", name, count, target.platform, status, reason)

    # A pin whose own row did not verify (an unreachable index, a source archive only) has no metadata
    # here: it is left out of the requirements and the constraints (pip could not satisfy a pin that
    # another requires, and would stop there), its version is still compared with what requires it,
    # and the set is at best "not verified".
    unread = {canonicalize_name(r.name): r for r in pip_rows if r.kind == "pip" and r.status != VERIFIED}
    without = ", ".join(f"{r.name}=={r.pin} (pip row: {r.status})" for r in unread.values())
    indexes, unreachable = [], []
    for index in [PYPI, *release.pip.extra_index_urls]:
        why = web.unreachable(index)
        if why:
            unreachable.append(why)
        else:
            indexes.append(index)
    wanted = [str(p) for p in constraints.pins if p.key not in unread]
    if not indexes or not wanted:
        return row(NOT_VERIFIED, "; ".join(unreachable) or f"no pin could be read here: {without}")
    outside = _installed_beside_constraints(loaded, pins)
    with tempfile.TemporaryDirectory(prefix="ngcbuild-closure-") as scratch:
        path = Path(scratch) / "constraints.txt"
        path.write_text(replace(constraints, pins=tuple(p for p in constraints.pins if p.key not in unread)).text())
        try:
            result = run_pip(["--constraint", str(path), *wanted], indexes, target, web, Path(scratch), quiet=False)
        except OperationError as exc:
            return row(NOT_VERIFIED, str(exc))
        report = json.loads((Path(scratch) / "report.json").read_text()) if result.returncode == 0 else None
    # An unreachable index matters only where a pin needed it (every pin that resolved did so elsewhere).
    caveat = "; ".join([f"the requirements of {without} are not read here", *unreachable]) if unread else ""
    if report is None:
        output = result.stdout + "\n" + result.stderr
        why = excerpt(closure.conflict_reason(output), 600)
        missing = unmatched_requirement(output)
        refused = closure.dependency_conflict(output) or (missing is not None and missing not in pins)
        if refused and not caveat:
            return row(FAILED, f"pip cannot resolve the pinned set with its dependencies: {why}")
        if not caveat:  # each pin resolved alone, pip found no file of one now: an index did not answer as before
            caveat = "each pin resolved alone, so an index did not answer as it did"
        return row(NOT_VERIFIED, f"pip could not resolve the pinned set: {why}; {caveat}")
    environment = closure.marker_environment(target.python, _ARCH[target.platform][0])
    found = closure.walk(report, pins, environment, unread=frozenset(unread), outside=outside)
    size = f"{len(found.reached)} distributions"
    problems = []
    if found.unpinned:
        problems.append(f"{len(found.unpinned)} not pinned: " + ", ".join(
            f"{dep}{' ' + version if version else ''} (required by {', '.join(sorted(by))})"
            for dep, (version, by) in sorted(found.unpinned.items())))
    if found.excluded:
        problems.append("pinned at a version a requirement excludes: " + "; ".join(sorted(set(found.excluded))))
    if found.unpinned and not found.excluded and release.python.conda is not None:
        # A conda Python's installer brings distributions of its own (pip, requests, six...) that the
        # constraints do not list and verify does not read: an unpinned one may be among them.
        return row(NOT_VERIFIED, f"{size} needed on {target.platform}; " + "; ".join(problems)
                   + f": unless the conda environment ({release.python.conda.installer.rsplit('/', 1)[-1]}) "
                   "carries them, which verify does not read" + (f"; {caveat}" if caveat else ""))
    if problems:
        return row(FAILED, f"{size} needed on {target.platform}; " + "; ".join(problems)
                   + ": the image's pip check would fail at the end of the build")
    beside = ", ".join(f"{dep} {version}" for dep, version in sorted(outside.items()))
    beside = f"; {beside} (built by the image) compared with what requires them, their own needs not read" \
        if beside else ""
    if caveat:
        return row(NOT_VERIFIED, f"{size}, all pinned{beside}; {caveat}")
    return row(VERIFIED, f"{size}, all pinned{beside}")


def _installed_beside_constraints(loaded: LoadedRelease, pins: dict[str, str]) -> dict[str, str]:
    """Distributions the image installs outside the constraints file: components built from source
    (25.12's torch) with the version pip lists for them."""
    outside = {}
    for name, component in loaded.release.components.items():
        entry = loaded.catalog.get(name)
        package = component.package or (entry.pip_package if entry else None)
        if component.install == "source" and package and canonicalize_name(package) not in pins:
            outside[canonicalize_name(package)] = str(component.module_version or component.version)
    return outside


def _git_rows(release, web: Web) -> list[Row]:
    cutoff = release_cutoff(release.release)
    rows = []
    for name, component in release.components.items():
        if not component.ref or component.install == "none":
            continue
        where = f"components.{name}.ref"
        if SHORT_COMMIT.fullmatch(component.ref):
            rows.append(_short_commit_row(where, component, web))
            continue
        if not FULL_COMMIT.fullmatch(component.ref):
            rows.append(Row("git", where, component.ref, "", FAILED,
                            f"not a full commit: a tag, branch or short hash can move or become ambiguous; give the "
                            f"40-hex commit of {component.repo}"))
            continue
        rows.append(_commit_date_row(where, component, cutoff, web))
    return rows


def resolve_command(repo: str, ref: str) -> str:
    """The one command that gives a short commit's full hash and date on a host that reaches the repository."""
    return (f"git clone --bare --filter=blob:none {repo} /tmp/resolve.git && "
            f"git -C /tmp/resolve.git log -1 --format='%H %cI' {ref}")


def _short_commit_row(where: str, component, web: Web) -> Row:
    """A short hash is never verified: resolved, it fails naming the full commit to write; unresolved (no
    GitHub from here), it is "not verified" with the command that resolves it elsewhere."""
    command = resolve_command(component.repo, component.ref)
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?/?", component.repo or "")
    api = f"https://api.github.com/repos/{match[1]}/{match[2]}/commits/{component.ref}" if match else None
    why = web.unreachable(api) if api else f"{component.repo} is not on GitHub"
    if not why:
        try:
            data = json.loads(web.get(api, accept="application/vnd.github+json"))
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 422):
                return Row("git", where, component.ref, "", FAILED,
                           f"GitHub answered HTTP {exc.code}: no single commit starts with {component.ref}")
            why = f"GitHub answered HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            why = str(exc)
        else:
            return Row("git", where, component.ref, "", FAILED,
                       f"an abbreviated commit: it is {data['sha']}, committed "
                       f"{data['commit']['committer']['date'][:10]}; write the full commit")
    return Row("git", where, component.ref, "", NOT_VERIFIED,
               f"an abbreviated commit ({len(component.ref)} hex digits) not resolved here ({why}); the Dockerfile "
               f"checks that the commit it checks out starts with it. To resolve it on a host with GitHub access: "
               f"{command}")


def _commit_date_row(where: str, component, cutoff: date | None, web: Web) -> Row:
    if cutoff is None:
        return Row("git", where, component.ref, "", VERIFIED, "a full commit (the release has no date to compare)")
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?/?", component.repo or "")
    if not match:
        return Row("git", where, component.ref, "", NOT_VERIFIED, f"a full commit; the date of {component.repo} "
                   "commits is not checked (not on GitHub)")
    api = f"https://api.github.com/repos/{match[1]}/{match[2]}/commits/{component.ref}"
    why = web.unreachable(api)
    if why:
        return Row("git", where, component.ref, "", NOT_VERIFIED, f"a full commit; its date is not checked: {why}")
    try:
        data = json.loads(web.get(api, accept="application/vnd.github+json"))
    except urllib.error.HTTPError as exc:
        status = FAILED if exc.code in (404, 422) else NOT_VERIFIED
        return Row("git", where, component.ref, "", status, f"GitHub answered HTTP {exc.code} for this commit")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Row("git", where, component.ref, "", NOT_VERIFIED, f"a full commit; its date is not checked: {exc}")
    when = datetime.fromisoformat(data["commit"]["committer"]["date"].replace("Z", "+00:00")).date()
    if when >= cutoff:
        return Row("git", where, component.ref, "", FAILED, f"committed {when}, after the release (before {cutoff})")
    return Row("git", where, component.ref, "", VERIFIED, f"committed {when}, before {cutoff}")


def _other_rows(release, web: Web) -> list[Row]:
    rows = []
    for name, component in release.components.items():
        if component.install == "conda":
            pins = ", ".join(f"{p}={v}" for p, v in component.packages.items())
            rows.append(Row("conda", name, pins, "", NOT_VERIFIED,
                            f"verify queries pip indexes, apt archives and git hosts, not conda channel "
                            f"{component.channel}"))
        elif component.install == "source" and component.url:
            rows.append(_url_row(name, component.url, web))
    return rows


def apt_pins(release) -> dict[str, str]:
    """Every apt pin of the release: the interpreter's, the builder's and the apt components'."""
    pins = {**release.python.apt_packages, **release.python.builder_apt_packages, **release.builder.apt_packages}
    for component in release.components.values():
        if component.install == "apt":
            pins.update(component.packages)
    return pins


def _apt_rows(release, platform: str, web: Web) -> list[Row]:
    """Each apt pin against the distribution's indexes: there, and not older than the archive's newest
    (an older pin downgrades a base image that has the update, which apt refuses, and lacks its fixes)."""
    pins = apt_pins(release)
    if not pins:
        return []
    arch = platform.split("/")[1]
    found: dict[str, dict[str, str]] = {}  # package -> version -> suite
    unread = []
    for source in release.os.apt_sources:
        for suite in source.suites:
            for component in source.components:
                text = _read_index(source.url, suite, component, arch, web)
                if text is None:
                    unread.append(f"{source.url} {suite}/{component}")
                    continue
                for package, versions in apt_index.parse_packages(text).items():
                    if package in pins:
                        for version in versions:
                            found.setdefault(package, {}).setdefault(version, suite)
    rows = []
    for package, version in sorted(pins.items()):
        versions = found.get(package, {})
        if not release.os.apt_sources or (unread and not versions):
            why = "no apt_sources in the manifest's os" if not release.os.apt_sources else \
                f"could not read {', '.join(unread)}"
            rows.append(Row("apt", package, version, platform, NOT_VERIFIED, why))
        elif not versions:
            rows.append(Row("apt", package, version, platform, NOT_VERIFIED,
                            "not in the distribution's archive: from a repository the base image adds "
                            "(NVIDIA's CUDA repository), which verify does not read"))
        elif version not in versions:
            have = ", ".join(f"{v} ({s})" for v, s in sorted(versions.items()))
            rows.append(Row("apt", package, version, platform, FAILED, f"not in the archive, which has {have}"))
        else:
            top = apt_index.newest(versions)
            if apt_index.compare_versions(version, top) < 0:
                rows.append(Row("apt", package, version, platform, FAILED,
                                f"older than {top} in {versions[top]}: where the base image has that update, "
                                "apt must downgrade (and stops), and the pin lacks its fixes"))
            else:
                rows.append(Row("apt", package, version, platform, VERIFIED, f"the newest in {versions[version]}"))
    return rows


def _read_index(url: str, suite: str, component: str, arch: str, web: Web) -> str | None:
    if web.unreachable(url):
        return None
    for index in apt_index.index_urls(url, suite, component, arch):
        try:
            return apt_index.decompress(web.get(index), index)
        except urllib.error.HTTPError:
            continue
        except (urllib.error.URLError, OSError, EOFError, ValueError):
            return None
    return None


def _url_row(name: str, url: str, web: Web) -> Row:
    why = web.unreachable(url)
    if why:
        return Row("url", name, url, "", NOT_VERIFIED, why)
    try:
        web.get(url, method="HEAD")
    except urllib.error.HTTPError as exc:
        return Row("url", name, url, "", FAILED, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        return Row("url", name, url, "", NOT_VERIFIED, str(exc))
    return Row("url", name, url, "", VERIFIED, "the archive downloads")


# --- output ------------------------------------------------------------------------------------


def summary(rows: list[Row]) -> dict[str, int]:
    return {status: sum(r.status == status for r in rows) for status in (VERIFIED, FAILED, NOT_VERIFIED)}


def as_json(release: str, rows: list[Row]) -> str:
    return json.dumps({"release": release, "summary": summary(rows), "rows": [asdict(r) for r in rows]},
                      indent=2) + "\n"


def as_table(release: str, rows: list[Row]) -> str:
    header = ("kind", "name", "pin", "platform", "status", "reason")
    lines = [f"verify {release}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join((r.kind, r.name, r.pin, r.platform, r.status, r.reason)) + " |")
    counts = summary(rows)
    lines += ["", ", ".join(f"{n} {status}" for status, n in counts.items())]
    return "\n".join(lines) + "\n"
