"""verify's reads of the outside world: indexes, wheels by range, apt archives, GitHub. Each read is
one request through core/http.fetch (the one session policy: retries, one deadline for the whole call,
a size cap), with the host's CA bundle (behind an intercepting proxy), and every byte received counted
(`fetched`: what BENCHMARKS.md reports). Safe to share between verify's worker threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

from ngcbuild.core.errors import OperationError
from ngcbuild.core.http import Answer, AnswerTooLarge, HttpFailure, fetch, new_session, retry_policy
from ngcbuild.core.references import shown_url

DEADLINE_S = 60  # one read, its retries included
PROBE_DEADLINE_S = 15  # is a host there at all
PAGE_LIMIT = 64 << 20  # a project page of an index (pydantic-core's lists 7 MB of files)


class HttpStatus(OperationError):
    """The server answered, with an error status (404, 500...)."""

    def __init__(self, url: str, code: int):
        super().__init__(f"{shown_url(url).split('?')[0]}: HTTP {code}")
        self.code = code


class Web:
    """HTTP(S) reads for verify, each whole within its deadline and size cap."""

    def __init__(self, environ=os.environ, deadline_s: float = DEADLINE_S, run_deadline=None,
                 apt_proxy: str | None = None):
        # the deadline of the whole run a caller may give (resolver/deadline.py: remaining(), passed()):
        # no read outlives it
        self.run_deadline = run_deadline
        self.bundle = next((environ[k] for k in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
                            if environ.get(k) and Path(environ[k]).is_file()), None)
        self.deadline_s = deadline_s
        # the apt proxy (core/indexes.apt_proxy_setting) carries the apt archives' plain-HTTP reads, as
        # the build's apt steps take it (http_proxy)
        self.apt_proxies = {"http": apt_proxy} if apt_proxy else None
        self._sessions = threading.local()  # requests' sessions are not shared between threads
        self._lock = threading.Lock()
        self._reachable: dict[str, str | None] = {}
        self.fetched = 0  # bytes of every answer's body
        self.requests = 0

    def _session(self, probe: bool):
        key = "probe" if probe else "read"
        session = getattr(self._sessions, key, None)
        if session is None:
            session = new_session(retry_policy(attempts=1) if probe else retry_policy(attempts=3, backoff_s=0.5))
            session.verify = self.bundle or True
            setattr(self._sessions, key, session)
        return session

    def fetch(self, url: str, *, limit: int, headers: dict | None = None, method: str = "GET",
              deadline_s: float | None = None, probe: bool = False, apt: bool = False) -> Answer:
        """One request, its answer whole (any status): HttpFailure when it cannot be had in time or size."""
        seconds = min(deadline_s or self.deadline_s, self.deadline_s)
        if self.run_deadline is not None:
            left = self.run_deadline.remaining()
            if left <= 0:
                raise self.run_deadline.passed(f"no answer from {shown_url(urlsplit(url).netloc.rpartition('@')[2])}")
            seconds = min(seconds, left)
        answer = fetch(self._session(probe), method, url, limit=limit, headers=headers, deadline_s=seconds,
                       proxies=self.apt_proxies if apt else None)
        with self._lock:
            self.fetched += len(answer.body)
            self.requests += 1
        return answer

    def get(self, url: str, accept: str | None = None, method: str = "GET", limit: int = PAGE_LIMIT,
            apt: bool = False) -> bytes:
        """The body of a successful answer; HttpStatus for an error status, HttpFailure for no answer.
        `apt`: a read of an apt archive, through the apt proxy when one is set."""
        answer = self.fetch(url, limit=limit, headers={"Accept": accept} if accept else None, method=method, apt=apt)
        if answer.status >= 400:
            raise HttpStatus(url, answer.status)
        return answer.body

    def unreachable(self, url: str, apt: bool = False) -> str | None:
        """None when the host answers (any HTTP status), else why not."""
        # the host alone: an index URL's user:password@ is no part of a host name (it never resolved)
        host = urlsplit(url).netloc.rpartition("@")[2]
        key = (host, apt)  # through the apt proxy or not: two answers
        with self._lock:
            known = key in self._reachable
        if not known:
            try:
                self.fetch(f"https://{host}/" if url.startswith("https") else f"http://{host}/", limit=PAGE_LIMIT,
                           method="HEAD", deadline_s=PROBE_DEADLINE_S, probe=True, apt=apt)
                why = None
            except AnswerTooLarge:  # it answered, declaring a large page
                why = None
            except HttpFailure as exc:
                why = f"{shown_url(host)} is unreachable from here: {str(exc)[:300]}"
            with self._lock:
                self._reachable.setdefault(key, why)
        return self._reachable[key]
