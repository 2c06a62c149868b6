"""build/R/: every file a release's stages leave there, named once.

A stage asks `ReleaseDir` for a file's path and writes it through `write`, the one whole-file writer
(core/outputs.write_file: temporary file, fsync, rename, never through a link, never outside the
project). What render owns (the context) is swapped in whole by atomic_dir.py; everything else is
an output of a later stage and is carried over by each render.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.outputs import write_file

# the rendered context (render/context.py owns these; they are hashed into the context)
DOCKERFILE = "Dockerfile"
EXPECTED = "expected.json"
# what later stages write
RECORD = "record.json"  # the typed record (record.py)
STAMP = ".rendered.json"  # what the context was rendered from (render/stamp.py)
JUNIT = "smoke-junit.xml"  # the smoke suite's result
PERF = "perf.json"  # the GPU performance figures of the smoke run
PERF_MEASURED = "perf-measured.json"
SBOM = "sbom.cdx.json"  # the CycloneDX SBOM (supply/sbom.py)
AUDIT = "audit.json"  # the vulnerability report of that SBOM (supply/audit.py)
NOTES = "release-notes.md"  # docs/notes.py
MUTANTS = "mutants.json"  # the planted defects' results (smoke/mutate.py)
MUTANTS_REPORT = "mutants.md"  # the same, as a table
BUMP = "bump.md"  # what `ngcbuild bump` proposed for this release and why (bump/report.py)
JOURNAL = ".intermediate-containers"  # containers an unfinished build may have left (engine/leftovers.py)
BUILD_LOCK = ".build.lock"  # one build of R at a time (engine/build.py)

OUTPUTS = (RECORD, STAMP, JUNIT, PERF, PERF_MEASURED, SBOM, AUDIT, NOTES, MUTANTS, MUTANTS_REPORT, JOURNAL,
           BUILD_LOCK, BUMP)


@dataclass(frozen=True)
class ReleaseDir:
    """build/R/ of one release: `path`, inside `root` (the project), which nothing is written outside."""

    path: Path
    root: Path

    @classmethod
    def at(cls, root: Path, release: str) -> "ReleaseDir":
        """build/RELEASE/ of the project at `root`."""
        return cls(Path(root) / "build" / release, Path(root))

    @classmethod
    def of(cls, directory: Path) -> "ReleaseDir":
        """build/R/ given as a path: the project is two folders up."""
        directory = Path(directory)
        return cls(directory, directory.parent.parent)

    @property
    def release(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        if name not in OUTPUTS and name not in (DOCKERFILE, EXPECTED):
            raise ValueError(f"{name} is not a file of build/R/ (workspace/release_dir.py names them)")
        return self.path / name

    def write(self, name: str, data: bytes | str, mode: int | None = None) -> Path:
        """Write build/R/NAME whole (see core/outputs.write_file)."""
        return write_file(self.file(name), data, within=self.root, mode=mode)
