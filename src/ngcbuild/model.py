"""The typed release model: what one manifest (after `extends`) may say.

Unknown keys are errors (extra="forbid"); every string that can reach a Dockerfile is one of the
validated types in ngcbuild.types. Differences between eras (conda or system Python, the pip
constraint file, what is bundled) are fields here, never `if release >= ...` in code or templates.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from .types import (
    AbsPath,
    ArchList,
    BuildNumber,
    ComponentName,
    ComputeCapability,
    Digest,
    EnvName,
    GitRef,
    ImageRef,
    LabelKey,
    MajorMinor,
    PackageName,
    Prose,
    RepoPath,
    SafeValue,
    TagWord,
    Text,
    Url,
    Version,
)

Provenance = Literal["nvidia", "secondary", "chosen"]
InstallMethod = Literal["pip", "apt", "source", "base"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Bootstrap(Strict):
    """How `invoke base` makes the base image locally when it cannot be pulled."""

    suite: PackageName
    mirror: Url
    variant: Literal["minbase", "buildd"] = "minbase"


class BaseImage(Strict):
    image: ImageRef
    digest: Digest | None = None
    bootstrap: Bootstrap | None = None


class ImageSpec(Strict):
    repository: RepoPath = "nvidia/pytorch"
    tag_suffix: TagWord = "py3"


class OperatingSystem(Strict):
    name: Text
    version: Text


class PythonSpec(Strict):
    version: MajorMinor
    install: Literal["system", "conda"]
    site_packages: AbsPath
    # Distribution packages (apt) that provide the interpreter in the image, pinned.
    apt_packages: dict[PackageName, Version] = Field(default_factory=dict)
    # Distribution packages needed only in the builder stage (pip for the staged installs).
    builder_apt_packages: dict[PackageName, Version] = Field(default_factory=dict)


class PipSpec(Strict):
    # NGC images carry /etc/pip/constraint.txt and PIP_CONSTRAINT from 25.03 on.
    constraint_file: bool
    break_system_packages: bool = False
    # Extra package indexes (PyTorch's CPU index for `dev`); dropped when a wheelhouse is given.
    extra_index_urls: list[Url] = Field(default_factory=list)


class Component(Strict):
    version: Version
    # How the image gets it; archived (documentation-only) releases may leave it out.
    install: InstallMethod | None = None
    provenance: Provenance = "chosen"
    # Where the value comes from, in words (a page, a banner, "fits CUDA 13.1").
    source: Text | None = None
    package: PackageName | None = None
    repo: Url | None = None
    ref: GitRef | None = None

    @model_validator(mode="after")
    def _source_needs_repo(self):
        if self.install == "source" and not (self.repo and self.ref):
            raise PydanticCustomError("ngcbuild_source", "install: source needs both repo and ref")
        return self


class GpuSpec(Strict):
    required: bool = False
    min_compute_capability: ComputeCapability | None = None
    cuda_arch_list: ArchList | None = None


class BannerSpec(Strict):
    copyright: list[Text] = Field(default_factory=list)
    license: list[Text] = Field(default_factory=list)


class BuildSpec(Strict):
    number: BuildNumber = "0"
    platform: Literal["linux/amd64", "linux/arm64"] = "linux/amd64"


class Fact(Strict):
    """One statement of the release notes and where it comes from."""

    text: Prose
    provenance: Provenance = "nvidia"
    source: Prose | None = None


def _fact_from_text(value):
    return {"text": value} if isinstance(value, str) else value


FactItem = Annotated[Fact, BeforeValidator(_fact_from_text)]


class DriverRequirements(Strict):
    minimum: Text | None = None  # "455 or later"
    datacenter_branches: list[Text] = Field(default_factory=list)  # ["418.xx", "440.30", "450.xx"]
    text: Prose | None = None  # NVIDIA's sentence(s), verbatim where known
    provenance: Provenance = "nvidia"


class GpuRequirements(Strict):
    families: list[Text] = Field(default_factory=list)  # ["Pascal", "Volta", ...]
    text: Prose | None = None
    provenance: Provenance = "nvidia"


class Example(Strict):
    name: Text
    description: Prose | None = None


class Notes(Strict):
    """What the release notes say beyond the component list (see invoke notes)."""

    pytorch_location: Prose | None = None
    driver: DriverRequirements | None = None
    gpu_requirements: GpuRequirements | None = None
    key_features: list[FactItem] = Field(default_factory=list)
    announcements: list[FactItem] = Field(default_factory=list)
    known_issues: list[FactItem] = Field(default_factory=list)
    tensor_core_examples: list[Example] = Field(default_factory=list)
    # Items of "The container also includes" that are not components we install.
    also_includes: list[FactItem] = Field(default_factory=list)
    # Where sources disagree, what we chose and why.
    conflicts: list[FactItem] = Field(default_factory=list)


class Release(Strict):
    release: str  # filled in from the file name by the loader
    status: Literal["buildable", "archived"] = "buildable"
    summary: Text
    image: ImageSpec = Field(default_factory=ImageSpec)
    base: BaseImage | None = None
    os: OperatingSystem
    python: PythonSpec
    pip: PipSpec | None = None
    build: BuildSpec = Field(default_factory=BuildSpec)
    gpu: GpuSpec = Field(default_factory=GpuSpec)
    banner: BannerSpec = Field(default_factory=BannerSpec)
    components: dict[ComponentName, Component] = Field(default_factory=dict)
    env: dict[EnvName, SafeValue] = Field(default_factory=dict)
    labels: dict[LabelKey, Text] = Field(default_factory=dict)
    notes: Notes = Field(default_factory=Notes)

    @model_validator(mode="after")
    def _buildable_needs_build_facts(self):
        if self.status == "buildable":
            for key in ("base", "pip"):
                if getattr(self, key) is None:
                    raise PydanticCustomError(
                        "ngcbuild_missing", "required in a buildable release (or mark it status: archived)",
                        {"key": key})
            for name, component in self.components.items():
                if component.install is None:
                    raise PydanticCustomError(
                        "ngcbuild_missing", "required in a buildable release (pip, apt, source or base)",
                        {"key": f"components.{name}.install"})
        return self

    @property
    def tag(self) -> str:
        return f"{self.release}-{self.image.tag_suffix}"


__all__ = ["Release", "Component", "ComponentName", "GitRef", "Provenance", "InstallMethod"]
