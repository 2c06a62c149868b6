"""Release notes: build/R/release-notes.md from the manifests, in the sections of NVIDIA's pages.

This module gathers the facts of one release (and of the releases before it, for the versions table)
into a NotesContext; templates/docs/notes/release-notes.md.j2 holds every sentence that is the same for
every release. Nothing here reads a manifest file: it gets loaded releases from ngcbuild.manifest.series.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from ngcbuild.core.project import Project
from ngcbuild.docs import derived_notes
from ngcbuild.docs.diff import diff_releases, drafted_features
from ngcbuild.docs.facts import (
    Group,
    Item,
    Segment,
    component_group,
    component_item,
    component_segment,
    os_text,
    used_provenances,
)
from ngcbuild.docs.markdown import document_environment
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.constraints import Pin
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.model import DriverRequirements, Example, GpuRequirements, Release
from ngcbuild.manifest.series import Series
from ngcbuild.workspace.audit_report import AuditReport, read_audit
from ngcbuild.workspace.release_dir import NOTES, ReleaseDir

TEMPLATE = "notes/release-notes.md.j2"
# torch.cuda.amp, the native AMP the notes describe, first shipped in PyTorch 1.6.
NATIVE_AMP_SINCE = Version("1.6")


@dataclass(frozen=True)
class TableRow:
    release: str
    ubuntu: Segment | None
    cuda: Segment | None
    pytorch: Segment | None
    tensorrt: Segment | None


@dataclass(frozen=True)
class NotesContext:
    release: Release
    # Contents
    pytorch_source: bool  # the image carries PyTorch's source tree (not for a wheel install)
    pytorch_location: str | None
    pytorch_installed_at: str | None  # where this image has it, when NVIDIA's stated path differs
    pytorch: Segment | None
    os: Segment | None  # first line of "also includes", with the Python version
    python: str | None
    python_pins: tuple[Pin, ...]
    also_includes: tuple[Item, ...]
    # Components a public-wheels release leaves out (display and version, why): NVIDIA's images have
    # them, ours does not, and its notes must not list them as included.
    not_included: tuple[tuple[str, str], ...]
    groups: tuple[Group, ...]  # listed after the examples, each under its heading
    examples: tuple[Example, ...]
    # NVIDIA's image includes its Tensor Core examples; the image ngcbuild builds of an NVIDIA release has only
    # /workspace/README.md naming them (listed among what it does not include, never as included)
    examples_in_image: bool
    # what a user meets that differs from NVIDIA's image, beyond what it lacks (notes.differences and what the
    # manifest's facts imply: a PyTorch without the MPI backend beside the image's OpenMPI)
    differences: tuple[Item, ...]
    # Requirements
    cuda: Segment | None
    driver: DriverRequirements | None
    gpu: GpuRequirements | None
    # gpu.min_compute_capability with the provenance of the GPU requirements; ours (chosen) when
    # NVIDIA's notes state none
    min_compute_capability: Segment | None
    # Features, announcements, issues
    key_features: tuple[Item, ...]
    drafted_from: str | None  # the predecessor the key features were drafted against
    announcements: tuple[Item, ...]
    known_issues: tuple[Item, ...]
    conflicts: tuple[Item, ...]
    table: tuple[TableRow, ...]  # newest first
    amp: tuple[Item, ...]  # NVIDIA's AMP section of this release, where the manifest quotes it
    amp_native: bool
    amp_apex: bool
    apex_amp_finding: str | None  # where the pinned APEX lacks the Apex AMP NVIDIA's text promises
    footnotes: tuple[str, ...]  # provenances to explain, in a fixed order
    # Known vulnerabilities: said of a buildable release's image only (an archived one has no image of
    # ours); from its build/R/audit.json, or None when no audit has run (the notes say so).
    audited_image: bool = False
    vulnerabilities: AuditReport | None = None


def notes_context(series: Series, name: str, catalog: Catalog,
                  vulnerabilities: AuditReport | None = None) -> NotesContext:
    loaded = series.get(name)
    release = loaded.release
    pytorch = release.components.get("pytorch")
    python = release.python

    installed_at = f"{python.site_packages}/torch" if python is not None and python.site_packages else None
    location = release.notes.pytorch_location or installed_at
    if installed_at is not None and location.rstrip("/") == installed_at:
        installed_at = None

    key_features = tuple(_facts(release.notes.key_features))
    drafted_from = None
    previous = series.predecessor(name)
    if not key_features and previous is not None:
        diff = diff_releases(previous, loaded, catalog)
        key_features = tuple(_drafted(item) for item in drafted_features(diff, release, catalog))
        drafted_from = previous.release.release

    also, groups = _also_includes(release, catalog)
    os_ = _os_segment(release, os_text(release))
    capability = None
    if release.gpu.min_compute_capability:
        gpu_notes = release.notes.gpu_requirements
        capability = Segment(release.gpu.min_compute_capability, gpu_notes.provenance if gpu_notes else "chosen")
    table = tuple(_row(other.release, catalog) for other in reversed(series.up_to(name)))
    announcements = tuple(_facts(release.notes.announcements))
    known_issues = tuple(_facts(release.notes.known_issues)) + _import_messages(release, catalog)
    conflicts = tuple(_facts(release.notes.conflicts))
    differences = _differences(release, catalog)
    cuda = component_segment(release, catalog, "cuda")
    pytorch_segment = component_segment(release, catalog, "pytorch", with_name=False)

    marked = [*also, *(i for g in groups for i in g.items), *key_features, *announcements, *known_issues, *differences,
              *_facts(release.notes.amp),
              cuda, pytorch_segment, os_, capability]
    marked += [cell for row in table for cell in (row.ubuntu, row.cuda, row.pytorch, row.tensorrt)]
    for part in (release.notes.driver, release.notes.gpu_requirements):
        if part is not None:
            marked.append(Segment("", part.provenance))
    used = used_provenances(marked)
    if any(example.description for example in release.notes.tensor_core_examples):
        used.add("chosen")  # the examples' one-line descriptions are ours, marked so
    if drafted_from:
        used.add("drafted")

    return NotesContext(
        release=release,
        pytorch_source=pytorch is None or pytorch.install in (None, "source"),
        pytorch_location=location,
        pytorch_installed_at=installed_at,
        pytorch=pytorch_segment,
        os=os_,
        python=python.version if python else None,
        python_pins=tuple(sorted(loaded.constraints.pins, key=lambda p: p.key)) if loaded.constraints else (),
        also_includes=also,
        not_included=_not_included(release, catalog),
        groups=groups,
        examples=tuple(release.notes.tensor_core_examples),
        examples_in_image=not _examples_left_out(release),
        differences=differences,
        cuda=cuda,
        driver=release.notes.driver,
        gpu=release.notes.gpu_requirements,
        min_compute_capability=capability,
        key_features=key_features,
        drafted_from=drafted_from,
        announcements=announcements,
        known_issues=known_issues,
        conflicts=conflicts,
        table=table,
        amp=tuple(_facts(release.notes.amp)),
        amp_native=_amp_native(pytorch.version if pytorch else None),
        amp_apex=_has_apex(release),
        apex_amp_finding=release.components["apex"].lacks.get("amp") if "apex" in release.components else None,
        footnotes=tuple(p for p in ("secondary", "chosen", "drafted") if p in used),
        audited_image=release.status == "buildable",
        vulnerabilities=vulnerabilities if release.status == "buildable" else None,
    )


def render_notes(series: Series, name: str, project: Project) -> str:
    buildable = series.get(name).release.status == "buildable"
    report = read_audit(project.out(name), project.root) if buildable else None
    context = notes_context(series, name, Catalog.load(project), report)
    return document_environment(project).get_template(TEMPLATE).render(notes=context)


def write_notes(project: Project, name: str) -> Path:
    """build/R/release-notes.md: NVIDIA's sections for a release of the series; for a derived release
    (manifests/derived/R.yaml), what it adds to its base (derived_notes.py)."""
    loaded = load_release(project, name)
    if loaded.derived is not None:
        text = derived_notes.notes_text(project, loaded)
    else:
        text = render_notes(Series.load(project), name, project)
    return ReleaseDir.at(project.root, name).write(NOTES, text)


def _not_included(release: Release, catalog: Catalog) -> tuple[tuple[str, str], ...]:
    """What the image built here lacks, with why. A public-wheels release leaves its left-out components
    out of the contents; an NVIDIA release's contents stay NVIDIA's, and this list says what our build of
    it lacks: components installed `none`, and the manifest's notes.not_in_image."""
    items = [(f"{catalog.get(n).display} {c.version}", c.reason) for n, c in _lacking(release).items()]
    for fact in release.notes.not_in_image:
        what, _, why = fact.text.partition(": ")
        items.append((what, why))
    items += [(fact.text, fact.left_out) for fact in release.notes.also_includes if fact.left_out]
    if _examples_left_out(release):
        items.append(("Tensor Core examples", "NVIDIA's model scripts are in "
                      "https://github.com/NVIDIA/DeepLearningExamples; this image has only /workspace/README.md, "
                      "which lists them"))
    items += [(f"{catalog.get(name).display} {feature.upper()}", finding) for name, c in release.components.items()
              for feature, finding in c.lacks.items()]
    return tuple(items)


