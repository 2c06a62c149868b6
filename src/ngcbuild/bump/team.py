"""`ngcbuild bump --release TEAM` for a derived release: a team's image follows its base. The team's
requirements are resolved again, with their overrides, on the base's pins as they are now (or on
`--base-release NAME`, the base's proposal that `bump --as NAME` wrote), at the indexes' newest (a
pinned derive.index_as_of is the lock's day, not bump's); then it says what moved against the lock,
and what now conflicts, each conflict with its chain and the override that would accept it. It writes
nothing: `ngcbuild resolve` writes the lock once the team agrees.

--check: exit 0 when the lock is what the team's requirements resolve to now, 1 when something moved
or now conflicts, 3 when it could not check."""

from __future__ import annotations

from ngcbuild.bump.proposal_files import NewerAvailable
from ngcbuild.core.errors import UserError
from ngcbuild.core.indexes import IndexSetting, release_indexes
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.derive.lockfile import lock_entries
from ngcbuild.derive.report import Conflicts, conflicts_text
from ngcbuild.derive.resolve import machine_inputs
from ngcbuild.manifest.constraints import Pin
from ngcbuild.manifest.derived import built_from_source, protected_names
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.manifest.platforms import interpreter
from ngcbuild.resolver.deadline import run_deadline
from ngcbuild.resolver.resolution import Problem, resolve
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.verify.target import Target


def bump_team(project: Project, loaded: LoadedRelease, setting: IndexSetting, base_release: str | None, *,
              check: bool, out) -> dict:
    say = printer(out)
    derived, team = loaded.derived, loaded.release.release
    if derived.base_release is None:
        raise UserError(f"{team} is built on an image ({derived.base_image}): bump follows a base release of ours; "
                        f"`ngcbuild resolve --release {team}` reads the image again")
    base = load_release(project, base_release or derived.base_release)
    if base.derived is not None:
        raise UserError(f"--base-release {base.release.release} is a derived release; expected one of ours (the "
                        f"proposal `bump --release {derived.base_release} --as NAME` wrote)")
    house, ca_bundle = machine_inputs(None)
    pins, moved_base = _base_pins(loaded, base)
    release = base.release
    platforms = tuple(dict.fromkeys((release.build.platform, *release.build.published_platforms)))
    problem = Problem(base=release.release, team=team, requirements=tuple(r.text for r in derived.requirements),
                      kept=tuple(p for p in pins if p.key not in derived.overrides),
                      released=tuple(sorted(derived.overrides)),
                      stand_ins=tuple(StandIn(p.name, p.version) for p in built_from_source(release, base.catalog,
                                                                                            base.constraints)),
                      protected=frozenset(protected_names(release, base.catalog)),
                      targets=tuple(Target(interpreter(release), p, release.os.glibc) for p in platforms),
                      indexes=tuple(release_indexes(loaded.release, setting, wheelhouse=house is not None)),
                      find_links=(house,) if house else (), ca_bundle=ca_bundle)
    say(f"bump: resolving {team}'s {len(problem.requirements)} requirements on {release.release}'s "
        f"{len(pins)} pins at the indexes' newest")
    if loaded.release.derive.index_as_of:
        say(f"bump: the indexes are read as they are today; the lock was resolved as they were on "
            f"{loaded.release.derive.index_as_of} (derive.index_as_of), which `resolve` keeps until it is changed")
    outcome = resolve(problem, deadline=run_deadline())
    for line in moved_base:
        say(f"  base: {line}")
    if not outcome.fits:
        where = f"Python {outcome.target.python} on {outcome.target.platform}"
        out.write(conflicts_text(team, release.release, str(loaded.path), outcome.conflicts, where))
        message = (f"{team}: {len(outcome.conflicts)} requirement(s) now conflict with {release.release}; the lock "
                   "cannot follow its base until the requirements or overrides change")
        if check:
            raise NewerAvailable(message)
        raise Conflicts(message)
    kept = {p.key for p in problem.kept}
    new = {e.key: e for e in lock_entries(outcome.resolved, kept)}
    old = {e.key: e for e in (derived.lock.pins if derived.lock is not None else ())}
    changes = [f"{old[k].name} {old[k].version} -> {new[k].version}" for k in sorted(set(old) & set(new))
               if old[k].version != new[k].version]
    changes += [f"{new[k].name} {new[k].version} (added)" for k in sorted(set(new) - set(old))]
    changes += [f"{old[k].name} {old[k].version} (no longer needed)" for k in sorted(set(old) - set(new))]
    if derived.lock is None:
        say(f"bump: {team} has no readable lock ({derived.lock_problem or 'none'}); all of the above is new")
    if not changes and not moved_base:
        say(f"bump: {team} is current: its lock is what its requirements resolve to on {release.release} today")
        return {"changed": False}
    for line in changes:
        say(f"  lock: {line}")
    summary = (f"{team}: {len(changes)} lock entr{'y' if len(changes) == 1 else 'ies'} would move on "
               f"{release.release}; `ngcbuild resolve --release {team}` writes them")
    if check:
        raise NewerAvailable(summary)
    say(f"bump: {summary}")
    return {"changed": True, "lock": changes, "base": moved_base}


def _base_pins(loaded: LoadedRelease, base: LoadedRelease) -> tuple[tuple[Pin, ...], list[str]]:
    """The new base's pins (its constraints and what it builds from source), and how they differ from
    the pins the team's lock was resolved on."""
    release = base.release
    pins = base.constraints.pins + built_from_source(release, base.catalog, base.constraints)
    before = {p.key: p for p in loaded.derived.base_pins()}
    after = {p.key: p for p in pins}
    moved = [f"{before[k].name} {before[k].version} -> {after[k].version}" for k in sorted(set(before) & set(after))
             if before[k].version != after[k].version]
    moved += [f"{after[k]} (new)" for k in sorted(set(after) - set(before))]
    moved += [f"{before[k]} (gone)" for k in sorted(set(before) - set(after))]
    return pins, moved
