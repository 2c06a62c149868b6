"""The next NVIDIA release (25.12 -> 26.01) as a draft: the structure carried over, every value NVIDIA
chooses UNKNOWN until someone fills it in from NVIDIA's release notes, the pip-level pins proposed.

NVIDIA chooses: the base image, the build number, the summary, the banner's copyright, every section of
the notes, and every component whose value is NVIDIA's (provenance nvidia or secondary) or comes with
NVIDIA's build (installed in the base image or built from source): its version, commit, archive, the
versions it reports, and the prose that said where the old value came from. The loader refuses the
draft naming each (manifest/unknown.py), so nothing is built from a guess.

The pins our release chooses itself (pip components of provenance chosen, and the rest of the
constraints) are resolved at the newest the whole set admits, as for a release from public wheels. What
the image builds or carries itself (torch from source) is not on the indexes as it will be; the resolver
sees a stand-in at the previous release's version (resolver/stand_ins.py: a wheel without requirements),
and the proposal says so: verify checks the set for real once the values are filled in.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from packaging.utils import canonicalize_name

from ngcbuild.bump.propose import behind_newest, extras_asked, resolve_everywhere, roots_of, targets_of
from ngcbuild.bump.texts import ManifestDumper
from ngcbuild.core.errors import ManifestError, OperationError, shown_path
from ngcbuild.core.indexes import IndexSetting
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.core.references import shown_url
from ngcbuild.docs.markdown import md
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.manifest.unknown import UNKNOWN
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.whole_set import Dist
from ngcbuild.workspace.release_dir import BUMP, ReleaseDir

NVIDIA_PROVENANCE = ("nvidia", "secondary")
NVIDIA_METHODS = ("base", "source")
# What else a component may say about the value NVIDIA chose.
VALUE_FIELDS = ("ref", "url", "env_version", "module_version", "nvidia_states")


def nvidia_chosen(component) -> bool:
    return component.provenance in NVIDIA_PROVENANCE or component.install in NVIDIA_METHODS


def _package_of(loaded: LoadedRelease, name: str, component) -> list[str]:
    entry = loaded.catalog.get(name)
    return list(component.packages) if component.install == "pip" and component.packages else \
        [p for p in (component.package or (entry.pip_package if entry else None),) if p]


def draft_data(parent: LoadedRelease) -> tuple[dict, list[str]]:
    """The draft manifest's data (extends the parent) and the packages NVIDIA's values stand for."""
    release = parent.release
    data: dict = {"extends": release.release, "summary": UNKNOWN, "build": {"number": UNKNOWN},
                  "base": {"image": UNKNOWN, **({"digest": UNKNOWN} if release.base.digest else {})}}
    if release.banner.copyright:
        data["banner"] = {"copyright": [UNKNOWN]}
    notes = {key: UNKNOWN for key in sorted(release.notes.model_fields_set)}
    if notes:
        data["notes"] = notes
    components, stand_ins = {}, []
    for name, component in release.components.items():
        if not nvidia_chosen(component):
            continue
        entry: dict = {"version": UNKNOWN}
        for key in VALUE_FIELDS:
            if getattr(component, key):
                entry[key] = UNKNOWN
        entry["source"] = UNKNOWN
        if component.install == "pip" and component.packages:
            entry["packages"] = {package: UNKNOWN for package in component.packages}
        components[name] = entry
        stand_ins += _package_of(parent, name, component)
    if components:
        data["components"] = components
    return data, stand_ins


def draft_nvidia(project: Project, parent: LoadedRelease, as_name: str | None, setting: IndexSetting, check: bool,
                 out) -> dict:
    import time

    from ngcbuild.bump.proposal_files import NewerAvailable, existing_proposal, scratch_project, write_both

    say = printer(out)
    release = parent.release
    existing = None if check else existing_proposal(project, release.release, as_name)  # before any read
    day = time.strftime("%Y-%m-%d", time.gmtime())
    data, stand_ins = draft_data(parent)
    pins, behind, indexes = _pip_level(parent, stand_ins, setting, say)
    new = {key: dist.version for key, dist in pins.items()}
    before = {pin.key: pin.version for pin in parent.constraints.pins}
    changed = {k: (before.get(k), new.get(k)) for k in sorted(set(before) | set(new)) if before.get(k) != new.get(k)}
    if check:
        if changed:
            raise NewerAvailable(f"{release.release}: its pip-level pins have newer versions the whole set admits "
                                 f"({len(changed)} changed); NVIDIA's own versions are not read from any index")
        say(f"bump: {release.release}'s pip-level pins are current (NVIDIA's own versions are not read from any "
            "index)")
        return {"changed": False}
    where = ", ".join(shown_url(i) for i in indexes)
    skipped = sorted({canonicalize_name(p) for p in stand_ins} & set(before))

    def texts_of(when: str) -> dict[str, str]:
        return {"manifest": _manifest(parent, as_name, data, pins, when, where),
                "constraints": _constraints(release, as_name, new, skipped, when, where)}

    texts = texts_of(day)
    if existing is not None and texts_of(existing["day"]) == existing["texts"]:
        texts = existing["texts"]
    with tempfile.TemporaryDirectory(prefix="ngcbuild-bump-") as scratch:
        shadow = scratch_project(project, Path(scratch))
        (shadow.manifests / f"{as_name}.yaml").write_text(texts["manifest"])
        (shadow.constraints / f"{as_name}.txt").write_text(texts["constraints"])
        unknown = _unknown_named(shadow, as_name)
    unchanged = existing is not None and texts == existing["texts"]
    if not unchanged:
        write_both(project, as_name, texts)
    report = _report(parent, as_name, day, where, unknown, changed, behind)
    path = ReleaseDir.at(project.root, as_name).write(BUMP, report)
    say(f"bump: {release.release} -> {as_name}: a draft with {len(unknown)} values UNKNOWN (NVIDIA's); "
        f"{len(changed)} pip-level pins changed; {'nothing rewritten, ' if unchanged else ''}wrote {shown_path(path)}")
    return {"changed": True, "unknown": unknown, "report": str(path)}


def _manifest(parent: LoadedRelease, name: str, data: dict, pins: dict[str, Dist], day: str, where: str) -> str:
    release = parent.release.release
    data = {**data}
    components = {**data.get("components", {}), **_pip_components(parent, pins, day, where)}
    if components:
        data["components"] = components
    if parent.release.banner.license:  # the license's own text, the same every month: kept on purpose
        data["inherit"] = ["banner.license"]
    header = [f"# Proposed by ngcbuild bump --release {release} from {where}, read {day}: a draft of NVIDIA's next",
              f"# release after {release}. Every value NVIDIA chooses is UNKNOWN: fill each in from NVIDIA's release",
              f"# notes; nothing is built until none is. Review build/{name}/bump.md."]
    return "\n".join(header) + "\n" + yaml.dump(data, Dumper=ManifestDumper, sort_keys=False, width=4096,
                                                 allow_unicode=True)


def _constraints(release, name: str, new: dict[str, str], skipped: list[str], day: str, where: str) -> str:
    lines = [f"# Proposed by ngcbuild bump --release {release.release} from {where}, read {day}: the pip-level",
             f"# pins of `{name}`, resolved whole for Python {release.python.version}; NVIDIA's own packages come",
             "# when their versions are filled in:"]
    lines += [f"# {key}: UNKNOWN (NVIDIA's)" for key in skipped]
    lines += [f"{key}=={version}" for key, version in sorted(new.items())]
    return "\n".join(lines) + "\n"


def _pip_level(parent: LoadedRelease, stand_ins: list[str], setting: IndexSetting, say):
    """(the pip-level pins at their newest, those behind their index's newest, the indexes read)."""
    from ngcbuild.bump.reads import IndexReads

    release = parent.release
    targets = targets_of(release)
    environments = [t.markers() for t in targets]
    policy = release.bump
    skipped = {canonicalize_name(p) for p in stand_ins}
    stand_in_versions = {key: pin.version for key, pin in ((p.key, p) for p in parent.constraints.pins)
                         if key in skipped}
    for name, component in release.components.items():  # what the image builds: at the version it reports
        for package in _package_of(parent, name, component):
            key = canonicalize_name(package)
            if key in skipped and key not in stand_in_versions:
                stand_in_versions[key] = component.reported_version
    say(f"bump: reading the metadata of {release.release}'s {len(parent.constraints.pins)} pins")
    pinned = [str(p) for p in parent.constraints.pins if p.key not in skipped]
    standing = tuple(StandIn(key, str(version)) for key, version in stand_in_versions.items())
    with IndexReads(release, setting, stand_ins=standing) as reads:
        whole = reads.whole
        try:
            old = whole.metadata_of(pinned, targets[0])
        except OperationError as exc:
            raise OperationError(f"the pins of {release.release} cannot be read from its indexes ({exc})") from None
        roots = [r for r in roots_of(parent, old, environments) if canonicalize_name(r) not in skipped]
        constraints = [f"{key}=={version}" for key, version in stand_in_versions.items()]
        if policy is not None:
            constraints += [f"{n}{h.versions}" for n, h in policy.hold.items()]
        say(f"bump: resolving {len(roots)} pip-level requirements of {release.release} at their newest")
        pins = resolve_everywhere(roots, constraints, targets, whole)
        pins = {key: dist for key, dist in pins.items() if key not in skipped}
        behind = behind_newest(pins, targets[0], whole, environments, extras_asked(pins, policy), policy)
        return pins, behind, reads.indexes


def _pip_components(parent: LoadedRelease, pins: dict[str, Dist], day: str, where: str) -> dict:
    """Our own pip components (provenance chosen) at the versions the resolution took."""
    out = {}
    for name, component in parent.release.components.items():
        if component.install != "pip" or nvidia_chosen(component):
            continue
        packages = _package_of(parent, name, component)
        new = {p: pins[canonicalize_name(p)].version for p in packages if canonicalize_name(p) in pins}
        carrier = packages[0] if not component.packages else next(
            (p for p, v in component.packages.items() if v == component.version), packages[0])
        version = new.get(carrier, component.version)
        if new == {p: component.packages.get(p, component.version) for p in packages}:
            continue
        entry: dict = {"version": version,
                       "source": f"the newest the whole set admits; proposed by ngcbuild bump from {where}, read {day} "
                                 f"(was {component.version})"}
        if component.packages:
            entry["packages"] = {p: new.get(p) for p in packages}
        out[name] = entry
    return out


def _unknown_named(shadow: Project, name: str) -> list[str]:
    """The keys the loader names UNKNOWN in the draft: loading it must fail there and nowhere else."""
    try:
        load_release(shadow, name)
    except ManifestError as exc:
        if "still UNKNOWN" not in exc.expected:
            raise OperationError(f"the draft of {name} does not load for another reason (nothing was written): "
                                 f"{exc}") from None
        listed = exc.expected.split(": ", 1)[1].split("; fill", 1)[0]
        return [key.strip() for key in listed.split(",")]
    raise OperationError(f"the draft of {name} loads with nothing UNKNOWN: bump drafted no value of NVIDIA's")


def _report(parent, name, day, where, unknown, changed, behind) -> str:
    release = parent.release.release
    lines = [f"# Draft of NVIDIA's release {name} (after {release})", "",
             f"Proposed by `ngcbuild bump --release {release} --as {name}` from {where}, read {day}: "
             f"manifests/{name}.yaml (extends {release}) and constraints/{name}.txt.", "",
             "## What to review", "",
             f"- Fill in each value NVIDIA chooses from NVIDIA's release notes for {name} ({len(unknown)} UNKNOWN); "
             "`render`, `build`, `verify` and the documents name each one until none is:", ""]
    lines += [f"  - `{key}`" for key in unknown]
    lines += ["", "- The pip-level pins were resolved against stand-ins for what the image builds or carries itself "
              f"(at {md(release)}'s versions): once those are filled in, run `ngcbuild verify --release {md(name)}` "
              "(its closure compares them with what requires them).", "",
              "## Python packages", ""]
    if changed:
        lines += [f"| Package | {release} | {name} |", "|---|---|---|"]
        lines += [f"| {md(k)} | {md(a or '—')} | {md(b or '—')} |" for k, (a, b) in changed.items()]
    else:
        lines.append("No pip-level pin changed.")
    if behind:
        lines += ["", "## Held back", "", "| Distribution | Newest | Why not |", "|---|---|---|"]
        lines += [f"| {md(b.name)} | {md(b.version)} | {md(b.reason)} |" for b in behind]
    return "\n".join(lines) + "\n"
