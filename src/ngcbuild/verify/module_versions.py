"""The module rows: each component whose module the smoke suite holds to a version (Component.reported_version:
module_version where the manifest states it, else the version), against what verify can know before any
build of what that module will report, by the one version rule the suite uses (manifest/version_rule.py).

A pip component: the literal __version__ in its pinned wheel (wheel_module.py), verified or failed by the
rule; a wheel whose module reads its version elsewhere (its metadata, another distribution) is "not
verified", with what its distribution's version says. A source build or the base image's: what the module
reports is known after the build; the row says what the suite will accept."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from ngcbuild.core.references import shown_url
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.manifest.version_rule import accepts, mismatch
from ngcbuild.verify.finder import is_wheel
from ngcbuild.verify.pins import Chosen
from ngcbuild.verify.remote_zip import RemoteZipError
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.target import Target
from ngcbuild.verify.wheel_module import literal_version

KIND = "module"
WHERE = {"source": "built from source", "base": "carried by the base image", "apt": "installed from apt",
         "conda": "installed from conda"}


def module_rows(loaded: LoadedRelease, target: Target, chosen: dict[str, Chosen], fetch) -> list[Row]:
    rows = []
    for name, component in sorted(loaded.release.components.items()):
        entry = loaded.catalog.get(name)
        if entry is None or not entry.module or component.install not in (*WHERE, "pip"):
            continue
        expected = str(component.reported_version)
        if component.install != "pip":
            rows.append(Row(KIND, name, expected, target.platform, NOT_VERIFIED,
                            f"{WHERE[component.install]}: what {entry.module} reports is known after the build; "
                            f"the smoke suite accepts {accepts(expected)}"))
            continue
        carrier = _carrier(component, entry)
        rows.append(_pip_row(name, entry.module, expected, chosen.get(canonicalize_name(carrier)), target, fetch))
    return rows


def _carrier(component, entry) -> str:
    """The distribution whose version is the component's: its one package, or the first of its packages
    pinned at the component's version."""
    if not component.packages:
        return component.package or entry.pip_package
    return next((p for p, v in component.packages.items() if v == component.version), next(iter(component.packages)))


def _pip_row(name: str, module: str, expected: str, pin: Chosen | None, target: Target, fetch) -> Row:
    def row(status: str, reason: str) -> Row:
        return Row(KIND, name, expected, target.platform, status, reason)

    if pin is None or pin.file is None or not is_wheel(pin.file):
        return row(NOT_VERIFIED, f"no wheel of its distribution on a reachable index to read {module}'s version "
                                 f"from; the smoke suite accepts {accepts(expected)}")
    where = f"{pin.file.filename} from {shown_url(pin.file.index)}"
    try:
        found = literal_version(pin.file.url, module, fetch)
    except RemoteZipError as exc:
        return row(NOT_VERIFIED, f"{where} could not be read: {exc}")
    if found is None:
        why = mismatch(pin.version, expected)
        said = "which the rule accepts" if why is None else f"which the rule refuses ({why})"
        return row(NOT_VERIFIED, f"{where} holds no literal __version__ of {module} (it reads its version from its "
                                 f"metadata, or another distribution carries it); its distribution is {pin.version}, "
                                 f"{said}")
    reported, member = found
    why = mismatch(reported, expected)
    if why is not None:
        return row(FAILED, f"{member} in {where} says {reported}, which the smoke suite's {expected} refuses: {why}; "
                           f"the image's check of {module} would fail")
    return row(VERIFIED, f"{member} in {where} says {reported}")
