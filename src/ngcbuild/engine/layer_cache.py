"""The layer cache shared through a registry, for engines that did not build the release themselves.

The classic builder reuses a step only from an image it is told about (`cache_from`), and a
multi-stage build pushes only its final stage: so every stage's image is pushed too, under
`<registry>/<repository>-cache:<release>-<arch>-<stage>`. That repository holds no release tag, so
a cache image can never be taken for a release. Before a build with `--cache-from`, those images
are pulled; one that is missing (the first build of a release, a pruned registry) is said and
skipped, never a failure: the build then runs its steps.
"""

from __future__ import annotations

import docker
import requests
import urllib3

from ngcbuild.core.names import ImageNames
from ngcbuild.core.text import safe
from ngcbuild.engine.reuse import arch_of
from ngcbuild.engine.transfer import TransferProgress
from ngcbuild.workspace.sections import BuildRecord

CACHE_SUFFIX = "-cache"
_ENGINE_ERRORS = (docker.errors.APIError, requests.exceptions.RequestException, urllib3.exceptions.HTTPError)


def cache_repository(registry: str, names: ImageNames) -> str:
    return f"{registry}/{names.repository_path}{CACHE_SUFFIX}"


def cache_tag(names: ImageNames, platform: str, stage: str) -> str:
    return f"{names.release}-{arch_of(platform)}-{stage}"


def pull_cache(client, registry: str, names: ImageNames, platform: str, stages: list[str], auth, say, out) -> list[str]:
    """Pull the cache image of every stage; return the refs pulled, for `cache_from`."""
    repository = cache_repository(registry, names)
    pulled = []
    for stage in stages:
        ref = f"{repository}:{cache_tag(names, platform, stage)}"
        progress = TransferProgress(out, verb="pulling")
        try:
            for event in client.pull(repository, tag=cache_tag(names, platform, stage), stream=True, decode=True,
                                     auth_config=auth, platform=platform):
                progress.feed(event)
            progress.done()
        except _ENGINE_ERRORS as exc:
            progress.error = progress.error or _first_line(str(getattr(exc, "explanation", None) or exc))
        if progress.error:
            say(f"no cache image {ref} ({_first_line(progress.error)}); its steps are built")
            continue
        say(f"cache image {ref}: pulled ({progress.summary()})")
        pulled.append(ref)
    return pulled


def local_sources(client, build: BuildRecord, platform: str, refs: list[str]) -> list[str]:
    """This engine's own stage images, still present: those of the release's last build here (its
    record) and those its cache tags name before a pull moves them. With `cache_from` set, the classic
    builder takes a step from the local cache only from the history of a listed image."""
    wanted = list(refs)
    if build.platform == platform:
        wanted += list(build.stages.values())
    found = []
    for ref in wanted:
        try:
            image_id = client.inspect_image(ref)["Id"]
        except docker.errors.ImageNotFound:
            continue
        if image_id not in found:
            found.append(image_id)
    return found


def tag_stages(client, registry: str, names: ImageNames, platform: str, stages: dict[str, str]) -> list[str]:
    """Tag each stage image under its cache tag; return the refs."""
    repository = cache_repository(registry, names)
    refs = []
    for stage, image_id in stages.items():
        tag = cache_tag(names, platform, stage)
        client.tag(image_id, repository, tag, force=True)
        refs.append(f"{repository}:{tag}")
    return refs


def _first_line(text: str) -> str:
    """The first line of the engine's message, which may quote the registry's words: escaped."""
    text = text.strip()
    return safe(text.splitlines()[0], 300) if text else "unknown error"
