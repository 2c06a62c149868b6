"""`ngcbuild resolve --release R`: a derived release's requirements resolved against its base before
anything is built or pulled, and its lock written (constraints/R.lock), or each conflict named (exit 2).

The same inputs give the same lock, byte for byte: the entries sorted, every hash of each file, who
asked for each (the lock's check follows these), the header naming the inputs' digest (a pinned
`derive.index_as_of` fixes what the index may offer). The indexes are the base's, with the user's
index setting (core/indexes.py); that setting is this machine's, like the wheelhouse, and no part
of the lock.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ngcbuild.core.errors import UserError, shown_path
from ngcbuild.core.indexes import IndexSetting, day_end, release_indexes
from ngcbuild.core.outputs import write_file
from ngcbuild.core.project import Project
from ngcbuild.derive.as_of_index import check_dates_served
from ngcbuild.derive.lockfile import lock_entries
from ngcbuild.derive.report import Conflicts, conflicts_json, conflicts_text
from ngcbuild.engine.options import checked_ca_bundle, checked_wheelhouse, default_wheelhouse
from ngcbuild.manifest.derived import RESOLVE_HINT, base_pins_path
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.manifest.lock import lock_text
from ngcbuild.resolver.resolution import Outcome, Problem, resolve
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.uv import uv_version
from ngcbuild.verify.target import Target


def machine_inputs(wheelhouse: str | None) -> tuple[Path | None, Path | None]:
    """(the wheelhouse, the CA bundle) as `build` takes them: --wheelhouse or $PIP_FIND_LINKS; $PIP_CERT..."""
    house = checked_wheelhouse(wheelhouse) if wheelhouse is not None else default_wheelhouse(os.environ)
    return house, checked_ca_bundle(None, os.environ)


def targets_of(loaded: LoadedRelease) -> tuple[Target, ...]:
    return tuple(Target(*target) for target in loaded.derived.targets)


def problem_of(loaded: LoadedRelease, wheelhouse: Path | None, ca_bundle: Path | None, setting: IndexSetting,
               stand_ins: tuple[StandIn, ...] | None = None, *, index_as_of: str | None = "manifest") -> Problem:
    """The resolve a derived release asks for. `index_as_of`: the manifest's day unless given (None: today)."""
    derived = loaded.derived
    if stand_ins is None:  # a base release: what it builds from source, at the version its image lists
        stand_ins = tuple(StandIn(p.name, p.version) for p in derived.provided)
    if index_as_of == "manifest":
        index_as_of = day_end(loaded.release.derive.index_as_of)
    return Problem(base=derived.base, team=loaded.release.release,
                   requirements=tuple(r.text for r in derived.requirements),
                   kept=derived.kept_pins(), released=tuple(sorted(derived.overrides)), stand_ins=stand_ins,
                   protected=derived.protected, targets=targets_of(loaded),
                   indexes=tuple(release_indexes(loaded.release, setting, wheelhouse=wheelhouse is not None)),
                   find_links=(wheelhouse,) if wheelhouse else (), ca_bundle=ca_bundle, index_as_of=index_as_of)


def derived_release(project: Project, name: str) -> tuple[LoadedRelease, tuple[StandIn, ...] | None]:
    """A derived release loaded for a resolve, an image base's pins read from the image first."""
    loaded = load_release(project, name)
    if loaded.derived is None:
        raise UserError(f"{name} is not a derived release (manifests/derived/{name}.yaml); `ngcbuild fit "
                        "--requirements FILE` checks a requirement set against our releases")
    if loaded.derived.base_image is None:
        return loaded, None
    from ngcbuild.derive.image_base import read_inventory, write_base_pins

    image = loaded.derived.base_image
    inventory = read_inventory(image, loaded.release.python.version)
    write_base_pins(base_pins_path(project.constraints, name), project.root, image, inventory)
    return load_release(project, name), inventory.stand_ins  # now with the base's pins


