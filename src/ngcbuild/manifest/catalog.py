"""Component metadata, declared once in templates/components.yaml.

How the release notes name a component (and whether they list it inside another one's line, as in
"NVIDIA CUDA 11.1.1 including cuBLAS 11.3.0"), which env vars and label carry its version in the
image, its pip package, and how many numeric parts a full version of it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ngcbuild.core import safeyaml
from ngcbuild.core.errors import ManifestError
from ngcbuild.core.files import read_text
from ngcbuild.core.project import Project
from ngcbuild.manifest.fields import Capability, EnvName, LabelKey, PackageName, Text

MAX_BYTES = 1_000_000


def _lines(value):
    return [value] if isinstance(value, str) else value


Lines = Annotated[list[Text], BeforeValidator(_lines)]


class CatalogEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    display: Text
    env: list[EnvName] = Field(default_factory=list)
    label: LabelKey | None = None
    pip_package: PackageName | None = None
    version_parts: int = 3
    example: Text = "1.2.3"
    # The release notes list this component inside the line of another one ("including cuBLAS ...").
    within: str | None = None
    # The name used inside that line (cuBLAS); `display` otherwise.
    short: Text | None = None
    # The release notes list these packages of the component (pip name -> name in the notes), each
    # with its pinned version, under `group` ("Jupyter and JupyterLab:"), instead of one line.
    group: Text | None = None
    listed_packages: dict[PackageName, Text] = Field(default_factory=dict)
    # What the smoke suite's stack checks look for: the Python module that reports the version, and
    # the shared library (name up to ".so") the dynamic linker must find.
    module: PackageName | None = None
    library: PackageName | None = None
    # What every build of it needs (APEX: pytorch, cuda-compiler) and what it provides besides its own
    # name (OpenBLAS: blas, lapack); a manifest adds release-specific needs (components.NAME.needs).
    needs: list[Capability] = Field(default_factory=list)
    provides: list[Capability] = Field(default_factory=list)
    # What a source build that needs what it provides must set to use it (OpenBLAS: BLAS=OpenBLAS, or
    # PyTorch's CMake looks for MKL and builds without LAPACK).
    build_env: dict[EnvName, Text] = Field(default_factory=dict)
    # Other names the release notes give it ("Apex", "modelopt"): a note naming it promises it (see
    # manifest/promises.py).
    notes_names: list[Text] = Field(default_factory=list)
    # The comment above its install step in the Dockerfile, one line or several; {version} is the
    # component's version. Without it: its display name and version.
    comment: Lines = Field(default_factory=list)


@dataclass(frozen=True)
class Catalog:
    path: Path
    entries: dict[str, CatalogEntry] = field(default_factory=dict)

    @classmethod
    def load(cls, project: Project) -> "Catalog":
        path = project.catalog
        text = read_text(path, MAX_BYTES, "the component catalog (a YAML mapping)", "component catalog not found",
                         within=project.root)
        try:
            data = safeyaml.load(text) or {}
        except safeyaml.YamlProblem as exc:
            raise ManifestError(path, exc.key, exc.message) from None
        if not isinstance(data, dict):
            raise ManifestError(path, "", f"expected a mapping of component names, got {type(data).__name__}")
        entries = {}
        for name, raw in data.items():
            try:
                entries[name] = CatalogEntry.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                key = ".".join(str(p) for p in (name, *first["loc"]))
                raise ManifestError(path, key, first["msg"]) from None
        for name, entry in entries.items():
            if bool(entry.group) != bool(entry.listed_packages):
                raise ManifestError(path, f"{name}.group", "group and listed_packages go together")
            if entry.within is not None and entry.within not in entries:
                raise ManifestError(path, f"{name}.within",
                                    f"{entry.within!r} is not a component of the catalog")
        return cls(path, entries)

    def get(self, name: str) -> CatalogEntry | None:
        return self.entries.get(name)

    def names(self) -> list[str]:
        return sorted(self.entries)
