"""Load a release manifest: read YAML, resolve `extends`, validate into a `Release`.

Every problem becomes one `ManifestError` naming the file, the key path and what was expected.
"""

from __future__ import annotations

import difflib
import os
import types as pytypes
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ngcbuild.core import safeyaml
from ngcbuild.core.errors import ManifestError, UserError, excerpt, shown_path
from ngcbuild.core.files import UnusablePath, exists, read_text
from ngcbuild.core.names import RELEASE_NAME_RE, check_release_name
from ngcbuild.core.outputs import short_path
from ngcbuild.core.project import Project
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.constraints import Constraints, load_constraints
from ngcbuild.manifest.derived import (
    DERIVED_DIR,
    DerivedRelease,
    built_from_source,
    check_protected,
    derived_manifest,
    load_derived,
    protected_names,
)
from ngcbuild.manifest.fields import release_parts
from ngcbuild.manifest.model import Release
from ngcbuild.manifest.needs import check_needs
from ngcbuild.manifest.promises import check_promises
from ngcbuild.manifest.unknown import unknown_keys, unknown_message

MAX_MANIFEST_BYTES = 1_000_000
# The most manifests one release may merge, and the longest `extends` chain: real ones are a few links
# (a release, the release before it, a part or two). A chain of monthly releases, each extending the
# one before, reaches 100 after eight years; past that, extend a part instead of the whole line. The
# bound also keeps the loader's recursion far from Python's limit, and a "diamond" of parts (each
# extending the same two below) from merging 2**depth files.
MAX_EXTENDS = 100


@dataclass(frozen=True)
class LoadedRelease:
    """A validated release with what it was made from."""

    release: Release
    path: Path
    chain: tuple[Path, ...]  # the files merged, parent first
    constraints: Constraints | None
    catalog: Catalog  # templates/components.yaml, read once per load
    derived: DerivedRelease | None = None  # a derived release (manifests/derived/R.yaml): its base, lock...


def release_names(project: Project) -> list[str]:
    """Every release with a manifest (shared parts under manifests/parts/ are not releases). A file
    whose name is no release name is an error naming that file: no command was given that name."""
    names = []
    for path in sorted(project.manifests.glob("*.yaml")):
        if not RELEASE_NAME_RE.fullmatch(path.stem):
            raise ManifestError(path, "", f"{path.stem!r} is not a release name (YY.MM such as 25.12, or a "
                                          "lower-case word such as dev); rename the file or move it out of manifests/")
        names.append(path.stem)
    return names


def buildable_releases(project: Project) -> list[str]:
    """The releases render and build accept (not archived)."""
    return [name for name in release_names(project) if load_release(project, name).release.status == "buildable"]


def load_release(project: Project, name: str) -> LoadedRelease:
    check_release_name(name)
    path = project.manifests / f"{name}.yaml"
    derived_path = derived_manifest(project.manifests, name)
    if exists(derived_path):
        if exists(path):
            raise UserError(f"{shown_path(path)} and {shown_path(derived_path)}: two manifests of release {name}; "
                            "expected one (a derived release lives under manifests/derived/ alone)")
        path = derived_path
    if not exists(path):
        known = release_names(project)
        hint = _did_you_mean(name, known)
        raise UserError(f"{shown_path(path)}: no such manifest; known releases: {', '.join(known) or 'none'}{hint}")
    data, chain = _resolve(project, path, ())
    unknown = unknown_keys(data)
    if unknown:  # a draft of `ngcbuild bump`: named whole, before any value is judged
        raise ManifestError(path, "", unknown_message(unknown))
    data["release"] = name
    release = _validate(path, data, chain)
    catalog = Catalog.load(project)
    _check_components(path, release, catalog)
    check_promises(path, release, catalog)
    constraints = None
    if release.derive is not None or path == derived_path:
        derived = _load_derived(project, path, release, chain, catalog)
        constraints = Constraints(derived.lock_path, derived.pins_for(release.build.platform))
        return LoadedRelease(release, path, chain, constraints, catalog, derived)
    if release.status == "buildable":
        constraints = load_constraints(project.constraints / f"{name}.txt", manifest=shown_path(path),
                                       within=project.root)
        _check_pins_agree(path, release, catalog, constraints)
        check_protected(path, release, constraints)
        _check_met_by_base(path, release, constraints)
        check_needs(path, release, catalog)
    return LoadedRelease(release, path, chain, constraints, catalog)


