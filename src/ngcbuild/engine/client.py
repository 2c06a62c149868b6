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


def ensure_image(client: docker.APIClient, ref: str, what: str, say=None) -> None:
    """`ref` on this engine, pulled (with the keychain's credentials for its registry) when absent; an
    image the engine cannot pull is OperationError naming `what` (whose image it is). An image pushed
    by ngcbuild's own push is in the registry under its digest but not in the engine's RepoDigests:
    found by its tag, or pulled here (the layers it holds already are not fetched again)."""
    from ngcbuild.core.errors import OperationError, excerpt
    from ngcbuild.core.references import ImageRef
    from ngcbuild.registry.auth import keychain

    if image_exists(client, ref):
        return
    parsed = ImageRef.parse(ref)
    auth = keychain().engine_auth(parsed.host) if parsed.host else None
    if say is not None:
        say(f"pulling {ref} ({what})")
    try:
        for event in client.pull(parsed.repository, tag=parsed.digest or parsed.tag or "latest", stream=True,
                                 decode=True, auth_config=auth):
            if event.get("error"):
                raise OperationError(f"{what}: {ref} is not on this engine and cannot be pulled "
                                     f"({excerpt(str(event['error']), 200)})")
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise OperationError(f"{what}: {ref} is not on this engine and cannot be pulled "
                             f"({excerpt(str(getattr(exc, 'explanation', None) or exc), 200)})") from None
