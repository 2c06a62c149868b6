"""The registry's HTTP API (Docker Registry v2 / OCI distribution), for what the engine cannot do:
read a manifest without pulling, ask whether a tag exists, and write a manifest list.

Plain HTTP for a loopback registry (as the engine treats 127.0.0.0/8 as insecure), HTTPS
elsewhere. Credentials, when given, answer a Basic challenge or fetch a Bearer token.

Every request goes through one session (`registry_session`) made by core/http.py: its timeout,
retries and backoff are those of every HTTP request ngcbuild makes.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.http import ATTEMPTS, TIMEOUT_S, new_session
from ngcbuild.core.references import host_address

if TYPE_CHECKING:
    import requests

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
LISTS = (DOCKER_LIST, OCI_INDEX)
ACCEPT = f"{DOCKER_LIST}, {OCI_INDEX}, {DOCKER_MANIFEST}, {OCI_MANIFEST}"
_CHALLENGE_RE = re.compile(r'(\w+)="([^"]*)"')


class RegistryError(OperationError):
    pass


class BlobMismatch(RegistryError):
    """A blob whose bytes are not those its digest names: cut short, replaced, or too large."""


@dataclass(frozen=True)
class Manifest:
    body: bytes
    media_type: str
    digest: str

    @property
    def is_list(self) -> bool:
        return self.media_type in LISTS


def digest_of(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def base_url(host: str) -> str:
    name = host_address(host)
    try:
        loopback = name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        loopback = False
    return f"{'http' if loopback else 'https'}://{host}"


@cache
def registry_session() -> requests.Session:
    """The one session of this process for registries: publish, promote, the build's registry lookup."""
    return new_session()