def _examples_left_out(release: Release) -> bool:
    return release.status == "buildable" and release.origin == "nvidia" and bool(release.notes.tensor_core_examples)


def _differences(release: Release, catalog: Catalog) -> tuple[Item, ...]:
    """notes.differences, after what the manifest's own facts imply: a PyTorch the smoke suite checks has no
    MPI backend (stack.torch_without) in an image that lists an MPI (OpenMPI) among its contents."""
    items = []
    mpi = [name for name, c in release.components.items() if name == "openmpi" and c.install != "none"]
    if "mpi" in release.stack.torch_without and mpi:
        mpi_line = component_segment(release, catalog, mpi[0])
        items.append(Item.of(
            f"PyTorch's MPI backend: this PyTorch is built without it (torch.distributed.is_mpi_available() is "
            f"False, as the smoke suite checks), although the image carries {mpi_line.text} for other programs; "
            f"whether NGC's PyTorch of this release has it is not known", "chosen"))
    return tuple(items) + tuple(_facts(release.notes.differences))


def _import_messages(release: Release, catalog: Catalog) -> tuple[Item, ...]:
    """What importing a component of the image built here prints, as the manifest accepts it with its
    reason (components.NAME.import_warnings; the smoke suite fails on any other message)."""
    return tuple(Item.of(f"In the image ngcbuild builds, importing {catalog.get(name).display} prints "
                         f"\"{fragment}\": {reason}", "chosen")
                 for name, component in release.components.items() if component.install != "none"
                 for fragment, reason in component.import_warnings.items())


