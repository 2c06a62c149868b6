"""`invoke prune`: give a long-lived runner its disk back.

Removes the dangling images (the untagged leftovers of earlier builds: each cold build of `dev`
leaves ~1.2 GB) and ngcbuild's images beyond the newest N of each release and platform. An image is
ngcbuild's when it carries the context-hash label every build sets; it is grouped by the release
label. Never removed: an image a container (running or not) uses, or one with a tag that is not
ngcbuild's (someone tagged it for their own use). The newest build's stage images stay: every build
tags them under the cache repository (layer_cache.py), so they are not dangling.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import docker

from ngcbuild.core.errors import UserError
from ngcbuild.core.outputs import printer
from ngcbuild.core.references import ImageRef, ReferenceProblem
from ngcbuild.core.text import safe
from ngcbuild.engine.client import connect
from ngcbuild.engine.image_build import RELEASE_LABEL
from ngcbuild.engine.reuse import CONTEXT_HASH_LABEL
from ngcbuild.engine.transfer import human_bytes

DEFAULT_KEEP = 2


@dataclass
class Pruned:
    removed: list[str] = field(default_factory=list)  # what was removed, in words
    kept_in_use: list[str] = field(default_factory=list)
    kept_foreign: list[str] = field(default_factory=list)
    freed_bytes: int = 0


def ours(tag: str, repositories: set[str]) -> bool:
    """A tag ngcbuild gives: `<host>/<a release's repository or its cache>:<tag>`."""
    try:
        ref = ImageRef.parse(tag)
    except ReferenceProblem:  # `<none>:<none>`, or whatever else an engine lists
        return False
    return ref.host is not None and ref.path in repositories


def to_remove(images: list[dict], keep: int) -> list[dict]:
    """ngcbuild's images beyond the newest `keep` per (release, platform); `images` are inspected."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for image in images:
        labels = (image.get("Config") or {}).get("Labels") or {}
        if CONTEXT_HASH_LABEL not in labels:
            continue
        release = labels.get(RELEASE_LABEL) or labels.get("org.opencontainers.image.version") or "?"
        groups.setdefault((release, f"{image.get('Os')}/{image.get('Architecture')}"), []).append(image)
    extra = []
    for group in groups.values():
        group.sort(key=lambda image: image.get("Created") or "", reverse=True)
        extra += group[keep:]
    return extra


def prune(client, repositories: set[str], keep: int, say) -> Pruned:
    if keep < 0:
        raise UserError(f"--keep {keep}: expected a number of images to keep, 0 or more")
    result = Pruned()
    before = _layers_size(client)
    used = {container["ImageID"] for container in client.containers(all=True)}
    labelled = [client.inspect_image(summary["Id"])
                for summary in client.images(filters={"label": CONTEXT_HASH_LABEL})]
    for image in to_remove(labelled, keep):
        tags = [tag for tag in image.get("RepoTags") or [] if tag != "<none>:<none>"]
        name = f"{image['Id'][7:19]} ({', '.join(tags) or 'untagged'})"
        if image["Id"] in used:
            result.kept_in_use.append(name)
            continue
        foreign = [tag for tag in tags if not ours(tag, repositories)]
        if foreign:
            result.kept_foreign.append(f"{name}: not ngcbuild's: {', '.join(foreign)}")
            continue
        if _remove(client, image["Id"], tags, say):
            result.removed.append(name)
    for summary in client.images(filters={"dangling": True}):
        name = f"{summary['Id'][7:19]} (dangling)"
        if summary["Id"] in used:
            result.kept_in_use.append(name)
        elif _remove(client, summary["Id"], [], say):
            result.removed.append(name)
    result.freed_bytes = max(0, before - _layers_size(client))
    return result


def _remove(client, image_id: str, tags: list[str], say) -> bool:
    try:
        for tag in tags:
            client.remove_image(tag)  # untag; the last one removes the image
        if not tags:
            client.remove_image(image_id)
        return True
    except docker.errors.NotFound:
        return True
    except docker.errors.APIError as exc:  # a child image or a container created meanwhile
        say(f"kept {image_id[7:19]}: {safe(exc.explanation or exc, 300)}")  # the engine's words
        return False


def _layers_size(client) -> int:
    return int(client.df().get("LayersSize") or 0)


def run_prune(repositories: set[str], keep: int = DEFAULT_KEEP, out=sys.stdout) -> Pruned:
    say = printer(out)

    result = prune(connect(), repositories, keep, say)
    for name in result.removed:
        say(f"removed {name}")
    for name in result.kept_in_use:
        say(f"kept {name}: a container uses it")
    for name in result.kept_foreign:
        say(f"kept {name}")
    say(f"pruned {len(result.removed)} images, freed {human_bytes(result.freed_bytes)} "
        f"(kept the newest {keep} per release and platform)")
    return result
