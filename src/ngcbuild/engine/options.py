"""What `build` is asked to do, checked before anything is rendered, locked, tagged or asked of the
engine: the registry of the tags, where an image of the same context is looked for, this machine's
build inputs (CA bundle, wheelhouse, the index setting and its logins, the apt proxy: core/indexes.py),
the platform, the base mirror, extra labels and the layer cache's registries."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError, excerpt, shown_path
from ngcbuild.core.indexes import IndexSetting, apt_proxy_setting, build_logins, index_setting
from ngcbuild.core.names import ImageNames
from ngcbuild.core.references import registry_host, shown_url
from ngcbuild.engine.address import loopback_engine_problem
from ngcbuild.engine.epoch import VARIABLE, parse_epoch
from ngcbuild.engine.reuse import parse_labels

DEFAULT_REGISTRY = "nvcr.io"
CA_ENV_VARS = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
PLATFORMS = ("linux/amd64", "linux/arm64")
MAX_CA_BYTES = 10_000_000


@dataclass(frozen=True)
class BuildOptions:
    registry: str = DEFAULT_REGISTRY
    ca_bundle: Path | None = None
    wheelhouse: Path | None = None
    no_cache: bool = False
    base: str | None = None  # a mirror of the manifest's base image
    # Skip-by-hash (reuse.py): platform to build, rebuild anyway, the registry to look in besides the engine.
    platform: str | None = None
    force: bool = False
    reuse_from: str | None = None
    # Extra image labels, e.g. the CI run that built it (release.yml cleans up by that label).
    labels: tuple[tuple[str, str], ...] = ()
    # Registries to pull the layer cache from before building, and to push it to after (layer_cache.py).
    cache_from: str | None = None
    cache_to: str | None = None
    # Build a platform the manifest does not list (build.platforms): refused unless asked for.
    force_platform: bool = False
    # Where the build's pip reads (core/indexes.py: --index-url, $UV_INDEX_URL, $PIP_INDEX_URL...), the
    # proxy of its apt steps, and whether a derived release's lock may have been resolved against another index.
    indexes: IndexSetting = IndexSetting()
    apt_proxy: str | None = None
    other_lock_index: bool = False


def options_from(registry: str | None, ca_bundle: str | None, wheelhouse: str | None, no_cache: bool,
                 environ=os.environ, base: str | None = None, platform: str | None = None, force: bool = False,
                 labels: list[str] | None = None, cache_from: str | None = None,
                 cache_to: str | None = None, force_platform: bool = False,
                 reuse_from: str | None = None, index_url: str | None = None, extra_index_urls=None,
                 apt_proxy: str | None = None, other_lock_index: bool = False) -> BuildOptions:
    """Command-line values, with the defaults a machine behind a proxy expects. Every one is checked
    here, before anything is rendered, locked, tagged or asked of the engine."""
    if environ.get(VARIABLE):  # the epoch every build's image says (epoch.py): bad, nothing is built
        parse_epoch(environ[VARIABLE], VARIABLE)
    ca = checked_ca_bundle(ca_bundle, environ)
    house = checked_wheelhouse(wheelhouse) if wheelhouse is not None else default_wheelhouse(environ)
    tags = DEFAULT_REGISTRY if registry is None else registry_host(registry)
    platform = checked_platform(platform)
    indexes = index_setting(index_url, extra_index_urls, environ)
    build_logins([indexes.index_url, *indexes.extra], environ)  # two logins for one host, a bad netrc: refused now
    apt_proxy = apt_proxy_setting(apt_proxy, environ)
    problem = loopback_engine_problem([indexes.index_url, *indexes.extra, *([apt_proxy] if apt_proxy else [])],
                                      environ)
    if problem:  # before anything is rendered or asked of the engine
        raise UserError(problem)
    return BuildOptions(registry=tags, ca_bundle=ca, wheelhouse=house, no_cache=no_cache,
                        base=_checked_base(base), platform=platform, force=force,
                        reuse_from=checked_reuse_from(reuse_from, registry and tags),
                        labels=parse_labels(labels or []),
                        cache_from=None if cache_from is None else registry_host(cache_from, "--cache-from"),
                        cache_to=None if cache_to is None else registry_host(cache_to, "--cache-to"),
                        force_platform=bool(force_platform), indexes=indexes,
                        apt_proxy=apt_proxy, other_lock_index=bool(other_lock_index))


ENGINE_ONLY = "local"  # --reuse-from local: this engine only (no registry host is named so: it has no dot or port)


def checked_reuse_from(value: str | None, registry: str | None) -> str | None:
    """--reuse-from: the registry an image of the same context is looked for in besides the engine;
    `local` for the engine only; not given: the --registry given (what --registry always meant), else none."""
    if value is None:
        return registry
    return None if value == ENGINE_ONLY else registry_host(value, "--reuse-from")


def checked_platform(platform: str | None) -> str | None:
    """--platform: one of the platforms ngcbuild builds (whether R lists it is checked on load)."""
    if platform is not None and platform not in PLATFORMS:
        raise UserError(f"--platform {excerpt(platform)}: expected one of {', '.join(PLATFORMS)}")
    return platform


def check_platform_listed(options: BuildOptions, release, manifest: str) -> None:
    """A platform the manifest does not list is a mistake unless the user forces it: release.yml
    builds and publishes exactly the listed ones, and an image of another was never promised."""
    listed = release.build.published_platforms
    if options.platform and options.platform not in listed and not options.force_platform:
        raise UserError(f"{manifest}: build.platforms: lists {', '.join(listed)}, not --platform {options.platform}; "
                        "add it there, or pass --force-platform to build it anyway")


def checked_ca_bundle(value: str | None, environ) -> Path | None:
    """--ca-bundle (or the first CA variable set): a readable file holding PEM certificates. Its
    content is never shown: it is not ours to print."""
    if value is not None:
        flag, text = "--ca-bundle", value
    else:
        flag, text = next(((f"${v}", environ[v]) for v in CA_ENV_VARS if environ.get(v)), (None, None))
        if flag is None:
            return None
    path = Path(text)
    expected = "expected a PEM CA bundle"
    if "\x00" in text:
        raise UserError(f"{flag} {excerpt(text)}: a path cannot hold a NUL character; {expected}")
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # before opening: a FIFO would block the open
            raise UserError(f"{flag} {shown_path(path)}: not a regular file; {expected}")
        with path.open("rb") as handle:
            head = handle.read(MAX_CA_BYTES + 1)
    except OSError as exc:
        raise UserError(f"{flag} {shown_path(path)}: cannot be read ({exc.strerror}); {expected}") from None
    if len(head) > MAX_CA_BYTES or b"-----BEGIN CERTIFICATE-----" not in head:
        raise UserError(f"{flag} {shown_path(path)}: expected a PEM CA bundle (-----BEGIN CERTIFICATE----- "
                        f"blocks, under {MAX_CA_BYTES // 1_000_000} MB); its content is not shown")
    return path


def _checked_base(base: str | None) -> str | None:
    if base is None:
        return None
    from ngcbuild.render.image import checked_base  # the image reference type of the manifest (pydantic)

    return checked_base(base)


def default_wheelhouse(environ: dict) -> Path | None:
    """PIP_FIND_LINKS when it names one local directory."""
    value = environ.get("PIP_FIND_LINKS", "").strip()
    if value and " " not in value and Path(value).is_dir():
        return Path(value)
    return None


def checked_wheelhouse(value: str) -> Path:
    path = Path(value)
    if not value or not path.is_dir():
        raise UserError(f"--wheelhouse {excerpt(value)}: expected a directory of wheels")
    return path


def image_repository(registry: str, names: ImageNames) -> str:
    return f"{registry}/{names.repository_path}"


def check_mirrors_answer(options: BuildOptions) -> None:
    """The indexes and the apt proxy this machine's user chose take a connection, asked by `build` and
    `repro` before the engine is: a mirror that is down is one line, not a failed step in a build's log."""
    setting = options.indexes
    chosen = [(setting.index_url, setting.index_from)] if setting.index_from != "default" else []
    chosen += [(url, "an extra index") for url in setting.extra]
    chosen += [(options.apt_proxy, "the apt proxy")] if options.apt_proxy else []
    if not chosen:
        return
    from ngcbuild.core.http import not_listening  # requests: not imported on the path of a build skipped by hash

    for url, where in chosen:
        why = not_listening(url)
        if why:
            raise OperationError(f"the index or proxy {shown_url(url)} ({where}) takes no connection ({why}): "
                                 "start it, or build without it; nothing was built")
