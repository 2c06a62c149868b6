"""The typed release model: what one manifest (after `extends`) may say.

Unknown keys are errors (extra="forbid"); every string that can reach a Dockerfile is one of the
validated types in ngcbuild.types. Differences between eras (conda or system Python, the pip
constraint file, what is bundled) are fields here, never `if release >= ...` in code or templates.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
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
    install: InstallMethod
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

    @model_validator(mode="after")
    def _buildable_needs_build_facts(self):
        if self.status == "buildable":
            for key in ("base", "pip"):
                if getattr(self, key) is None:
                    raise PydanticCustomError(
                        "ngcbuild_missing", "a buildable release needs '{key}' (or mark it status: archived)",
                        {"key": key})
        return self

    @property
    def tag(self) -> str:
        return f"{self.release}-{self.image.tag_suffix}"


__all__ = ["Release", "Component", "ComponentName", "GitRef", "Provenance", "InstallMethod"]
