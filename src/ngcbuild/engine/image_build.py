"""Build a rendered release on the engine with the Docker SDK's low-level API and record what was built.

The context sent to the engine is the rendered build/R/ plus this machine's build inputs (a CA
bundle, the wheels the release pins from a wheelhouse, pip.conf with the index setting, the indexes'
logins as the builder's netrc), added to the tar in memory so they never enter build/R/ or the context
hash. The stages that copy the netrc in are neither tagged for the layer cache nor recorded when it
holds a login, so no push of the cache carries one. The apt proxy reaches every apt step as Docker's
predefined `http_proxy` build argument, which is in no layer, no config and no history. Tags are
applied only after the build succeeded.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import docker
import requests
import urllib3

from ngcbuild.core.errors import BuildFailed, UserError
from ngcbuild.core.indexes import build_logins, netrc_text, release_indexes
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.core.references import ImageRef, on_loopback, shown_url
from ngcbuild.core.text import safe
from ngcbuild.engine import layer_cache
from ngcbuild.engine.address import loopback_engine_problem
from ngcbuild.engine.base_image import ensure_base
from ngcbuild.engine.client import connect
from ngcbuild.engine.epoch import Epoch, source_date_epoch
from ngcbuild.engine.events import TAIL_LINES, BuildStream, stage_names, stages_copying
from ngcbuild.engine.leftovers import Journal, remove_containers
from ngcbuild.engine.options import BuildOptions, image_repository
from ngcbuild.engine.reuse import CONTEXT_HASH_LABEL, build_tags
from ngcbuild.engine.wheelhouse import select_wheels
from ngcbuild.image.config import rfc3339
from ngcbuild.image.recipe import VERSION, Recipe
from ngcbuild.registry.auth import keychain
from ngcbuild.render.image import NETRC_INPUT
from ngcbuild.render.stamp import epoch_inputs
from ngcbuild.workspace.record import Record, previous_record, record_build, record_path
from ngcbuild.workspace.release_dir import DOCKERFILE
from ngcbuild.workspace.sections import BuildFacts, BuildRecord, Normalisation

if TYPE_CHECKING:
    from ngcbuild.render.rendered import Rendered

RELEASE_LABEL = "io.ngcbuild.release"  # what `invoke prune` groups images by
# What a broken connection to the engine raises mid-stream (the daemon died or was stopped).
ENGINE_GONE = (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, ConnectionError)


def build_image(project: Project, rendered: Rendered, options: BuildOptions, out) -> Record:
    """Build the rendered context (written, and found not built yet), tag it, record it; the record."""
    say = printer(out)
    release = rendered.plan.release
    names = rendered.plan.names
    client = connect()
    platform = options.platform or names.default_platform
    repository = image_repository(options.registry, names)
    epoch = source_date_epoch(project, release.build.source_date_epoch,
                              inputs=epoch_inputs(project, rendered.plan.loaded))
    ensure_base(client, release, log=say, ref=rendered.plan.base_image, platform=platform)
    recipe, epoch = _recipe(client, rendered, epoch)
    cache_pulled, cache_sources = _cache_sources(client, rendered, options, platform, out, say)

    wheels = select_wheels(options.wheelhouse, rendered.plan.loaded.constraints, python_tag(release)) \
        if options.wheelhouse else []
    inputs = machine_inputs(rendered, options, wheels)
    _check_loopback_reachable(inputs)
    say(f"building {release.release} from {rendered.directory} "
        f"(context {rendered.context_hash[:12]}; CA bundle: {'yes' if options.ca_bundle else 'no'}; "
        f"wheels from wheelhouse: {', '.join(w.name for w in wheels) or 'none'}; {inputs.described()}; "
        f"epoch {rfc3339(epoch.seconds)}: {epoch.source})")
    journal = Journal(rendered.directory)
    _remove_leftovers(client, journal, say)
    started = time.monotonic()
    stream = _run_build(client, project, rendered, options, inputs, journal, say, platform, cache_sources, recipe)
    duration = time.monotonic() - started
    if stream.error or not stream.image_id:
        tail = "\n".join(f"  | {line}" for line in stream.tail)
        raise BuildFailed(
            f"build of {release.release} failed at {stream.failed_step}\n"
            f"last {TAIL_LINES} log lines:\n{tail}\n{stream.error or 'the engine reported no image id'}"
            f"{_hint(stream.error)}\nno tag was moved")

    tags = build_tags(repository, names, rendered.context_hash, platform)
    try:
        # The stage images under cache tags (the engine's final image among them: --cache-to pushes them by
        # these names), then the release's tags. The image is the engine's as built: its release image is
        # made from it where it leaves (engine/release_image.py), by the recipe its label carries.
        layer_cache.tag_stages(client, options.registry, names, platform, inputs.kept(stream.stages()))
        for ref in map(ImageRef.parse, tags):
            client.tag(stream.image_id, ref.repository, ref.tag, force=True)
        image = client.inspect_image(stream.image_id)
    except ENGINE_GONE as exc:
        raise _gone_before_tagged(release.release, stream.image_id, exc) from None
    facts = BuildFacts(duration_s=round(duration, 1), steps=stream.steps, cached_steps=stream.cached_steps,
                       step_log=stream.step_log, ca_bundle_used=options.ca_bundle is not None,
                       wheels=[w.name for w in wheels], source_revision=git_revision(project),
                       stages=inputs.kept(stream.stages()), cache_from=cache_pulled,
                       normalisation=Normalisation.of(version=VERSION, epoch=recipe.epoch, epoch_from=epoch.source,
                                                      made_after=recipe.made_after, base_layers=recipe.base_layers))
    record = record_build(rendered.directory, BuildRecord.of_image(
        names, image, tags, options.registry, rendered.context_hash, platform, facts))
    path = record_path(rendered.directory)
    say(f"built {stream.image_id[:19]} in {duration:.1f}s ({stream.cached_steps}/{stream.steps} steps cached, "
        f"{image['Size'] / 1e6:.0f} MB, {record.build.layers} layers); tagged {', '.join(tags)}; record: {path}")
    return record


def _check_loopback_reachable(inputs: MachineInputs) -> None:
    """The manifest's own indexes too (options_from checked the user's before anything was asked)."""
    problem = loopback_engine_problem([*inputs.indexes, *([inputs.apt_proxy] if inputs.apt_proxy else [])],
                                      os.environ)
    if problem:
        raise UserError(problem)


def _gone_before_tagged(release: str, image_id: str, exc: BaseException) -> BuildFailed:
    return BuildFailed(
        f"build of {release} finished ({image_id[:19]}), but the connection to the Docker engine broke before "
        f"it was tagged ({_first_line(exc)}); is the engine still running? No record was written; rerun the "
        "build (its steps are cached)")


def _recipe(client, rendered: Rendered, epoch: Epoch) -> tuple[Recipe, Epoch]:
    """How the release image will be made from this build's image (image/recipe.py): known before the build,
    written into the image as a label; and the epoch it holds (a derived one not before the base's time)."""
    try:
        recipe = Recipe.of_base(epoch.seconds, client.inspect_image(rendered.plan.base_image))
        epoch = epoch.not_before(recipe.made_after)
        return replace(recipe, epoch=epoch.seconds), epoch
    except ValueError as exc:
        raise BuildFailed(f"build of {rendered.release}: the engine's answer about the base image "
                          f"{safe(rendered.plan.base_image, 200)} is out of shape ({safe(str(exc), 200)}); nothing was "
                          "built") from None
    except (*ENGINE_GONE, docker.errors.APIError) as exc:
        raise BuildFailed(f"build of {rendered.release}: the engine could not say what the base image "
                          f"{safe(rendered.plan.base_image, 200)} is ({_first_line(exc)}); nothing was built") from None


def _cache_sources(client, rendered: Rendered, options: BuildOptions, platform: str, out, say):
    """(the cache images pulled from --cache-from, every image to pass as `cache_from`)."""
    if not options.cache_from:
        return [], []
    names = rendered.plan.names
    stages = stage_names(rendered.files[DOCKERFILE].decode())
    previous = previous_record(rendered.directory)
    tagged = [f"{layer_cache.cache_repository(registry, names)}:{layer_cache.cache_tag(names, platform, stage)}"
              for registry in {options.registry, options.cache_from} for stage in stages]
    local = layer_cache.local_sources(client, previous.build, platform, tagged)  # before the pull moves those tags
    # the engine gets credentials for --cache-from's host alone (registry/auth.py)
    auth = keychain().engine_auth(options.cache_from)
    pulled = layer_cache.pull_cache(client, options.cache_from, names, platform, stages, auth, say, out)
    return pulled, pulled + local


def _run_build(client, project: Project, rendered: Rendered, options: BuildOptions, inputs: MachineInputs,
               journal: Journal, say, platform: str, cache_sources: list[str], recipe: Recipe) -> BuildStream:
    """Send the context and follow the build. Whatever way it ends (done, failed, Ctrl-C, the engine
    gone), the intermediate containers its log named are removed before this returns."""
    stream = BuildStream()
    try:
        with tempfile.TemporaryFile(prefix="ngcbuild-context-") as context:
            write_context(context, project, rendered, options, inputs)
            context.seek(0)
            events = client.build(
                fileobj=context, custom_context=True, encoding=None, decode=True,
                rm=True, forcerm=True, nocache=options.no_cache, pull=False,
                network_mode="host" if inputs.host_network else None,
                platform=platform, cache_from=cache_sources or None, buildargs=inputs.build_args() or None,
                labels={**dict(options.labels), CONTEXT_HASH_LABEL: rendered.context_hash,
                        RELEASE_LABEL: rendered.release, **recipe.label()},
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
    """The first line of an engine's or a connection's error, escaped: its text is the engine's."""
    text = str(exc).strip()
    return safe(text.splitlines()[0]) if text else type(exc).__name__


LOOPBACK_NAMES = "localhost,127.0.0.1,::1"


@dataclass(frozen=True)
class MachineInputs:
    """This machine's inputs of one build: its wheels, the indexes its pip reads (core/indexes.py, each
    without its login), the netrc of their logins, the apt proxy. Nothing of it is in build/R/."""

    wheels: list[Path]
    indexes: list[str]
    netrc: str
    login_hosts: tuple[str, ...]
    apt_proxy: str | None
    secret_stages: tuple[str, ...]  # the stages that copy the netrc in: kept from the cache while it holds a login

    @property
    def host_network(self) -> bool:
        """Whether an index or the apt proxy is on this machine's loopback: a build on the engine's bridge
        cannot reach it there, so its steps run on the host's network (where the engine is this machine's)."""
        return any(on_loopback(url) for url in [*self.indexes, *([self.apt_proxy] if self.apt_proxy else [])])

    def described(self) -> str:
        """For the build's first line: the index, whose logins (hosts only), the apt proxy (its host only)."""
        logins = f"logins for {', '.join(self.login_hosts)} (builder stage only)" if self.login_hosts else "no login"
        proxy = urlsplit(self.apt_proxy).hostname if self.apt_proxy else None
        network = "; steps on the host's network (a mirror on its loopback)" if self.host_network else ""
        return f"index: {shown_url(self.indexes[0])}, {logins}; apt proxy: {proxy or 'none'}{network}"

    def kept(self, stages: dict[str, str]) -> dict[str, str]:
        """The stage images that may be tagged for the layer cache and recorded: with a login, not those
        holding it."""
        if not self.login_hosts:
            return stages
        return {name: image for name, image in stages.items() if name not in self.secret_stages}

    def build_args(self) -> dict[str, str]:
        # Docker's predefined proxy arguments are kept out of `docker history` and the cache key, and
        # no ARG declares them: apt reads http_proxy; pip reads it too for a plain-HTTP index, which is
        # on the loopback (core/references.parse_index_url) and never goes through the proxy: no_proxy.
        return {"http_proxy": self.apt_proxy, "no_proxy": LOOPBACK_NAMES} if self.apt_proxy else {}


def machine_inputs(rendered: Rendered, options: BuildOptions, wheels: list[Path]) -> MachineInputs:
    """The index setting as the build's pip takes it: release_indexes as every step's (a wheelhouse that
    gives wheels replaces the release's own indexes, as for resolve), the logins of their hosts."""
    indexes = release_indexes(rendered.plan.release, options.indexes, wheelhouse=bool(wheels))
    logins = build_logins(indexes)
    dockerfile = rendered.files[DOCKERFILE].decode()
    return MachineInputs(wheels, indexes, netrc_text(logins), tuple(sorted(logins)), options.apt_proxy,
                         tuple(stages_copying(dockerfile, NETRC_INPUT)))


def write_context(fileobj, project: Project, rendered: Rendered, options: BuildOptions,
                  inputs: MachineInputs) -> None:
    """The tar the engine builds from: rendered files, then this machine's build inputs over them."""
    from ngcbuild.render.image import render_pip_conf
    from ngcbuild.render.rendered import INPUTS_DIR

    files = dict(rendered.files)
    files[f"{INPUTS_DIR}/pip.conf"] = render_pip_conf(
        project, rendered.plan, ca_bundle=options.ca_bundle is not None, indexes=inputs.indexes)
    files[NETRC_INPUT] = inputs.netrc.encode("utf-8")
    if options.ca_bundle:
        files[f"{INPUTS_DIR}/ca.pem"] = options.ca_bundle.read_bytes()
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for rel, data in sorted(files.items()):
            # the netrc as ~/.netrc must be its owner's alone: Python's netrc refuses one others may read
            mode = 0o600 if rel == NETRC_INPUT else 0o755 if rel in rendered.executable else 0o644
            info = _tarinfo(rel, len(data), mode)
            tar.addfile(info, io.BytesIO(data))
        for wheel in inputs.wheels:
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


def git_revision(project: Project) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(project.root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None
