"""What each component needs and who provides it: a release is valid only when every need of an installed
component is met by a component the image installs or by the base image with evidence, and the builder
runs each step after the steps that provide its needs (a stable topological order: the manifest's order
decides only between steps that do not depend on each other)."""

from __future__ import annotations

from pathlib import Path

from ngcbuild.core.errors import ManifestError
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.model import Component, Release

# Install methods whose component is in the image (or the builder) and so provides what it provides.
PROVIDING_METHODS = ("apt", "pip", "conda", "source", "base")
# Named by the message when the base image is the provider: a component it carries, or base.provides.
BASE = "the base image"


def needs_of(name: str, component: Component, catalog: Catalog) -> tuple[str, ...]:
    entry = catalog.get(name)
    return tuple(dict.fromkeys([*(entry.needs if entry else ()), *component.needs]))


def provides_of(name: str, component: Component, catalog: Catalog) -> tuple[str, ...]:
    entry = catalog.get(name)
    return (name, *(entry.provides if entry else ()))


def providers(release: Release, catalog: Catalog) -> dict[str, list[str]]:
    """capability -> the components that provide it (BASE for base.provides). A component already in the
    base image counts only with its evidence (`source`): a bare claim is no evidence."""
    found: dict[str, list[str]] = {}
    for name, component in release.components.items():
        if component.install not in PROVIDING_METHODS:
            continue
        if component.install == "base" and not component.source:
            continue
        for capability in provides_of(name, component, catalog):
            found.setdefault(capability, []).append(name)
    for capability in (release.base.provides if release.base else {}):
        found.setdefault(capability, []).append(BASE)
    return found


def check_needs(path: Path, release: Release, catalog: Catalog) -> None:
    """Every need of an installed component has a provider, and no component needs itself; what
    stack.torch_with promises of a PyTorch built here is among its needs (so that something provides it)."""
    _check_torch_with(path, release, catalog)
    found = providers(release, catalog)
    for name, component in release.components.items():
        if component.install not in PROVIDING_METHODS or component.install == "base":
            continue
        for index, need in enumerate(needs_of(name, component, catalog)):
            if need == name:
                raise ManifestError(path, f"components.{name}.needs.{index}", f"component {name!r} needs itself")
            if component.install == "source":
                _check_build_env(path, name, component, need, found.get(need, ()), catalog)
            if need not in found:
                could = sorted(other for other, entry in catalog.entries.items()
                               if need == other or need in entry.provides)
                hint = f" (in the catalog: {', '.join(could)})" if could else ""
                raise ManifestError(path, f"components.{name}.needs",
                                    f"component {name!r} needs {need!r}, which nothing in this release provides: "
                                    f"install a component that provides it{hint}, or declare it under "
                                    f"base.provides with the evidence that the base image carries it")


def _check_build_env(path: Path, name: str, component: Component, need: str, providers_of_need, catalog) -> None:
    """A source build finds some providers only when told (BLAS=OpenBLAS): the catalog says what to set."""
    for provider in providers_of_need:
        entry = catalog.get(provider)
        for var, value in (entry.build_env.items() if entry else ()):
            if component.build_env.get(var) != value:
                raise ManifestError(path, f"components.{name}.build_env.{var}",
                                    f"expected {value!r}: {name} is built from source and needs {need!r}, which "
                                    f"{provider} provides only to a build that sets {var}={value}")


def _check_torch_with(path: Path, release: Release, catalog: Catalog) -> None:
    """A wheel brings its own BLAS and MPI; a source build links only what the builder has."""
    pytorch = release.components.get("pytorch")
    if pytorch is None or pytorch.install != "source":
        return
    needs = needs_of("pytorch", pytorch, catalog)
    for index, capability in enumerate(release.stack.torch_with):
        if capability not in needs:
            raise ManifestError(path, f"stack.torch_with.{index}",
                                f"promises a PyTorch built with {capability}, but components.pytorch.needs does "
                                f"not name {capability!r}: the source build would link it only by luck")


def order_by_need(steps: list, needs: dict[str, tuple[str, ...]], provides: dict[str, tuple[str, ...]],
                  path: Path) -> list:
    """`steps` (objects with .name, in manifest order) so that each comes after every step that provides
    one of its needs; among steps that are ready, the first in manifest order goes first. A cycle is an
    error naming its steps."""
    by_capability: dict[str, set[str]] = {}
    for step in steps:
        for capability in provides.get(step.name, ()):
            by_capability.setdefault(capability, set()).add(step.name)
    after = {step.name: {other for need in needs.get(step.name, ()) for other in by_capability.get(need, ())
                         if other != step.name} for step in steps}
    placed: list = []
    done: set[str] = set()
    waiting = list(steps)
    while waiting:
        ready = next((step for step in waiting if after[step.name] <= done), None)
        if ready is None:
            names = ", ".join(step.name for step in waiting)
            raise ManifestError(path, "components", f"these components need each other (a cycle): {names}")
        placed.append(ready)
        done.add(ready.name)
        waiting.remove(ready)
    return placed
