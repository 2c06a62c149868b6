"""What `build` does for one release: its options checked first (options.py); an unchanged release's
image reused; otherwise the release loaded, rendered and built (image_build.py).

The unchanged-release path, the one CI and users take most often, is kept light: the stamp of
build/R/ (render/stamp.py) says the context hash without loading or rendering anything, and the
engine is asked over its local socket (local_engine.py). Neither the Docker SDK, nor pydantic, nor
Jinja is imported on it: they cost more than the rest of the command.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.names import ImageNames, check_release_name
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.engine.local_engine import LocalEngine
from ngcbuild.engine.options import BuildOptions, check_mirrors_answer, check_platform_listed, image_repository
from ngcbuild.engine.reuse import reuse
from ngcbuild.registry.auth import check_environment, keychain
from ngcbuild.registry.client import Registry
from ngcbuild.render.stamp import current_stamp
from ngcbuild.workspace.locks import build_lock
from ngcbuild.workspace.record import Record


@dataclass(frozen=True)
class Built:
    """What `build` made: the record written, and the names of the image (for --cache-to, which then
    needs no second load of the release)."""

    record: Record
    names: ImageNames


def build_release(project: Project, name: str, options: BuildOptions, out=sys.stdout) -> Built:
    """Render, build, tag and record `name`. One build of a release at a time: two would share
    build/R/ (its context, record and journal of intermediate containers).

    An unchanged release (its inputs as build/R/ was rendered from them, see stamp.py) whose image
    exists is reused without loading or rendering it: the path CI takes most often is the fast one."""
    check_release_name(name)
    check_environment()  # NGCBUILD_REGISTRY_* half set, or for no host, stops here, before anything is written
    if not options.force:
        stamp = current_stamp(project, name, options.base, out=out)
        if stamp is not None:
            with build_lock(project.out(name), name):
                reused = reuse_built(project.out(name), stamp.names, stamp.context_hash, options, out)
            if reused is not None:
                return Built(reused, stamp.names)
    from ngcbuild.engine.image_build import build_image
    from ngcbuild.manifest.loader import load_release
    from ngcbuild.render.context import render_files, write_rendered

    # bad input stops here, before anything is written: the manifest and everything render checks
    # (an archived release, a missing partial); rendered in memory, written under the lock
    loaded = load_release(project, name)  # a derived release (manifests/derived/R.yaml) too: render_files knows it
    check_platform_listed(options, loaded.release, loaded.path.relative_to(project.root).as_posix())
    rendered = render_files(project, loaded, base=options.base)  # a derived release's lock checked first
    if loaded.derived is not None:
        check_lock_index(project, loaded, options)
    check_mirrors_answer(options)  # after every check of the input, before the engine is asked
    with build_lock(project.out(name), name):
        write_rendered(project, loaded, rendered, base=options.base)
        if not options.force:
            reused = reuse_built(rendered.directory, rendered.plan.names, rendered.context_hash, options, out)
            if reused is not None:
                return Built(reused, rendered.plan.names)
        return Built(build_image(project, rendered, options, out), rendered.plan.names)


def check_lock_index(project: Project, loaded, options: BuildOptions) -> None:
    """A derived release's lock is built against the index setting it was resolved against (its header,
    core/indexes.py): another is refused in one line unless --other-lock-index says it is meant."""
    from ngcbuild.core.errors import UserError, shown_path
    from ngcbuild.core.indexes import lock_index_problem
    from ngcbuild.manifest.lock import read_lock

    lock = read_lock(loaded.derived.lock_path, within=project.root)
    problem = lock_index_problem(lock.header, options.indexes)
    if problem and not options.other_lock_index:
        raise UserError(f"{shown_path(loaded.derived.lock_path.relative_to(project.root))}: {problem}; resolve it "
                        f"again against this index (`ngcbuild resolve --release {loaded.release.release}` with the "
                        "same setting), or pass --other-lock-index to build it anyway (its hashes still decide)")


def reuse_built(directory: Path, names: ImageNames, context_hash: str, options: BuildOptions, out) -> Record | None:
    """The record of an image of this context found locally or in the registry --reuse-from names (by
    default the --registry given); None when it must be built. Found elsewhere, it is tagged for
    --registry as a build would tag it."""
    lookup = Registry(options.reuse_from) if options.reuse_from else None
    auth = keychain().engine_auth(options.reuse_from) if lookup is not None else None
    return reuse(lookup_engine(), names, directory, image_repository(options.registry, names),
                 context_hash, options.platform or names.default_platform, lookup, auth, printer(out))


def lookup_engine():
    """The engine to look images up on: its local socket through the standard library, or the SDK's
    client for tcp:// and ssh:// engines."""
    local = LocalEngine.for_environment()
    if local is not None:
        return local.connect()
    from ngcbuild.engine.client import connect

    return connect()
