"""The metadata of a source archive (sdist), never installed: its PKG-INFO where that is trustworthy
(Metadata-Version 2.2 or later with no `Dynamic: Requires-Dist`: PEP 643), else built as pip would
build it, with the PEP 517 hook `prepare_metadata_for_build_wheel` of its own build backend, in a
throw-away environment holding only the archive's build requirements (installed from the release's
indexes with `pip install --target`, run with `python -I -S` so nothing of this machine's Python leaks
in). Its setup.py runs, as pip runs it in the image; the archive is unpacked only as plain files and
folders inside the scratch folder.

Caveat, said in every row that uses it: the build runs on this machine's Python, not the image's; a
setup.py that computes its requirements from the interpreter or machine may say otherwise there."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
import threading
import zipfile
from pathlib import Path, PurePosixPath

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.core.http import HttpFailure
from ngcbuild.verify.index import IndexFile
from ngcbuild.verify.metadata import Metadata, MetadataError, check_names, header_values, parse_metadata
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.web import HttpStatus, Web

MAX_SDIST = 32 << 20  # a source archive verify builds metadata of (tensorrt-cu13's is 18 kB)
MAX_UNPACKED = 512 << 20
MAX_MEMBERS = 50_000
PIP_TIMEOUT_S = 300
HOOK_TIMEOUT_S = 180
# NVIDIA's placeholder archives on PyPI (DALI, TensorRT's libraries): their backend fetches the real
# wheel from NVIDIA's index at install time; the archive's own metadata is not the distribution's.
PLACEHOLDER_BACKENDS = ("wheel_stub.buildapi",)
PLACEHOLDER = "a placeholder"
DEFAULT_BUILD_SYSTEM = {"requires": ["setuptools>=40.8.0"], "build-backend": "setuptools.build_meta:__legacy__"}

# Run by `python -I -S -c`: import the backend from the build environment (and the archive's own
# backend-path) and call one hook; the answer goes to a JSON file (setup.py may print anything).
_HOOK = r"""
import importlib, json, os, sys
envs, backend, backend_path, phase, out = sys.argv[1:6]
sys.path[:0] = [os.path.abspath(p) for p in json.loads(backend_path)] + json.loads(envs)
module, _, attribute = backend.partition(":")
hooks = importlib.import_module(module.strip())
for part in filter(None, attribute.strip().split(".")):
    hooks = getattr(hooks, part)
if phase == "requires":
    hook = getattr(hooks, "get_requires_for_build_wheel", None)
    result = list(hook({})) if hook else []
else:
    hook = getattr(hooks, "prepare_metadata_for_build_wheel", None)
    result = hook(out, {}) if hook else None
with open(os.path.join(out, "hook.json"), "w") as answer:
    json.dump(result, answer)
