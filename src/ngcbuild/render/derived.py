"""A derived release's build context (build/R/), the derived specifics of render: a Dockerfile FROM the
base by digest (templates/derived/), the lock it installs exactly, the image's constraint file (the
base's pins less the overridden ones, plus the lock) and the smoke expectations (the base's, with what
the derived image adds). Byte-identical for the same manifest, lock and base image. render_files
(context.py) is the one entry for both kinds; its `base` is, here too, the image to build FROM.

The base's image: for one of our releases, its record's image named by digest (the latest push, else
the image id: workspace/record.image_by_digest, every value checked by the record's reader); for an
image base, the digest its manifest names; `base` given (the record of a derived build says what it
was built FROM), that image. The lock is checked first (manifest/lock_check.check_lock) and nothing
else about it is decided here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

import jinja2

from ngcbuild.core import templating
from ngcbuild.core.errors import UserError, excerpt, shown_path
from ngcbuild.core.files import read_text
from ngcbuild.core.names import ImageNames
from ngcbuild.core.project import Project
from ngcbuild.core.references import ImageRef, ReferenceProblem
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.manifest.lock import MAX_BYTES
from ngcbuild.manifest.lock_check import check_lock
from ngcbuild.manifest.platforms import MACHINES
from ngcbuild.render.image import NETRC_INPUT, default_inputs, render_image, render_pip_conf
from ngcbuild.render.plan import PIP_CONSTRAINT_PATH
from ngcbuild.render.rendered import INPUTS_DIR, Rendered
from ngcbuild.workspace.record import image_by_digest, previous_record
from ngcbuild.workspace.release_dir import DOCKERFILE, EXPECTED, RECORD

TEMPLATES = "derived"  # templates/derived/
LOCK_IN_CONTEXT = "lock.txt"
LOCK_LABEL = "io.ngcbuild.derive.lock.sha256"
BASE_LABEL = "io.ngcbuild.derive.base"
_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class DerivedPlan:
    """What the derived templates print and what engine/image_build.py reads of a plan."""

    loaded: LoadedRelease
    base_image: str  # what FROM names: REPOSITORY@sha256:... or sha256:<image id>
    base_digest: str
    python: str  # the base's interpreter
    pip_check_tolerated: dict[str, list[str]]
    overridden: dict[str, tuple[str, str]]  # name -> (the base's version, why)
    constraint_files: dict[str, str]  # file name in the context -> text ("constraint.txt" when all agree)
    env: dict[str, str]
    labels: dict[str, str]

    @property
    def release(self):
        return self.loaded.release

    @property
    def names(self) -> ImageNames:
        return ImageNames.of(self.release, self.base_image)


def checked_from(text: str, where: str) -> tuple[str, str]:
    """(what FROM names, its digest) for an image named by digest (IMAGE@sha256:<64 hex>) or by its id
    (sha256:<64 hex>); anything else (a tag moves; a newline or quote would add instructions) is
    refused naming `where`."""
    if isinstance(text, str) and _IMAGE_ID.fullmatch(text):
        return text, text
    try:
        ref = ImageRef.parse(text)
    except ReferenceProblem as exc:
        raise UserError(f"{where}: {exc}") from None
    if ref.digest is None:
        raise UserError(f"{where}: {excerpt(text)}: a derived image is built FROM its base by digest; expected "
                        "IMAGE@sha256:<64 hex digits> or an image id")
    return f"{ref.repository}@{ref.digest}", ref.digest


def base_reference(project: Project, loaded: LoadedRelease, base: str | None) -> tuple[str, str, bool]:
    """(what FROM names, the digest the labels give, whether the base's record said so)."""
    derived = loaded.derived
    if base is not None:
        return (*checked_from(base, "--base-image"), False)
    if derived.base_image is not None:
        return (*checked_from(derived.base_image, shown_path(loaded.path)), False)
    name = derived.base_release
    found = image_by_digest(previous_record(project.out(name)))
    if found is None:
        raise UserError(f"{loaded.release.release} is built FROM {name}'s image by digest, and {name} has no build "
                        f"record here; build it first (`ngcbuild build --release {name}`)")
    return (*checked_from(found, shown_path(project.out(name) / RECORD)), True)


def base_name(base_loaded: LoadedRelease | None, base_image: str) -> str:
    """What the base.name label says: the repository of a digest reference, or (an image id) the base
    release's image name."""
    if "@" in base_image:
        return base_image.rsplit("@", 1)[0]
    return f"{base_loaded.release.image.repository}:{base_loaded.release.tag}"


def plan_derived(loaded: LoadedRelease, base_loaded: LoadedRelease | None, base_expected: dict | None,
                 base_image: str, digest: str, lock: str) -> DerivedPlan:
    release, derived = loaded.release, loaded.derived
    python = "python3"
    tolerated: dict[str, list[str]] = {}
    if base_expected is not None:  # our base release's interpreter and known wrong wheel tags
        tolerated = base_expected.get("pip_check_tolerated", {})
    by_machine = {MACHINES[platform]: "".join(f"{p}\n" for p in sorted(derived.pins_for(platform), key=lambda p: p.key))
                  for _, platform, _ in derived.targets}
    files = {"constraint.txt": next(iter(by_machine.values()))} if len(set(by_machine.values())) == 1 \
        else {f"constraint-{machine}.txt": text for machine, text in sorted(by_machine.items())}
    base_pins = {p.key: p.version for p in derived.base_pins()}
    overridden = {key: (base_pins.get(key, "?"), o.reason) for key, o in sorted(derived.overrides.items())}
    env = {"PIP_CONSTRAINT": PIP_CONSTRAINT_PATH, "UV_CONSTRAINT": PIP_CONSTRAINT_PATH}
    if release.pip.break_system_packages:  # what the base lets pip do, uv may do too (it reads no PIP_*)
        env.update({"UV_BREAK_SYSTEM_PACKAGES": "1", "UV_SYSTEM_PYTHON": "1"})
    labels = {
        "org.opencontainers.image.title": f"{release.release}: {release.image.repository} on {derived.base}",
        "org.opencontainers.image.description": release.summary,
        "org.opencontainers.image.version": release.tag,
        "org.opencontainers.image.base.name": base_name(base_loaded, base_image),
        "org.opencontainers.image.base.digest": digest,
        BASE_LABEL: derived.base,
        LOCK_LABEL: hashlib.sha256(lock.encode("utf-8")).hexdigest(),
        **release.labels,
    }
    return DerivedPlan(loaded, base_image, digest, python, tolerated, overridden, files, env,
                       dict(sorted(labels.items())))


def render_derived(project: Project, loaded: LoadedRelease, base: str | None = None) -> Rendered:
    """build/R/'s files for a derived release whose lock holds, in memory (render_files' derived half)."""
    check_lock(project, loaded)
    derived = loaded.derived
    base_image, digest, from_record = base_reference(project, loaded, base)
    base_loaded = load_release(project, derived.base_release) if derived.base_release else None
    base_expected = json.loads(render_image(project, base_loaded).files[EXPECTED]) if base_loaded else None
    lock = read_text(derived.lock_path, MAX_BYTES, "a lock written by `ngcbuild resolve`", "no lock",
                     within=project.root)
    plan = plan_derived(loaded, base_loaded, base_expected, base_image, digest, lock)
    env = _environment(project)
    context = {"release": loaded.release, "plan": plan, "derived": derived,
               "manifest": shown_path(loaded.path.relative_to(project.root)),
               "lock": derived.lock_path.relative_to(project.root).as_posix(), "constraint_path": PIP_CONSTRAINT_PATH}
    files = {
        DOCKERFILE: env.get_template("Dockerfile.j2").render(**context),
        LOCK_IN_CONTEXT: lock,
        f"{INPUTS_DIR}/pip.conf": render_pip_conf(project, plan, ca_bundle=False,
                                                  indexes=default_inputs(plan.release)["indexes"]).decode(),
        NETRC_INPUT: "",
        f"{INPUTS_DIR}/wheels/README": "Wheels from --wheelhouse are added here by `ngcbuild build`.\n",
        EXPECTED: json.dumps(expectations(loaded, plan, base_expected), indent=2, sort_keys=True) + "\n",
        **plan.constraint_files,
    }
    encoded = {rel: text.encode("utf-8") for rel, text in sorted(files.items())}
    return Rendered(loaded.release.release, project.out(loaded.release.release), encoded, plan,
                    from_record=(derived.base_release, base_image) if from_record else None,
                    base_stack=tuple(sorted(derived.protected)))


def _environment(project: Project) -> jinja2.Environment:
    """templates/derived/, with the image templates' macros (pip_check) importable."""
    env = templating.environment(project.templates / TEMPLATES)
    env.loader = jinja2.ChoiceLoader([templating.ProjectLoader(project.templates / TEMPLATES),
                                      templating.ProjectLoader(project.image_templates)])
    return env


def expectations(loaded: LoadedRelease, plan: DerivedPlan, base_expected: dict | None) -> dict:
    """The base's expectations (its checks run unchanged) with what the derived image adds, and the
    `derived` section its own checks read. The base stack's RECORD digests are added at smoke time,
    read from the base image itself (smoke/base_stack.py)."""
    release, derived = loaded.release, loaded.derived
    by_machine = {MACHINES[platform]: {p.key: p.version for p in derived.pins_for(platform)}
                  for _, platform, _ in derived.targets}
    common = {k: v for k, v in next(iter(by_machine.values())).items()
              if all(pins.get(k) == v for pins in by_machine.values())}
    locked = {machine: {e.key: e.version for e in derived.lock.pins if e.version is not None and e.key in pins
                        and pins[e.key] == e.version}
              for machine, pins in by_machine.items()}
    expected = dict(base_expected) if base_expected is not None else {
        "python": {"version": release.python.version, "site_packages": release.python.site_packages},
        "env": {}, "labels": {}, "components": {}, "components_in_image": [], "banner": [],
        "pip_check_tolerated": {}, "workspace": {}, "gpu": {"features": [], "families": []}, "stack": {},
    }
    expected.update({
        "release": release.release, "tag": release.tag, "packages": common, "pip_constraint_file": PIP_CONSTRAINT_PATH,
        "env": {**expected["env"], **plan.env}, "labels": {**expected["labels"], **plan.labels},
    })
    expected["derived"] = {
        "base": derived.base,
        "base_image": plan.base_image,
        "base_checks": base_expected is not None,
        "packages_by_machine": by_machine,
        "locked_by_machine": locked,
        "overridden": {name: {"base": base, "reason": why} for name, (base, why) in plan.overridden.items()},
        "protected": sorted(derived.protected),
        "requirements": [r.text for r in derived.requirements],
        "base_stack": {},
    }
    return expected
