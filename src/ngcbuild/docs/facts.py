"""Values as the documents show them: text plus where it comes from.

Every generated document (notes, matrix, diff, site) marks a value that is not NVIDIA's own
statement. The marks and their footnotes are wording, so they live in templates/docs/notes/macros.j2;
here is only the data: a Segment is one value with its provenance, an Item is one line of a list.
"""

from __future__ import annotations

from dataclasses import dataclass

from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.model import Release

NVIDIA = "nvidia"


@dataclass(frozen=True)
class Segment:
    text: str
    provenance: str = NVIDIA  # nvidia, secondary, chosen, drafted


@dataclass(frozen=True)
class Item:
    """One line of a list: a value and the values listed inside it ("NVIDIA CUDA 11.1.1", then
    "cuBLAS 11.3.0"; the template words how they join)."""

    head: Segment
    inside: tuple[Segment, ...] = ()

    @classmethod
    def of(cls, text: str, provenance: str = NVIDIA) -> Item:
        return cls(Segment(text, provenance))

    @property
    def segments(self) -> tuple[Segment, ...]:
        return (self.head, *self.inside)

    @property
    def provenances(self) -> set[str]:
        return {s.provenance for s in self.segments}


def display_name(catalog: Catalog, name: str) -> str:
    entry = catalog.get(name)
    return entry.display if entry else name


def component_segment(release: Release, catalog: Catalog, name: str, with_name: bool = True) -> Segment | None:
    """`NVIDIA cuDNN 8.0.5` (or `8.0.5`) with the pin's provenance; None when the release has no such pin."""
    component = release.components.get(name)
    if component is None:
        return None
    version = version_text(component)
    text = f"{display_name(catalog, name)} {version}" if with_name else version
    return Segment(text, component.provenance)


def version_text(component) -> str:
    """The version as documents show it: with NVIDIA's differing statement, or what NGC's image has by secondary
    reports, beside our choice."""
    if component.nvidia_states and component.nvidia_states != component.version:
        return f"{component.version} (NVIDIA states {component.nvidia_states})"
    if component.ngc_reported and component.ngc_reported != component.version:
        return f"{component.version} (NGC's image has {component.ngc_reported}, by secondary reports)"
    return component.version


def component_item(release: Release, catalog: Catalog, name: str) -> Item | None:
    """A component's line: its own segment, then every component listed inside it
    ("NVIDIA CUDA 11.1.1 including cuBLAS 11.3.0")."""
    head = component_segment(release, catalog, name)
    if head is None:
        return None
    inside = []
    for child, entry in catalog.entries.items():
        if entry.within == name and child in release.components:
            component = release.components[child]
            inside.append(Segment(f"{entry.short or entry.display} {component.version}", component.provenance))
    return Item(head, tuple(inside))


@dataclass(frozen=True)
class Group:
    """A heading of the list with its own items ("Jupyter and JupyterLab:", then each package)."""

    title: str
    items: tuple[Item, ...]


def component_group(release: Release, catalog: Catalog, name: str) -> Group | None:
    """The packages of a component that the notes list one by one (the catalog's listed_packages),
    each with its pin's provenance; None when the component has none of them pinned."""
    entry, component = catalog.get(name), release.components.get(name)
    if entry is None or component is None or not entry.listed_packages:
        return None
    carrier = component.package or entry.pip_package
    items = []
    for package, shown in entry.listed_packages.items():
        if package not in component.packages:
            continue
        version = component.packages[package]
        provenance = component.provenance if package == carrier and version == component.version \
            else component.pin_provenance(package)
        items.append(Item.of(f"{shown} {version}", provenance))
    return Group(entry.group, tuple(items)) if items else None


def os_text(release: Release) -> str | None:
    os_ = getattr(release, "os", None)
    return f"{os_.name} {os_.version}" if os_ else None


def used_provenances(items) -> set[str]:
    """Every provenance other than NVIDIA's among items/segments (for the footnotes to print)."""
    found: set[str] = set()
    for item in items:
        if item is None:
            continue
        if isinstance(item, Segment):
            found.add(item.provenance)
        else:
            found |= item.provenances
    return found - {NVIDIA}
