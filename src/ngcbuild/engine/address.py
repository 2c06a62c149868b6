"""Where the Docker engine is (DOCKER_HOST, checked by the one address parser) and, when it does not
answer, why, in words. Both engine clients use it: the standard library's on the local socket
(local_engine.py) and the SDK's for everything else (client.py)."""

from __future__ import annotations

import os

from ngcbuild.core.errors import UserError
from ngcbuild.core.references import ReferenceProblem, on_loopback, parse_engine_url, shown_url

DEFAULT_SOCKET = "/var/run/docker.sock"
# A live engine answers a ping at once; one that accepts and never answers is as good as none.
PING_TIMEOUT_S = 10
HOW_TO_FIX = ("Start it (on our machines: `bash .ci/engine`; elsewhere: `sudo systemctl start docker`) "
              "or point DOCKER_HOST at one.")


def engine_address(environ=os.environ) -> str:
    """The engine every client of this process reaches, as DOCKER_HOST names it: checked by the one
    address parser (credentials refused, never shown) before any client sees it."""
    value = environ.get("DOCKER_HOST")
    if not value:
        return f"unix://{DEFAULT_SOCKET}"
    try:
        return parse_engine_url(value)
    except ReferenceProblem as exc:
        raise UserError(f"DOCKER_HOST: {exc}") from None


def loopback_engine_problem(urls: list[str], environ=os.environ) -> str | None:
    """What is wrong with reading a mirror on this machine's loopback through this engine, or None. A build
    reaches such a mirror on the host's network (engine/image_build.py), which is this machine's only
    when the engine is reached by a unix socket: a remote engine would read its own loopback."""
    if not any(on_loopback(url) for url in urls):
        return None
    address = engine_address(environ)
    if address.startswith("unix://"):
        return None
    return (f"an index or the apt proxy is on this machine's loopback, but the engine ({shown_url(address)}, "
            "from DOCKER_HOST) is reached over the network and would read its own loopback: serve the mirror "
            "on an address that engine's machine reaches")


def unreachable_reason(where: str, exc: Exception, waited_s: float = PING_TIMEOUT_S) -> str:
    """Why, in words: the socket file is missing, refuses connections, does not answer, or denies us."""
    text = str(exc)
    if where.startswith("unix://"):
        path = where[len("unix://"):]
        if not os.path.exists(path):
            return f"{path} does not exist: no engine is running"
    if "HTTPS server" in text or "HTTP response to HTTPS" in text:
        return ("it speaks TLS and this client does not, or the other way round: set DOCKER_TLS_VERIFY=1 and "
                "DOCKER_CERT_PATH to a folder with ca.pem, cert.pem and key.pem, or unset them")
    if "SSL" in text or "certificate" in text.lower():
        return (f"TLS failed ({text.split('(', 1)[0].strip() or 'handshake'}): DOCKER_CERT_PATH must hold the "
                "engine's CA (ca.pem) and a client certificate it trusts (cert.pem, key.pem)")
    if "Permission denied" in text or isinstance(exc, PermissionError):
        return "permission denied: add your user to the docker group or use sudo"
    if "Connection refused" in text or isinstance(exc, ConnectionRefusedError):
        return "connection refused: nothing is listening there; the engine is not running"
    if "timed out" in text.lower() or isinstance(exc, TimeoutError):
        return f"no answer within {waited_s:g}s: the engine is hung or this is not a Docker engine"
    if isinstance(exc, BlockingIOError) or "Resource temporarily unavailable" in text:
        # a unix socket whose listener takes no connections (its backlog full): hung, as above, said at once
        return "it accepts no more connections: the engine is hung or this is not a Docker engine"
    import http.client  # here: engine/options.py imports this module on the path of a build skipped by hash

    if ("Connection aborted" in text or "RemoteDisconnected" in text
            or isinstance(exc, (ConnectionResetError, http.client.HTTPException))):
        return "the connection was closed without an answer: this is not a Docker engine"
    # anything else in the exception's own words, less the address (the message names it once, before this)
    return text.split("(", 1)[0].replace(where[len("unix://"):] if where.startswith("unix://") else where,
                                          "the address").strip() or type(exc).__name__
