"""The one HTTP session policy of ngcbuild: registries, PyPI and package indexes are asked through
sessions made here, so that every request has the same timeout, retries and backoff.

Connect errors, read timeouts and 429/5xx answers are retried ATTEMPTS times in all with exponential
backoff, honouring a Retry-After header (at most MAX_RETRY_AFTER_S: a server cannot park us for hours).
The same schedule paces push's retries of the engine's transfers (publish/push.py), which go through
the engine's own connection to the registry, not ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

    return BoundedRetry(total=attempts - 1, connect=attempts - 1, read=attempts - 1, status=attempts - 1,
                         other=0, redirect=5, backoff_factor=backoff_s, status_forcelist=RETRY_STATUS,
                         allowed_methods=frozenset({"GET", "HEAD", "PUT", "POST"}), respect_retry_after_header=True,
                         raise_on_status=False)


def new_session(retry=None) -> requests.Session:
    """A requests Session whose HTTP and HTTPS requests are retried by `retry` (retry_policy())."""
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry if retry is not None else retry_policy())
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
