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
from pathlib import Path

from ngcbuild.core.names import ImageNames
from ngcbuild.core.project import Project

STAMP = ".rendered.json"
_CODE = Path(__file__).resolve().parents[1]  # the whole ngcbuild package
MAX_INPUT_BYTES = 16 << 20


@dataclass(frozen=True)
class Stamp:
    context_hash: str
    names: ImageNames


def inputs_digest(project: Project, files: list[str], base: str | None) -> str:
    """sha256 over the named project files, every image template, ngcbuild's code and --base."""
    digest = hashlib.sha256(json.dumps({"base": base, "files": files}).encode())
    paths = [project.root / rel for rel in files]
    paths += sorted(p for p in project.image_templates.rglob("*") if p.is_file())
    paths += sorted(_CODE.rglob("*.py"))
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
