"""The one HTTP session policy of ngcbuild: registries, PyPI and package indexes are asked through
sessions made here, so that every request has the same timeout, retries and backoff.

Connect errors, read timeouts and 429/5xx answers are retried ATTEMPTS times in all with exponential
backoff, honouring a Retry-After header (at most MAX_RETRY_AFTER_S: a server cannot park us for hours).
The same schedule paces push's retries of the engine's transfers (publish/push.py), which go through
the engine's own connection to the registry, not ours.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ngcbuild.core.errors import OperationError, UserError, excerpt
from ngcbuild.core.references import shown_url

if TYPE_CHECKING:
    import requests

# requests is imported where a session is made: an unchanged release's build never reaches a
# registry and should not pay for the import (engine/local_engine.py).
TIMEOUT_S = 30
ATTEMPTS = 4  # in all, the first included
BACKOFF_S = 2.0  # doubling after each failed attempt
RETRY_STATUS = (429, 500, 502, 503, 504)
MAX_RETRY_AFTER_S = 60


def retry_policy(attempts: int = ATTEMPTS, backoff_s: float = BACKOFF_S):
    """urllib3's Retry for our requests (every method we send is idempotent: GET, HEAD, PUT of a
    manifest or blob by its content; a POST only opens a blob upload, and a repeated one leaves an
    unused upload the registry expires). A last 5xx is returned, not raised, so that its status is
    reported."""
    from urllib3.exceptions import InvalidHeader
    from urllib3.util.retry import Retry

    class BoundedRetry(Retry):
        def get_retry_after(self, response):
            try:
                seconds = super().get_retry_after(response)
            except InvalidHeader:  # a date that cannot be read: our own backoff instead
                return None
            return None if seconds is None else min(seconds, MAX_RETRY_AFTER_S)

        def sleep(self, response=None):
            """The backoff (or Retry-After) before the next attempt, never past the current call's
            deadline (Deadline): a request whose deadline fell makes its last attempts at once, and they
            fail at once (its sockets are shut as they open)."""
            import time

            call = getattr(_calls, "current", None)
            wait = self.get_retry_after(response) if response is not None and self.respect_retry_after_header \
                else None
            wait = self.get_backoff_time() if wait is None else wait
            if call is not None:
                wait = min(wait, max(0.0, call.ends - time.monotonic()))
            if wait > 0:
                time.sleep(wait)

    return BoundedRetry(total=attempts - 1, connect=attempts - 1, read=attempts - 1, status=attempts - 1,
                         other=0, redirect=5, backoff_factor=backoff_s, status_forcelist=RETRY_STATUS,
                         allowed_methods=frozenset({"GET", "HEAD", "PUT", "POST"}), respect_retry_after_header=True,
                         raise_on_status=False)


def new_session(retry=None) -> requests.Session:
    """A requests Session whose HTTP and HTTPS requests are retried by `retry` (retry_policy())."""
    import requests
    from requests.adapters import HTTPAdapter

    pools = _watched_pools()

    class WatchedAdapter(HTTPAdapter):
        """Every pool it makes, direct or through a proxy, is of the watched kind (fetch's deadline)."""

        def init_poolmanager(self, *args, **kwargs):
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy, **kwargs):
            manager = super().proxy_manager_for(proxy, **kwargs)
            manager.pool_classes_by_scheme = pools
            return manager

    session = requests.Session()
    adapter = WatchedAdapter(max_retries=retry if retry is not None else retry_policy())
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


# --- one request, whole, within a deadline and a size ---------------------------------------------

class HttpFailure(OperationError):
    """A request that did not give a whole answer: unreachable after the retries, too slow, too large."""


class AnswerTooLarge(HttpFailure):
    pass


class AnswerTooSlow(HttpFailure):
    pass


