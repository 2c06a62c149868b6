"""Resolve a team's requirements on a base: for each target (the base's Python and manylinux tags on
each platform it builds), uv resolves the requirements with the base's pins as constraints, the
overridden pins released, and the distributions no index serves standing in as metadata-only wheels
(stand_ins.py). When that fails, each requirement is tried alone to name its conflict, and again with
the pins it collides with released to find the override that would accept it. What `resolve`,
`fit` and a team's `bump` ask.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ngcbuild.manifest.constraints import Pin
from ngcbuild.manifest.lock import LockedPin
from ngcbuild.resolver import conflicts
from ngcbuild.resolver.deadline import Deadline
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.uv import Uv
from ngcbuild.verify.target import Target


@dataclass(frozen=True)
class Problem:
    base: str  # what messages call the base: "dev", or the image
    team: str  # what messages call the team's side: the derived release, or the requirements file
    requirements: tuple[str, ...]  # the team's, as written back by packaging
    kept: tuple[Pin, ...]  # the base's pins that hold (constraints)
    released: tuple[str, ...]  # canonical names of overridden pins (the resolver picks them)
    stand_ins: tuple[StandIn, ...]  # base distributions no index serves
    protected: frozenset[str]
    targets: tuple[Target, ...]
    indexes: tuple[str, ...]
    find_links: tuple[Path, ...] = ()
    ca_bundle: Path | None = None
    index_as_of: str | None = None

    @property
    def base_names(self) -> list[str]:
        """With an override, every distribution of the base is resolved too: a moved pin must still
        meet what the base's other distributions require."""
        if not self.released:
            return []
        return sorted({p.key for p in self.kept} | set(self.released))


@dataclass
class Outcome:
    resolved: dict[str, list[LockedPin]] = field(default_factory=dict)  # platform -> every distribution
    conflicts: list[conflicts.Conflict] = field(default_factory=list)
    target: Target | None = None  # where the conflicts were found

    @property
    def fits(self) -> bool:
        return not self.conflicts


def resolve(problem: Problem, explain: bool = True, deadline: Deadline | None = None) -> Outcome:
    """Every target resolved, or the conflicts of the first target that failed (named one by one
    when `explain`; otherwise uv's explanation as one entry)."""
    outcome = Outcome()
    kept = {p.key for p in problem.kept}
    stand_ins = tuple(s for s in problem.stand_ins if s.key in kept)
    with Uv(list(problem.indexes), find_links=problem.find_links, stand_ins=stand_ins, ca_bundle=problem.ca_bundle,
            index_as_of=problem.index_as_of, deadline=deadline) as uv:
        for target in problem.targets:
            run = uv.compile([*problem.requirements, *problem.base_names], _lines(problem.kept), target, hashes=True)
            if run.ok:
                outcome.resolved[target.platform] = list(run.pins)
                continue
            outcome.target = target
            outcome.conflicts = _explain(problem, uv, target, run.message) if explain \
                else [_together(problem, run.message)]
            return outcome
    return outcome


def _lines(pins: tuple[Pin, ...]) -> list[str]:
    return [str(p) for p in sorted(pins, key=lambda p: p.key)]


def _explain(problem: Problem, uv: Uv, target: Target, whole: str) -> list[conflicts.Conflict]:
    """One conflict per requirement that fails alone; the override that accepts each."""
    found = []
    for requirement in problem.requirements:
        alone = uv.compile([requirement, *problem.base_names], _lines(problem.kept), target)
        if alone.ok:
            continue
        message = conflicts.explanation(alone.message)
        collided = conflicts.named_pins(message, problem.kept)
        accepted = {}
        if collided:
            names = {p.key for p in collided}
            freed = tuple(p for p in problem.kept if p.key not in names)
            trial = uv.compile([requirement, *problem.base_names], _lines(freed), target)
            if trial.ok:
                versions = {p.key: p.version for p in trial.pins}
                accepted = {name: versions.get(name, "(not needed)") for name in sorted(names)}
        found.append(conflicts.Conflict(
            requirement, collided, conflicts.chain(message, problem.base, collided, requirement, problem.team), message,
            tuple(p.key for p in collided if p.key in problem.protected), accepted,
            conflicts.traps(message, requirement, collided, problem.base)))
    return found or [_together(problem, whole)]


def _together(problem: Problem, output: str) -> conflicts.Conflict:
    """The requirements conflict with one another (or the set as a whole), not each with the base."""
    message = conflicts.explanation(output)
    collided = conflicts.named_pins(message, problem.kept)
    return conflicts.Conflict("the requirements together", collided,
                              conflicts.chain(message, problem.base, collided, "", problem.team),
                              message, tuple(p.key for p in collided if p.key in problem.protected), {},
                              conflicts.traps(message, "", collided, problem.base))
