"""Build a rendered release with the Docker SDK's low-level API and record what was built.

The context sent to the engine is the rendered build/R/ plus this machine's build inputs (a CA
bundle, the wheels the release pins from a wheelhouse), added to the tar in memory so they never
enter build/R/ or the context hash. Tags are applied only after the build succeeded.
"""

from __future__ import annotations

import fcntl
import io
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
import requests
import urllib3

from . import context_cache
from .base import ensure_base
from .engine import connect
from .errors import BuildFailed, OperationError, UserError, excerpt, shown_path
from .events import TAIL_LINES, BuildStream
from .leftovers import Journal, remove_containers
from .manifest import load_release
from .outputs import make_dir, storing
from .project import Project
from .record import write_record
from .references import ImageRef, registry_host
from .registry import credentials
from .registry_api import Registry
from .render import INPUTS_DIR, Rendered, checked_base, render_files, render_pip_conf, render_release
from .wheelhouse import default_wheelhouse, select_wheels

DEFAULT_REGISTRY = "nvcr.io"
CA_ENV_VARS = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
CONTEXT_HASH_LABEL = context_cache.CONTEXT_HASH_LABEL
PLATFORMS = ("linux/amd64", "linux/arm64")
MAX_CA_BYTES = 10_000_000
# What a broken connection to the engine raises mid-stream (the daemon died or was stopped).
ENGINE_GONE = (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, ConnectionError)


@dataclass(frozen=True)
class BuildOptions:
    registry: str = DEFAULT_REGISTRY
    ca_bundle: Path | None = None
    wheelhouse: Path | None = None
    no_cache: bool = False
    base: str | None = None  # a mirror of the manifest's base image
    # Skip-by-hash (context_cache.py): platform to build, rebuild anyway, look in the registry too.
    platform: str | None = None
    force: bool = False
    lookup_registry: bool = False
    # Extra image labels, e.g. the CI run that built it (release.yml cleans up by that label).
    labels: tuple[tuple[str, str], ...] = ()


def options_from(registry: str | None, ca_bundle: str | None, wheelhouse: str | None, no_cache: bool,
                 environ=os.environ, base: str | None = None, platform: str | None = None, force: bool = False,
                 labels: list[str] | None = None) -> BuildOptions:
    """Command-line values, with the defaults a machine behind a proxy expects. Every one is checked
    here, before anything is rendered, locked, tagged or asked of the engine."""
    ca = checked_ca_bundle(ca_bundle, environ)
    house = checked_wheelhouse(wheelhouse) if wheelhouse is not None else default_wheelhouse(environ)
    lookup_registry = registry is not None
    registry = DEFAULT_REGISTRY if registry is None else registry_host(registry)
    if platform is not None and platform not in PLATFORMS:
        raise UserError(f"--platform {excerpt(platform)}: expected one of {', '.join(PLATFORMS)}")
    return BuildOptions(registry=registry, ca_bundle=ca, wheelhouse=house, no_cache=no_cache,
                        base=checked_base(base), platform=platform, force=force, lookup_registry=lookup_registry,
                        labels=context_cache.parse_labels(labels or []))


def checked_ca_bundle(value: str | None, environ) -> Path | None:
    """--ca-bundle (or the first CA variable set): a readable file holding PEM certificates. Its
    content is never shown: it is not ours to print."""
    if value is not None:
        flag, text = "--ca-bundle", value
    else:
        flag, text = next(((f"${v}", environ[v]) for v in CA_ENV_VARS if environ.get(v)), (None, None))
        if flag is None:
            return None
    path = Path(text)
    expected = "expected a PEM CA bundle"
    if "\x00" in text:
        raise UserError(f"{flag} {excerpt(text)}: a path cannot hold a NUL character; {expected}")
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # before opening: a FIFO would block the open
            raise UserError(f"{flag} {shown_path(path)}: not a regular file; {expected}")
        with path.open("rb") as handle:
            head = handle.read(MAX_CA_BYTES + 1)
    except OSError as exc:
        raise UserError(f"{flag} {shown_path(path)}: cannot be read ({exc.strerror}); {expected}") from None
    if len(head) > MAX_CA_BYTES or b"-----BEGIN CERTIFICATE-----" not in head:
        raise UserError(f"{flag} {shown_path(path)}: expected a PEM CA bundle (-----BEGIN CERTIFICATE----- "
                        f"blocks, under {MAX_CA_BYTES // 1_000_000} MB); its content is not shown")
    return path