@dataclass(frozen=True)
class Answer:
    """A whole answer: its status, headers and body (at most the `limit` the request was made with)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def fetch(session: requests.Session, method: str, url: str, *, limit: int, deadline_s: float,
          headers: dict | None = None, data: bytes | None = None, auth=None, params=None,
          proxies: dict | None = None, sink=None) -> Answer:
    """`method url` on `session`, its answer read whole: at most `limit` bytes (a larger one is
    AnswerTooLarge, checked against Content-Length before reading and while reading) and within
    `deadline_s` seconds for everything, retries, headers and body included (a server that trickles
    its answer a byte at a time is cut at the deadline: the sockets of the call are shut). Messages
    name the URL with any credentials in it masked. `proxies`: this request's own (they win over the
    environment's; verify's apt reads through the apt proxy). `sink`: a callable given each chunk of a
    successful (2xx) answer's body as it arrives, instead of holding it (the Answer's body is then empty;
    `limit` still bounds what is read): a blob of gigabytes streams through a hash, under the same
    deadline."""
    import requests

    with Deadline(url, deadline_s) as call:
        try:
            response = session.request(method, url, headers=headers, data=data, auth=auth, params=params,
                                       proxies=proxies,
                                       timeout=(min(TIMEOUT_S, call.seconds), min(TIMEOUT_S, call.seconds)),
                                       stream=True)
        except requests.RequestException as exc:
            call.check()  # the same words wherever the deadline found it: headers and body are one answer
            cause = _innermost(exc)
            why = excerpt(_without_credentials(str(cause), url), 200)
            raise HttpFailure(f"{call.shown}: cannot be reached after {_attempts(session, url)} attempt(s) "
                              f"({type(cause).__name__}: {why})") from None
        try:
            declared = response.headers.get("Content-Length", "")
            # a HEAD's Content-Length is the size of what a GET would send (a blob's): it has no body
            if method != "HEAD" and declared.isdigit() and int(declared) > limit:
                raise AnswerTooLarge(f"{call.shown}: the answer is {declared} bytes, over the {limit} read")
            streaming = sink is not None and 200 <= response.status_code < 300
            body = _read_whole(response, limit, call, sink if streaming else None)
            return Answer(response.status_code, response.headers, body, response.url)
        finally:
            response.close()


DEADLINE_VARIABLE = "NGCBUILD_HTTP_DEADLINE_S"
MAX_DEADLINE_S = 3600


def deadline_cap(environ=None) -> float | None:
    """$NGCBUILD_HTTP_DEADLINE_S: the most seconds any one request may take, whatever its own deadline
    (None: each its own); UserError for a value that is not a number of seconds from 1 to 3600."""
    import os

    text = (os.environ if environ is None else environ).get(DEADLINE_VARIABLE, "")
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_DEADLINE_S):
        raise UserError(f"{DEADLINE_VARIABLE}={excerpt(text)}: expected a whole number of seconds from 1 to "
                        f"{MAX_DEADLINE_S}")
    return float(text)


class Deadline:
    """One overall deadline for everything a block does on this thread's connections, made through
    new_session(): when it falls, every socket the block opened or reused is shut, so that a blocked
    read returns at once. fetch() reads under one; a streaming request (a blob upload whose body is
    sent in chunks) can too:

        with Deadline(url, blob_deadline_s(size)) as call:
            response = session.put(url, data=chunks(), timeout=call.timeouts)
            ...
            call.check()  # AnswerTooSlow, naming the URL, when the deadline fell

    `seconds` is the deadline as given, or less under $NGCBUILD_HTTP_DEADLINE_S."""

    def __init__(self, url: str, seconds: float):
        cap = deadline_cap()
        self.seconds = min(seconds, cap) if cap else seconds
        self.shown = shown_url(url).split("?")[0]
        self._call = _Call(self.seconds)
        self._timer = threading.Timer(self.seconds, self._call.expire)
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        return self._call.expired

    @property
    def timeouts(self) -> tuple[float, float]:
        """(connect, read) timeouts for requests: the per-socket wait, never past the deadline."""
        return (min(TIMEOUT_S, self.seconds), min(TIMEOUT_S, self.seconds))

    def check(self) -> None:
        if self._call.expired:
            raise AnswerTooSlow(f"{self.shown}: no whole answer within {self.seconds:g}s") from None

    def __enter__(self) -> Deadline:
        self._previous = getattr(_calls, "current", None)
        _calls.current = self._call
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        _calls.current = self._previous


def _read_whole(response, limit: int, call: Deadline, sink=None) -> bytes:
    chunks, size = [], 0
    try:
        while True:
            chunk = response.raw.read1(min(1 << 16, limit + 1 - size), decode_content=True)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge(f"{call.shown}: the answer is over the {limit} bytes read")
            if sink is None:
                chunks.append(chunk)
            else:
                sink(chunk)
            if call.expired:
                break
    except AnswerTooLarge:
        raise
    except Exception as exc:  # the connection broke (or was shut at the deadline) while reading
        call.check()
        raise HttpFailure(f"{call.shown}: the answer broke off ({type(exc).__name__})") from None
    call.check()
    return b"".join(chunks)


def _innermost(exc: BaseException) -> BaseException:
    """The error under requests' and urllib3's wrappers (RemoteDisconnected, a refused connection):
    what the message needs, without the pool and retry text around it."""
    seen = {id(exc)}
    while True:
        inner = getattr(exc, "reason", None)
        if not isinstance(inner, BaseException):
            inner = next((a for a in reversed(exc.args) if isinstance(a, BaseException)), None)
        if not isinstance(inner, BaseException):
            inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def _attempts(session, url: str) -> int:
    """How many times the session tries a request to `url` (its adapter's retry policy)."""
    total = getattr(getattr(session.get_adapter(url), "max_retries", None), "total", None)
    return total + 1 if isinstance(total, int) and not isinstance(total, bool) else ATTEMPTS


def _without_credentials(text: str, url: str) -> str:
    """A library's message may quote the URL: its user:password@ never reaches ours."""
    authority = url.partition("://")[2].partition("/")[0]
    if "@" in authority:
        text = text.replace(authority.rpartition("@")[0], "***")
    return text


class _Call:
    """The sockets one fetch() has opened or reused, shut when its deadline falls."""

    def __init__(self, seconds: float):
        import time

        self.sockets: list[socket.socket] = []
        self.expired = False
        self.ends = time.monotonic() + seconds  # when the deadline falls (a retry's backoff stops there)
        self._lock = threading.Lock()

    def watch(self, sock) -> None:
        with self._lock:
            self.sockets.append(sock)
            if self.expired:
                _shut(sock)

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self.sockets:
                _shut(sock)


def _shut(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once
    except OSError:
        pass


_calls = threading.local()


def _watched_pools() -> dict:
    """urllib3's pool classes whose connections tell the current fetch() their socket at every
    request (a pooled connection is reused without connecting again, so the request is the hook)."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    def watched(base):
        def request(self, *args, **kwargs):
            call = getattr(_calls, "current", None)
            try:
                return base.request(self, *args, **kwargs)
            finally:
                if call is not None and self.sock is not None:
                    call.watch(self.sock)
        return type(f"Watched{base.__name__}", (base,), {"request": request})

    http_pool = type("WatchedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": watched(HTTPConnection)})
    https_pool = type("WatchedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": watched(HTTPSConnection)})
    return {"http": http_pool, "https": https_pool}


# --- whether a server listens --------------------------------------------------------------------

CONNECT_S = 5.0


def not_listening(url: str, timeout_s: float = CONNECT_S) -> str | None:
    """Why nothing takes a connection at the host and port of a checked URL (its name not found, refused,
    no answer within `timeout_s`), or None when something does. A step that hands a mirror to another
    program (the build's pip and apt) asks first, so that a mirror that is down is one line before any
    work, not a failure deep in a build's log."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            return None
    except socket.gaierror:
        return f"{parts.hostname}: name not found"
    except TimeoutError:
        return f"no answer within {timeout_s:.0f} s"
    except OSError as exc:
        return (exc.strerror or type(exc).__name__).lower()
