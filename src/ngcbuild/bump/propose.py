"""The next release of one made from public wheels, chosen from its indexes by its own policy.

1. The roots: what the release asks for. Its pins that no other pin requires (ninja, pip: wanted for
   themselves), every package of a pip-installed component, and the policy's `require` entries. A pin
   only some other pin needed is not asked for again: when nothing needs it any more, it goes.
2. The leader (torch): its versions on the indexes with a wheel for every platform, newest first, less
   those the policy holds back. For each, the resolver resolves the roots with the leader pinned under
   the policy's constraints (its holds, the CUDA major on the distribution that carries it) for every
   platform, the second under the pins of the first, so one constraints file fits all. The first
   leader that resolves is taken; a newer one that did not is reported with the resolver's reason.
3. Everything else is what the resolver chose: the newest each requirement of the whole set admits. A
   pin below the newest version on its index is reported with what excludes the newer one.

The resolver is uv, and every distribution's metadata is read by verify's reader (resolver/whole_set.py):
metadata files and range reads, never a whole wheel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from ngcbuild.core.errors import OperationError
from ngcbuild.core.references import shown_url
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.resolver.whole_set import Dist, Unresolvable, WholeSet
from ngcbuild.verify.pins import supports_python
from ngcbuild.verify.target import Target


@dataclass(frozen=True)
class NotTaken:
    """A newer version left out, and why."""

    name: str
    version: str
    reason: str


@dataclass(frozen=True)
class Proposal:
    parent: LoadedRelease
    name: str  # the new release (--as)
    day: str  # when the indexes were read (YYYY-MM-DD)
    indexes: tuple[str, ...]  # the reachable indexes read
    unreachable: tuple[str, ...]  # the release's indexes that were not, with why
    targets: tuple[Target, ...]
    leader: Dist
    pins: dict[str, Dist]  # canonical name -> the distribution proposed
    roots: tuple[str, ...]
    not_taken: tuple[NotTaken, ...]  # newer leaders not taken
    behind: tuple[NotTaken, ...]  # pins below the newest on their index
    removed_by: dict[str, list[str]] = field(default_factory=dict)  # old pin left out -> who required it

    @property
    def release(self):
        return self.parent.release

    def old_pins(self) -> dict[str, str]:
        return {pin.key: pin.version for pin in self.parent.constraints.pins}

    def new_pins(self) -> dict[str, str]:
        return {key: dist.version for key, dist in self.pins.items()}

    @property
    def changed(self) -> bool:
        return self.old_pins() != self.new_pins()


def targets_of(release) -> tuple[Target, ...]:
    platforms = dict.fromkeys((release.build.platform, *release.build.published_platforms))
    python = release.python.interpreter_version or f"{release.python.version}.0"
    return tuple(Target(python, platform, release.os.glibc) for platform in platforms)


def reachable_indexes(release, indexes_of_release: list[str], web) -> tuple[list[str], list[str]]:
    indexes, unreachable = [], []
    for index in indexes_of_release:
        why = web.unreachable(index)
        if why:
            unreachable.append(why)
        else:
            indexes.append(index)
    if not indexes:
        raise OperationError(f"none of the indexes of {release.release} can be reached: {'; '.join(unreachable)}")
    return indexes, unreachable


def policy_constraints(policy) -> list[str]:
    lines = [f"{name}{held.versions}" for name, held in policy.hold.items()]
    if policy.cuda is not None:
        major = int(policy.cuda.major)
        lines.append(f"{policy.cuda.carried_by}>={major},<{major + 1}")
    return lines


def pip_component_packages(loaded: LoadedRelease) -> list[str]:
    """Every package a pip-installed component installs (its `packages`, or its one package)."""
    names = []
    for name, component in loaded.release.components.items():
        if component.install != "pip":
            continue
        entry = loaded.catalog.get(name)
        names += list(component.packages) or [component.package or entry.pip_package]
    return names


def active(requirement: Requirement, environment: dict, extra: str) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**environment, "extra": extra})
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True  # undecidable: counted, the stricter reading (as verify's closure does)


def _requirement(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def requirers(dists: dict[str, Dist], environments: list[dict], extras: dict[str, set[str]] | None = None
              ) -> dict[str, list[tuple[Dist, Requirement]]]:
    """Who requires whom in a resolved set, on any of the targets: dependency -> [(requirer, requirement)].
    A requirement under `extra == X` counts where X was asked of its requirer (`extras`; when None, the
    extras each requirement of the set asks for)."""
    if extras is None:
        extras = {}
        for dist in dists.values():
            for text in dist.requires:
                requirement = _requirement(text)
                if requirement is not None and requirement.extras:
                    extras.setdefault(canonicalize_name(requirement.name), set()).update(
                        canonicalize_name(e) for e in requirement.extras)
    found: dict[str, list[tuple[Dist, Requirement]]] = {}
    for key, dist in dists.items():
        for text in dist.requires:
            requirement = _requirement(text)
            if requirement is None:
                continue
            asked = {"", *extras.get(key, ())}
            if any(active(requirement, env, extra) for env in environments for extra in asked):
                found.setdefault(canonicalize_name(requirement.name), []).append((dist, requirement))
    return found


def extras_asked(dists: dict[str, Dist], policy) -> dict[str, set[str]]:
    extras: dict[str, set[str]] = {}
    texts = [t for d in dists.values() for t in d.requires] + list(policy.require if policy else ())
    for text in texts:
        requirement = _requirement(text)
        if requirement is not None and requirement.extras:
            extras.setdefault(canonicalize_name(requirement.name), set()).update(
                canonicalize_name(e) for e in requirement.extras)
    return extras


def roots_of(loaded: LoadedRelease, old: dict[str, Dist], environments: list[dict]) -> list[str]:
    required = set(requirers(old, environments))
    names = [pin.name for pin in loaded.constraints.pins if pin.key not in required]
    names += pip_component_packages(loaded)
    return list({canonicalize_name(n): n for n in names}.values())


def propose(parent: LoadedRelease, name: str, whole: WholeSet, unreachable: list[str], day: str,
            say=lambda line: None) -> Proposal:
    """`whole` reads the reachable indexes (`unreachable`: the release's others, with why)."""
    release = parent.release
    policy = release.bump
    targets = targets_of(release)
    indexes = whole.indexes
    environments = [t.markers() for t in targets]
    offered = [set(whole.versions_on(policy.leader, t)) for t in targets]
    everywhere = sorted((v for v in set.intersection(*offered) if v.local == policy.leader_local), reverse=True)
    if not everywhere:
        build = f" of the +{policy.leader_local} builds (bump.leader_local)" if policy.leader_local else ""
        missed = f"; not read: {'; '.join(unreachable)}" if unreachable else ""
        raise OperationError(f"no version{build} of {policy.leader} on {', '.join(shown_url(i) for i in indexes)} has "
                             f"a wheel for Python {targets[0].python} on {' and '.join(t.platform for t in targets)}"
                             f"{missed}")
    say(f"bump: reading the metadata of {release.release}'s {len(parent.constraints.pins)} pins "
        f"({', '.join(shown_url(i) for i in indexes)})")
    try:
        old = whole.metadata_of([str(p) for p in parent.constraints.pins], targets[0])
    except OperationError as exc:
        raise OperationError(f"the pins of {release.release} cannot be read from its indexes ({exc}); "
                             f"see `ngcbuild verify --release {release.release}`") from None
    roots = roots_of(parent, old, environments)
    leader_key = canonicalize_name(policy.leader)
    constraints = policy_constraints(policy)
    held = policy.hold.get(policy.leader) or next(
        (h for n, h in policy.hold.items() if canonicalize_name(n) == leader_key), None)
    admitted = [v for v in everywhere if held is None or SpecifierSet(held.versions).contains(v, prereleases=True)]
    not_taken = []
    chosen: dict[str, Dist] | None = None
    for version in admitted[:policy.candidates]:
        say(f"bump: resolving {policy.leader} {version} with {len(roots)} requirements for "
            f"{', '.join(t.platform for t in targets)}")
        try:
            chosen = _resolve_everywhere(policy, version, roots, constraints, targets, whole)
            break
        except Unresolvable as exc:
            not_taken.append(NotTaken(policy.leader, str(version), exc.reason))
    if chosen is None:
        tried = "; ".join(f"{n.version}: {n.reason}" for n in not_taken) or "none admitted by the policy"
        raise Unresolvable(f"no {policy.leader} the policy of {release.release} admits resolves with the rest: {tried}")
    leader = chosen[leader_key]
    if held is not None:  # newer ones the policy holds back, each with its reason
        for version in everywhere:
            if version > Version(leader.version) and version not in admitted:
                not_taken.append(NotTaken(policy.leader, str(version), f"held back by the policy ({held.versions}): "
                                                                      f"{held.reason}"))
    extras = extras_asked(chosen, policy)
    behind = behind_newest(chosen, targets[0], whole, environments, extras, policy)
    old_required = requirers(old, environments)
    removed_by = {key: sorted(f"{d.name} {d.version}" for d, _ in old_required.get(key, []))
                  for key in set(old) - set(chosen)}
    for pin in parent.constraints.pins:  # a pin whose metadata could not be read counts as removed too
        if pin.key not in chosen:
            removed_by.setdefault(pin.key, [])
    return Proposal(parent, name, day, tuple(indexes), tuple(unreachable), targets, leader, chosen, tuple(roots),
                    tuple(sorted(not_taken, key=lambda n: Version(n.version), reverse=True)), behind, removed_by)


def _resolve_everywhere(policy, version, roots, constraints, targets, whole: WholeSet) -> dict[str, Dist]:
    """One leader version resolved for every target."""
    leader_key = canonicalize_name(policy.leader)
    requirements = [f"{policy.leader}=={version}", *(r for r in roots if canonicalize_name(r) != leader_key),
                    *policy.require]
    pins = resolve_everywhere(requirements, constraints, targets, whole)
    cuda = policy.cuda
    if cuda is not None and canonicalize_name(cuda.carried_by) not in pins:
        raise Unresolvable(f"{policy.leader} {version} needs no {cuda.carried_by}: not a CUDA {cuda.major} build "
                           "(bump.cuda)")
    return pins


def resolve_everywhere(requirements: list[str], constraints: list[str], targets, whole: WholeSet) -> dict[str, Dist]:
    """`requirements` resolved for every target, the second under the pins of the first (so that one
    constraints file fits every platform); every distribution any target needs."""
    pins: dict[str, Dist] = {}
    for target in targets:
        lines = constraints + [f"{d.key}=={d.version}" for d in pins.values()]
        for key, dist in whole.resolve(requirements, lines, target).items():
            pins.setdefault(key, dist)
    return dict(sorted(pins.items()))


def behind_newest(pins: dict[str, Dist], target, whole: WholeSet, environments, extras, policy) -> tuple[NotTaken, ...]:
    newest = whole.newest_versions([d.name for d in pins.values()], target)
    who = requirers(pins, environments, extras)
    holds = {canonicalize_name(n): h for n, h in (policy.hold.items() if policy else ())}
    found = []
    for key, dist in pins.items():
        top = newest.get(dist.name)
        if top is None or top <= Version(dist.version):
            continue
        requires_python = whole.requires_python(dist.name, top, target)
        too_new = requires_python if not supports_python(requires_python, target.python_full) else None
        found.append(NotTaken(dist.name, str(top), _why_not(key, dist, top, who, holds, too_new, policy)))
    return tuple(found)


def _why_not(key, dist, top, who, holds, too_new_python: str | None, policy) -> str:
    reasons = []
    if key in holds and not SpecifierSet(holds[key].versions).contains(top, prereleases=True):
        reasons.append(f"held back by the policy ({holds[key].versions}): {holds[key].reason}")
    if policy is not None and policy.cuda is not None and key == canonicalize_name(policy.cuda.carried_by) \
            and top.major != int(policy.cuda.major):
        reasons.append(f"the policy stays on CUDA {policy.cuda.major} (bump.cuda)")
    if too_new_python:
        reasons.append(f"{top} requires Python {too_new_python}")
    for requirer, requirement in who.get(key, []):
        if not requirement.specifier.contains(top, prereleases=True):
            reasons.append(f"{requirer.name} {requirer.version} requires {requirement.name}{requirement.specifier}")
    if not reasons:
        reasons.append(f"nothing in the set excludes {top}; the resolver chose {dist.version} (a platform may lack a "
                       "wheel of the newer one)")
    return "; ".join(dict.fromkeys(reasons))
