"""The one connection to the Docker engine, with a clear message when there is none."""

from __future__ import annotations

import math
import os

import docker
import requests
from docker.errors import DockerException

from ngcbuild.core.errors import EngineUnavailable, OperationError, UserError
from ngcbuild.core.http import DEADLINE_VARIABLE, deadline_cap
from ngcbuild.core.references import ReferenceProblem, parse_engine_url
from ngcbuild.core.streams import within
from ngcbuild.engine.address import HOW_TO_FIX, PING_TIMEOUT_S, engine_address, unreachable_reason

# Long builds stream for a long time between events (a 200 MB wheel install prints nothing).
API_TIMEOUT_S = 3600
# a pull's one deadline (issue 54 item 1): PULL_START_S for the registry's answers and the first layer, and a
# second for every PULL_MIN_RATE bytes of the layers it has announced; at most MAX_PULL_S whatever it announces
PULL_START_S = 300
PULL_MIN_RATE = 2 << 20
MAX_PULL_S = 6 * 3600


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


class PullDeadline:
    """One deadline for a whole pull, sized to it as it goes: PULL_START_S, and a second for every
    PULL_MIN_RATE bytes of the layers its events have announced (each layer's largest `total`), at most
    MAX_PULL_S, and at most $NGCBUILD_HTTP_DEADLINE_S. A pull that sends nothing, stalls in a read or never
    ends its stream is cut there, in one line (OperationError, exit 1), whatever each read's own limit."""

    def __init__(self, what: str):
        self.what, self.layers = what, {}
        self.cap = deadline_cap()

    def feed(self, event) -> None:
        detail = event.get("progressDetail") if isinstance(event, dict) else None
        total = detail.get("total") if isinstance(detail, dict) else None
        layer = event.get("id")
        if isinstance(layer, str) and isinstance(total, int) and not isinstance(total, bool) and 0 < total < 1 << 50:
            if len(self.layers) < 4096 or layer in self.layers:  # an image of a thousand layers has a thousand
                self.layers[layer] = max(total, self.layers.get(layer, 0))

    def seconds(self) -> float:
        sized = self._sized()
        return min(sized, self.cap) if self.cap is not None else sized

    def late(self) -> OperationError:
        size = sum(self.layers.values())
        why = f"${DEADLINE_VARIABLE}" if self.cap is not None and self.cap < self._sized() else \
            f"{PULL_START_S}s and 1 s per {PULL_MIN_RATE >> 20} MiB of the {size} bytes its layers announced"
        return OperationError(f"{self.what} did not end within {self.seconds():.0f}s ({why}); the engine or the "
                              "registry stalls or trickles it")

    def _sized(self) -> float:
        return min(float(MAX_PULL_S), PULL_START_S + math.ceil(sum(self.layers.values()) / PULL_MIN_RATE))


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
    from ngcbuild.core.errors import excerpt
    from ngcbuild.core.references import ImageRef
    from ngcbuild.registry.auth import keychain

    if image_exists(client, ref):
        return
    parsed = ImageRef.parse(ref)
    auth = keychain().engine_auth(parsed.host) if parsed.host else None
    if say is not None:
        say(f"pulling {ref} ({what})")
    pull = PullDeadline(f"{what}: the engine's pull of {ref}")
    try:
        for event in within(lambda: client.pull(parsed.repository, tag=parsed.digest or parsed.tag or "latest",
                                                stream=True, decode=True, auth_config=auth), pull.seconds, pull.late):
            pull.feed(event)
            if isinstance(event, dict) and event.get("error"):
                raise OperationError(f"{what}: {ref} is not on this engine and cannot be pulled "
                                     f"({excerpt(str(event['error']), 200)})")
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise OperationError(f"{what}: {ref} is not on this engine and cannot be pulled "
                             f"({excerpt(str(getattr(exc, 'explanation', None) or exc), 200)})") from None