def derived_release_names(project: Project) -> list[str]:
    """The derived releases (manifests/derived/R.yaml): teams' images on our releases, not in the series."""
    folder = project.manifests / DERIVED_DIR
    return sorted(p.stem for p in folder.glob("*.yaml") if RELEASE_NAME_RE.fullmatch(p.stem)) if folder.is_dir() else []


def _load_derived(project: Project, path: Path, release: Release, chain: tuple[Path, ...],
                  catalog: Catalog) -> DerivedRelease:
    """The derived part of a release under manifests/derived/: its base is the release it extends
    (the last one of the chain), or the image its base names by digest."""
    if release.derive is None:
        raise ManifestError(path, "derive", "required key is missing (a manifest under manifests/derived/ is a "
                                            "derived release: its requirements, overrides)")
    if path.parent.name != DERIVED_DIR:
        raise ManifestError(path, "derive", "a derived release lives under manifests/derived/; move the file there")
    if release.status != "buildable":
        raise ManifestError(path, "status", "a derived release is built; expected it buildable")
    own = _read_yaml(project, path)
    derived_parents = [p for p in chain[:-1] if p.parent.name == DERIVED_DIR]
    if derived_parents:  # a team image on a team image: refused whole, never merged into a derived of its base
        other = derived_parents[-1].stem
        raise ManifestError(path, "extends", f"derived/{other} is itself a derived release; a derived release's base "
                                             "is one of our releases (manifests/R.yaml), or an image by digest: to "
                                             f"build on {other}'s image, name it under base.image and base.digest "
                                             "(resolve then reads its pins from the image)")
    parents = [p for p in chain[:-1] if p.parent == project.manifests.resolve() or p.parent == project.manifests]
    base = None
    if parents:
        base = load_release(project, parents[-1].stem)
        if base.derived is not None:
            raise ManifestError(path, "extends", f"{parents[-1].stem} is itself a derived release; expected one of "
                                                 "our releases (or an image by digest) as the base")
        if base.release.status != "buildable":
            raise ManifestError(path, "extends", f"{parents[-1].stem} is archived; expected a buildable release")
        beyond = [p for p in release.build.published_platforms if p not in base.release.build.published_platforms]
        if beyond:  # each platform's image is built FROM the base's image of that platform
            raise ManifestError(path, "build.platforms", f"{base.release.release} is built for "
                                f"{', '.join(base.release.build.published_platforms)}, not {', '.join(beyond)}; "
                                "expected some of its platforms")
    provided = built_from_source(base.release, catalog, base.constraints) if base else ()
    return load_derived(path, own, release, base.release if base else None, base.constraints if base else None,
                        provided, protected_names(base.release, catalog) if base else set(), root=project.root,
                        constraints_dir=project.constraints)


def _read_yaml(project: Project, path: Path) -> dict:
    text = read_text(path, MAX_MANIFEST_BYTES, "a manifest", "file not found", within=project.root)
    try:
        data = safeyaml.load(text)
    except safeyaml.YamlProblem as exc:
        raise ManifestError(path, exc.key, exc.message) from None
    if data is None:
        raise ManifestError(path, "", "file is empty; expected a mapping of manifest keys")
    if not isinstance(data, dict):
        raise ManifestError(path, "", f"expected a mapping of manifest keys at the top, got {type(data).__name__}")
    return data