"""


def trusted_pkg_info(text: str) -> bool:
    """PEP 643: PKG-INFO of Metadata-Version 2.2 or later is the built metadata, apart from the fields
    it names `Dynamic`."""
    try:
        version = tuple(int(p) for p in (header_values(text, "Metadata-Version") or ["0"])[0].split("."))
    except ValueError:
        return False
    dynamic = {v.lower() for v in header_values(text, "Dynamic")}
    return version >= (2, 2) and "requires-dist" not in dynamic


class SdistReader:
    """Builds the metadata of source archives for one verify run: build environments made once per
    set of build requirements, in `scratch` (the run's folder, removed by its owner)."""

    def __init__(self, web: Web, work: Work, scratch: Path, indexes: list[str]):
        self.web, self.work, self.scratch, self.indexes = web, work, scratch, indexes
        self._envs: dict[tuple[str, ...], Path | OperationError] = {}
        self._env_lock = threading.Lock()
        self._count = 0

    def metadata(self, file: IndexFile) -> Metadata:
        with self._env_lock:
            self._count += 1
            folder = self.scratch / f"sdist-{self._count}"
        folder.mkdir(parents=True)
        source = _unpack(self._download(file), file.filename, folder / "src")
        pkg_info = source / "PKG-INFO"
        if pkg_info.is_file() and pkg_info.stat().st_size <= MAX_SDIST:
            text = pkg_info.read_text("utf-8", "replace")
            if trusted_pkg_info(text):
                return check_names(parse_metadata(text, "its PKG-INFO (Metadata-Version 2.2+, Requires-Dist not "
                                                        "dynamic)"), file)
        return check_names(self._build(source, folder), file)

    def _download(self, file: IndexFile) -> bytes:
        try:
            body = self.web.get(file.url, limit=MAX_SDIST)
        except (HttpStatus, HttpFailure) as exc:
            raise MetadataError(str(exc)) from None
        if file.sha256 and hashlib.sha256(body).hexdigest() != file.sha256:
            raise MetadataError(f"{file.filename}: its sha256 is not the one the index gives for it: refused")
        return body

    def _build(self, source: Path, folder: Path) -> Metadata:
        system = _build_system(source)
        if system["build-backend"].split(":")[0].strip() in PLACEHOLDER_BACKENDS:
            raise MetadataError(f"{PLACEHOLDER}: its build backend {system['build-backend']} only sends pip to "
                                "another index, where the distribution is")
        envs = [self._environment(tuple(sorted(system["requires"])))]
        backend_path = json.dumps(system.get("backend-path", []))
        more = self._hook(source, folder, envs, system["build-backend"], backend_path, "requires")
        if not isinstance(more, list) or not all(isinstance(r, str) for r in more):
            raise MetadataError("its build backend's get_requires_for_build_wheel gave no list of requirements")
        more = sorted(set(more) - set(system["requires"]))
        if more:  # a folder of its own, before the first on the path: what is there is not fetched again
            envs.insert(0, self._environment(tuple(more)))
        out = folder / "metadata"
        out.mkdir()
        name = self._hook(source, out, envs, system["build-backend"], backend_path, "metadata")
        if name is None:
            raise MetadataError(f"its build backend {system['build-backend']} has no prepare_metadata_for_build_wheel "
                                "hook, and verify does not build wheels")
        metadata = out / str(name) / "METADATA"
        if not isinstance(name, str) or "/" in name or not metadata.is_file():
            raise MetadataError("its build backend's prepare_metadata_for_build_wheel made no METADATA")
        version = ".".join(str(p) for p in sys.version_info[:3])
        return parse_metadata(metadata.read_text("utf-8", "replace"),
                              f"built from the source archive (PEP 517) with Python {version} on this machine")

    def _within(self, seconds: float) -> float:
        """A child's timeout: its own, or what is left of the run's deadline (the web's) where that is less."""
        deadline = getattr(self.web, "run_deadline", None)  # a test's web may have none
        if deadline is None:
            return seconds
        left = deadline.remaining()
        if left <= 0:
            raise deadline.passed("a source archive's metadata was not read")
        return min(seconds, left)

    def _hook(self, source: Path, out: Path, envs: list[Path], backend: str, backend_path: str, phase: str):
        home = out / "home"
        home.mkdir(exist_ok=True)
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(home),
                   "LC_ALL": "C.UTF-8", "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}
        result = self.work.run([sys.executable, "-I", "-S", "-c", _HOOK, json.dumps([str(e) for e in envs]), backend,
                                backend_path, phase, str(out)], timeout=self._within(HOOK_TIMEOUT_S), cwd=source,
                               env=environ)
        answer = out / "hook.json"
        if result.returncode != 0 or not answer.is_file():
            tail = (result.stderr.strip().splitlines() or ["no message"])[-1]
            raise MetadataError(f"its build backend failed ({phase}): {excerpt(tail, 300)}")
        try:
            return json.loads(answer.read_text())
        except ValueError:
            raise MetadataError(f"its build backend's answer ({phase}) is not JSON") from None

    def _environment(self, requires: tuple[str, ...]) -> Path:
        """A folder holding `requires` (pip install --target), made once per run for each set."""
        with self._env_lock:
            known = self._envs.get(requires)
            if known is None:
                known = self._envs[requires] = self._install(requires)
        if isinstance(known, OperationError):
            raise MetadataError(str(known))
        return known

    def _install(self, requires: tuple[str, ...]) -> Path | OperationError:
        env = self.scratch / f"build-env-{len(self._envs)}"
        if not requires:  # a backend of the archive's own (backend-path) that needs nothing
            env.mkdir()
            return env
        command = [sys.executable, "-m", "pip", "install", "--isolated", "--disable-pip-version-check", "--no-input",
                   "--quiet", "--target", str(env), "--only-binary", ":all:", "--index-url", self.indexes[0]]
        for index in self.indexes[1:]:
            command += ["--extra-index-url", index]
        if self.web.bundle:
            command += ["--cert", self.web.bundle]
        # --isolated ignores PIP_* variables and the user's config, not the machine's: no config file at all
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        try:
            result = self.work.run([*command, "--", *requires], timeout=self._within(PIP_TIMEOUT_S),
                                   env={**environ, "PIP_CONFIG_FILE": os.devnull})
        except OperationError as exc:
            return OperationError(f"its build requirements could not be installed: {exc}")
        if result.returncode != 0:
            tail = (result.stderr.strip().splitlines() or ["no message"])[-1]
            return OperationError(f"its build requirements {', '.join(requires)} could not be installed: "
                                  f"{excerpt(tail, 300)}")
        return env


def _build_system(source: Path) -> dict:
    pyproject = source / "pyproject.toml"
    if not pyproject.is_file():
        return DEFAULT_BUILD_SYSTEM
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise MetadataError("its pyproject.toml needs Python 3.11's tomllib to be read") from None
    try:
        data = tomllib.loads(pyproject.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise MetadataError(f"its pyproject.toml cannot be read ({excerpt(str(exc), 120)})") from None
    system = data.get("build-system")
    if system is None:
        return DEFAULT_BUILD_SYSTEM
    requires = system.get("requires") if isinstance(system, dict) else None
    backend = system.get("build-backend", DEFAULT_BUILD_SYSTEM["build-backend"]) if isinstance(system, dict) else None
    path = system.get("backend-path", []) if isinstance(system, dict) else None
    if not (isinstance(requires, list) and all(isinstance(r, str) for r in requires) and isinstance(backend, str)
            and isinstance(path, list) and all(isinstance(p, str) and not PurePosixPath(p).is_absolute()
                                               and ".." not in PurePosixPath(p).parts for p in path)):
        raise MetadataError("its pyproject.toml's [build-system] is not of the shape PEP 517/518 give")
    return {"requires": requires, "build-backend": backend, "backend-path": path}


def _unpack(data: bytes, filename: str, into: Path) -> Path:
    """The archive's plain files and folders under `into` (bounded count and size; absolute or climbing
    names refused); a link (pandocfilters' README.rst) becomes a copy of the file it names in the
    archive, and is refused when it names anything else. Returns the one folder the archive holds."""
    members, total = [], 0
    for member in _members(data, filename):  # counted as they come: a bomb stops at its first large header
        members.append(member)
        total += member[1]
        if len(members) > MAX_MEMBERS or total > MAX_UNPACKED:
            raise MetadataError(f"{filename}: over {MAX_MEMBERS} members or {MAX_UNPACKED} bytes unpacked")
    into.mkdir(parents=True)
    files: dict[str, bytes] = {}
    for name, _size, read, _link in members:
        target = into.joinpath(*_inside(name, filename).parts)
        if read is None:
            target.mkdir(parents=True, exist_ok=True)
        elif read is not _LINK:
            target.parent.mkdir(parents=True, exist_ok=True)
            files[str(_inside(name, filename))] = read()
            target.write_bytes(files[str(_inside(name, filename))])
    for name, _size, read, link in members:
        if read is _LINK:
            if str(link) not in files:
                raise MetadataError(f"{filename}: {excerpt(name, 80)} links to {excerpt(str(link), 80)}, not a file "
                                    "of the archive")
            target = into.joinpath(*_inside(name, filename).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[str(link)])
    tops = {_inside(name, filename).parts[0] for name, *_ in members}
    if len(tops) != 1 or not (into / next(iter(tops))).is_dir():
        raise MetadataError(f"{filename}: not one folder at its top, as a source archive has")
    return into / next(iter(tops))


_LINK = object()  # a member that is a link: its target is copied once every file is out


def _inside(name: str, filename: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise MetadataError(f"{filename}: a member named {excerpt(name, 80)} would land outside its folder")
    return path


def _link_target(name: str, target: str, hard: bool, filename: str) -> PurePosixPath:
    """The archive path a link names: a hard link's is the archive's own path, a symbolic link's is
    relative to its folder (normalised; never out of the archive)."""
    parts = [] if hard else list(PurePosixPath(name).parent.parts)
    if PurePosixPath(target).is_absolute():
        raise MetadataError(f"{filename}: {excerpt(name, 80)} links out of the archive")
    for part in PurePosixPath(target).parts:
        if part == "..":
            if not parts:
                raise MetadataError(f"{filename}: {excerpt(name, 80)} links out of the archive")
            parts.pop()
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _members(data: bytes, filename: str):
    """(name, size, reader or None for a folder or _LINK, the link's archive path) of each member;
    anything but a file, folder or link refused."""
    try:
        if filename.endswith(".zip"):
            archive = zipfile.ZipFile(io.BytesIO(data))
            for info in archive.infolist():
                mode = info.external_attr >> 16
                if mode and (mode & 0o170000) not in (0, 0o100000, 0o040000):
                    raise MetadataError(f"{filename}: {excerpt(info.filename, 80)} is not a plain file or folder")
                yield (info.filename.rstrip("/"), info.file_size,
                       None if info.is_dir() else (lambda i=info: archive.read(i)), None)
            return
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
        for info in archive:
            name = info.name.rstrip("/")
            if info.isdir():
                yield name, 0, None, None
            elif info.isfile():
                yield name, info.size, (lambda i=info: archive.extractfile(i).read()), None
            elif info.issym() or info.islnk():
                yield name, 0, _LINK, _link_target(name, info.linkname, info.islnk(), filename)
            else:
                raise MetadataError(f"{filename}: {excerpt(info.name, 80)} is not a plain file, folder or link")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise MetadataError(f"{filename}: not a readable source archive ({excerpt(str(exc), 120)})") from None
