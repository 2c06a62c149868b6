"""Render a release into its build context: build/R/ with the Dockerfile and every file it COPYs.

Output is a pure function of the manifest, the constraints file and the templates: byte-identical on
every run and every machine. What differs per machine (a CA bundle, a wheelhouse) is added by the
build step to the context it sends, never written here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import jinja2
from pydantic import TypeAdapter, ValidationError

from ngcbuild.core import templating
from ngcbuild.core.errors import ManifestError, UserError, shown_path
from ngcbuild.core.outputs import make_dir, storing
from ngcbuild.core.project import Project
from ngcbuild.manifest.fields import TaggedImage
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.render.plan import ImagePlan, plan_image
from ngcbuild.render.stamp import release_inputs, write_stamp
from ngcbuild.workspace.atomic_dir import replace_dir
from ngcbuild.workspace.locks import release_lock
from ngcbuild.workspace.release_dir import DOCKERFILE, EXPECTED

_BASE_ADAPTER = TypeAdapter(TaggedImage)

# Files of build/R/ that belong to the rendered context; anything else there (records, JUnit,
# notes) is output of later steps and never enters the context or its hash.
ENTRYPOINT_DIR = "entrypoint"
INPUTS_DIR = "build-inputs"
WORKSPACE_DIR = "workspace"
# What an ordinary online machine needs: no extra CA, the manifest's package indexes.
DEFAULT_INPUTS = {"ca_bundle": False, "extra_indexes": True}


@dataclass(frozen=True)
class Rendered:
    release: str
    directory: Path
    files: dict[str, bytes]  # relative path -> content, sorted
    plan: ImagePlan

    @property
    def context_hash(self) -> str:
        digest = hashlib.sha256()
        for rel, data in self.files.items():
            digest.update(rel.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
        return digest.hexdigest()

    @property
    def executable(self) -> set[str]:
        return {rel for rel in self.files if rel.endswith(".sh")}


def environment(project: Project) -> jinja2.Environment:
    return templating.environment(project.image_templates)


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
                        base, rendered.context_hash, rendered.plan.names)


def render_files(project: Project, loaded: LoadedRelease, base: str | None = None) -> Rendered:
    release = loaded.release
    if loaded.derived is not None:  # rendered FROM its base by derive/render.py (templates/derived/)
        raise UserError(f"{release.release} is a derived release (manifests/derived/{release.release}.yaml): "
                        f"`ngcbuild render --release {release.release}` and `build` render it FROM its base")
    if release.status == "archived":
        raise UserError(f"{shown_path(loaded.path)}: status: release {release.release} is archived (documentation "
                        "only: its base images are gone); render and build refuse it, notes/matrix/diff include it")
    plan = plan_image(loaded, loaded.catalog, base=checked_base(base))
    env = environment(project)
    _check_partials(project, loaded, plan)
    context = {"release": release, "plan": plan, "inputs": DEFAULT_INPUTS}

    files = {
        DOCKERFILE: _render(env, "Dockerfile.j2", context),
        "constraints.txt": loaded.constraints.text(),
        f"{INPUTS_DIR}/pip.conf": _render(env, "pip.conf.j2", context),
        f"{INPUTS_DIR}/wheels/README": "Wheels from --wheelhouse are added here by `invoke build`.\n",
        f"{ENTRYPOINT_DIR}/nvidia_entrypoint.sh": _render(env, "entrypoint/nvidia_entrypoint.sh", context),
        EXPECTED: json.dumps(plan.expected(), indent=2, sort_keys=True) + "\n",
    }
    for name, text in plan.workspace_files.items():
        files[f"{WORKSPACE_DIR}/{name}"] = text
    for snippet in sorted((project.image_templates / "entrypoint" / "entrypoint.d").iterdir()):
        target = f"{ENTRYPOINT_DIR}/entrypoint.d/{snippet.name.removesuffix('.j2')}"
        files[target] = _render(env, f"entrypoint/entrypoint.d/{snippet.name}", context)
    encoded = {rel: text.encode("utf-8") for rel, text in sorted(files.items())}
    return Rendered(release.release, project.out(release.release), encoded, plan)


def render_pip_conf(project: Project, plan: ImagePlan, *, ca_bundle: bool, extra_indexes: bool) -> bytes:
    """pip.conf for a build with machine-specific inputs (see build.py)."""
    inputs = {"ca_bundle": ca_bundle, "extra_indexes": extra_indexes}
    context = {"release": plan.release, "plan": plan, "inputs": inputs}
    return _render(environment(project), "pip.conf.j2", context).encode("utf-8")


def _render(env: jinja2.Environment, template: str, context: dict) -> str:
    try:
        return env.get_template(template).render(**context)
    except jinja2.UndefinedError as exc:
        raise UserError(f"templates/image/{template}: {exc.message}") from None


def _check_partials(project: Project, loaded: LoadedRelease, plan: ImagePlan) -> None:
    """Every installed component needs a partial for its install method: its own or the method's default."""
    for step in (*plan.runtime_steps, *plan.builder_steps):
        if not any((project.image_templates / partial).is_file() for partial in step.partials):
            raise ManifestError(loaded.path, f"components.{step.name}.install",
                                f"no template {' or '.join(step.partials)} for this component and install method")
    for partial in plan.python_partials.values():
        if not (project.image_templates / partial).is_file():
            raise ManifestError(loaded.path, "python.install",
                                f"no template {partial} for {loaded.release.python.install!r}")


def checked_base(base: str | None) -> str | None:
    """--base-image: a mirror of the base image; validated like the manifest's own value."""
    if base is None:
        return None
    try:
        return _BASE_ADAPTER.validate_python(base)
    except ValidationError as exc:
        raise UserError(f"--base-image: {exc.errors()[0]['msg']}") from None


def write(rendered: Rendered) -> None:
    """Write the context as a whole (atomic_dir.py): what render owns is replaced, nothing stale
    remains, and what later steps wrote into build/R/ (record, lock, journal, notes) is kept."""
    out = rendered.directory
    owned = {rel.split("/", 1)[0] for rel in rendered.files} | {ENTRYPOINT_DIR, INPUTS_DIR, WORKSPACE_DIR}
    make_dir(out.parent)
    with storing(out), release_lock(out):
        replace_dir(out, rendered.files, rendered.executable, owned)
