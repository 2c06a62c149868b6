"""What a release's notes promise its image holds. In a buildable release every item of "The container also
includes" is installed by a step (`component`), carried by the base image with evidence (`base`), or
listed as not included (`left_out`); in every release, archived ones too, a note that names a component
of the catalog (the notes' own words: "The latest version of DLProf 0.18.0") needs that component in the
manifest, where its install method says whether the image has it, or an item of its own (not_in_image,
also_includes)."""

from __future__ import annotations

import re
from pathlib import Path

from ngcbuild.core.errors import ManifestError, excerpt
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.model import Release

# The sections whose items may say what the container includes or ships (an item of also_includes is its
# own record, checked above).
PROMISING_SECTIONS = ("key_features", "announcements")


def check_promises(path: Path, release: Release, catalog: Catalog) -> None:
    if release.status == "buildable":
        _check_also_includes(path, release)
    _check_mentions(path, release, catalog)


def _check_also_includes(path: Path, release: Release) -> None:
    for index, fact in enumerate(release.notes.also_includes):
        key = f"notes.also_includes.{index}"
        if fact.component:
            component = release.components.get(fact.component)
            if component is None or component.install in (None, "none"):
                raise ManifestError(path, f"{key}.component",
                                    f"{fact.component!r} is not installed by this release: no step gives the image "
                                    f"{excerpt(fact.text)}")
        elif not (fact.base or fact.left_out):
            raise ManifestError(path, key,
                                f"{excerpt(fact.text)} is listed as included, but nothing says how the image built "
                                "here has it: give component (the step that installs it), base (the evidence that "
                                "the base image carries it) or left_out (why it lacks it; the notes then say so)")


def names_of(entry) -> list[str]:
    return [name for name in (entry.display, entry.short, *entry.notes_names) if name]


def mentions(text: str, name: str) -> bool:
    """`name` as words of `text` (TensorRT in "TensorRT 7.2.2", not in "Torch-TensorRT")."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def _check_mentions(path: Path, release: Release, catalog: Catalog) -> None:
    flagged = [fact.text for fact in (*release.notes.not_in_image, *release.notes.also_includes)]
    for section in PROMISING_SECTIONS:
        for index, fact in enumerate(getattr(release.notes, section)):
            for name, entry in catalog.entries.items():
                if name in release.components:
                    continue
                for shown in names_of(entry):
                    if mentions(fact.text, shown) and not any(mentions(text, shown) for text in flagged):
                        raise ManifestError(
                            path, f"notes.{section}.{index}",
                            f"names {shown} (component {name!r} of the catalog), which this release neither records "
                            f"under components (with its install method, none when the image lacks it) nor lists "
                            f"in notes.not_in_image")
