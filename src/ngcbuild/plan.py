"""What a release's image holds, computed once from the manifest: install steps, env vars, labels,
banner and the smoke expectations. Templates only print these; they compute nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name

from .catalog import Catalog
from .manifest import LoadedRelease
from .model import Component

PIP_CONSTRAINT_PATH = "/etc/pip/constraint.txt"
STAGE_ROOT = "/stage"
REST_STAGE = "python-packages"


@dataclass(frozen=True)
class PipStage:
    """One builder-stage install whose files become one layer of the final image."""

    name: str
    partial: str
    pins: tuple[str, ...]  # NAME==VERSION
    component: Component | None = None

    @property
    def root(self) -> str:
        return f"{STAGE_ROOT}/{self.name}"


@dataclass(frozen=True)
class ImagePlan:
    loaded: LoadedRelease
    catalog: Catalog
    pip_stages: tuple[PipStage, ...]
    env: dict[str, str]
    labels: dict[str, str]
    banner: tuple[str, ...]

    @property
    def release(self):
        return self.loaded.release

    def expected(self) -> dict:
        """expected.json: what the smoke suite checks inside the image."""
        release = self.release
        constraints = self.loaded.constraints
        return {
            "release": release.release,
            "tag": release.tag,
            "python": {"version": release.python.version, "site_packages": release.python.site_packages},
            "packages": {canonicalize_name(p.name): p.version for p in constraints.pins},
            "components": {name: c.version for name, c in release.components.items()},
            "pip_constraint_file": PIP_CONSTRAINT_PATH if release.pip.constraint_file else None,
            "env": self.env_with_constraint(),
            "labels": self.labels,
            "banner": list(self.banner),
            "workdir": "/workspace",
            "entrypoint": "/opt/nvidia/nvidia_entrypoint.sh",
            "gpu": {
                "required": release.gpu.required,
                "min_compute_capability": release.gpu.min_compute_capability,
                "cuda": _version_of(release, "cuda"),
                "cudnn": _version_of(release, "cudnn"),
                "nccl": _version_of(release, "nccl"),
                "features": list(release.gpu.features),
            },
            # Components whose checks run: those the image actually carries (not documented-only).
            "components_in_image": sorted(name for name, c in release.components.items() if _in_image(c)),
        }

    def env_with_constraint(self) -> dict[str, str]:
        env = dict(self.env)
        if self.release.pip.constraint_file:
            env["PIP_CONSTRAINT"] = PIP_CONSTRAINT_PATH
        return env


def _in_image(component: Component) -> bool:
    return component.install not in (None, "none")


def _version_of(release, name: str) -> str | None:
    component = release.components.get(name)
    return component.version if component else None


def plan_image(loaded: LoadedRelease, catalog: Catalog) -> ImagePlan:
    release = loaded.release
    return ImagePlan(
        loaded=loaded,
        catalog=catalog,
        pip_stages=_pip_stages(loaded, catalog),
        env=_env(release, catalog),
        labels=_labels(release, catalog),
        banner=_banner(release),
    )


def _pip_stages(loaded: LoadedRelease, catalog: Catalog) -> tuple[PipStage, ...]:
    """Each pip-installed component is its own layer (most stable first, as listed in the manifest);
    every other pin of the constraints file goes into one last layer."""
    release, constraints = loaded.release, loaded.constraints
    stages, taken = [], set()
    for name, component in release.components.items():
        if component.install != "pip":
            continue
        package = component.package or catalog.get(name).pip_package
        pin = constraints.get(package)
        taken.add(pin.key)
        stages.append(PipStage(name, f"components/{name}/pip.j2", (str(pin),), component))
    rest = tuple(str(p) for p in sorted(constraints.pins, key=lambda p: p.key) if p.key not in taken)
    if rest:
        stages.append(PipStage(REST_STAGE, "python/packages.j2", rest))
    return tuple(stages)


def _env(release, catalog: Catalog) -> dict[str, str]:
    env = {
        "NVIDIA_PRODUCT_NAME": "PyTorch",
        "NVIDIA_PYTORCH_VERSION": release.release,
        "NVIDIA_BUILD_ID": release.build.number,
        "PYTORCH_BUILD_NUMBER": "0",
    }
    for name, component in release.components.items():
        for var in catalog.get(name).env:
            env[var] = component.version
    if release.gpu.cuda_arch_list:
        env["TORCH_CUDA_ARCH_LIST"] = release.gpu.cuda_arch_list
    if release.pip.break_system_packages:
        env["PIP_BREAK_SYSTEM_PACKAGES"] = "1"
    env.update(release.env)
    return env


def _labels(release, catalog: Catalog) -> dict[str, str]:
    labels = {
        "org.opencontainers.image.title": f"PyTorch {release.release}",
        "org.opencontainers.image.description": release.summary,
        "org.opencontainers.image.version": release.tag,
        "org.opencontainers.image.base.name": release.base.image,
        "com.nvidia.build.id": release.build.number,
    }
    if release.base.digest:
        labels["org.opencontainers.image.base.digest"] = release.base.digest
    for name, component in release.components.items():
        label = catalog.get(name).label
        if label:
            labels[label] = component.version
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
        lines.append(f"PyTorch Version {pytorch.version}")
    if release.banner.copyright:
        lines += ["", *release.banner.copyright]
    if release.banner.license:
        lines += ["", *release.banner.license]
    return tuple(lines)