def checked_wheelhouse(value: str) -> Path:
    path = Path(value)
    if not value or not path.is_dir():
        raise UserError(f"--wheelhouse {excerpt(value)}: expected a directory of wheels")
    return path


def image_repository(registry: str, release) -> str:
    return f"{registry}/{release.image.repository}"


def build_release(project: Project, name: str, options: BuildOptions, out=sys.stdout) -> dict:
    """Render, build, tag and record `name`. Returns the record. One build of a release at a time:
    two would share build/R/ (its context, record and journal of intermediate containers)."""
    # bad input stops here, before anything is written: the manifest and everything render checks
    # (an archived release, a missing partial), and a half-set NGCBUILD_REGISTRY_USER/PASSWORD
    render_files(project, load_release(project, name), base=options.base)
    credentials()
    with _exclusive(project.out(name), name):
        return _build_release(project, name, options, out)


@contextmanager
def _exclusive(directory: Path, name: str):
    make_dir(directory)
    with storing(directory / ".build.lock"):
        lock = (directory / ".build.lock").open("w")
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OperationError(f"another build of {name} is running (it holds {shown_path(directory)}/.build.lock); "
                                 "wait for it to finish, or build another release") from None
        yield


def _build_release(project: Project, name: str, options: BuildOptions, out) -> dict:
    rendered = render_release(project, name, base=options.base)
    release = rendered.plan.release
    client = connect()
    say = _printer(out)
    platform = options.platform or release.build.platform
    repository = image_repository(options.registry, release)
    if not options.force:
        auth = credentials()
        lookup = Registry(options.registry, auth) if options.lookup_registry else None
        reused = context_cache.reuse(client, release, rendered.directory, repository, rendered.context_hash,
                                     platform, lookup, auth, say)
        if reused is not None:
            return reused
    ensure_base(client, release, log=say, ref=rendered.plan.base_image, platform=platform)

    wheels = select_wheels(options.wheelhouse, rendered.plan.loaded.constraints, python_tag(release)) \
        if options.wheelhouse else []
    say(f"building {release.release} from {rendered.directory} "
        f"(context {rendered.context_hash[:12]}; CA bundle: {'yes' if options.ca_bundle else 'no'}; "
        f"wheels from wheelhouse: {', '.join(w.name for w in wheels) or 'none'})")
    journal = Journal(rendered.directory)
    _remove_leftovers(client, journal, say)
    started = time.monotonic()
    stream = _run_build(client, project, rendered, options, wheels, journal, say, platform)
    duration = time.monotonic() - started
    if stream.error or not stream.image_id:
        tail = "\n".join(f"  | {line}" for line in stream.tail)
        raise BuildFailed(
            f"build of {release.release} failed at {stream.failed_step}\n"
            f"last {TAIL_LINES} log lines:\n{tail}\n{stream.error or 'the engine reported no image id'}"
            f"{_hint(stream.error)}\nno tag was moved")

    tags = context_cache.build_tags(repository, release, rendered.context_hash, platform)
    try:
        for ref in map(ImageRef.parse, tags):
            client.tag(stream.image_id, ref.repository, ref.tag, force=True)
        image = client.inspect_image(stream.image_id)
    except ENGINE_GONE as exc:
        raise BuildFailed(
            f"build of {release.release} finished ({stream.image_id[:19]}), but the connection to the Docker "
            f"engine broke before it was tagged ({_first_line(exc)}); is the engine still running? "
            "No record was written; rerun the build (its steps are cached)") from None
    record = {
        "release": release.release,
        "image_id": stream.image_id,
        "tags": tags,
        "registry": options.registry,
        "size_bytes": image["Size"],
        "layers": len(image["RootFS"]["Layers"]),
        "duration_s": round(duration, 1),
        "steps": stream.steps,
        "cached_steps": stream.cached_steps,
        "step_log": stream.step_log,
        "context_sha256": rendered.context_hash,
        "platform": platform,
        "base_image": rendered.plan.base_image,
        "ca_bundle_used": options.ca_bundle is not None,
        "wheels": [w.name for w in wheels],
        "source_revision": _git_revision(project),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pushed": {},
    }
    record = context_cache.merge_platforms(rendered.directory, record)
    path = write_record(rendered.directory, record)
    say(f"built {stream.image_id[:19]} in {duration:.1f}s ({stream.cached_steps}/{stream.steps} steps cached, "
        f"{image['Size'] / 1e6:.0f} MB, {record['layers']} layers); tagged {', '.join(tags)}; record: {path}")
    return record


