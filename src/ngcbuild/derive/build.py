"""`ngcbuild build --release R` for a derived release: refused while its lock is missing or stale
(naming `ngcbuild resolve`), otherwise rendered (render.py), reused when an image of the same context
exists, or built on the engine as every release is (engine/image_build.py), and recorded."""

from __future__ import annotations

import sys

from ngcbuild.core.project import Project
from ngcbuild.derive.render import render_derived
from ngcbuild.engine.build import Built, reuse_built
from ngcbuild.engine.image_build import build_image
from ngcbuild.engine.options import BuildOptions, check_platform_listed
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.render.context import write
from ngcbuild.render.stamp import release_inputs, write_stamp
from ngcbuild.workspace.locks import build_lock


def build_derived(project: Project, name: str, options: BuildOptions, out=sys.stdout) -> Built:
    loaded = load_release(project, name)
    if options.base is not None:
        from ngcbuild.core.errors import UserError

        raise UserError(f"--base-image: {name} is a derived release, built FROM its base by digest "
                        f"({loaded.derived.base}); --base-image names a mirror of a release's base image")
    check_platform_listed(options, loaded.release, f"manifests/derived/{name}.yaml")
    rendered = render_derived(project, loaded)  # refuses a missing or stale lock before anything else
    with build_lock(project.out(name), name):
        write_derived(project, loaded, rendered)
        if not options.force:
            found = reuse_built(rendered.directory, rendered.plan.names, rendered.context_hash, options, out)
            if found is not None:
                return Built(found, rendered.plan.names)
        return Built(build_image(project, rendered, options, out), rendered.plan.names)


def render_derived_release(project: Project, name: str):
    """`ngcbuild render --release R`: build/R/ written, nothing built."""
    loaded = load_release(project, name)
    rendered = render_derived(project, loaded)
    with build_lock(project.out(name), name):
        write_derived(project, loaded, rendered)
    return rendered


def write_derived(project: Project, loaded: LoadedRelease, rendered) -> None:
    """build/R/ as rendered, and the stamp of what it was rendered from (attest reads it)."""
    write(rendered)
    inputs = [p.relative_to(project.root).as_posix() for p in release_inputs(project, loaded)]
    write_stamp(project, rendered.directory, inputs, None, rendered.context_hash, rendered.plan.names)

