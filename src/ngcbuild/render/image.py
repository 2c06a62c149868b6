"""An image built from its manifest (manifests/R.yaml): build/R/ rendered from templates/image/ through
the plan (plan.py): the Dockerfile, the constraints, pip.conf, the entrypoint, /workspace and the smoke
expectations. A pure function of the manifest, the constraints and the templates."""

from __future__ import annotations

import json

import jinja2
from pydantic import TypeAdapter, ValidationError

from ngcbuild.core import templating
from ngcbuild.core.errors import ManifestError, UserError, shown_path
from ngcbuild.core.indexes import IndexSetting, release_indexes
from ngcbuild.core.project import Project
from ngcbuild.core.references import without_login
from ngcbuild.manifest.fields import TaggedImage
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.render.plan import ImagePlan, plan_image
from ngcbuild.render.rendered import ENTRYPOINT_DIR, INPUTS_DIR, WORKSPACE_DIR, Rendered
from ngcbuild.workspace.release_dir import DOCKERFILE, EXPECTED

_BASE_ADAPTER = TypeAdapter(TaggedImage)
NETRC_INPUT = f"{INPUTS_DIR}/netrc"  # the builder's /root/.netrc: rendered empty; a build's logins only in the tar sent


def default_inputs(release) -> dict:
    """What an ordinary online machine needs: no extra CA; PyPI and the manifest's package indexes."""
    return {"ca_bundle": False, "indexes": release_indexes(release, IndexSetting())}


def environment(project: Project) -> jinja2.Environment:
    return templating.environment(project.image_templates)


def render_image(project: Project, loaded: LoadedRelease, base: str | None = None) -> Rendered:
    """build/R/'s files of a release of the series; `base`: a mirror of the manifest's base image."""
    release = loaded.release
    if release.status == "archived":
        raise UserError(f"{shown_path(loaded.path)}: status: release {release.release} is archived (documentation "
                        "only: its base images are gone); render and build refuse it, notes/matrix/diff include it")
    plan = plan_image(loaded, loaded.catalog, base=checked_base(base))
    env = environment(project)
    _check_partials(project, loaded, plan)
    context = {"release": release, "plan": plan, "inputs": default_inputs(release)}

    files = {
        DOCKERFILE: _render(env, "Dockerfile.j2", context),
        "constraints.txt": loaded.constraints.text(),
        f"{INPUTS_DIR}/pip.conf": _render(env, "pip.conf.j2", context),
        NETRC_INPUT: "",
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


def render_pip_conf(project: Project, plan: ImagePlan, *, ca_bundle: bool, indexes: list[str]) -> bytes:
    """pip.conf for a build with machine-specific inputs (engine/image_build.py); a derived plan's too.
    `indexes`: core/indexes.release_indexes, the first in place of PyPI, each without its login."""
    inputs = {"ca_bundle": ca_bundle, "indexes": [without_login(u) for u in indexes]}
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
