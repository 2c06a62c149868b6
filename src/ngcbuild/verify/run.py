"""`invoke verify --release R`: is every pin of R there to be installed, before a GPU runner tries?

Each pip pin is resolved with pip's own resolver in dry-run mode, for R's Python and each platform R
builds, against the indexes R names; each git ref must be a full commit dated before the release (a
short hash, as NVIDIA gives some, is resolved where GitHub answers, else "not verified" with the command
that resolves it); a base image known to be gone is refused with the way out. What this machine cannot reach is reported
as "not verified" with the reason, never as verified.
"""

from __future__ import annotations

import urllib.error

from ngcbuild.core.errors import ManifestError
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.verify.apt import apt_rows
from ngcbuild.verify.closure_check import closure_row
from ngcbuild.verify.git_refs import git_rows
from ngcbuild.verify.pins import Target, pip_rows
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import Web


def verify_release(loaded: LoadedRelease, web: Web, base: str | None = None) -> list[Row]:
    release = loaded.release
    if release.os.glibc is None:
        raise ManifestError(loaded.path, "os.glibc",
                            "required by verify: the C library version (e.g. '2.39') that says which "
                            "manylinux wheels the image can install")
    platforms = list(dict.fromkeys((release.build.platform, *release.build.published_platforms)))
    rows = [_base_row(release, base)]
    for platform in platforms:
        target = Target(release.python.version, platform, release.os.glibc)
        pins = pip_rows(loaded, target, web)
        rows += pins
        if loaded.constraints is not None and loaded.constraints.pins:
            rows.append(closure_row(loaded, target, web, pins))
        rows += apt_rows(release, platform, web)
    rows += git_rows(release, web)
    rows += _other_rows(release, web)
    return rows


def _base_row(release, base: str | None) -> Row:
    image = release.base.image
    if base:
        must = "; ".join(release.base.mirror_must)
        return Row("base", image, base, "", NOT_VERIFIED,
                   f"built FROM the mirror {base}, which verify does not query" + (f"; it must {must}" if must else ""))
    if release.base.removed:
        way_out = f"build FROM a mirror of it: invoke build --release {release.release} --base-image MIRROR/IMAGE:TAG"
        if release.base.mirror_must:
            way_out += "; the mirror must also " + "; and ".join(release.base.mirror_must)
        return Row("base", image, image, "", FAILED, f"{release.base.removed}. Way out: {way_out}")
    return Row("base", image, image, "", NOT_VERIFIED, "verify does not query registries; the build pulls it")


def _other_rows(release, web: Web) -> list[Row]:
    rows = []
    for name, component in release.components.items():
        if component.install == "conda":
            pins = ", ".join(f"{p}={v}" for p, v in component.packages.items())
            rows.append(Row("conda", name, pins, "", NOT_VERIFIED,
                            f"verify queries pip indexes, apt archives and git hosts, not conda channel "
                            f"{component.channel}"))
        elif component.install == "source" and component.url:
            rows.append(_url_row(name, component.url, web))
    return rows


def _url_row(name: str, url: str, web: Web) -> Row:
    why = web.unreachable(url)
    if why:
        return Row("url", name, url, "", NOT_VERIFIED, why)
    try:
        web.get(url, method="HEAD")
    except urllib.error.HTTPError as exc:
        return Row("url", name, url, "", FAILED, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        return Row("url", name, url, "", NOT_VERIFIED, str(exc))
    return Row("url", name, url, "", VERIFIED, "the archive downloads")
