"""Resolve a team's requirements on a base: for each target (the base's Python and manylinux tags on
each platform it builds), uv resolves the requirements with the base's pins as constraints, the
overridden pins released, and the distributions no index serves standing in as metadata-only wheels
(stand_ins.py). When that fails, each requirement is tried alone to name its conflict, and again with
the pins it collides with released to find the override that would accept it.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.derive import conflicts
from ngcbuild.derive.stand_ins import write_stand_in
from ngcbuild.derive.uv import compile_requirements
from ngcbuild.manifest.constraints import Pin
from ngcbuild.manifest.lock import LockedPin, parse_entries
from ngcbuild.verify.target import Target


@dataclass(frozen=True)
class StandIn:
    name: str
    version: str
    requires: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)


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


def resolve(problem: Problem, explain: bool = True) -> Outcome:
    """Every target resolved, or the conflicts of the first target that failed (named one by one
    when `explain`; otherwise uv's explanation as one entry)."""
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="ngcbuild-resolve-") as scratch:
        scratch = Path(scratch)
        find_links = [*problem.find_links, _stand_ins(problem, scratch / "stand-ins")]
        for target in problem.targets:
            run = _compile(problem, [*problem.requirements, *problem.base_names], problem.kept, target, scratch,
                           find_links, hashes=True)
            if run.ok:
                outcome.resolved[target.platform] = list(parse_entries(scratch / "resolved.txt", run.output))
                continue
            outcome.target = target
            outcome.conflicts = _explain(problem, target, scratch, find_links, run.message) if explain \
                else [_together(problem, run.message)]
            return outcome
    return outcome


def _stand_ins(problem: Problem, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    kept = {p.key for p in problem.kept}
    for stand_in in problem.stand_ins:
        if stand_in.key in kept:
            write_stand_in(folder, stand_in.name, stand_in.version, list(stand_in.requires))
    return folder


def _compile(problem: Problem, requirements: list[str], kept: tuple[Pin, ...], target: Target, scratch: Path,
             find_links: list[Path], hashes: bool):
    (scratch / "requirements.in").write_text("".join(f"{r}\n" for r in requirements))
    (scratch / "constraints.txt").write_text("".join(f"{p}\n" for p in sorted(kept, key=lambda p: p.key)))
    return compile_requirements(scratch / "requirements.in", scratch / "constraints.txt", target,
                                list(problem.indexes), find_links, scratch, ca_bundle=problem.ca_bundle,
                                index_as_of=problem.index_as_of, hashes=hashes)


def _explain(problem: Problem, target: Target, scratch: Path, find_links: list[Path], whole: str):
    """One conflict per requirement that fails alone; the override that accepts each."""
    found = []
    for requirement in problem.requirements:
        alone = _compile(problem, [requirement, *problem.base_names], problem.kept, target, scratch, find_links,
                         hashes=False)
        if alone.ok:
            continue
        message = conflicts.explanation(alone.message)
        collided = conflicts.named_pins(message, problem.kept)
        accepted = {}
        if collided:
            names = {p.key for p in collided}
            freed = tuple(p for p in problem.kept if p.key not in names)
            trial = _compile(problem, [requirement, *problem.base_names], freed, target, scratch, find_links,
                             hashes=False)
            if trial.ok:
                versions = {p.key: p.version for p in parse_entries(scratch / "resolved.txt", trial.output)}
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
