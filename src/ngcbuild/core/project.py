"""Where a project's inputs and outputs live. Passed explicitly; there is no global config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.files import unusable_reason


@dataclass(frozen=True)
class Project:
    root: Path

    @classmethod
    def at(cls, root: str | Path = ".") -> "Project":
        return cls(Path(root).resolve())

    @classmethod
    def find(cls, start: Path) -> "Project":
        """The project that holds `start`: the nearest folder, `start` or above, with manifests/ and
        templates/image/ (so a command run from any subfolder works on the whole project)."""
        start = start.resolve()
        for folder in (start, *start.parents):
            try:
                found = (folder / "manifests").is_dir() and (folder / "templates" / "image").is_dir()
            except OSError as exc:  # a folder too deep to look into: say so, not "no project here"
                where = f"{str(folder)[:40]}...{str(folder)[-40:]}" if len(str(folder)) > 100 else str(folder)
                raise OperationError(f"the project's folder {where} cannot be looked into "
                                     f"({unusable_reason(folder / 'manifests', exc)}); "
                                     "move the project to a shorter path") from None
            if found:
                return cls(folder)
        raise UserError(f"{start}: not inside an ngcbuild project (no folder here or above holds "
                        "manifests/ and templates/image/)")

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def constraints(self) -> Path:
        return self.root / "constraints"

    @property
    def templates(self) -> Path:
        return self.root / "templates"

    @property
    def image_templates(self) -> Path:
        """What images are made from: a change here may change an image."""
        return self.templates / "image"

    @property
    def catalog(self) -> Path:
        """The component catalogue: what the images and the documents call each component. Beside, not
        inside, templates/image/: its document-only fields change no image (render/stamp.py)."""
        return self.templates / "components.yaml"

    @property
    def docs_templates(self) -> Path:
        """What documents are made from: a change here rebuilds no image."""
        return self.templates / "docs"

    @property
    def build(self) -> Path:
        return self.root / "build"

    def out(self, release: str) -> Path:
        """build/R/: the rendered context and the records of a release."""
        return self.build / release
