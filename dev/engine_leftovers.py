"""What a whole test run left on the shared engine, removed once both of `invoke test`'s pytest processes have
ended (dev/test_run.py): the tags its pushes gave the session's images under the test registry's name, the
images it pulled by digest from there, and the stage images whose cache tags a later build moved. The
fixtures put each release's own tags back (tests/integration/conftest.KeptTags), but cannot remove these
while the other process may still be using the engine; once both have ended nothing is. An image or tag
that was there before the run stays, whatever it is."""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass
from typing import TextIO

TEST_REGISTRY = os.environ.get("NGCBUILD_TEST_REGISTRY", "127.0.0.1:5000")  # the tests' too (integration/conftest)


@dataclass(frozen=True)
class EngineImages:
    ids: frozenset[str]
    tags: frozenset[str]


def _client():
    """The engine the tests use: DOCKER_HOST's, as ngcbuild reaches it (engine/client.connect)."""
    from ngcbuild.engine.client import connect

    return connect()


def snapshot() -> EngineImages | None:
    """The engine's images and tags now; None when no engine answers (then nothing is removed after)."""
    import docker

    from ngcbuild.core.errors import EngineUnavailable

    try:
        images = _client().images(all=True)
    except (EngineUnavailable, docker.errors.DockerException, OSError):
        return None
    return EngineImages(frozenset(image["Id"] for image in images),
                        frozenset(tag for image in images for tag in image.get("RepoTags") or []))


def remove_left(before: EngineImages | None, out: TextIO, registry: str = TEST_REGISTRY,
                who: str = "invoke test") -> None:
    """Untag what the run tagged under `registry`'s name, then remove every image the run made or pulled that no
    tag holds: each removal that the engine refuses (a container or another image uses it) is left. `who` begins
    what it writes to `out`."""
    import docker

    from ngcbuild.core.errors import EngineUnavailable

    if before is None:
        return
    try:
        client = _client()
        for image in client.images():
            for tag in image.get("RepoTags") or []:
                if tag.startswith(f"{registry}/") and tag not in before.tags:
                    with suppress(docker.errors.APIError):
                        client.remove_image(tag)
        removed, freed = 0, 0
        for image in client.images():  # top-level images: a removed one takes its untagged parents along
            if image["Id"] in before.ids or [tag for tag in image.get("RepoTags") or [] if tag != "<none>:<none>"]:
                continue
            with suppress(docker.errors.APIError):
                client.remove_image(image["Id"])
                removed, freed = removed + 1, freed + int(image.get("Size") or 0)
    except (EngineUnavailable, docker.errors.DockerException, OSError) as exc:
        out.write(f"{who}: the engine's leftovers were not removed ({str(exc)[:200]})\n")
        return
    if removed:
        out.write(f"{who}: removed {removed} images the run left without a tag ({freed / 1e9:.1f} GB)\n")
