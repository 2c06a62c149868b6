"""What a release's image holds, computed once from the manifest: the build steps of each stage,
env vars, labels, banner, /workspace files and the smoke expectations. Templates only print these;
they compute nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import ManifestError
from ngcbuild.core.names import ImageNames
from ngcbuild.manifest import pip_tolerances
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.constraints import Pin
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.manifest.model import Component
from ngcbuild.manifest.needs import needs_of, order_by_need, provides_of
from ngcbuild.render.cuda_compat import CUDA_COMPAT_ROOT, CudaCompat, compat_of

PIP_CONSTRAINT_PATH = "/etc/pip/constraint.txt"
# Where the start-up snippets live, whatever path the entrypoint script has (release.entrypoint).
SNIPPETS_DIR = "/opt/nvidia/entrypoint.d"
# What `uname -m` (and Python's platform.machine()) says in an image of each platform.
STAGE_ROOT = "/stage"
REST_STAGE = "python-packages"
# Where the requirements stage installs the builder's build requirements, which the builder copies.
REQUIREMENTS_ROOT = f"{STAGE_ROOT}/build-requirements"
# Steps that run before pip.conf and the CA bundle reach the builder: the source builds and what they
# link (conda's MAGMA). Staged pip steps install into layers of their own, which no source build sees, so
# they all come after: a new CA bundle or wheel never reaches a source build's cache.
EARLY_METHODS = ("source", "conda")
# Install methods whose partial runs in the runtime stage (system libraries every later stage needs),
# in the builder only (build-time inputs such as MAGMA, linked statically), or in the builder with
# its files staged under /stage/<name> and copied into the image.
RUNTIME_METHODS = ("apt",)
BUILDER_ONLY_METHODS = ("conda",)
# Methods that put the component into the image (so its env vars and labels describe the image).
IN_IMAGE_METHODS = ("apt", "pip", "conda", "source", "base")


# Where the default partial of each install method lives (methods/pip.j2: the comment, then one staged
# pip install); a component's own partial (components/NAME/METHOD.j2) replaces it where its step differs.
DEFAULT_PARTIALS = "methods"


@dataclass(frozen=True)
class Step:
    """One partial of the Dockerfile. Staged steps install under /stage/<name>, a layer of the image.
    The templates include `partial` where it exists, else `default_partial` (the method's default)."""

    name: str
    partial: str
    pins: tuple[str, ...] = ()  # NAME==VERSION (pip) or NAME=VERSION (apt)
    component: Component | None = None
    staged: bool = False
    default_partial: str | None = None
    comment: tuple[str, ...] = ()  # the lines of the comment above the step (the catalog's, with the version)

    @property
    def partials(self) -> list[str]:
        """What the Dockerfile includes, the first that exists (Jinja's include of a list)."""
        return [self.partial, *([self.default_partial] if self.default_partial else [])]

    @property
    def root(self) -> str:
        return f"{STAGE_ROOT}/{self.name}"


@dataclass(frozen=True)
class ImagePlan:
    loaded: LoadedRelease
    catalog: Catalog
    base_image: str
    python: str  # the interpreter every pip line runs
    python_partials: dict[str, str]  # "stage", "overlay" (optional), "runtime", "builder" -> template
    runtime_steps: tuple[Step, ...]
    builder_requirements: tuple[str, ...]  # NAME==VERSION, into the builder's own environment
    builder_steps: tuple[Step, ...]
    env: dict[str, str]
    labels: dict[str, str]
    banner: tuple[str, ...]
    workspace_files: dict[str, str]  # name under /workspace -> text
    cuda_compat: CudaCompat | None = None  # the forward-compat link and its libraries (render/cuda_compat.py)

    @property
    def release(self):
        return self.loaded.release

    @property
    def cuda_home(self):
        return self.release.cuda_home

    @property
    def names(self) -> ImageNames:
        return ImageNames.of(self.release, self.base_image)

    @property
    def python_apt_pins(self) -> tuple[str, ...]:
        """The interpreter's apt packages (system Python), NAME=VERSION."""
        return apt_pins(self.release.python.apt_packages)

    @property
    def python_builder_apt_pins(self) -> tuple[str, ...]:
        """What the builder stage adds to the system Python (pip), NAME=VERSION."""
        return apt_pins(self.release.python.builder_apt_packages)

    @property
    def builder_apt_pins(self) -> tuple[str, ...]:
        """The tools the source builds need (builder stage only), NAME=VERSION."""
        return apt_pins(self.release.builder.apt_packages)

    @property
    def wheels_at(self) -> int:
        """The builder step before which pip.conf, the CA bundle and the wheelhouse are copied in: after
        the source builds and what they link (the early steps, first in builder_steps), whose cache a new
        CA bundle or a changed wheel must not invalidate (0: nothing is built from source)."""
        return sum(1 for step in self.builder_steps if _early(step))

    @property
    def requirements_root(self) -> str:
        return REQUIREMENTS_ROOT

    @property
    def builder_requirement_names(self) -> tuple[str, ...]:
        """The builder requirements' canonical names, pip last: what conda's environment must not keep a
        copy of before the requirements stage's files are laid over it."""
        names = {canonicalize_name(pin.split("==", 1)[0]) for pin in self.builder_requirements}
        return tuple(sorted(names, key=lambda name: (name == "pip", name)))

    @property
    def staged_steps(self) -> tuple[Step, ...]:
        return tuple(step for step in self.builder_steps if step.staged)

    @property
    def overlaid_distributions(self) -> tuple[str, ...]:
        """Every distribution the staged pip layers install (canonical names), pip last: what the image's
        own environment must not keep a copy of before they are laid over it."""
        names = {canonicalize_name(pin.split("==", 1)[0]) for step in self.staged_steps for pin in step.pins
                 if "==" in pin}
        return tuple(sorted(names, key=lambda name: (name == "pip", name)))

    def expected(self) -> dict:
        """expected.json: what the smoke suite checks inside the image."""
        release = self.release
        constraints = self.loaded.constraints
        return {
            "release": release.release,
            "tag": release.tag,
            "python": {"version": release.python.version, "site_packages": release.python.site_packages},
            "packages": {canonicalize_name(p.name): p.version for p in constraints.pins},
            "components": {name: c.version for name, c in release.components.items()
                           if c.install in IN_IMAGE_METHODS},
            "pip_constraint_file": PIP_CONSTRAINT_PATH if release.pip.constraint_file else None,
            "pip_check_tolerated": self.pip_check_tolerated,
            "env": self.env_with_constraint(),
            "labels": self.labels,
            "banner": list(self.banner),
            "workdir": "/workspace",
            # Each file the image puts under /workspace, by the sha256 of its text.
            "workspace": {name: hashlib.sha256(text.encode()).hexdigest()
                          for name, text in sorted(self.workspace_files.items())},
            "entrypoint": release.entrypoint,
            "entrypoint_snippets": SNIPPETS_DIR,
            # Folders each path-list variable must start with (env_prepend), whatever the base set after them.
            "env_prepend": {name: list(folders) for name, folders in release.env_prepend.items()},
            # The forward-compat link named in LD_LIBRARY_PATH, there only while compatibility is enabled.
            "cuda_compat": ({"link": self.cuda_compat.link, "libraries": self.cuda_compat.libraries}
                            if self.cuda_compat else None),
            # Labels of the components the base image carries: the base's own (NGC's 4-part forms), which
            # must name the manifest's version; this build writes none of them.
            "base_labels": self._base_labels(),
            "gpu": {
                "required": release.gpu.required,
                "min_compute_capability": release.gpu.min_compute_capability,
                "cuda": _version_of(release, "cuda"),
                "cudnn": _version_of(release, "cudnn"),
                "nccl": _version_of(release, "nccl"),
                "features": list(release.gpu.features),
                "families": list(release.gpu.families),
            },
            # Components whose checks run: those the image actually carries (not documented-only).
            "components_in_image": sorted(_in_image(release)),
            "stack": self._stack(),
        }

    def _stack(self) -> dict:
        """What the stack checks (no GPU needed) look for: each component's module, the version it
        reports and the messages its import may print (the manifest's import_warnings), its shared
        library in the linker's cache, and the CUDA_HOME tree with nvcc (assembled from the CUDA wheels,
        or the base image's, named by the manifest's CUDA_HOME)."""
        in_image = _in_image(self.release)
        entries = {name: self.catalog.get(name) for name in in_image}
        home = self.release.cuda_home
        return {
            "modules": {name: {"module": entry.module,
                               "version": in_image[name].reported_version,
                               "import_warnings": sorted(in_image[name].import_warnings)}
                        for name, entry in entries.items() if entry.module},
            "libraries": {name: entry.library for name, entry in entries.items() if entry.library},
            "cuda_home": home.path if home else self.env.get("CUDA_HOME"),
            "cuda_wheels": f"{self.release.python.site_packages}/{home.wheels}" if home else None,
            "unresolved_ok": sorted(self.release.stack.unresolved_ok),
            "torch_with": list(self.release.stack.torch_with),
            "torch_without": list(self.release.stack.torch_without),
            "commands": dict(sorted(self.release.stack.commands.items())),
        }

    def _base_labels(self) -> dict[str, str]:
        labels = {}
        for name, component in _in_image(self.release).items():
            label = self.catalog.get(name).label
            if component.install == "base" and label and label not in self.release.labels:
                labels[label] = component.version
        return dict(sorted(labels.items()))

    @property
    def pip_check_tolerated(self) -> dict[str, list[str]]:
        """Per machine (`uname -m`), the lines of `pip check` that are known and tolerated, as patterns
        that grep -x -E and Python's re.fullmatch read alike (manifest/pip_tolerances.py)."""
        return pip_tolerances.by_machine(self.release)

    @property
    def snippets_dir(self) -> str:
        return SNIPPETS_DIR

    @property
    def command_sources(self) -> dict[str, list[str]]:
        """Where the image finds each promised command its folder may lack (stack.command_sources)."""
        return {name: list(paths) for name, paths in sorted(self.release.stack.command_sources.items())}

    @property
    def declared_apt_lists(self) -> tuple[str, ...]:
        """The base's apt source files the manifest names (base.apt_lists), none where not known."""
        lists = self.release.base.apt_lists
        return tuple(item.path for item in (lists.lists or [])) if lists else ()

    @property
    def removed_apt_lists(self) -> tuple[str, ...]:
        """Those the build deletes before any apt step (use: remove)."""
        lists = self.release.base.apt_lists
        return tuple(item.path for item in (lists.lists or []) if item.use == "remove") if lists else ()

    @property
    def cuda_compat_root(self) -> str:
        """Where the forward-compat snippet looks (NGC's _CUDA_COMPAT_PATH), in every release: one without
        the layout has no libraries there, and the snippet does nothing."""
        return self.cuda_compat.root if self.cuda_compat else CUDA_COMPAT_ROOT

    @property
    def entrypoint_copies(self) -> tuple[tuple[str, str], ...]:
        """What the image copies from the context's entrypoint/ folder, and where: the script beside its
        snippets in /opt/nvidia (NGC's layout from 2021), or each to its own place."""
        folder = SNIPPETS_DIR.rsplit("/", 1)[0]
        if self.release.entrypoint == f"{folder}/nvidia_entrypoint.sh":
            return (("entrypoint/", f"{folder}/"),)
        return (("entrypoint/entrypoint.d/", f"{SNIPPETS_DIR}/"), ("entrypoint/nvidia_entrypoint.sh",
                                                                   self.release.entrypoint))

    @property
    def dockerfile_env(self) -> dict[str, str]:
        """The image's ENV as the Dockerfile writes it: each value, then each prepended path list in
        front of what the base set (ENV expands the variable as it was before the instruction; without
        one, no empty entry is left, which the dynamic linker would read as the current folder)."""
        env = dict(self.env)
        for name, folders in self.release.env_prepend.items():
            env[name] = ":".join(folders) + f"${{{name}:+:${{{name}}}}}"
        return env

    def env_with_constraint(self) -> dict[str, str]:
        env = dict(self.env)
        if self.release.pip.constraint_file:
            env["PIP_CONSTRAINT"] = PIP_CONSTRAINT_PATH
        return env



def _version_of(release, name: str) -> str | None:
    component = release.components.get(name)
    return component.version if component and component.install in IN_IMAGE_METHODS else None


def plan_image(loaded: LoadedRelease, catalog: Catalog, base: str | None = None) -> ImagePlan:
    """`base` replaces the manifest's base image (a mirror of it); its digest label is then dropped,
    since the manifest's digest names the original."""
    release = loaded.release
    base_image = base or release.base.image
    return ImagePlan(
        loaded=loaded,
        catalog=catalog,
        base_image=base_image,
        python=_interpreter(release),
        python_partials=_python_partials(release),
        runtime_steps=_runtime_steps(loaded, catalog),
        builder_requirements=_builder_requirements(loaded),
        builder_steps=_builder_steps(loaded, catalog),
        env=_env(release, catalog),
        labels=_labels(release, catalog, base_image, keep_digest=base is None),
        banner=_banner(release),
        workspace_files=_workspace(release, catalog),
        cuda_compat=compat_of(loaded),
    )


def _interpreter(release) -> str:
    if release.python.install == "conda":
        return f"{release.python.conda.prefix}/bin/python"
    return "python3"


def _python_partials(release) -> dict[str, str]:
    install = release.python.install
    partials = {"runtime": f"python/{install}.j2", "builder": f"python/{install}-builder.j2"}
    if install == "conda":  # the installer is unpacked in a stage of its own and never shipped
        partials["stage"] = "python/conda-stage.j2"
        # conda's base environment already holds some of what the staged layers pin (pip, requests...)
        partials["overlay"] = "python/conda-overlay.j2"
    return partials


def apt_pins(packages: dict[str, str]) -> tuple[str, ...]:
    """apt-get's pins, NAME=VERSION, in the manifest's order."""
    return tuple(f"{name}={version}" for name, version in packages.items())


def _component_step(name: str, component: Component, catalog: Catalog, pins: tuple[str, ...] = (),
                    staged: bool = False) -> Step:
    entry = catalog.get(name)
    lines = entry.comment or [f"{entry.display} {{version}}"]
    return Step(name, f"components/{name}/{component.install}.j2", pins, component, staged,
                default_partial=f"{DEFAULT_PARTIALS}/{component.install}.j2",
                comment=tuple(line.replace("{version}", component.version).replace("{provenance}", component.provenance)
                              for line in lines))


def _runtime_steps(loaded: LoadedRelease, catalog: Catalog) -> tuple[Step, ...]:
    steps = [_component_step(name, c, catalog, apt_pins(c.packages))
             for name, c in loaded.release.components.items() if c.install in RUNTIME_METHODS]
    return tuple(_by_need(steps, catalog, loaded.path))


def _builder_requirements(loaded: LoadedRelease) -> tuple[str, ...]:
    pins = []
    for index, name in enumerate(loaded.release.builder.requirements):
        pin = loaded.constraints.get(name)
        if pin is None:
            raise ManifestError(loaded.path, f"builder.requirements.{index}",
                                f"{name!r} is not pinned in {loaded.constraints.path.name}; "
                                "every build requirement takes its version from the constraints file")
        pins.append(str(pin))
    return tuple(pins)


def _builder_steps(loaded: LoadedRelease, catalog: Catalog) -> tuple[Step, ...]:
    """Components in manifest order (most stable first), each after the steps that provide what it needs
    (OpenMPI and MAGMA before the PyTorch build that links them); pip ones are each their own layer, and
    every other pin of the constraints file goes into one last layer."""
    release, constraints = loaded.release, loaded.constraints
    steps = _component_steps(loaded, catalog)
    taken = {pin.key for step in steps if step.component.install == "pip"
             for pin in pip_pins(step.component, catalog.get(step.name), constraints)}
    for index, group in enumerate(release.pip.layers):
        pins = []
        for position, name in enumerate(group):
            pin = constraints.get(name)
            if pin is None or pin.key in taken:
                why = "is not pinned in " + constraints.path.name if pin is None else "is already in another layer"
                raise ManifestError(loaded.path, f"pip.layers.{index}.{position}", f"{name!r} {why}")
            taken.add(pin.key)
            pins.append(str(pin))
        steps.append(Step(f"{REST_STAGE}-{index + 1}", "python/packages.j2", tuple(pins), staged=True))
    rest = tuple(str(p) for p in sorted(constraints.pins, key=lambda p: p.key) if p.key not in taken)
    if rest:
        steps.append(Step(REST_STAGE, "python/packages.j2", rest, staged=True))
    return tuple(steps)


def _component_steps(loaded: LoadedRelease, catalog: Catalog) -> list[Step]:
    release, constraints = loaded.release, loaded.constraints
    steps = []
    for name, component in release.components.items():
        if component.install in BUILDER_ONLY_METHODS:
            steps.append(_component_step(name, component, catalog, apt_pins(component.packages)))
        elif component.install == "source":
            steps.append(_component_step(name, component, catalog, staged=True))
        elif component.install == "pip":
            pins = pip_pins(component, catalog.get(name), constraints)
            steps.append(_component_step(name, component, catalog, tuple(str(p) for p in pins), staged=True))
    return _early_first(_by_need(steps, catalog, loaded.path), catalog, loaded.path)


def _early(step: Step) -> bool:
    return step.component is not None and step.component.install in EARLY_METHODS


def _early_first(steps: list[Step], catalog: Catalog, path) -> list[Step]:
    """The early steps (source builds, conda) before the staged pip steps, each group in its order. A
    source build cannot use what a staged pip step installs (its own layer, not the builder's
    environment): a need of an early step that only a later one provides is an error."""
    early = [step for step in steps if _early(step)]
    late = [step for step in steps if not _early(step)]
    for step in early:
        for need in needs_of(step.name, step.component, catalog):
            by = [other.name for other in late if need in provides_of(other.name, other.component, catalog)]
            if by:
                raise ManifestError(path, f"components.{step.name}.needs",
                                    f"{need!r} is provided by {', '.join(by)}, installed with pip into a layer of "
                                    "its own, which a source build does not see; expected a need a source build, "
                                    "conda or the base image provides")
    return early + late


def _by_need(steps: list[Step], catalog: Catalog, path) -> list[Step]:
    needs = {step.name: needs_of(step.name, step.component, catalog) for step in steps}
    provides = {step.name: provides_of(step.name, step.component, catalog) for step in steps}
    return order_by_need(steps, needs, provides, path)


def pip_pins(component: Component, entry, constraints) -> list[Pin]:
    """The constraints' pins of a pip component (its packages, or its one package); the loader has
    already checked that they exist and agree with the manifest."""
    names = list(component.packages) or [component.package or entry.pip_package]
    return [constraints.get(name) for name in names]


def _in_image(release):
    return {name: c for name, c in release.components.items() if c.install in IN_IMAGE_METHODS}


def _env(release, catalog: Catalog) -> dict[str, str]:
    pytorch = release.components.get("pytorch")
    env = {
        "NVIDIA_PRODUCT_NAME": "PyTorch",
        "NVIDIA_PYTORCH_VERSION": release.release,
        "NVIDIA_BUILD_ID": release.build.number,
        "PYTORCH_BUILD_NUMBER": str(pytorch.build_number if pytorch else 0),
    }
    # Only what this build installs: a base image sets its own CUDA_VERSION, CUDNN_VERSION... (in
    # NGC's 4-part form), which a value from the manifest must not overwrite unchecked.
    for name, component in _in_image(release).items():
        if component.install == "base":
            continue
        for var in catalog.get(name).env:
            env[var] = component.shown_version
    if release.cuda_home:
        env["CUDA_HOME"] = release.cuda_home.path
    if release.gpu.cuda_arch_list:
        env["TORCH_CUDA_ARCH_LIST"] = release.gpu.cuda_arch_list
    if release.pip.break_system_packages:
        env["PIP_BREAK_SYSTEM_PACKAGES"] = "1"
    env.update(release.env)
    return env


def _labels(release, catalog: Catalog, base_image: str, keep_digest: bool) -> dict[str, str]:
    labels = {
        "org.opencontainers.image.title": f"PyTorch {release.release}",
        "org.opencontainers.image.description": release.summary,
        "org.opencontainers.image.version": release.tag,
        "org.opencontainers.image.base.name": base_image,
        "com.nvidia.build.id": release.build.number,
    }
    if release.base.digest and keep_digest:
        labels["org.opencontainers.image.base.digest"] = release.base.digest
    # Only what this build installs (as for env): a base image labels what it carries in its own form
    # (cuDNN's 4-part 9.17.0.29 in cuda-dl-base), which the manifest's shorter version must not replace.
    for name, component in _in_image(release).items():
        label = catalog.get(name).label
        if label and component.install != "base":
            labels[label] = component.shown_version
    labels.update(release.labels)
    return dict(sorted(labels.items()))


def _banner(release) -> tuple[str, ...]:
    pytorch = release.components.get("pytorch")
    lines = [
        "=============",
        "== PyTorch ==",
        "=============",
        "",
        f"NVIDIA Release {release.release} (build {release.build.number})",
    ]
    if pytorch:
        lines.append(f"PyTorch Version {pytorch.shown_version}")
    if release.banner.copyright:
        lines += ["", *release.banner.copyright]
    if release.banner.license:
        lines += ["", *release.banner.license]
    return tuple(lines)


def _workspace(release, catalog: Catalog) -> dict[str, str]:
    """license.txt and a README of what the image holds and the examples the notes list."""
    files = {}
    if release.workspace.license:
        files["license.txt"] = "".join(f"{line}\n" for line in release.workspace.license)
    examples = release.notes.tensor_core_examples
    if files or examples:
        lines = [f"# PyTorch {release.release}", "", release.summary, ""]
        lines += [f"- {catalog.get(name).display} {c.version}" for name, c in _in_image(release).items()]
        if examples:
            lines += ["", "## Tensor Core examples", "",
                      "NVIDIA's model scripts for these live in https://github.com/NVIDIA/DeepLearningExamples:", ""]
            lines += [f"- {e.name}" + (f": {e.description}" if e.description else "") for e in examples]
        files["README.md"] = "\n".join(lines) + "\n"
    return files
