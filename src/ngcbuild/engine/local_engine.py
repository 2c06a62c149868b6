"""The engine on this machine's socket, reached with the standard library: the few Engine API calls of
the unchanged-release path (ping, list and inspect images, tag).

Importing the Docker SDK (and requests under it) costs about 0.2 s, most of what `build` of an
unchanged release would take; these calls need a unix socket and JSON, nothing more. Everything else
(builds, pulls, pushes, TLS and SSH engines) goes through the SDK (client.py): `pull`, the one
SDK call a reuse may still need, is handed to it.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import threading
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from ngcbuild.core.errors import EngineUnavailable, OperationError, excerpt
from ngcbuild.core.jsonload import load_json
from ngcbuild.engine.address import HOW_TO_FIX, PING_TIMEOUT_S, engine_address, unreachable_reason

# Inspecting, listing and tagging images take milliseconds; a minute means the engine is stuck.
CALL_TIMEOUT_S = 60
# The largest answer read: an image list of a busy engine is a few MB; more is no engine's answer.
MAX_ANSWER_BYTES = 256 << 20


class EngineReplied(OperationError):
    """The engine answered a call with an error status."""

    def __init__(self, status: int, message: str):
        self.status = status
        # the engine's own words, bounded and escaped: an answer is no place for a terminal's escapes
        super().__init__(f"the Docker engine failed: {status} {excerpt(str(message), 300)}")


def _an_image(entry) -> bool:
    """The fields of an image that callers read have the types the Engine API gives them."""
    return (isinstance(entry, dict) and isinstance(entry.get("Id"), str)
            and all(isinstance(entry.get(key), (list, type(None))) for key in ("RepoTags", "RepoDigests"))
            and isinstance(entry.get("Labels") or entry.get("Config") or {}, dict))


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)  # the Host header; the socket is a file
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class LocalEngine:
    """The engine at a unix socket, with the method names and results of docker-py's APIClient for
    the calls it has (images, inspect_image, tag, pull), so the code that uses them takes
    either client."""

    def __init__(self, socket_path: str):
        self.socket_path = socket_path
        self.where = f"unix://{socket_path}"
        self.api_version: str | None = None

    @classmethod
    def for_environment(cls, environ=os.environ) -> LocalEngine | None:
        """The engine of DOCKER_HOST when it is a unix socket (the default one when unset); None for
        tcp:// and ssh:// engines, which need the SDK's TLS and SSH."""
        where = engine_address(environ)
        if not where.startswith("unix://") or not where[len("unix://"):]:
            return None
        return cls(where[len("unix://"):])

    def connect(self) -> LocalEngine:
        """Ping the engine and take the API version it serves, as docker-py's client for a local
        socket does (`version="auto"`), so both read the same JSON. One clear message when there is
        no engine."""
        try:
            response = self._call("GET", "/_ping", timeout=PING_TIMEOUT_S)
        except (OSError, http.client.HTTPException) as exc:
            raise EngineUnavailable(f"cannot reach the Docker engine at {self.where} "
                                    f"({unreachable_reason(self.where, exc)}). " + HOW_TO_FIX) from None
        version = response.headers.get("API-Version") or ""
        if response.status != 200 or not re.fullmatch(r"\d+\.\d+", version):
            raise EngineUnavailable(f"cannot reach the Docker engine at {self.where} (the answer to a ping "
                                    f"was {response.status}: this is not a Docker engine). " + HOW_TO_FIX)
        self.api_version = version
        return self

    def images(self, filters: dict | None = None) -> list[dict]:
        query = {"filters": json.dumps({k: v if isinstance(v, list) else [v] for k, v in filters.items()})} \
            if filters else {}
        answer = self._json("GET", "/images/json", query)
        if not isinstance(answer, list) or not all(_an_image(entry) for entry in answer):
            raise self._wrong_shape("GET /images/json", "a list of images")
        return answer

    def inspect_image(self, image: str) -> dict:
        answer = self._json("GET", f"/images/{quote(image, safe='/:@')}/json")
        if not _an_image(answer):
            raise self._wrong_shape("GET /images/NAME/json", "an image")
        return answer

    def _wrong_shape(self, call: str, expected: str) -> EngineUnavailable:
        return EngineUnavailable(f"the Docker engine at {self.where} answered {call} with JSON that is not "
                                 f"{expected}: this is not a Docker engine, or not one this version knows")

    def tag(self, image: str, repository: str, tag: str | None = None, force: bool = False) -> bool:
        query = {"repo": repository, **({"tag": tag} if tag else {})}
        self._json("POST", f"/images/{quote(image, safe='/:@')}/tag", query)
        return True

    def pull(self, *args, **kwargs):
        """A pull streams progress and carries credentials: the SDK does that, on this same engine."""
        from ngcbuild.engine.client import connect

        return connect().pull(*args, **kwargs)

    def _json(self, method: str, path: str, query: dict | None = None):
        if self.api_version is None:
            self.connect()
        target = f"/v{self.api_version}{path}" + (f"?{urlencode(query)}" if query else "")
        try:
            response = self._call(method, target, timeout=CALL_TIMEOUT_S)
        except (OSError, http.client.HTTPException) as exc:
            raise EngineUnavailable(f"the connection to the Docker engine at {self.where} broke "
                                    f"({unreachable_reason(self.where, exc, CALL_TIMEOUT_S)}); "
                                    "is it still running?") from None
        body = response.body
        if response.status >= 400:
            try:
                message = load_json(body).get("message", "")
            except (ValueError, AttributeError):
                message = body[:200].decode("utf-8", "replace")
            raise EngineReplied(response.status, message)
        try:
            return load_json(body) if body.strip() else None
        except ValueError:
            raise EngineUnavailable(f"the Docker engine at {self.where} answered {method} {path} with something "
                                    "that is not JSON: this is not a Docker engine") from None

    def _call(self, method: str, target: str, timeout: float) -> _Response:
        """One request and its whole answer within `timeout` seconds: the socket's own timeout
        bounds each read, so an engine that trickles its answer a byte at a time is cut by a timer at
        the deadline of the whole call. An answer shorter than its Content-Length is a broken one."""
        connection = _UnixConnection(self.socket_path, timeout)
        cut = _Cut(connection)
        timer = threading.Timer(timeout, cut.shut)
        timer.daemon = True
        timer.start()
        try:
            connection.request(method, target, headers={"Content-Type": "application/json"} if method == "POST"
                               else {})
            response = connection.getresponse()
            body = response.read(MAX_ANSWER_BYTES + 1)
            if len(body) > MAX_ANSWER_BYTES:
                raise EngineUnavailable(f"the Docker engine at {self.where} answered {method} {target.split('?')[0]} "
                                        f"with more than {MAX_ANSWER_BYTES} bytes: this is not a Docker engine")
            if cut.fell:  # the deadline fell while the answer was still coming
                raise TimeoutError(f"timed out: no whole answer within {timeout:g}s")
            if response.length:  # http.client's read(n) returns what came before the end, short or not
                raise http.client.IncompleteRead(body, response.length)
            return _Response(response.status, response.headers, body)
        except (OSError, http.client.HTTPException):
            if cut.fell:
                raise TimeoutError(f"timed out: no whole answer within {timeout:g}s") from None
            raise
        finally:
            timer.cancel()
            connection.close()


class _Cut:
    """The deadline of one call: `fell` is set before the socket is shut, so the read that the shutting
    ends sees it (a timer thread's is_alive() may still be true then)."""

    def __init__(self, connection: http.client.HTTPConnection):
        self.connection, self.fell = connection, False

    def shut(self) -> None:
        self.fell = True
        sock = self.connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # the blocked read returns at once
            except OSError:
                pass


@dataclass(frozen=True)
class _Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
