"""The one check of a derived release's lock before anything renders or builds it. Render and build
call `check_lock` and nothing else; what the lock must satisfy is decided here.

The lock is the team's file, so it is checked, not trusted. Its header binds the digest of the
resolve's inputs (stale: refused); its body is checked against the derived manifest, the team's
requirements and the base's pins, offline and in milliseconds:

- every entry carries its --hash lines (pip installs it with --require-hashes);
- no entry moves a pin of the base (a protected one or any other) unless an override of the manifest
  names it (with its reason: manifest/derive_spec.py refuses a blank one);
- every entry is in the closure of the team's requirements and overrides: a requirement itself, or
  asked for (`# via`, the resolver's own record of who required it) by an entry so reached or by a
  distribution of the base;
- every entry of a distribution the team requires satisfies that requirement (its version in the
  specifier, a URL entry only where the requirement names that URL);
- and then the body is byte for byte the one resolve wrote: the digest its header records
  (`body-sha256`), which catches what the rules above cannot see offline.

A hand-edited entry is refused naming its line and what `resolve` would write instead. What this does
not judge offline is whether a locked distribution's own metadata is what `# via` says: `resolve`
reads it from the index (and writes it so), and the image's `pip check` reads it from the installed
files (the smoke suite).
"""

from __future__ import annotations

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ngcbuild.core.errors import ManifestError, UserError, shown_path
from ngcbuild.core.project import Project
from ngcbuild.core.references import shown_url
from ngcbuild.manifest.derived import RESOLVE_HINT
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.manifest.lock import BODY_KEY, LockedPin
from ngcbuild.manifest.platforms import markers


def check_lock(project: Project, loaded: LoadedRelease) -> None:
    """Refuse (UserError, one line naming `ngcbuild resolve`) a lock that is missing, damaged, stale,
    or whose body is not what the resolver would write for these inputs."""
    derived = loaded.derived
    command = RESOLVE_HINT.format(name=loaded.release.release)
    state = derived.lock_state
    if state == "missing":
        raise UserError(f"{shown_path(derived.lock_path)}: no lock for derived release {loaded.release.release}; "
                        f"run `{command}` first (it resolves the requirements against {derived.base})")
    if state == "damaged":
        raise UserError(f"{derived.lock_problem}; run `{command}`")
    if state == "stale":
        raise UserError(f"{shown_path(derived.lock_path)} is stale: the manifest, the requirements or {derived.base}'s "
                        f"pins changed since it was resolved; run `{command}` and review the lock's diff")
    problem = body_problem(loaded)
    if problem is not None:
        line, text = problem
        raise ManifestError(derived.lock_path, f"line {line}" if line else "",
                            f"{text}; the lock is written by `{command}` only (run it and review the diff)")
    # what no rule above sees (a `# via` forged, a version moved within the specifier): the body is not
    # the one resolve wrote, whose digest it recorded in the header
    lock = derived.lock
    if lock.body_sha256 is None:
        raise UserError(f"{shown_path(derived.lock_path)}: no `# {BODY_KEY}:` line (the digest of the entries "
                        f"`resolve` wrote); run `{command}` to write the lock again")
    if not lock.body_as_written:
        raise UserError(f"{shown_path(derived.lock_path)}: its entries are not the ones `{command}` wrote (their "
                        f"sha256 is {lock.body_actual[:12]}..., the header's {BODY_KEY} {lock.body_sha256[:12]}...); "
                        "the lock is written by resolve only (run it and review the diff)")


