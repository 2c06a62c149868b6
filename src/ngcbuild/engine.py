"""The one connection to the Docker engine, with a clear message when there is none."""

from __future__ import annotations

import os

import docker
from docker.errors import DockerException

from .errors import EngineUnavailable

# Long builds stream for a long time between events (a 200 MB wheel install prints nothing).
API_TIMEOUT_S = 3600


def connect() -> docker.APIClient:
    """A low-level API client for DOCKER_HOST (or the default socket), checked with a ping."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=API_TIMEOUT_S).api
        client.ping()
        return client
    except DockerException as exc:
        reason = str(exc).split("(", 1)[0].strip() or type(exc).__name__
        raise EngineUnavailable(
            f"cannot reach the Docker engine at {where} ({reason}). Start it (on our machines: "
            "`bash .ci/engine`; elsewhere: `sudo systemctl start docker`) or point DOCKER_HOST at one."
        ) from None


def image_exists(client: docker.APIClient, ref: str) -> bool:
    try:
        client.inspect_image(ref)
        return True
    except docker.errors.ImageNotFound:
        return False