def _resolve(project: Project, path: Path, seen: tuple[Path, ...]) -> tuple[dict, tuple[Path, ...]]:
    """Read `path` and merge it over its parents. Returns the merged mapping and the file chain."""
    if path in seen:
        cycle = " -> ".join(p.name for p in (*seen, path))
        raise ManifestError(seen[-1], "extends", f"cycle: {cycle}")
    if len(seen) >= MAX_EXTENDS:
        raise ManifestError(seen[0], "extends", f"the chain {_names(project, (*seen, path))} is more than "
                                                f"{MAX_EXTENDS} manifests long; expected at most {MAX_EXTENDS} "
                                                "(extend a shared part under manifests/parts/ instead)")
    data = _read_yaml(project, path)
    parents = data.pop("extends", None)
    inherit = data.pop("inherit", [])
    if not isinstance(inherit, list) or not all(isinstance(k, str) for k in inherit):
        raise ManifestError(path, "inherit", "expected a list of keys such as [notes.announcements, banner.license], "
                                             f"got {_yaml_word(inherit)}")
    if parents is None:
        if inherit:
            raise ManifestError(path, "inherit", "only a release that extends another release inherits its text")
        return data, (path,)
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        number = next((p for p in (parents if isinstance(parents, list) else [parents])
                       if isinstance(p, (int, float)) and not isinstance(p, bool)), None)
        hint = f" ({safeyaml.number_hint(number)})" if number is not None else ""
        raise ManifestError(path, "extends",
                            f"expected a manifest name or a list of names (e.g. parts/debian){hint}")
    merged: dict = {}
    chain: tuple[Path, ...] = ()
    releases: dict[str, dict] = {}  # the parents that are releases (not parts/), by name
    for parent in parents:
        # normalised, not resolved: a link is the reader's to judge (and must stay inside the project)
        parent_path = Path(os.path.normpath((project.manifests / f"{parent}.yaml").absolute()))
        if Path(os.path.normpath(project.manifests.absolute())) not in parent_path.parents:
            raise ManifestError(path, "extends", f"{excerpt(parent)} is outside {shown_path(project.manifests)}")
        try:
            found = exists(parent_path)
        except UnusablePath as exc:  # a name too long for the system: the value's fault, not a missing file
            raise ManifestError(path, "extends",
                                f"parent {excerpt(parent)} cannot be looked up: {exc.reason}") from None
        if not found:
            raise ManifestError(path, "extends",
                                f"parent {excerpt(parent)} not found ({short_path(parent_path)} does not exist)")
        parent_data, parent_chain = _resolve(project, parent_path, (*seen, path))
        if parent_path.parent == project.manifests.resolve():
            releases[parent] = parent_data
        merged = deep_merge(merged, parent_data)
        chain += parent_chain
        if len(chain) >= MAX_EXTENDS:  # with this file, over the bound: stop before the next parent doubles it
            raise ManifestError(seen[0] if seen else path, "extends",
                                f"merges more than {MAX_EXTENDS} manifests (a part reached by several paths counts "
                                f"each time; the last: {_names(project, chain[-3:])}); expected at most {MAX_EXTENDS}")
    if inherit and not releases:
        raise ManifestError(path, "inherit", f"{', '.join(excerpt(k).strip(chr(39)) for k in inherit)}: only a release "
                                             "that extends another release inherits its text; this one extends "
                                             f"only shared parts ({', '.join(map(excerpt, parents))})")
    _check_inherited_text(path, releases, data, inherit)
    return deep_merge(merged, data), (*chain, path)


def _yaml_word(value) -> str:
    """null, true and false as the manifest wrote them; anything else as _show does."""
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else _show(value)


def _names(project: Project, chain: tuple[Path, ...]) -> str:
    """`dev -> parts/debian-bookworm`, long chains cut in the middle, each name as `extends:` writes it."""
    def name(path: Path) -> str:
        try:
            return path.relative_to(project.manifests).with_suffix("").as_posix()
        except ValueError:
            return path.stem
    shown = [name(p) for p in chain]
    if len(shown) > 6:
        shown = [*shown[:3], "...", *shown[-2:]]
    return " -> ".join(excerpt(n, 40).strip("'") for n in shown)


