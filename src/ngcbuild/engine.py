"""The one connection to the Docker engine, with a clear message when there is none."""

from __future__ import annotations

import os

import docker
import requests
from docker.errors import DockerException

from .errors import EngineUnavailable

# Long builds stream for a long time between events (a 200 MB wheel install prints nothing).
API_TIMEOUT_S = 3600
# A live engine answers a ping at once; one that accepts and never answers is as good as none.
PING_TIMEOUT_S = 10
HOW_TO_FIX = ("Start it (on our machines: `bash .ci/engine`; elsewhere: `sudo systemctl start docker`) "
              "or point DOCKER_HOST at one.")


def connect() -> docker.APIClient:
    """A low-level API client for DOCKER_HOST (or the default socket), checked with a ping."""
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=PING_TIMEOUT_S).api
        client.ping()
    except (DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(f"cannot reach the Docker engine at {where} ({_reason(where, exc)}). "
                                + HOW_TO_FIX) from None
    client.timeout = API_TIMEOUT_S
    return client


def _reason(where: str, exc: Exception) -> str:
    """Why, in words: the socket file is missing, refuses connections, does not answer, or denies us."""
    text = str(exc)
    if where.startswith("unix://"):
        path = where[len("unix://"):]
        if not os.path.exists(path):
            return f"{path} does not exist: no engine is running"
    if "Permission denied" in text:
        return "permission denied: add your user to the docker group or use sudo"
    if "Connection refused" in text:
        return "connection refused: nothing is listening there; the engine is not running"
    if "timed out" in text.lower() or isinstance(exc, requests.exceptions.Timeout):
        return f"no answer within {PING_TIMEOUT_S}s: the engine is hung or this is not a Docker engine"
    if "Connection aborted" in text or "RemoteDisconnected" in text:
        return "the connection was closed without an answer: this is not a Docker engine"
    return text.split("(", 1)[0].strip() or type(exc).__name__


def image_exists(client: docker.APIClient, ref: str) -> bool:
    try:
        client.inspect_image(ref)
        return True
    except docker.errors.ImageNotFound:
        return False
