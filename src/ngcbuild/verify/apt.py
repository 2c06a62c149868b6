"""Each apt pin of a release against the distribution's archive indexes (apt_index.py reads them)."""

from __future__ import annotations

from ngcbuild.core.http import HttpFailure
from ngcbuild.verify import apt_index
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import HttpStatus, Web


def apt_pins(release) -> dict[str, str]:
    """Every apt pin of the release: the interpreter's, the builder's and the apt components'."""
    pins = {**release.python.apt_packages, **release.python.builder_apt_packages, **release.builder.apt_packages}
    for component in release.components.values():
        if component.install == "apt":
            pins.update(component.packages)
    return pins


def apt_rows(release, platform: str, web: Web) -> list[Row]:
    """Each apt pin against the distribution's indexes: there, and not older than the archive's newest
    (an older pin downgrades a base image that has the update, which apt refuses, and lacks its fixes)."""
    pins = apt_pins(release)
    if not pins:
        return []
    arch = platform.split("/")[1]
    found: dict[str, dict[str, str]] = {}  # package -> version -> suite
    unread = []
    for source in release.os.apt_sources:
        for suite in source.suites:
            for component in source.components:
                text = _read_index(source.url, suite, component, arch, web)
                if text is None:
                    unread.append(f"{source.url} {suite}/{component}")
                    continue
                for package, versions in apt_index.parse_packages(text).items():
                    if package in pins:
                        for version in versions:
                            found.setdefault(package, {}).setdefault(version, suite)
    rows = []
    for package, version in sorted(pins.items()):
        versions = found.get(package, {})
        if not release.os.apt_sources or (unread and not versions):
            why = "no apt_sources in the manifest's os" if not release.os.apt_sources else \
                f"could not read {', '.join(unread)}"
            rows.append(Row("apt", package, version, platform, NOT_VERIFIED, why))
        elif not versions:
            rows.append(Row("apt", package, version, platform, NOT_VERIFIED,
                            "not in the distribution's archive: from a repository the base image adds "
                            "(NVIDIA's CUDA repository), which verify does not read"))
        elif version not in versions:
            have = ", ".join(f"{v} ({s})" for v, s in sorted(versions.items()))
            rows.append(Row("apt", package, version, platform, FAILED, f"not in the archive, which has {have}"))
        else:
            top = apt_index.newest(versions)
            if apt_index.compare_versions(version, top) < 0:
                rows.append(Row("apt", package, version, platform, FAILED,
                                f"older than {top} in {versions[top]}: where the base image has that update, "
                                "apt must downgrade (and stops), and the pin lacks its fixes"))
            else:
                rows.append(Row("apt", package, version, platform, VERIFIED, f"the newest in {versions[version]}"))
    return rows


def _read_index(url: str, suite: str, component: str, arch: str, web: Web) -> str | None:
    if web.unreachable(url, apt=True):
        return None
    for index in apt_index.index_urls(url, suite, component, arch):
        try:
            return apt_index.decompress(web.get(index, apt=True), index)
        except HttpStatus:
            continue
        except (HttpFailure, OSError, EOFError, ValueError):
            return None
    return None