def _run_build(client, project: Project, rendered: Rendered, options: BuildOptions, wheels: list[Path],
               journal: Journal, say, platform: str) -> BuildStream:
    """Send the context and follow the build. Whatever way it ends (done, failed, Ctrl-C, the engine
    gone), the intermediate containers its log named are removed before this returns."""
    stream = BuildStream()
    try:
        with tempfile.TemporaryFile(prefix="ngcbuild-context-") as context:
            _write_context(context, project, rendered, options, wheels)
            context.seek(0)
            events = client.build(
                fileobj=context, custom_context=True, encoding=None, decode=True,
                rm=True, forcerm=True, nocache=options.no_cache, pull=False,
                platform=platform,
                labels={**dict(options.labels), CONTEXT_HASH_LABEL: rendered.context_hash},
            )
            for event in events:
                for line in stream.feed(event):
                    say(line)
                journal.add(stream.containers)
    except ENGINE_GONE as exc:
        raise BuildFailed(
            f"build of {rendered.release} failed at {stream.failed_step}: the connection to the Docker engine "
            f"broke ({_first_line(exc)}); is the engine still running? No tag was moved; the containers of "
            "this build are removed by the next build once the engine is back") from None
    finally:
        _remove_leftovers(client, journal, say)
    return stream


def _remove_leftovers(client, journal: Journal, say) -> None:
    ids = journal.read()
    if not ids:
        return
    try:
        left = remove_containers(client, ids)
    except (*ENGINE_GONE, docker.errors.APIError) as exc:
        # never hide why the build ended; the journal stays for the next build
        say(f"warning: could not remove the build's intermediate containers yet ({_first_line(exc)})")
        return
    if left:
        say(f"warning: intermediate containers still present: {', '.join(i[:12] for i in left)}")
    else:
        journal.clear()


def _hint(error: str | None) -> str:
    if error and "non-zero code: 137" in error:
        return " (137: the step was killed: the engine stopped, or the step ran out of memory)"
    return ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _write_context(fileobj, project: Project, rendered: Rendered, options: BuildOptions, wheels: list[Path]) -> None:
    """The tar the engine builds from: rendered files, then this machine's build inputs over them."""
    files = dict(rendered.files)
    if options.ca_bundle or options.wheelhouse:
        files[f"{INPUTS_DIR}/pip.conf"] = render_pip_conf(
            project, rendered.plan, ca_bundle=options.ca_bundle is not None, extra_indexes=not wheels)
    if options.ca_bundle:
        files[f"{INPUTS_DIR}/ca.pem"] = options.ca_bundle.read_bytes()
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for rel, data in sorted(files.items()):
            info = _tarinfo(rel, len(data), 0o755 if rel in rendered.executable else 0o644)
            tar.addfile(info, io.BytesIO(data))
        for wheel in wheels:
            info = _tarinfo(f"{INPUTS_DIR}/wheels/{wheel.name}", wheel.stat().st_size, 0o644)
            with wheel.open("rb") as handle:
                tar.addfile(info, handle)


def _tarinfo(name: str, size: int, mode: int) -> tarfile.TarInfo:
    # Fixed owner and mtime: the engine's COPY cache depends on them.
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.uid, info.gid = size, mode, 0, 0, 0
    return info


def python_tag(release) -> str:
    """cp311 for Python 3.11: the wheel tag a release's interpreter installs."""
    return "cp" + release.python.version.replace(".", "")


def _git_revision(project: Project) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(project.root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def _printer(out):
    def say(line: str) -> None:
        print(line, file=out, flush=True)
    return say