def body_problem(loaded: LoadedRelease) -> tuple[int | None, str] | None:
    """(line, what is wrong and what resolve would write instead) of the first entry that is not what
    the resolver writes (line None: an entry that is missing), or None."""
    derived = loaded.derived
    entries = derived.lock.pins
    base = {pin.key: pin for pin in derived.base_pins()}
    overrides = derived.overrides
    required = {r.name: r for r in derived.requirements}
    requirements_file = str(loaded.release.derive.requirements)
    environments = [markers(python, platform) for python, platform, _ in derived.targets]
    for entry in entries:
        shown = _shown(entry)
        if not entry.hashes:
            return entry.line, (f"{shown} carries no --hash=sha256 line; resolve writes every hash its index gives for "
                                "the file, and pip installs the lock with --require-hashes")
        pin = base.get(entry.key)
        if pin is not None and entry.key not in overrides:
            kind = "protected pin" if entry.key in derived.protected else "pin"
            return entry.line, (f"{shown} moves {derived.base}'s {kind} {pin} with no override in "
                                f"{shown_path(loaded.path)}; resolve would write no entry for {entry.name} (it stays "
                                f"{pin.version}, the base's) unless derive.overrides replaces it, with its reason")
        requirement = required.get(entry.key)
        if entry.url is not None and (requirement is None or requirement.url != entry.url):
            return entry.line, (f"{shown} is a URL entry that no requirement of {requirements_file} names; resolve "
                                "writes a URL entry only for a requirement that gives that URL")
        if requirement is not None and not _satisfies(entry, requirement):
            return entry.line, (f"{shown} does not satisfy the team's requirement {requirement.text} "
                                f"({requirements_file} line {requirement.line}); resolve would write a version that "
                                "does")
    unreached = _outside_closure(entries, set(required) | set(overrides), set(base))
    if unreached is not None:
        return unreached.line, (f"{_shown(unreached)} is required by nothing the team asks for (its `# via` names "
                                f"{_who(unreached)}, none of them a requirement of {requirements_file}, an entry the "
                                f"team's requirements reach, or a distribution of {derived.base}); resolve would "
                                "write no entry for it")
    locked = {entry.key for entry in entries}
    for requirement in derived.requirements:
        if requirement.name in base or requirement.name in locked:
            continue
        if _applies(requirement, environments):
            return None, (f"the team's requirement {requirement.text} ({requirements_file} line {requirement.line}) "
                       f"has no entry, and {derived.base} does not hold it; resolve would lock it")
    return None


def _shown(entry: LockedPin) -> str:
    head = f"{entry.name} @ {shown_url(entry.url)}" if entry.url else f"{entry.name}=={entry.version}"
    return f"{head} ; {entry.marker}" if entry.marker else head


def _who(entry: LockedPin) -> str:
    names = ["the team's requirements" if who == "-r" else who for who in entry.via]
    return ", ".join(names) if names else "nobody"


def _satisfies(entry: LockedPin, requirement) -> bool:
    if requirement.url is not None:
        return entry.url == requirement.url
    if entry.version is None:
        return False
    try:
        return SpecifierSet(str(requirement.requirement.specifier)).contains(Version(entry.version), prereleases=True)
    except InvalidVersion:
        return False


def _outside_closure(entries, roots: set[str], base: set[str]) -> LockedPin | None:
    """The first entry (in the file's order) the team's requirements do not reach through `# via`. Linear in
    the entries and their `# via` names whatever their order (issue 54 item 1: a chain of 20,000 entries,
    each `# via` the next, was a fixpoint of one entry a pass): each entry is keyed once, then reached from
    the roots and the base through an index of who names whom."""
    keys = [entry.key for entry in entries]  # canonicalised once each
    asked_by: dict[str, list[str]] = {}  # a distribution -> the entries whose `# via` names it
    for key, entry in zip(keys, entries, strict=True):
        for who in entry.via:
            if who != "-r":
                asked_by.setdefault(who, []).append(key)
    reached = {key for key in keys if key in roots}
    waiting = list(reached) + [who for who in asked_by if who in base]
    while waiting:
        for key in asked_by.pop(waiting.pop(), ()):
            if key not in reached:
                reached.add(key)
                waiting.append(key)
    return next((entry for key, entry in zip(keys, entries, strict=True) if key not in reached), None)


def _applies(requirement, environments: list[dict]) -> bool:
    marker = requirement.requirement.marker
    if marker is None:
        return True
    try:
        return any(Marker(str(marker)).evaluate({**env, "extra": ""}) for env in environments)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True