def _lacking(release: Release) -> dict:
    """The components the image built here lacks (install: none)."""
    if release.origin == "public-wheels":
        return release.left_out
    return {name: c for name, c in release.components.items() if c.install == "none"}


def _facts(facts) -> list[Item]:
    return [Item.of(f.text, f.provenance) for f in facts]


def _drafted(item: Item) -> Item:
    return Item(Segment(item.head.text, "drafted"), item.inside)


def _also_includes(release: Release, catalog: Catalog) -> tuple[tuple[Item, ...], tuple[Group, ...]]:
    """NVIDIA's "The container also includes the following" after the OS line: every component but
    PyTorch itself (those listed inside another's line go there), then the manifest's other items;
    and the groups (a component whose packages the notes list one by one, under a heading). What the
    image built here lacks (a component installed `none`, an item left out) is listed once, with why,
    among what it does not include (_not_included), never also as included."""
    items, groups = [], []
    inside = {name for name, entry in catalog.entries.items() if entry.within in release.components}
    ordered = [n for n in catalog.entries if n in release.components]
    ordered += sorted(n for n in release.components if n not in catalog.entries)
    left_out = _lacking(release) if release.status == "buildable" else release.left_out
    for name in ordered:
        if name == "pytorch" or name in inside or name in left_out:
            continue
        group = component_group(release, catalog, name)
        if group is not None:
            groups.append(group)
        else:
            items.append(component_item(release, catalog, name))
    listed = [fact for fact in release.notes.also_includes if not (release.status == "buildable" and fact.left_out)]
    items += _facts(listed)
    return tuple(items), tuple(groups)


def _os_segment(release: Release, text: str | None) -> Segment | None:
    return Segment(text, release.os.provenance) if text else None


def _row(release: Release, catalog: Catalog) -> TableRow:
    ubuntu = None
    if release.os is not None:
        text = release.os.version if release.os.name == "Ubuntu" else os_text(release)
        ubuntu = _os_segment(release, text)
    return TableRow(
        release=release.release,
        ubuntu=ubuntu,
        cuda=component_segment(release, catalog, "cuda"),
        pytorch=component_segment(release, catalog, "pytorch", with_name=False),
        tensorrt=component_segment(release, catalog, "tensorrt"),
    )


def _amp_native(pytorch_version: str | None) -> bool:
    if pytorch_version is None:
        return False
    try:
        return Version(pytorch_version).release >= NATIVE_AMP_SINCE.release
    except ValueError:  # InvalidVersion, or a number too long for int()
        return False


def _has_apex(release: Release) -> bool:
    if "apex" in release.components:
        return True
    return any(fact.text.strip().upper() == "APEX" for fact in release.notes.also_includes)
