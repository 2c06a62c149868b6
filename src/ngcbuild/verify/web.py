"""verify's reads of the outside world: HTTPS with the host's CA bundle (behind an intercepting proxy)."""

from __future__ import annotations

import os
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from ngcbuild.core.errors import excerpt
from ngcbuild.core.references import shown_url
from ngcbuild.verify.wheel_tags import declared_tags

TIMEOUT = 15


class Web:
    """HTTPS reads with the host's CA bundle (behind an intercepting proxy) and a short timeout."""

    def __init__(self, environ=os.environ):
        self.bundle = next((environ[k] for k in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
                            if environ.get(k) and Path(environ[k]).is_file()), None)
        self.context = ssl.create_default_context(cafile=self.bundle)
        self._reachable: dict[str, str | None] = {}

    def get(self, url: str, accept: str | None = None, method: str = "GET") -> bytes:
        request = urllib.request.Request(url, headers={"Accept": accept} if accept else {}, method=method)
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context) as response:
            return response.read()

    def wheel_tags(self, url: str) -> list[str]:
        """The tags the wheel at `url` declares in its WHEEL file (range requests)."""
        return declared_tags(url, lambda request, timeout: urllib.request.urlopen(
            request, timeout=timeout, context=self.context), TIMEOUT)

    def unreachable(self, url: str) -> str | None:
        """None when the host answers (any HTTP status), else why not."""
        # the host alone: an index URL's user:password@ is no part of a host name (it never resolved)
        host = urlsplit(url).netloc.rpartition("@")[2]
        if host not in self._reachable:
            try:
                self.get(f"https://{host}/" if url.startswith("https") else f"http://{host}/")
                self._reachable[host] = None
            except urllib.error.HTTPError:
                self._reachable[host] = None
            except (urllib.error.URLError, OSError) as exc:
                self._reachable[host] = (f"{shown_url(host)} is unreachable from here "
                                         f"({excerpt(str(getattr(exc, 'reason', exc)), 200)})")
        return self._reachable[host]
