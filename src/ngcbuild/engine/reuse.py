"""Skip what is already built: an image is named by the hash of its rendered context.

Every build tags its image `R-py3-<hash12>` (plus `-<arch>` for a platform other than the release's
default), and the image carries the full hash as a label. Before building, the same name is looked
up locally, then (when `--registry` was given) in the registry; a match is reused instead of built.
The machine's own inputs (CA bundle, wheelhouse) are not part of the hash: they change how the
image is fetched, never what it holds.
"""

from __future__ import annotations

import re
import time

from ngcbuild.core.errors import UserError, excerpt
from ngcbuild.core.names import ImageNames
from ngcbuild.core.references import ImageRef
from ngcbuild.core.text import safe
from ngcbuild.image.recipe import RECIPE_LABEL
from ngcbuild.registry.client import Registry, RegistryError
from ngcbuild.workspace.record import Record, record_build
from ngcbuild.workspace.sections import BuildRecord

CONTEXT_HASH_LABEL = "io.ngcbuild.context.sha256"
HASH_CHARS = 12
_LABEL_KEY_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


MAX_LABEL_KEY = 128
MAX_LABEL_VALUE = 1024  # a CI run's URL or id; a label is metadata, not a payload


def parse_labels(items: list[str]) -> tuple[tuple[str, str], ...]:
    """`--label KEY=VALUE` values. Extra labels do not enter the context hash: an image built by
    another CI run (another run label) is still reused."""
    labels = []
    for item in items:
        key, sep, value = item.partition("=")
        control = any(ord(c) < 32 or ord(c) == 127 for c in item)
        if (not sep or not _LABEL_KEY_RE.fullmatch(key) or key == CONTEXT_HASH_LABEL or control
                or len(key) > MAX_LABEL_KEY or len(value) > MAX_LABEL_VALUE):
            raise UserError(f"--label {excerpt(item)}: expected KEY=VALUE with a lower-case dotted key "
                            f"(not {CONTEXT_HASH_LABEL}; at most {MAX_LABEL_KEY} characters), a value of at most "
                            f"{MAX_LABEL_VALUE} characters and no control characters")
        labels.append((key, value))
    return tuple(labels)


def arch_of(platform: str) -> str:
    return platform.split("/")[1]


def hash_tag(names: ImageNames, context_hash: str, platform: str) -> str:
    tag = f"{names.tag}-{context_hash[:HASH_CHARS]}"
    return tag if platform == names.default_platform else f"{tag}-{arch_of(platform)}"


def platform_tag(tag: str, platform: str) -> str:
    """The per-platform tag `invoke publish` pushes before writing the multi-arch tag."""
    return f"{tag}-{arch_of(platform)}"


def build_tags(repository: str, names: ImageNames, context_hash: str, platform: str) -> list[str]:
    """The tags a build of `platform` gets: the release tag only for the default platform, so that
    building arm64 never moves `R-py3` off the amd64 image."""
    main = names.tag if platform == names.default_platform else platform_tag(names.tag, platform)
    return [f"{repository}:{main}", f"{repository}:{hash_tag(names, context_hash, platform)}"]


def matches(image: dict, context_hash: str, platform: str) -> bool:
    """An image of this context and platform that the build finished: the engine writes the build's labels
    (the context's, and the recipe its release image is made by: image/recipe.py) into its last image only,
    once every step ran; a release image pulled from a registry carries them too."""
    labels = (image.get("Config") or {}).get("Labels") or {}
    return (labels.get(CONTEXT_HASH_LABEL) == context_hash and RECIPE_LABEL in labels
            and f"{image.get('Os')}/{image.get('Architecture')}" == platform)


def find_local(client, ref: str, context_hash: str, platform: str) -> dict | None:
    """An image of this context and platform on this engine: by its hash tag, else by label. Found
    by listing, so that no answer is an error (either client: the SDK's or the local socket's)."""
    for filters in ({"reference": ref}, {"label": f"{CONTEXT_HASH_LABEL}={context_hash}"}):
        for summary in client.images(filters=filters):
            image = client.inspect_image(summary["Id"])
            if matches(image, context_hash, platform):
                return image
    return None


def find_in_registry(client, registry: Registry, repository_path: str, tag: str, context_hash: str,
                     platform: str, auth, say) -> dict | None:
    """Pull the hash tag when the registry has it, and check it is what its name says. A registry
    that cannot be asked (down, or needing credentials this job does not hold) means: build."""
    try:
        if registry.digest(repository_path, tag) is None:
            return None
    except RegistryError as exc:
        say(f"cannot look up {tag} in {registry.host} ({exc}); building")
        return None
    ref = f"{registry.host}/{repository_path}:{tag}"
    say(f"context {context_hash[:HASH_CHARS]} is in {registry.host}: pulling {ref}")
    for event in client.pull(f"{registry.host}/{repository_path}", tag=tag, stream=True, decode=True,
                             auth_config=auth, platform=platform):
        if event.get("error") or event.get("errorDetail"):
            say(f"pull of {ref} failed ({safe(event.get('error') or event['errorDetail'], 300)}); building instead")
            return None
    image = client.inspect_image(ref)
    return image if matches(image, context_hash, platform) else None


def reuse(client, names: ImageNames, directory, repository: str, context_hash: str, platform: str,
          registry: Registry | None, auth, say) -> Record | None:
    """The record of an existing image of this context, tagged as a build would tag it; None when
    there is none and the build must run."""
    started = time.monotonic()
    tags = build_tags(repository, names, context_hash, platform)
    image = find_local(client, tags[1], context_hash, platform)
    where = "locally"
    if image is None and registry is not None:
        hashed = ImageRef.parse(tags[1])
        image = find_in_registry(client, registry, hashed.path, hashed.tag, context_hash, platform, auth, say)
        where = f"in {registry.host}"
    if image is None:
        return None
    for ref in map(ImageRef.parse, tags):
        client.tag(image["Id"], ref.repository, ref.tag, force=True)
    record = record_build(directory, BuildRecord.of_image(names, image, tags, ImageRef(repository).host,
                                                          context_hash, platform))
    say(f"skipped the build of {names.release} ({platform}): context {context_hash[:HASH_CHARS]} is already "
        f"built {where} as {image['Id'][:19]}; reused it and tagged {', '.join(tags)} in "
        f"{time.monotonic() - started:.2f}s (--force rebuilds)")
    return record