class Registry:
    """One registry host; `auth` is {"username", "password"} or None."""

    def __init__(self, host: str, auth: dict | None = None, session: requests.Session | None = None):
        self.host = host
        self.url = base_url(host)
        self.auth = auth
        self.session = session if session is not None else registry_session()
        self._token: str | None = None

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        """The manifest (or list) served for a tag or digest, or None when there is none."""
        response = self._request("GET", f"/v2/{repository}/manifests/{reference}", headers={"Accept": ACCEPT})
        if response.status_code == 404:
            return None
        self._check(response, f"GET {repository}:{reference}")
        media_type = response.headers.get("Content-Type", "").split(";")[0]
        served = response.headers.get("Docker-Content-Digest") or digest_of(response.content)
        return Manifest(response.content, media_type, served)

    def digest(self, repository: str, reference: str) -> str | None:
        """The digest served for a tag (HEAD: nothing downloaded), or None when the tag is absent."""
        response = self._request("HEAD", f"/v2/{repository}/manifests/{reference}", headers={"Accept": ACCEPT})
        if response.status_code == 404:
            return None
        self._check(response, f"HEAD {repository}:{reference}")
        return response.headers.get("Docker-Content-Digest")

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Store a manifest under a tag; returns the digest the registry computed (checked against ours)."""
        response = self._request("PUT", f"/v2/{repository}/manifests/{reference}", data=body,
                                 headers={"Content-Type": media_type})
        self._check(response, f"PUT {repository}:{reference}")
        served = response.headers.get("Docker-Content-Digest")
        if served and served != digest_of(body):
            raise RegistryError(f"{self.host}/{repository}:{reference}: the registry stored {served}, "
                                f"expected {digest_of(body)}")
        return digest_of(body)

    def blob(self, repository: str, digest: str, limit: int) -> bytes | None:
        """The blob of `digest` (None when absent), read to at most `limit` bytes; a blob that is larger,
        or whose bytes are not those of its digest (truncated, replaced), is a BlobMismatch."""
        response = self._request("GET", f"/v2/{repository}/blobs/{digest}", headers={}, stream=True)
        try:
            if response.status_code == 404:
                return None
            self._check(response, f"GET blob {digest[:19]}")
            data = response.raw.read(limit + 1, decode_content=True)
        finally:
            response.close()
        if len(data) > limit:
            raise BlobMismatch(f"{self.host}/{repository}: blob {digest} is over {limit} bytes")
        if digest_of(data) != digest:
            raise BlobMismatch(f"{self.host}/{repository}: blob {digest} holds {len(data)} bytes whose digest is "
                               f"{digest_of(data)} (truncated or replaced)")
        return data

    def has_blob(self, repository: str, digest: str) -> bool:
        response = self._request("HEAD", f"/v2/{repository}/blobs/{digest}", headers={})
        if response.status_code == 404:
            return False
        self._check(response, f"HEAD blob {digest[:19]}")
        return True

    def put_blob(self, repository: str, data: bytes) -> str:
        """Upload `data` as a blob (unless the registry has it already): open an upload, PUT it whole."""
        digest = digest_of(data)
        if self.has_blob(repository, digest):
            return digest
        opened = self._request("POST", f"/v2/{repository}/blobs/uploads/", headers={})
        self._check(opened, "POST blob upload")
        location = opened.headers.get("Location", "")
        if not location:
            raise RegistryError(f"{self.host}: POST blob upload: no Location in the answer")
        url = location if "://" in location else self.url + location
        if not url.startswith(self.url + "/"):  # our credentials go to this registry only
            raise RegistryError(f"{self.host}: the blob upload was sent elsewhere ({url.split('?')[0][:120]})")
        separator = "&" if "?" in url else "?"
        response = self._request("PUT", f"{url}{separator}digest={digest}", data=data, absolute=True,
                                 headers={"Content-Type": "application/octet-stream"})
        self._check(response, f"PUT blob {digest[:19]}")
        return digest

    def _request(self, method: str, path: str, headers: dict, data: bytes | None = None, stream: bool = False,
                 absolute: bool = False) -> requests.Response:
        import requests

        for attempt in range(2):
            sent = dict(headers)
            if self._token:
                sent["Authorization"] = f"Bearer {self._token}"
            try:
                response = self.session.request(method, path if absolute else self.url + path, headers=sent,
                                                data=data, timeout=TIMEOUT_S, auth=self._basic(), stream=stream)
            except requests.RequestException as exc:  # after the session's retries
                raise RegistryError(f"{self.host}: cannot reach the registry after {ATTEMPTS} attempts "
                                    f"({type(exc).__name__}: {exc})") from None
            if response.status_code != 401 or attempt or not self.auth:
                return response
            self._authenticate(response.headers.get("WWW-Authenticate", ""))
        return response

    def _basic(self):
        if self.auth and not self._token:
            return (self.auth["username"], self.auth["password"])
        return None

    def _authenticate(self, challenge: str) -> None:
        if not challenge.lower().startswith("bearer"):
            return  # Basic: sent with every request already
        params = dict(_CHALLENGE_RE.findall(challenge))
        realm = params.pop("realm", None)
        if not realm:
            raise RegistryError(f"{self.host}: a Bearer challenge without a realm: {challenge!r}")
        import requests

        try:
            response = self.session.get(realm, params=params, timeout=TIMEOUT_S,
                                        auth=(self.auth["username"], self.auth["password"]))
        except requests.RequestException as exc:
            raise RegistryError(f"{self.host}: token service {realm} unreachable ({exc})") from None
        self._check(response, "token")
        body = response.json()
        self._token = body.get("token") or body.get("access_token")

    def _check(self, response: requests.Response, what: str) -> None:
        if response.status_code in (401, 403):
            raise RegistryError(f"{self.host}: {what}: access denied ({response.status_code}); log in or set "
                                "NGCBUILD_REGISTRY_USER/NGCBUILD_REGISTRY_PASSWORD")
        if response.status_code >= 300:
            raise RegistryError(f"{self.host}: {what}: HTTP {response.status_code} {response.text[:300].strip()}")


def credentials(environ=os.environ) -> dict | None:
    """NGCBUILD_REGISTRY_USER / NGCBUILD_REGISTRY_PASSWORD, or None to use the Docker config's."""
    user, password = environ.get("NGCBUILD_REGISTRY_USER"), environ.get("NGCBUILD_REGISTRY_PASSWORD")
    if bool(user) != bool(password):
        raise UserError("set both NGCBUILD_REGISTRY_USER and NGCBUILD_REGISTRY_PASSWORD, or neither")
    return {"username": user, "password": password} if user else None