# What belongs to one NVIDIA release and must not pass silently to the next: its summary ("based on"),
# build number, banner and every section of its notes. A release that extends one restates each one its
# parent has, or names it under `inherit:` to keep the parent's text on purpose. (A variant of an
# ngcbuild release, origin public-wheels, states no NVIDIA facts and may inherit freely.)
RELEASE_SPECIFIC = ("summary", "build.number", "banner.copyright", "banner.license", "notes")


def _release_specific_keys(data: dict) -> list[str]:
    keys = []
    for key in RELEASE_SPECIFIC:
        value = _get(data, key)
        if isinstance(value, dict) and key == "notes":
            keys += [f"notes.{sub}" for sub in value]
        elif value is not None:
            keys.append(key)
    return keys


def _get(data: dict, dotted: str):
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _present(data: dict, dotted: str) -> bool:
    """The key is set in this file (a null counts: it removes the parent's text)."""
    *parents, last = dotted.split(".")
    for part in parents:
        data = data.get(part) if isinstance(data, dict) else None
    return isinstance(data, dict) and last in data


def _check_inherited_text(path: Path, releases: dict[str, dict], data: dict, inherit: list[str]) -> None:
    """`inherit` names release-specific text of the parent releases; NVIDIA's releases (not ngcbuild's
    own public-wheels ones) carry text of their own, which a child restates or inherits on purpose."""
    if not releases:
        return
    specific = {parent: _release_specific_keys(parent_data) for parent, parent_data in releases.items()}
    known = [k for keys in specific.values() for k in keys]
    unknown = [excerpt(k).strip("'") for k in inherit if k not in known]
    if unknown:
        names = ", ".join(repr(p) for p in releases)
        raise ManifestError(path, "inherit", f"{', '.join(unknown)}: not release-specific text of {names}; "
                                             f"expected some of: {', '.join(dict.fromkeys(known)) or 'none'}")
    for parent, parent_data in releases.items():
        if parent_data.get("origin", "nvidia") != "nvidia":
            continue
        silent = [k for k in specific[parent] if k not in inherit and not _present(data, k)]
        if silent:
            raise ManifestError(path, "extends",
                                f"release {parent!r} has release-specific text this manifest neither restates nor "
                                f"inherits: {', '.join(silent)}; restate each, or list it under inherit: to keep "
                                f"{parent}'s text on purpose")


def deep_merge(base: dict, override: dict) -> dict:
    """Mappings merge key by key; anything else in `override` replaces what `base` had.

    A null in the child removes the parent's value (so a release can drop a component)."""
    out = dict(base)
    for key, value in override.items():
        if value is None and key in out:
            del out[key]
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _validate(path: Path, data: dict, chain: tuple[Path, ...]) -> Release:
    try:
        return Release.model_validate(data)
    except ValidationError as exc:
        # A misspelt key also leaves the right one missing: report the misspelling.
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        key, expected = describe_error(Release, errors[0])
        if len(chain) > 1:
            expected += f" (after extends: {', '.join(p.stem for p in chain[:-1])})"
        raise ManifestError(path, key, expected) from None


def describe_error(model: type[BaseModel], error: dict) -> tuple[str, str]:
    """Turn one pydantic error into (key path, what was expected)."""
    loc = tuple(error["loc"])
    # pydantic adds the validator's name to the path for constrained types; drop non-keys
    loc = tuple(part for part in loc if not (isinstance(part, str) and part.startswith("function-")))
    # a bad key of a mapping: pydantic appends "[key]" after the key itself
    loc = tuple(part for part in loc if part != "[key]")
    key = ".".join(str(p) for p in loc)
    kind = error["type"]
    value = error.get("input")
    if kind == "extra_forbidden":
        allowed = sorted(_fields_at(model, loc[:-1]))
        name = str(loc[-1])
        return key, f"unknown key{_did_you_mean(name, allowed)}; expected one of: {', '.join(allowed)}"
    if kind == "missing":
        return key, "required key is missing"
    if kind == "invalid_key":
        return key, f"keys are strings; got {value!r} (quote it)"
    ctx = error.get("ctx") or {}
    if kind == "ngcbuild_missing" and ctx.get("key"):
        # A whole-model check: the missing key is named in the error, not in its location.
        return ".".join(p for p in (key, ctx["key"]) if p), error["msg"]
    if kind in ("string_type", "int_type", "bool_type", "list_type", "dict_type", "model_type",
                "model_attributes_type", "literal_error", "float_type"):
        what = {"string_type": "a string", "bool_type": "true or false", "list_type": "a list",
                "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
                "int_type": "an integer", "float_type": "a number"}.get(kind)
        if kind == "literal_error":
            what = "one of " + error["ctx"]["expected"]
        hint = ""
        if kind == "string_type" and isinstance(value, (int, float)) and not isinstance(value, bool):
            hint = f" ({safeyaml.number_hint(value)})"
        return key, f"expected {what}, got {_show(value)}{hint}"
    return key, error["msg"]


