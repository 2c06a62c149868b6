"""build/R/.rendered.json: what build/R/ was rendered from, so that an unchanged release is known
to be unchanged without loading or rendering it again.

The stamp holds a digest of every input of the render (the manifest chain, the constraints file,
the image templates, the image fields of the component catalogue, ngcbuild's own code and the --base-image
value) with the context hash and image names that render produced; a derived release's stamp also the
base image its FROM was read from (`from`: the base's record must still name it). When the digest of those same
files still matches, the context hash is still right: `build` can look for the image of that hash
without pydantic or Jinja (tenths of a second).
Any difference, or a stamp that cannot be read, means: load, validate and render as usual.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING

from ngcbuild.core.errors import NgcbuildError, shown_path
from ngcbuild.core.files import nesting, read_bytes, read_text
from ngcbuild.core.jsonload import load_json
from ngcbuild.core.names import RELEASE_NAME_RE, ImageNames, check_release_name
from ngcbuild.core.project import Project
from ngcbuild.core.references import ImageRef
from ngcbuild.workspace.release_dir import STAMP, ReleaseDir

if TYPE_CHECKING:  # the unchanged-release path imports this module and must not load pydantic
    from ngcbuild.manifest.loader import LoadedRelease

_CODE = Path(__file__).resolve().parents[1]  # the whole ngcbuild package
MAX_INPUT_BYTES = 16 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Stamp:
    context_hash: str
    names: ImageNames


def release_inputs(project: Project, loaded: LoadedRelease) -> list[Path]:
    """The files of one release that its render reads: the manifest chain and the constraints file (a
    derived release: its base's pins, its requirements and its lock)."""
    if loaded.derived is not None:
        return [*loaded.chain, *loaded.derived.input_files]
    return [*loaded.chain, project.constraints / f"{loaded.release.release}.txt"]


def epoch_inputs(project: Project, loaded: LoadedRelease) -> list[Path]:
    """What the release's steps read, for its epoch (engine/epoch.py): its own inputs and every template.
    ngcbuild's code is not among them: it decides how the image is made, and its rules carry a version."""
    return [*release_inputs(project, loaded), project.templates]


def shared_inputs(project: Project) -> tuple[tuple[Path, str], ...]:
    """What every release's render depends on, as (folder, file pattern): every image template and
    ngcbuild's own code. The one definition: the stamp digests these files, and `changed` (changed.py)
    selects every buildable release when a commit touches one of them."""
    return ((project.image_templates.resolve(), "*"), (_CODE, "*.py"))


def is_shared_input(project: Project, path: Path) -> bool:
    """Whether `path` (absolute; it may no longer exist) is one of `shared_inputs`."""
    return any(path.is_relative_to(folder) and fnmatch(path.name, pattern)
               for folder, pattern in shared_inputs(project))


# Fields of the component catalogue (templates/components.yaml) that no render reads: how the release
# notes name a component and list it, and what validation messages show. Every other field (display
# names in the image's README and step comments, env vars, labels, modules, libraries, needs) is an
# input of the render of every release that names the component.
DOCUMENT_FIELDS = frozenset({"within", "short", "group", "listed_packages", "notes_names", "example",
                             "version_parts"})
MAX_CATALOG_BYTES = 1_000_000


def catalog_image_fields(text: str) -> dict | None:
    """Component name -> the catalogue's fields of it that a render reads; None when the text is no
    catalogue (the load that follows says what is wrong with it)."""
    from ngcbuild.core import safeyaml  # PyYAML: only where a stamp or a selection is checked

    try:
        data = safeyaml.load(text)
    except safeyaml.YamlProblem:
        return None
    if not isinstance(data, dict) or not all(isinstance(entry, dict) for entry in data.values()):
        return None
    return {str(name): {key: value for key, value in entry.items() if key not in DOCUMENT_FIELDS}
            for name, entry in data.items()}


def _catalog_digest(project: Project) -> bytes:
    """What the render reads of the catalogue, in one canonical form (its raw bytes when it is no
    catalogue, so that any change of it still counts)."""
    path = project.catalog
    try:
        text = read_text(path, MAX_CATALOG_BYTES, "the component catalog", "component catalog not found",
                         within=project.root)
    except NgcbuildError as exc:
        return f"unreadable: {exc}".encode()
    fields = catalog_image_fields(text)
    data = text if fields is None else json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).digest()


def input_files(project: Project, files: list[Path], shared: tuple[tuple[Path, str], ...]) -> list[tuple[Path, str]]:
    """Each input of a render with its sha256, in a stable order: `files` (the release's own: its
    manifest chain and constraints) as given, then every file of the `shared` folders matching their
    pattern, sorted. The one reading of a render's inputs, for the stamp and for the provenance's
    materials: through core/files (a regular file inside the project, or inside its shared folder when
    that lies outside it as an installed ngcbuild's code does; at most MAX_INPUT_BYTES; never a FIFO)."""
    found = [(path, project.root) for path in files]
    for folder, pattern in shared:
        within = project.root if folder.is_relative_to(project.root) else folder
        found += [(path, within) for path in sorted(folder.rglob(pattern)) if path.is_file()]
    return [(path, hashlib.sha256(read_bytes(path, MAX_INPUT_BYTES, "an input of the render", "no such file",
                                             within=within)).hexdigest()) for path, within in found]


