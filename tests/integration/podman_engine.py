"""Podman's Docker-compatible API service as the tests use it (`.ci/engine` starts it on a socket of its own;
docs/engines.md): a client that fails in CI and skips elsewhere where no Podman answers, emptied before and
after a module's use (a fresh runner's: builds are cold; gigabytes of layers leave with the test), and dev's
base there. The files that use it run beside the Docker engine's lane (dev/test_run.py)."""

from __future__ import annotations

import os

from ..conftest import fail_in_ci_else_skip

PODMAN_SOCKET = os.environ.get("NGCBUILD_PODMAN_SOCKET", "/run/ngcbuild-podman/podman.sock")
BASE = "docker.io/library/debian:bookworm-slim"  # dev's base as Podman names it


def podman_client():
    import docker

    try:
        # the client asks the service its API version as it is made: no service raises here already
        client = docker.APIClient(base_url=f"unix://{PODMAN_SOCKET}", timeout=600)
        components = client.version().get("Components") or []
    except Exception as exc:  # noqa: BLE001 - whatever keeps the service from answering
        fail_in_ci_else_skip(f"no Podman API service at unix://{PODMAN_SOCKET}: {exc}", "`bash .ci/engine` starts it")
    assert any("podman" in part.get("Name", "").lower() for part in components), components
    return client


def empty(client) -> None:
    for container in client.containers(all=True):
        client.remove_container(container["Id"], force=True)
    for image in client.images():
        try:
            client.remove_image(image["Id"], force=True)
        except Exception:  # noqa: BLE001, S110 - an image removed with its child already
            pass


def base_from_docker_or_made(podman, scratch, env) -> None:
    """dev's base in Podman: the Docker engine's (the same base by digest: debootstrap is not reproducible,
    and a second one costs minutes), else made there by `invoke base`."""
    import docker

    try:
        saved = docker.APIClient(timeout=600).get_image("debian:bookworm-slim")
        for event in podman.load_image(saved):
            assert "error" not in event, event
        loaded = [tag for image in podman.images() for tag in image.get("RepoTags") or []
                  if tag.endswith("debian:bookworm-slim")]
        podman.tag(loaded[0], BASE.rsplit(":", 1)[0], "bookworm-slim")
        return
    except (docker.errors.DockerException, IndexError):
        pass
    made = scratch.invoke_env(env, "base", "--release", "dev", timeout=900)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
