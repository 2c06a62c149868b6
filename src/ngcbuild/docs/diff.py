"""What changed between two releases: components, Python packages, settings.

An archived release records only part of its facts, so a component missing there is "not recorded",
never "added" or "removed"; a buildable release lists everything it installs. Values that are unknown
(null) on either side are not compared.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ngcbuild.core.project import Project
from ngcbuild.docs.facts import (
    Item,
    Segment,
    component_item,
    component_segment,
    display_name,
    os_text,
    used_provenances,
)
from ngcbuild.docs.markdown import document_environment
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.constraints import Constraints
from ngcbuild.manifest.loader import LoadedRelease, derived_release_names, load_release
from ngcbuild.manifest.model import Release
from ngcbuild.manifest.series import Series
from ngcbuild.manifest.versions import compare

DIFF_TEMPLATE = "notes/diff.md.j2"
KINDS = ("added", "removed", "upgraded", "downgraded", "rebuilt", "not recorded")


@dataclass(frozen=True)
class VersionChange:
    name: str
    display: str
    kind: str  # one of KINDS
    old: str | None
    new: str | None
    provenance: str | None = None  # of the new value (of the old one when removed)
    old_provenance: str | None = None  # of each side's value, for the marks in the table
    new_provenance: str | None = None


@dataclass(frozen=True)
class SettingChange:
    setting: str
    old: object
    new: object

    @property
    def kind(self) -> str:
        if isinstance(self.old, bool) and isinstance(self.new, bool):
            return "switched on" if self.new else "switched off"
        return "changed"


@dataclass(frozen=True)
class ReleaseDiff:
    old: str
    new: str
    components: tuple[VersionChange, ...]
    packages: tuple[VersionChange, ...] | None  # None: one side has no constraints file
    settings: tuple[SettingChange, ...]

    def by_kind(self, kind: str) -> list[VersionChange]:
        return [c for c in self.components if c.kind == kind]

    def to_json(self) -> dict:
        data = asdict(self)
        data["settings"] = [{**asdict(s), "kind": s.kind} for s in self.settings]
        return data


# The settings a release switches on or off, or changes: (what, how to read it from a release).
# A None reading is unknown and never compared.
SETTINGS: tuple[tuple[str, Callable[[Release], object]], ...] = (
    ("status", lambda r: r.status),
    ("operating system", os_text),
    ("Python", lambda r: r.python.version if r.python else None),
    ("Python environment", lambda r: r.python.install if r.python else None),
    ("pip constraint file /etc/pip/constraint.txt", lambda r: r.pip.constraint_file if r.pip else None),
    ("GPU required", lambda r: r.gpu.required if r.status == "buildable" else None),
    ("minimum compute capability", lambda r: r.gpu.min_compute_capability),
    ("minimum driver", lambda r: r.notes.driver.minimum if r.notes.driver else None),
    ("Tensor Core examples in the image", lambda r: bool(r.notes.tensor_core_examples) or None),
)


def diff_releases(old: LoadedRelease, new: LoadedRelease, catalog: Catalog) -> ReleaseDiff:
    a, b = old.release, new.release
    components = _version_changes(
        {name: c.version for name, c in a.components.items()},
        {name: c.version for name, c in b.components.items()},
        complete_old=a.status == "buildable", complete_new=b.status == "buildable",
        display=lambda name: display_name(catalog, name),
        provenance=lambda name, side=None: _provenance(a, b, name, side),
        order=list(catalog.entries),
    )
    packages = None
    if old.constraints is not None and new.constraints is not None:
        packages = _version_changes(_pins(old.constraints), _pins(new.constraints), True, True,
                                    display=lambda name: name, provenance=lambda name, side=None: None, order=[])
    settings = []
    for setting, read in SETTINGS:
        before, after = read(a), read(b)
        if before is not None and after is not None and before != after:
            settings.append(SettingChange(setting, before, after))
    return ReleaseDiff(a.release, b.release, tuple(components),
                       None if packages is None else tuple(packages), tuple(settings))


def _pins(constraints: Constraints) -> dict[str, str]:
    return {pin.name: pin.version for pin in sorted(constraints.pins, key=lambda p: p.key)}


def _version_changes(old: dict[str, str], new: dict[str, str], complete_old: bool, complete_new: bool,
                     display, provenance, order: list[str]) -> list[VersionChange]:
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(set(old) | set(new), key=lambda n: (rank.get(n, len(rank)), n.lower()))
    changes = []
    for name in names:
        before, after = old.get(name), new.get(name)
        if before is None:
            kind = "added" if complete_old else "not recorded"
        elif after is None:
            kind = "removed" if complete_new else "not recorded"
        else:
            kind = compare(before, after)
            if kind == "same":
                continue
        changes.append(VersionChange(name, display(name), kind, before, after, provenance(name),
                                     provenance(name, "old") if before else None,
                                     provenance(name, "new") if after else None))
    return changes


def _provenance(a: Release, b: Release, name: str, side: str | None) -> str:
    """Provenance of a component's value: the new side's (the old one's when removed), or one side's."""
    if side == "old":
        return a.components[name].provenance
    if side == "new":
        return b.components[name].provenance
    return (b.components.get(name) or a.components[name]).provenance


def drafted_features(diff: ReleaseDiff, new: Release, catalog: Catalog) -> list[Item]:
    """The lines of a draft "Key Features and Enhancements" for `new`: one Item per component that
    was added or upgraded since the predecessor, with the components listed inside its line (a new
    cuBLAS drafts CUDA's line). PyTorch is left out: the template's first line names it anyway.
    The template words them ("The latest version of NVIDIA cuDNN 8.0.5")."""
    lines: list[str] = []
    for change in diff.components:
        if change.kind not in ("added", "upgraded") or change.name == "pytorch":
            continue
        entry = catalog.get(change.name)
        owner = entry.within if entry and entry.within in new.components else change.name
        if owner not in lines:
            lines.append(owner)
    return [component_item(new, catalog, name) for name in lines]


def render_diff(project: Project, series: Series, old: str, new: str) -> str:
    """The Markdown page of what changed from `old` to `new` (templates/docs/notes/diff.md.j2)."""
    catalog = Catalog.load(project)
    a, b = series.get(old), series.get(new)
    diff = diff_releases(a, b, catalog)
    draft = drafted_features(diff, b.release, catalog)
    new_pytorch = component_segment(b.release, catalog, "pytorch", with_name=False)
    marked = [Segment("", p) for c in diff.components for p in (c.old_provenance, c.new_provenance) if p]
    used = used_provenances([*draft, new_pytorch, *marked])
    return document_environment(project).get_template(DIFF_TEMPLATE).render(
        diff=diff, draft=draft, new_pytorch=new_pytorch,
        both_archived=a.release.status == b.release.status == "archived",
        footnotes=tuple(p for p in ("secondary", "chosen") if p in used))


def diff_text(project: Project, old: str, new: str, as_json: bool = False) -> str:
    """`ngcbuild diff OLD NEW`: Markdown (or JSON) of what changed between two releases of the series; where
    either is a derived release (manifests/derived/R.yaml), the pins each side's image holds, compared."""
    if {old, new} & set(derived_release_names(project)):  # not in the series: compared as images' pins
        from ngcbuild.docs.derived_notes import pins_diff_text

        return pins_diff_text(load_release(project, old), load_release(project, new), as_json=as_json)
    series = Series.load(project)
    if as_json:
        return json.dumps(diff_releases(series.get(old), series.get(new), Catalog.load(project)).to_json(),
                          indent=2) + "\n"
    return render_diff(project, series, old, new)
