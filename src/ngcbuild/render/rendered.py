"""What a render produces, for every kind of release: build/R/'s files in memory with the plan they
were made from (`Rendered`), and the folders of the context that render owns."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ngcbuild.render.plan import ImagePlan

# Files of build/R/ that belong to the rendered context; anything else there (records, JUnit,
# notes) is output of later steps and never enters the context or its hash.
ENTRYPOINT_DIR = "entrypoint"
INPUTS_DIR = "build-inputs"
WORKSPACE_DIR = "workspace"


@dataclass(frozen=True)
class Rendered:
    release: str
    directory: Path
    files: dict[str, bytes]  # relative path -> content, sorted
    plan: ImagePlan  # or a derived release's DerivedPlan (derived.py): the same names, release and base image
    # (base release, image) when the FROM was read from the base's record: the stamp holds it, so that
    # a base built or pushed since is a change (stamp.py)
    from_record: tuple[str, str] | None = None
    # distributions of the base image the smoke suite must find unchanged (smoke/base_stack.py)
    base_stack: tuple[str, ...] = ()

    @property
    def context_hash(self) -> str:
        digest = hashlib.sha256()
        for rel, data in self.files.items():
            digest.update(rel.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
        return digest.hexdigest()

    @property
    def executable(self) -> set[str]:
        return {rel for rel in self.files if rel.endswith(".sh")}
