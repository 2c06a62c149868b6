"""What the image holds beside the pins of its constraints file, as the manifest declares it: the
distributions its source builds install (25.12's torch, torchvision, Apex, Transformer Engine) and the
ones its base image carries."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name

from ngcbuild.manifest.loader import LoadedRelease


@dataclass(frozen=True)
class Beside:
    name: str
    version: str
    requires: tuple[str, ...] | None  # Requires-Dist; None: not declared
    origin: str  # where it comes from, for the report
    unknown: str = ""  # why its requirements are not known, when they are not


def source_builds(loaded: LoadedRelease, pinned: dict[str, str]) -> dict[str, Beside]:
    """canonical name -> the distribution a component built from source installs (with the version pip
    lists for it), for the components whose distribution the constraints do not pin."""
    found = {}
    for name, component in loaded.release.components.items():
        entry = loaded.catalog.get(name)
        package = component.package or (entry.pip_package if entry else None)
        if component.install != "source" or not package or canonicalize_name(package) in pinned:
            continue
        requires = tuple(component.requires_dist) if component.requires_dist is not None else None
        found[canonicalize_name(package)] = Beside(
            package, str(component.reported_version), requires, f"built from source "
            f"(components.{name})", "" if requires is not None else
            f"components.{name}.requires_dist is not declared (verify does not read source trees)")
    return found


def base_distributions(release) -> dict[str, Beside] | None:
    """canonical name -> a distribution the base image carries for the image's interpreter, as
    base.python_distributions declares them; None where that is not known. A conda release's interpreter is
    conda's own, which sees none of the base image's."""
    if release.python.conda is not None:
        return {}
    declared = release.base.python_distributions
    if declared is None:
        return None
    return {canonicalize_name(name): Beside(name, dist.version, tuple(dist.requires_dist), "the base image")
            for name, dist in declared.distributions.items()}
