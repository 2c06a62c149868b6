"""The files a proposal is written to: manifests/NAME.yaml and constraints/NAME.txt (both or
neither, never through a link, never over a release bump did not propose), and the scratch copy of
the project a proposal is loaded, rendered and verified in before anything is written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ngcbuild.bump.texts import header_of
from ngcbuild.core.errors import ManifestError, OperationError, UserError, shown_path
from ngcbuild.core.files import read_text
from ngcbuild.core.outputs import UnsafeOutput, write_file
from ngcbuild.core.project import Project
from ngcbuild.workspace.release_dir import BUMP, ReleaseDir

MAX_FILE = 1_000_000

# What a scratch copy of the project needs to load, render and describe a release.
COPIED = ("manifests", "constraints", "templates")

class NewerAvailable(OperationError):
    """--check: a newer set the policy admits exists (exit 1)."""


class CouldNotCheck(OperationError):
    """--check: the indexes could not be read or the set not resolved, so nothing is known (exit 3):
    never taken for "current" (0) or "newer" (1)."""

    exit_code = 3


def _regular_or_absent(path: Path, what: str) -> bool:
    """True when `path` is a regular file, False when nothing is there; anything else is refused."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UnsafeOutput(f"{shown_path(path)}: cannot be looked at ({exc.strerror}); nothing was written") from None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeOutput(f"{shown_path(path)}: is a symbolic link; bump never writes through a link (remove it or "
                           "choose another --as), nothing was written")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeOutput(f"{shown_path(path)}: is not a regular file, where bump writes {what} (remove it or choose "
                           "another --as), nothing was written")
    return True

def existing_proposal(project: Project, release: str, name: str) -> dict | None:
    """The files an earlier bump of `release` wrote under `name`, or None when there are none. Any other
    file there (another release, a link, a FIFO), and a build/NAME/bump.md that is not a plain file, is
    refused before anything is read from an index."""
    _regular_or_absent(ReleaseDir.at(project.root, name).file(BUMP), "the proposal's report")
    manifest = project.manifests / f"{name}.yaml"
    constraints = project.constraints / f"{name}.txt"
    has_manifest = _regular_or_absent(manifest, "the proposal's manifest")
    has_constraints = _regular_or_absent(constraints, "the proposal's constraints")
    if not has_manifest and not has_constraints:
        return None
    texts, days = {}, set()
    for key, path, there in (("manifest", manifest, has_manifest), ("constraints", constraints, has_constraints)):
        if not there:
            raise UserError(f"{shown_path(path)} is missing beside the other file of {name}: a release of its own or "
                            "a half-removed proposal; remove what is left or choose another --as")
        text = read_text(path, MAX_FILE, "a file ngcbuild bump wrote", "file not found", within=project.root)
        header = header_of(text)
        if header is None or header[0] != release:
            raise UserError(f"{shown_path(path)} exists and was not proposed by ngcbuild bump from {release}: "
                            f"--as {name} would replace another release; choose another --as")
        texts[key] = text
        days.add(header[1])
    return {"texts": texts, "day": min(days)}

def write_both(project: Project, name: str, texts: dict[str, str]) -> None:
    """constraints/NAME.txt, then manifests/NAME.yaml; if the manifest cannot be written, the
    constraints file is put back as it was (or removed), so neither is left alone."""
    constraints = project.constraints / f"{name}.txt"
    manifest = project.manifests / f"{name}.yaml"
    before = constraints.read_bytes() if constraints.is_file() and not constraints.is_symlink() else None
    write_file(constraints, texts["constraints"], within=project.root)
    try:
        write_file(manifest, texts["manifest"], within=project.root)
    except BaseException:
        if before is None:
            constraints.unlink(missing_ok=True)
        else:
            write_file(constraints, before, within=project.root)
        raise

def scratch_project(project: Project, root: Path) -> Project:
    """A copy of what loading and describing a release reads (manifests, constraints, templates): each
    regular file, or link to one inside the project, read through the one reader; nothing else."""
    for folder in COPIED:
        source = project.root / folder
        for path in sorted(source.rglob("*")) if source.is_dir() else ():
            relative = path.relative_to(project.root)
            try:
                info = os.stat(path)  # follows a link: its target is judged by the reader below
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            try:
                text = read_text(path, MAX_FILE, "a project file", "file not found", within=project.root)
            except ManifestError:
                continue  # a link out of the project, too large, not UTF-8: the load itself would refuse it
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    (root / "templates" / "image").mkdir(parents=True, exist_ok=True)
    return Project(root.resolve())
