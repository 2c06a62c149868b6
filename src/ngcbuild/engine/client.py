"""The one connection to the Docker engine, with a clear message when there is none."""

from __future__ import annotations

import os

import docker
import requests
from docker.errors import DockerException

from ngcbuild.core.errors import EngineUnavailable, UserError
from ngcbuild.core.references import ReferenceProblem, parse_engine_url
from ngcbuild.engine.address import HOW_TO_FIX, PING_TIMEOUT_S, engine_address, unreachable_reason

# Long builds stream for a long time between events (a 200 MB wheel install prints nothing).
API_TIMEOUT_S = 3600


def select(url: str | None, environ=os.environ) -> None:
    """`--engine URL`: the engine every later connect() of this process reaches, named as DOCKER_HOST
    names it (so the build, its leftovers' cleanup and the tags all happen on that engine)."""
    if url is None:
        return
    try:
        environ["DOCKER_HOST"] = parse_engine_url(url)
    except ReferenceProblem as exc:
        raise UserError(f"--engine: {exc}") from None


def connect() -> docker.APIClient:
    """A low-level API client for DOCKER_HOST (or the default socket), checked with a ping."""
    where = engine_address()
    try:
        client = _client()
        client.ping()
    except (DockerException, requests.exceptions.RequestException, ValueError) as exc:
        # ValueError: an address docker-py itself refuses (parse_engine_url let fewer through)
        raise EngineUnavailable(f"cannot reach the Docker engine at {where} ({unreachable_reason(where, exc)}). "
                                + HOW_TO_FIX) from None
    client.timeout = API_TIMEOUT_S
    return client


def _client() -> docker.APIClient:
    kwargs = docker.utils.kwargs_from_env()
    tls = kwargs.get("tls")
    if not (tls and tls.ca_cert):
        return docker.from_env(timeout=PING_TIMEOUT_S).api
    # TLS verified against DOCKER_CERT_PATH's CA: requests would let REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE
    # (set on machines behind a proxy) replace that CA, from the very first request (the API version
    # docker-py asks for while it is made). So: made with a version, the environment off, then the
    # version agreed as docker-py's "auto" does.
    client = docker.APIClient(timeout=PING_TIMEOUT_S, version=docker.constants.DEFAULT_DOCKER_API_VERSION, **kwargs)
    client.trust_env = False
    served = client.version(api_version=False)["ApiVersion"]
    if docker.utils.version_lt(served, client.api_version):
        client._version = served  # noqa: SLF001 - the one place docker-py keeps the agreed version
    return client


def image_exists(client: docker.APIClient, ref: str) -> bool:
    try:
        client.inspect_image(ref)
        return True
    except docker.errors.ImageNotFound:
        return False