def inputs_digest(project: Project, files: list[str], base: str | None) -> str:
    """sha256 over the named project files, the shared inputs (templates, ngcbuild's code), the image
    fields of the component catalogue and --base-image."""
    digest = hashlib.sha256(json.dumps({"base": base, "files": files}).encode())
    digest.update(b"catalog\0" + _catalog_digest(project))
    for path, sha256 in input_files(project, [project.root / rel for rel in files], shared_inputs(project)):
        digest.update(str(path).encode() + b"\0" + bytes.fromhex(sha256))
    return digest.hexdigest()


def write_stamp(project: Project, directory: Path, files: list[str], base: str | None, context_hash: str,
                names: ImageNames, from_record: tuple[str, str] | None = None) -> None:
    """`from_record`: (base release, image) where the render read its FROM from the base's record (a
    derived release): the stamp holds only while that record still names that image."""
    data = {"inputs": files, "base": base, "inputs_sha256": inputs_digest(project, files, base),
            "context_sha256": context_hash, "names": names.to_json()}
    if from_record is not None:
        data["from"] = {"release": from_record[0], "image": from_record[1]}
    ReleaseDir(directory, project.root).write(STAMP, json.dumps(data, indent=2, sort_keys=True) + "\n")


MAX_STAMP_BYTES = 1 << 20
MAX_INPUTS = 256  # a manifest chain and a constraints file: a handful; more is no stamp render wrote
MAX_NESTING = 8  # the stamp is two levels deep


def current_stamp(project: Project, name: str, base: str | None, out=None) -> Stamp | None:
    """The stamp of build/<name>/ when every input is as it was rendered; None otherwise (the full
    path decides). A stamp that is not what write_stamp writes (too big, too deep, too many or
    repeated inputs, names that are no names) is ignored with a note on `out`."""
    path = project.out(name) / STAMP
    if not os.path.lexists(path):
        return None
    try:
        data = _checked(project, name, path)
    except _Tampered as exc:
        if out is not None:
            print(f"note: {shown_path(path)} is not a stamp ngcbuild wrote ({exc}); rendering again", file=out)
        return None
    if data["base"] != base or not _same_base_image(project, data.get("from")):
        return None
    try:
        if data["inputs_sha256"] != inputs_digest(project, data["inputs"], base):
            return None
    except (OSError, NgcbuildError):
        return None  # an input is gone, too large or changed kind: the full path decides
    return Stamp(data["context_sha256"], data["names"])


def _same_base_image(project: Project, source: dict | None) -> bool:
    """Whether the base's record still names the image the render was FROM (True: no such input)."""
    if source is None:
        return True
    from ngcbuild.workspace.record import image_by_digest, previous_record

    try:
        return image_by_digest(previous_record(project.out(source["release"]))) == source["image"]
    except NgcbuildError:
        return False  # the full path says what is wrong with it


class _Tampered(Exception):
    pass


def _checked(project: Project, name: str, path: Path) -> dict:
    """The stamp's fields, each of the type and form write_stamp gives it, or _Tampered saying why."""
    try:
        text = read_text(path, MAX_STAMP_BYTES, "a render stamp (JSON object)", "no stamp", within=project.build)
        data = load_json(text, "the stamp")
    except NgcbuildError as exc:
        raise _Tampered(str(exc).split(": ", 1)[-1][:200]) from None
    except ValueError as exc:
        raise _Tampered(getattr(exc, "problem", str(exc))[:200]) from None
    if not isinstance(data, dict) or nesting(data, MAX_NESTING) > MAX_NESTING:
        raise _Tampered("not a JSON object of two levels")
    files = data.get("inputs")
    if not isinstance(files, list) or not 0 < len(files) <= MAX_INPUTS or len(set(map(str, files))) != len(files):
        raise _Tampered(f"`inputs` must be a list of 1 to {MAX_INPUTS} different files")
    if not all(isinstance(f, str) and len(f) < 4096 and _inside(project, f) for f in files):
        raise _Tampered("`inputs` names a file that is not in the project")
    if not (data.get("base") is None or isinstance(data.get("base"), str)):
        raise _Tampered("`base` must be a string or null")
    for key in ("inputs_sha256", "context_sha256"):
        if not (isinstance(data.get(key), str) and _SHA256.fullmatch(data[key])):
            raise _Tampered(f"`{key}` must be a sha256 in hex")
    try:
        names = ImageNames.from_json(data.get("names"))
        check_release_name(names.release)
        ImageRef.parse(f"{names.repository_path}:{names.tag}", need_tag=True)
        ImageRef.parse(names.base_image)
    except (KeyError, TypeError, ValueError, AttributeError, NgcbuildError):
        raise _Tampered("`names` are not the names of an image") from None
    if names.release != name:
        raise _Tampered("`names` are of another release")
    source = data.get("from")
    if source is not None and not (isinstance(source, dict) and set(source) == {"release", "image"}
                                   and all(isinstance(v, str) and len(v) < 1024 for v in source.values())
                                   and RELEASE_NAME_RE.fullmatch(source["release"])):
        raise _Tampered("`from` is not a base release and its image")
    return {**data, "names": names}


def _inside(project: Project, rel: str) -> bool:
    if "\0" in rel:
        return False
    path = (project.root / rel).resolve()
    return path.is_relative_to(project.root) and path.is_file()
