"""`invoke verify --release R`: is every pin of R there to be installed, and will the image's own last
check pass, before a GPU runner tries?

For R's interpreter and each platform R builds: each pip pin's file on the indexes R names (chosen as
pip chooses, its metadata read without downloading it), the closure of the pin set, the image's
`pip check` predicted from the metadata of everything the image will hold, and what each module the smoke
suite checks will report, by the suite's own version rule; each apt pin against its archive, and which key
signs each apt repository whose key the manifest installs; each git ref must be a full commit dated before
the release (a short hash, as NVIDIA gives some, is resolved where GitHub answers, else "not verified" with
the command that resolves it); a base image known to be gone is refused with the way out. What this machine
cannot reach is reported as "not verified" with the reason, never as verified.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import ManifestError
from ngcbuild.core.http import HttpFailure
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.verify.apt import apt_rows
from ngcbuild.verify.apt_keys import apt_key_rows
from ngcbuild.verify.apt_lists import apt_list_rows
from ngcbuild.verify.closure_check import closure_row
from ngcbuild.verify.git_refs import git_rows
from ngcbuild.verify.module_versions import module_rows
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.pins import choose_pins, pip_rows
from ngcbuild.verify.prediction import prediction_row
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web


def verify_release(loaded: LoadedRelease, web: Web, indexes: list[str], base: str | None = None,
                   index_as_of: str | None = None) -> list[Row]:
    """`indexes`: the release's (core/indexes.release_indexes, with the user's index setting);
    `index_as_of`: read them as they were then (a derived release's derive.index_as_of)."""
    release = loaded.release
    if release.os.glibc is None:
        raise ManifestError(loaded.path, "os.glibc",
                            "required by verify: the C library version (e.g. '2.39') that says which "
                            "manylinux wheels the image can install")
    python = release.python.interpreter_version
    if python is None:
        raise ManifestError(loaded.path, "python.full_version",
                            f"required by verify where no apt pin of python{release.python.version} or python3 "
                            "says it: the interpreter's full version (e.g. '3.8.5'), for markers and Requires-Python")
    platforms = list(dict.fromkeys((release.build.platform, *release.build.published_platforms)))
    targets = [Target(python, platform, release.os.glibc) for platform in platforms]
    rows = [_base_row(release, base)]
    work = Work()
    # an interrupted run's workers may still be writing there as it is removed: never an error of its own
    with tempfile.TemporaryDirectory(prefix="ngcbuild-verify-", ignore_cleanup_errors=True) as scratch:
        try:
            rows += _python_rows(loaded, targets, indexes, web, work, Path(scratch), index_as_of)
        finally:
            work.cancel()  # nothing of this run outlives it: no worker takes more, no build process is left
    for target in targets:
        rows += apt_rows(release, target.platform, web)
    rows += apt_key_rows(release, web)
    rows += apt_list_rows(release, web)
    rows += git_rows(release, web)
    rows += _other_rows(release, web)
    return rows


def _python_rows(loaded: LoadedRelease, targets: list[Target], indexes: list[str], web: Web, work: Work,
                 scratch: Path, index_as_of: str | None = None) -> list[Row]:
    """The pip, wheel-tags, closure and pip-check rows of every platform, from one read of the indexes."""
    if loaded.constraints is None or not loaded.constraints.pins:
        return []
    release, pins = loaded.release, loaded.constraints.pins
    sources = Sources(indexes, web, work, scratch, index_as_of)
    sources.read_listings([pin.key for pin in pins])
    files = [sources.choose(pin.name, f"=={pin.version}", target) for target in targets for pin in pins]
    sources.read_metadata([file for file in files if file is not None])
    rows = []
    for target in targets:
        chosen = choose_pins(pins, target, sources)
        wrong = {canonicalize_name(w.distribution): w.evidence for w in release.pip.wrong_wheel_tags
                 if target.platform in w.platforms}
        rows += pip_rows(chosen, target, sources, wrong)
        rows.append(closure_row(loaded, target, sources, chosen))
        rows.append(prediction_row(loaded, target, sources, chosen))
        rows += module_rows(loaded, target, chosen, web.fetch)
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
    try:  # a HEAD's Content-Length is the archive's size, not a body to read: no cap on it
        answer = web.fetch(url, method="HEAD", limit=1 << 62)
    except HttpFailure as exc:
        return Row("url", name, url, "", NOT_VERIFIED, str(exc))
    if answer.status >= 400:
        return Row("url", name, url, "", FAILED, f"HTTP {answer.status}")
    return Row("url", name, url, "", VERIFIED, "the archive downloads")
