"""A release's own policy for `ngcbuild bump` (the manifest's `bump:` key): what the next release
proposed from the indexes may be. The Python is the release's (python.version); the rest is here.

    bump:
      leader: torch                       # chosen first: its newest version the policy admits
      cuda: {major: '13', carried_by: cuda-toolkit}
      require:                            # asked of pip beyond the release's own pins, each with why
        cuda-toolkit[nvcc,crt,nvvm,cccl]: nvcc, its headers and NVVM of the CUDA update torch pins
      hold:                               # kept below a version on purpose, each with why
        numpy: {versions: '<3', reason: ...}
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ngcbuild.core.errors import excerpt
from ngcbuild.manifest.fields import PackageName, Reason, Requirement, VersionSpecifier

MAX_HOLDS = 200  # as with security.allow: a longer list is no policy anyone reviews


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Held(_Strict):
    """A distribution kept to `versions` (a PEP 440 specifier set) for `reason`."""

    versions: VersionSpecifier
    reason: Reason


class CudaPolicy(_Strict):
    """The CUDA major version the release stays on, and the distribution whose version is the CUDA
    version (PyPI's cuda-toolkit): a leader whose wheels need another CUDA major is not admitted."""

    major: Annotated[str, Field(pattern=r"^[0-9]{1,3}$")]
    carried_by: PackageName


class BumpPolicy(_Strict):
    leader: PackageName = "torch"
    # The local version label the leader's builds must carry (cpu: PyTorch's CPU builds, 2.13.0+cpu, which
    # live on PyTorch's own index); none: the public version (PyPI's).
    leader_local: Annotated[str, Field(pattern=r"^[a-z0-9]{1,20}$")] | None = None
    cuda: CudaPolicy | None = None
    require: dict[Requirement, Reason] = Field(default_factory=dict, max_length=50)
    hold: dict[PackageName, Held] = Field(default_factory=dict, max_length=MAX_HOLDS)
    # How many of the leader's newest admitted versions are tried, newest first, before bump gives up
    # (each try is one resolution of the whole set per platform).
    candidates: Annotated[int, Field(ge=1, le=10)] = 3

    @model_validator(mode="after")
    def _specifiers_parse(self):
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        for name, held in self.hold.items():
            try:
                SpecifierSet(held.versions)
            except InvalidSpecifier:
                raise PydanticCustomError("ngcbuild_specifier", "hold.{name}.versions: {value} is not a PEP 440 "
                                          "specifier set such as '<2.15'",
                                          {"name": name, "value": excerpt(held.versions)}) from None
        return self
