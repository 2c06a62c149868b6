"""`ngcbuild resolve --release R`: a derived release's requirements resolved against its base before
anything is built or pulled, and its lock written (constraints/R.lock), or each conflict named (exit 2).

The same inputs give the same lock, byte for byte: the entries sorted, every hash of each file, the
header naming the inputs' digest (a pinned `derive.index_as_of` fixes what the index may offer).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ngcbuild.core.errors import UserError, shown_path
from ngcbuild.core.outputs import write_file
from ngcbuild.core.project import Project
from ngcbuild.derive.lockfile import lock_entries
from ngcbuild.derive.report import Conflicts, conflicts_json, conflicts_text
from ngcbuild.derive.resolution import Outcome, Problem, StandIn, resolve
from ngcbuild.derive.uv import uv_version
from ngcbuild.engine.options import checked_ca_bundle, checked_wheelhouse, default_wheelhouse
from ngcbuild.manifest.derived import RESOLVE_HINT, base_pins_path
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.manifest.lock import lock_text
from ngcbuild.verify.sources import PYPI
from ngcbuild.verify.target import Target


def machine_inputs(wheelhouse: str | None) -> tuple[Path | None, Path | None]:
    """(the wheelhouse, the CA bundle) as `build` takes them: --wheelhouse or $PIP_FIND_LINKS; $PIP_CERT..."""
    house = checked_wheelhouse(wheelhouse) if wheelhouse is not None else default_wheelhouse(os.environ)
    return house, checked_ca_bundle(None, os.environ)


def targets_of(loaded: LoadedRelease) -> tuple[Target, ...]:
    return tuple(Target(*target) for target in loaded.derived.targets)


def problem_of(loaded: LoadedRelease, wheelhouse: Path | None, ca_bundle: Path | None,
               stand_ins: tuple[StandIn, ...] | None = None) -> Problem:
    """The resolve a derived release asks for. A wheelhouse replaces the base's extra indexes (as for
    `build`): it carries what they would give (dev's CPU torch)."""
    derived = loaded.derived
    if stand_ins is None:  # a base release: what it builds from source, at the version its image lists
        stand_ins = tuple(StandIn(p.name, p.version) for p in derived.provided)
    indexes = (PYPI, *(() if wheelhouse else derived.index_urls))
    return Problem(base=derived.base, team=loaded.release.release,
                   requirements=tuple(r.text for r in derived.requirements),
                   kept=derived.kept_pins(), released=tuple(sorted(derived.overrides)), stand_ins=stand_ins,
                   protected=derived.protected, targets=targets_of(loaded), indexes=indexes,
                   find_links=(wheelhouse,) if wheelhouse else (), ca_bundle=ca_bundle,
                   index_as_of=_day_end(loaded.release.derive.index_as_of))


def _day_end(day) -> str | None:
    return f"{day.isoformat()}T23:59:59Z" if day else None


def resolve_release(project: Project, name: str, wheelhouse: str | None = None, as_json: bool = False,
                    out=sys.stdout) -> dict:
    house, ca_bundle = machine_inputs(wheelhouse)
    loaded = load_release(project, name)
    if loaded.derived is None:
        raise UserError(f"{name} is not a derived release (manifests/derived/{name}.yaml); `ngcbuild fit "
                        "--requirements FILE` checks a requirement set against our releases")
    stand_ins = None
    if loaded.derived.base_image is not None:
        from ngcbuild.derive.image_base import read_inventory, write_base_pins

        image = loaded.derived.base_image
        inventory = read_inventory(image, loaded.release.python.version)
        write_base_pins(base_pins_path(project.constraints, name), project.root, image, inventory)
        loaded = load_release(project, name)  # now with the base's pins
        stand_ins = inventory.stand_ins
    derived = loaded.derived
    outcome = resolve(problem_of(loaded, house, ca_bundle, stand_ins))
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
    text = lock_of(loaded, outcome)
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
    return summary


def lock_of(loaded: LoadedRelease, outcome: Outcome) -> str:
    derived = loaded.derived
    unchanged = {p.key for p in derived.kept_pins()}
    entries = lock_entries(outcome.resolved, unchanged)
    header = [("release", loaded.release.release), ("base", derived.base), ("resolver", uv_version())]
    header += [("target", f"Python {t.python} ({t.abi}) on {t.platform}, glibc {t.glibc}") for t in targets_of(loaded)]
    locked = {e.key: e.version for e in entries}
    for key, override in sorted(derived.overrides.items()):
        header.append(("override", f"{override.replaces} -> {locked.get(key) or 'not needed'}: {override.reason}"))
    command = RESOLVE_HINT.format(name=loaded.release.release)
    intro = [f"{shown_path(derived.lock_path)}: what derived release {loaded.release.release} adds to {derived.base},",
             f"pinned with every hash its index gives. Written by `{command}`;",
             f"do not edit: change {shown_path(loaded.path)} or {shown_path(derived.requirements_path)} "
             "and resolve again."]
    return lock_text(derived.inputs, header, entries, intro)


def lock_summary(loaded: LoadedRelease, outcome: Outcome) -> dict:
    derived = loaded.derived
    entries = lock_entries(outcome.resolved, {p.key for p in derived.kept_pins()})
    base = {p.key: p for p in derived.base_pins()}
    added = sorted({f"{e.name}=={e.version}" for e in entries if e.key not in base})
    moved = sorted({f"{base[e.key]} -> {e.version}" for e in entries if e.key in base})
    return {"added": added, "moved": moved}