def _show(value) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    source = getattr(value, "source", None)  # a number as written (20.10, not 20.1)
    return source if source is not None and len(source) <= 80 else excerpt(value)


def _fields_at(model: type[BaseModel], loc: tuple) -> set[str]:
    """The keys allowed at `loc` (a path into `model`), for "did you mean"."""
    annotation: object = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return set()
            annotation = field.annotation
        else:  # dict[K, V] value or list[V] item
            args = typing.get_args(annotation)
            annotation = args[-1] if args else None
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return set(annotation.model_fields)
    return set()


def _unwrap(annotation):
    """Optional[X] -> X."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, pytypes.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_components(path: Path, release: Release, catalog: Catalog) -> None:
    for name, component in release.components.items():
        entry = catalog.get(name)
        if entry is None:
            raise ManifestError(path, f"components.{name}",
                                f"unknown component{_did_you_mean(name, catalog.names())}; "
                                f"known: {', '.join(catalog.names())}")
        parts = release_parts(component.version)
        if parts < entry.version_parts:
            raise ManifestError(path, f"components.{name}.version",
                                f"{component.version!r} is not a full version "
                                f"(expected at least {entry.version_parts} numeric parts, e.g. {entry.example})")


def _check_pins_agree(path: Path, release: Release, catalog: Catalog, constraints: Constraints) -> None:
    """A pip-installed component and the constraints file must pin the same versions."""
    for name, component in release.components.items():
        if component.install != "pip":
            continue
        if component.packages:
            wanted = {package: (f"components.{name}.packages.{package}", version)
                      for package, version in component.packages.items()}
        else:
            package = component.package or catalog.get(name).pip_package
            if package is None:
                raise ManifestError(path, f"components.{name}.package",
                                    "install: pip needs a package name (none in templates/components.yaml)")
            wanted = {package: (f"components.{name}.version", component.version)}
        for package, (key, version) in wanted.items():
            pin = constraints.get(package)
            if pin is None:
                raise ManifestError(constraints.path, package,
                                    f"not pinned, but {path.name} installs component {name!r} with pip; "
                                    f"expected a line {package}=={version}")
            if pin.version != version:
                raise ManifestError(path, key,
                                    f"{version!r} conflicts with {constraints.path.name} "
                                    f"line {pin.line}: {pin.name}=={pin.version}")


def _check_met_by_base(path: Path, release: Release, constraints: Constraints) -> None:
    """A requirement the base image meets stands in for a distribution the image does not have: the one
    that requires it is pinned, the requirement is not (pinned, the tolerance would hide nothing real)."""
    for index, met in enumerate(release.pip.met_by_base):
        if constraints.get(met.distribution) is None:
            raise ManifestError(path, f"pip.met_by_base.{index}.distribution",
                                f"{met.distribution!r} is not pinned in {constraints.path.name}; expected a "
                                "distribution the image installs")
        pin = constraints.get(met.requires)
        if pin is not None:
            raise ManifestError(path, f"pip.met_by_base.{index}.requires",
                                f"{met.requires!r} is pinned in {constraints.path.name} (line {pin.line}), so the "
                                "image has it; expected a requirement no distribution of the image meets")