def resolve_release(project: Project, name: str, setting: IndexSetting, wheelhouse: str | None = None,
                    as_json: bool = False, out=sys.stdout) -> dict:
    house, ca_bundle = machine_inputs(wheelhouse)
    loaded, stand_ins = derived_release(project, name)
    derived = loaded.derived
    problem = problem_of(loaded, house, ca_bundle, setting, stand_ins)
    check_dates_served(problem, f"derive.index_as_of in {shown_path(loaded.path)}")
    outcome = resolve(problem)
    manifest = shown_path(loaded.path)
    if not outcome.fits:
        where = f"Python {outcome.target.python} on {outcome.target.platform}"
        if as_json:
            out.write(conflicts_json(name, derived.base, outcome.conflicts, where))
        else:
            out.write(conflicts_text(name, derived.base, manifest, outcome.conflicts, where))
        out.flush()
        raise Conflicts(f"resolve {name}: {len(outcome.conflicts)} conflict(s) with {derived.base}; nothing was "
                        f"locked (add an override, or change {shown_path(derived.requirements_path)})")
    text = lock_of(loaded, outcome, setting)
    write_file(derived.lock_path, text, within=project.root)
    summary = lock_summary(loaded, outcome)
    if as_json:
        import json

        out.write(json.dumps({"release": name, "base": derived.base, "fits": True,
                              "lock": shown_path(derived.lock_path), **summary}, indent=2) + "\n")
    else:
        added = ", ".join(summary["added"]) or "nothing"
        moved = ", ".join(summary["moved"]) or "nothing"
        out.write(f"{name}: locked {len(summary['added']) + len(summary['moved'])} distributions on {derived.base} "
                  f"into {shown_path(derived.lock_path)}\n  added: {added}\n  moved by override: {moved}\n")
        if setting.index_from != "default":  # the machine's setting, never its credentials
            out.write(f"  index: {setting.described()}\n")
    return summary


def lock_of(loaded: LoadedRelease, outcome: Outcome, setting: IndexSetting | None = None) -> str:
    """The lock's text; its header records the index setting it was resolved against, without logins
    (`build` refuses the lock under another unless told otherwise)."""
    derived = loaded.derived
    unchanged = {p.key for p in derived.kept_pins()}
    entries = lock_entries(outcome.resolved, unchanged)
    header = [("release", loaded.release.release), ("base", derived.base), ("resolver", uv_version())]
    header += (setting if setting is not None else IndexSetting()).header_lines()
    header += [("target", f"Python {t.python} ({t.abi}) on {t.platform}, glibc {t.glibc}") for t in targets_of(loaded)]
    locked = {e.key: e.version for e in entries}
    for key, override in sorted(derived.overrides.items()):
        header.append(("override", f"{override.replaces} -> {locked.get(key) or 'not needed'}: {override.reason}"))
    command = RESOLVE_HINT.format(name=loaded.release.release)
    intro = [f"{shown_path(derived.lock_path)}: what derived release {loaded.release.release} adds to {derived.base},",
             f"pinned with every hash its index gives. Written by `{command}`;",
             f"do not edit: change {shown_path(loaded.path)} or {shown_path(derived.requirements_path)} "
             "and resolve again."]
    return lock_text(derived.inputs, header, entries, intro, requirements=requirements_name(loaded))


def requirements_name(loaded: LoadedRelease) -> str:
    """The team's requirements file as the lock names it (a "-r" requirer): its path in the project."""
    return str(loaded.release.derive.requirements)


def lock_summary(loaded: LoadedRelease, outcome: Outcome) -> dict:
    derived = loaded.derived
    entries = lock_entries(outcome.resolved, {p.key for p in derived.kept_pins()})
    base = {p.key: p for p in derived.base_pins()}
    added = sorted({f"{e.name}=={e.version}" for e in entries if e.key not in base})
    moved = sorted({f"{base[e.key]} -> {e.version}" for e in entries if e.key in base})
    return {"added": added, "moved": moved}
