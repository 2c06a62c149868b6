"""What a proposal changes in the manifest: each pip-installed component's versions (its headline
version is that of the package that carried it before), the version its module reports where the
release states one (torch's 2.15.0+cu132, read from the wheel), where the value came from, and the
text that names a distribution's dist-info folder by its old version."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from ngcbuild.bump.propose import Proposal, requirers
from ngcbuild.bump.wheel_file import WheelUnreadable, module_version
from ngcbuild.core.references import shown_url


@dataclass(frozen=True)
class ComponentUpdate:
    name: str
    version: str
    packages: dict[str, str | None]  # the component's `packages` as proposed (None: no longer installed)
    env_version: str | None  # what its module reports, where the release states it in env_version
    source: str
    problems: tuple[str, ...] = ()  # what the reviewer must settle by hand
    module_version: str | None = None  # what its module reports, where the release states module_version


@dataclass
class Changes:
    components: dict[str, ComponentUpdate] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)  # banner.license etc. rewritten
    layers: list[list[str]] | None = None  # pip.layers without the packages no longer pinned


def component_changes(proposal: Proposal, web) -> Changes:
    parent = proposal.parent
    release, catalog = parent.release, parent.catalog
    environments = [t.markers() for t in proposal.targets]
    who = requirers(proposal.pins, environments)
    changes = Changes()
    where = ", ".join(shown_url(i) for i in proposal.indexes)
    for name, component in release.components.items():
        if component.install != "pip":
            continue
        entry = catalog.get(name)
        names = list(component.packages) or [component.package or entry.pip_package]
        new = {package: _version(proposal, package) for package in names}
        carrier = names[0] if not component.packages else next(
            (p for p, v in component.packages.items() if v == component.version), None)
        problems = []
        if carrier is None or new.get(carrier) is None:
            problems.append(f"components.{name}.version {component.version}: no package of it carries this version; "
                            "set it by hand")
        version = new.get(carrier) or component.version
        old = {package: component.packages.get(package, component.version) for package in names}
        if old == new:
            continue
        # what the module reports, where the release states it apart from the version (the smoke suite holds
        # the module to module_version; env_version is the env's form, here the same)
        reported = None
        stated = [field for field in ("env_version", "module_version")
                  if getattr(component, field) and getattr(component, field) != component.version]
        if stated and entry.module:
            dist = proposal.pins.get(canonicalize_name(carrier or ""))
            reported = _reported(dist, entry.module, web, problems, name, stated[-1])
        why = _why(carrier, proposal, who) if carrier else "resolved with the rest"
        display = entry.display if entry else name
        source = (f"{display} {version}: {why}; proposed by ngcbuild bump from {where}, read {proposal.day} "
                  f"(was {component.version})")
        changes.components[name] = ComponentUpdate(
            name, version, new if component.packages else {}, reported if "env_version" in stated else None,
            source, tuple(problems), reported if "module_version" in stated else None)
    changes.texts = _texts(proposal)
    changes.layers = _layers(proposal)
    return changes


def _version(proposal: Proposal, package: str) -> str | None:
    dist = proposal.pins.get(canonicalize_name(package))
    return dist.version if dist else None


def _why(package: str, proposal: Proposal, who) -> str:
    key = canonicalize_name(package)
    if key == proposal.leader.key:
        return f"the newest {proposal.leader.name} the release's policy (bump) admits"
    exact = [(d, r) for d, r in who.get(key, []) if any(s.operator in ("==", "===") for s in r.specifier)]
    if exact:
        requirer = exact[0][0]
        return f"the one {requirer.name} {requirer.version} pins (its metadata)"
    if not any(canonicalize_name(b.name) == key for b in proposal.behind):
        return "the newest on its index for this Python and these platforms"
    limits = [f"{d.name} {d.version} ({r.name}{r.specifier})" for d, r in who.get(key, []) if str(r.specifier)]
    return f"the newest that {', '.join(limits)} admit" if limits else "the newest the whole set admits"


def _reported(dist, module: str, web, problems: list, name: str, field: str) -> str | None:
    if dist is None or not dist.url:
        problems.append(f"components.{name}.{field}: the wheel was not found to read what {module} reports")
        return None
    try:
        reported = module_version(dist.url, module, web)
    except WheelUnreadable as exc:
        problems.append(f"components.{name}.{field}: {exc}")
        return None
    if reported is None:
        problems.append(f"components.{name}.{field}: {dist.name} {dist.version} has no {module}/version.py "
                        "with a __version__")
    return reported


def _texts(proposal: Proposal) -> dict[str, list[str]]:
    """Lines of the banner and the workspace that name a distribution's dist-info folder by its old
    version (`torch-2.11.0.dist-info`), rewritten to the new one."""
    release = proposal.release
    old, new = proposal.old_pins(), proposal.new_pins()
    moved = {key: (old[key], new[key]) for key in old if key in new and old[key] != new[key]}
    out = {}
    for key, lines in (("banner.copyright", release.banner.copyright), ("banner.license", release.banner.license),
                       ("workspace.license", release.workspace.license)):
        rewritten = [_rename_dist_info(line, moved) for line in lines]
        if rewritten != list(lines):
            out[key] = rewritten
    return out


def _rename_dist_info(line: str, moved: dict[str, tuple[str, str]]) -> str:
    def replace(match):
        key = canonicalize_name(match.group(1))
        if key in moved and match.group(2) == moved[key][0]:
            return f"{match.group(1)}-{moved[key][1]}.dist-info"
        return match.group(0)
    return re.sub(r"([A-Za-z0-9_.]+?)-([0-9][A-Za-z0-9.+!_]*?)\.dist-info", replace, line)


def _layers(proposal: Proposal) -> list[list[str]] | None:
    layers = proposal.release.pip.layers
    kept = [[n for n in group if canonicalize_name(n) in proposal.pins] for group in layers]
    kept = [group for group in kept if group]
    return kept if kept != [list(g) for g in layers] else None
