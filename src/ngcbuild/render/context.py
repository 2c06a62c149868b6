"""A release rendered into its build context: build/R/ with the Dockerfile and every file it COPYs,
written whole, with the stamp of what it was made from.

`render_files` is the one entry for every kind of release: a release of the series is rendered from
templates/image/ (image.py), a derived release (manifests/derived/R.yaml) FROM its base by digest
(derived.py); every later stage takes the `Rendered` either gives. Output is a pure function of the
inputs: byte-identical on every run and every machine. What differs per machine (a CA bundle, a
wheelhouse) is added by the build step to the context it sends, never written here.
"""

from __future__ import annotations

from ngcbuild.core.outputs import make_dir, storing
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.render.derived import render_derived
from ngcbuild.render.image import render_image
from ngcbuild.render.rendered import ENTRYPOINT_DIR, INPUTS_DIR, WORKSPACE_DIR, Rendered
from ngcbuild.render.stamp import release_inputs, write_stamp
from ngcbuild.workspace.atomic_dir import replace_dir
from ngcbuild.workspace.locks import release_lock


def render_release(project: Project, name: str, base: str | None = None) -> Rendered:
    """Load, validate and render `name` into build/<name>/; `base` replaces the manifest's base image."""
    return render_loaded(project, load_release(project, name), base=base)


def render_loaded(project: Project, loaded: LoadedRelease, base: str | None = None) -> Rendered:
    """Render a loaded release into build/<name>/ and stamp what it was rendered from."""
    rendered = render_files(project, loaded, base=base)
    write_rendered(project, loaded, rendered, base)
    return rendered


def write_rendered(project: Project, loaded: LoadedRelease, rendered: Rendered, base: str | None) -> None:
    """build/<name>/ as `rendered` holds it, and the stamp of the files it was made from (stamp.py)."""
    write(rendered)
    inputs = release_inputs(project, loaded)
    if all(path.is_relative_to(project.root) for path in inputs):
        with storing(rendered.directory), release_lock(rendered.directory):  # renders of R take turns
            write_stamp(project, rendered.directory, [path.relative_to(project.root).as_posix() for path in inputs],
                        base, rendered.context_hash, rendered.plan.names, rendered.from_record)


def render_files(project: Project, loaded: LoadedRelease, base: str | None = None) -> Rendered:
    """build/R/'s files in memory (write them with write_rendered); `base`: the image to build FROM
    instead of the manifest's (a mirror; for a derived release, its base's image by digest)."""
    if loaded.derived is not None:
        return render_derived(project, loaded, base)
    return render_image(project, loaded, base)


def render_as_built(project: Project, loaded: LoadedRelease, build) -> Rendered:
    """The render a build (its record's BuildRecord, or None) was made from: FROM the image it names
    where that is not the manifest's own (a --base-image mirror; a derived image's base by digest)."""
    base = build.base_image if build is not None else None
    return render_files(project, loaded, base=base if base != loaded.release.base.image else None)


def write(rendered: Rendered) -> None:
    """Write the context as a whole (atomic_dir.py): what render owns is replaced, nothing stale
    remains, and what later steps wrote into build/R/ (record, lock, journal, notes) is kept."""
    out = rendered.directory
    owned = {rel.split("/", 1)[0] for rel in rendered.files} | {ENTRYPOINT_DIR, INPUTS_DIR, WORKSPACE_DIR}
    make_dir(out.parent)
    with storing(out), release_lock(out):
        replace_dir(out, rendered.files, rendered.executable, owned)
