"""build/R/.rendered.json: what build/R/ was rendered from, so that an unchanged release is known
to be unchanged without loading or rendering it again.

The stamp holds a digest of every input of the render (the manifest chain, the constraints file,
the image templates, ngcbuild's own code and the --base value) with the context hash and image names
that render produced. When the digest of those same files still matches, the context hash is still
right: `build` can look for the image of that hash without pydantic or Jinja (tenths of a second).
Any difference, or a stamp that cannot be read, means: load, validate and render as usual.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING

from ngcbuild.core.names import ImageNames
from ngcbuild.core.project import Project

if TYPE_CHECKING:  # the unchanged-release path imports this module and must not load pydantic
    from ngcbuild.manifest.loader import LoadedRelease

STAMP = ".rendered.json"
_CODE = Path(__file__).resolve().parents[1]  # the whole ngcbuild package
MAX_INPUT_BYTES = 16 << 20


@dataclass(frozen=True)
class Stamp:
    context_hash: str
    names: ImageNames


def release_inputs(project: Project, loaded: LoadedRelease) -> list[Path]:
    """The files of one release that its render reads: the manifest chain and the constraints file."""
    return [*loaded.chain, project.constraints / f"{loaded.release.release}.txt"]


def shared_inputs(project: Project) -> tuple[tuple[Path, str], ...]:
    """What every release's render depends on, as (folder, file pattern): every image template and
    ngcbuild's own code. The one definition: the stamp digests these files, and `changed` (changed.py)
    selects every buildable release when a commit touches one of them."""
    return ((project.image_templates.resolve(), "*"), (_CODE, "*.py"))


def is_shared_input(project: Project, path: Path) -> bool:
    """Whether `path` (absolute; it may no longer exist) is one of `shared_inputs`."""
    return any(path.is_relative_to(folder) and fnmatch(path.name, pattern)
               for folder, pattern in shared_inputs(project))


def inputs_digest(project: Project, files: list[str], base: str | None) -> str:
    """sha256 over the named project files, the shared inputs (templates, ngcbuild's code) and --base."""
    digest = hashlib.sha256(json.dumps({"base": base, "files": files}).encode())
    paths = [project.root / rel for rel in files]
    for folder, pattern in shared_inputs(project):
        paths += sorted(p for p in folder.rglob(pattern) if p.is_file())
    for path in paths:
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise ValueError(f"{path}: too large to be an input")
        digest.update(str(path).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def write_stamp(project: Project, directory: Path, files: list[str], base: str | None, context_hash: str,
                names: ImageNames) -> None:
    data = {"inputs": files, "base": base, "inputs_sha256": inputs_digest(project, files, base),
            "context_sha256": context_hash, "names": names.to_json()}
    fd, tmp = tempfile.mkstemp(prefix=STAMP + ".", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, directory / STAMP)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def current_stamp(project: Project, name: str, base: str | None) -> Stamp | None:
    """The stamp of build/<name>/ when every input is as it was rendered; None otherwise."""
    path = project.out(name) / STAMP
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > 1 << 20:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["inputs"]
        if (data["base"] != base or not isinstance(files, list)
                or not all(isinstance(f, str) and _inside(project, f) for f in files)):
            return None
        if data["inputs_sha256"] != inputs_digest(project, files, base):
            return None
        names = ImageNames.from_json(data["names"])
        context_hash = data["context_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable or changed: the full path decides
    if names.release != name or not isinstance(context_hash, str):
        return None
    return Stamp(context_hash, names)


def _inside(project: Project, rel: str) -> bool:
    path = (project.root / rel).resolve()
    return path.is_relative_to(project.root) and path.is_file()
