"""The registry's HTTP API (Docker Registry v2 / OCI distribution), for what the engine cannot do:
read a manifest without pulling, ask whether a tag exists, and write a manifest list.

Plain HTTP for a loopback registry (as the engine treats 127.0.0.0/8 as insecure), HTTPS
elsewhere. Credentials (registry/auth.py) are looked up only when the registry answers 401, for
that host alone: a Basic challenge is answered with them, a Bearer challenge by a token asked of its
realm (which gets them only when auth.realm_may_get_credentials allows).

Every request is one core/http.fetch on the one session (`registry_session`): one deadline for the
whole request, retries and backoff included, and a size cap. Everything the registry says is
hostile input: a manifest is identified by the sha256 of its bytes, never by a header (a registry
that serves other bytes for a digest, or a header that names another digest, is a DigestMismatch
naming the reference); a list's entries, an image manifest's descriptors and a token answer are each
read through one shape-checked reader; an error body is never relayed (only its error codes).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
import time
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ngcbuild.core.errors import OperationError
from ngcbuild.core.http import ATTEMPTS, BACKOFF_S, Answer, AnswerTooLarge, HttpFailure, fetch, new_session
from ngcbuild.core.jsonload import load_json
from ngcbuild.core.references import ImageRef, ReferenceProblem, host_address, shown_url
from ngcbuild.core.text import safe
from ngcbuild.image.media import DOCKER_LIST, DOCKER_MANIFEST, LISTS, OCI_INDEX, OCI_MANIFEST
from ngcbuild.registry.auth import LOGIN_HELP, Challenge, Credentials, keychain, realm_may_get_credentials

if TYPE_CHECKING:
    import requests

ACCEPT = f"{DOCKER_LIST}, {OCI_INDEX}, {DOCKER_MANIFEST}, {OCI_MANIFEST}"
MAX_MANIFEST = 4 << 20  # the distribution spec's recommended limit for a manifest
MAX_ENTRIES = 1024  # distinct entries of a list or an index read (a list names a few platforms)
MAX_SMALL_ANSWER = 1 << 20  # an answer with no body worth reading (a PUT's, an error's, a token)
MANIFEST_DEADLINE_S = 60  # a manifest, a token, a PUT's answer: a few kB, or at most MAX_MANIFEST
MIN_RATE = 1 << 20  # bytes a second: a blob read or sent slower than this, after the first minute, is cut


def blob_deadline_s(size: int) -> float:
    """The deadline of one whole blob read or upload: a minute, and a second for every MIN_RATE bytes of it
    (one deadline for the operation, sized to it, never one per read: a trickle of a byte a second ends at
    it, whatever the blob's size; a 10 GB layer has the three hours it needs at that rate)."""
    return float(MANIFEST_DEADLINE_S + math.ceil(size / MIN_RATE))


def _allowed(size: int, deadline: float) -> str:
    """What a blob's deadline was sized to, for its message."""
    return f"{size} bytes: {deadline:.0f}s allowed, a minute and 1 s per {MIN_RATE >> 20} MiB"

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ERROR_CODE = re.compile(r"[A-Z][A-Z_]{0,39}")
_UNKNOWN_REFERENCE = ("MANIFEST_BLOB_UNKNOWN", "BLOB_UNKNOWN")
_TOKEN = re.compile(r"[\x21-\x7e]{1,16384}")  # a bearer token goes into a header: printable ASCII, no space


class RegistryError(OperationError):
    pass


class BlobMismatch(RegistryError):
    """A blob whose bytes are not those its digest names: cut short, replaced, or too large."""


class DigestMismatch(RegistryError):
    """A manifest whose bytes are not those of the digest asked for or named by the registry, or a blob
    served as other bytes than its digest's even after it was sent."""


class AnswerOverLimit(RegistryError):
    """An answer larger than what is read of its kind."""


class ShapeError(RegistryError):
    """An answer that is not what it must be (a list without entries, a manifest without layers...)."""


def digest_of(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def is_digest(text) -> bool:
    return isinstance(text, str) and bool(_DIGEST.fullmatch(text))


# --- what manifests hold, read once, shape-checked -------------------------------------------------

@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    def __str__(self) -> str:
        return f"{self.os}/{self.architecture}"


@dataclass(frozen=True)
class Descriptor:
    """An OCI descriptor as a manifest names it; `raw` is the entry as stored (written back as it was)."""

    media_type: str
    digest: str
    size: int
    platform: Platform | None
    artifact_type: str | None
    annotations: dict
    raw: dict

    @classmethod
    def read(cls, entry, where: str) -> Descriptor:
        if not isinstance(entry, dict):
            raise ShapeError(f"{where}: expected a descriptor (an object), got {safe(type(entry).__name__)}")
        media_type, digest, size = entry.get("mediaType"), entry.get("digest"), entry.get("size")
        if not is_digest(digest):
            raise ShapeError(f"{where}: the digest {safe(digest, 80)} is not sha256:<64 hex digits>")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= 1 << 50:
            raise ShapeError(f"{where}: the size {safe(size, 40)} is not a number of bytes")
        if not isinstance(media_type, str) or not media_type.isprintable() or len(media_type) > 255:
            raise ShapeError(f"{where}: the media type {safe(media_type, 80)} is not a media type")
        artifact_type = entry.get("artifactType")
        if artifact_type is not None and (not isinstance(artifact_type, str) or len(artifact_type) > 255):
            raise ShapeError(f"{where}: the artifactType is not a media type")
        annotations = entry.get("annotations") or {}
        if not isinstance(annotations, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in annotations.items()):
            raise ShapeError(f"{where}: the annotations are not an object of strings")
        platform = entry.get("platform")
        if platform is not None:
            if not isinstance(platform, dict) or not all(isinstance(platform.get(k), str)
                                                         for k in ("os", "architecture")):
                raise ShapeError(f"{where}: the platform is not an object with an os and an architecture")
            variant = platform.get("variant")
            platform = Platform(platform["os"], platform["architecture"], variant if isinstance(variant, str) else None)
        return cls(media_type, digest, size, platform, artifact_type, annotations, entry)


@dataclass(frozen=True)
class ImageManifest:
    """An image (or artifact) manifest's descriptors."""

    config: Descriptor
    layers: tuple[Descriptor, ...]
    subject: Descriptor | None
    artifact_type: str | None
    annotations: dict


@dataclass(frozen=True)
class Manifest:
    """A manifest or a list as served: its bytes, its media type (the body's own `mediaType` where it
    has one, else the answer's Content-Type), its digest (always the sha256 of the bytes) and where
    it was read (HOST/REPOSITORY@DIGEST, for messages)."""

    body: bytes
    media_type: str
    digest: str
    where: str = ""

    @property
    def is_list(self) -> bool:
        return self.media_type in LISTS

    def _document(self) -> dict:
        try:
            document = load_json(self.body, self.where)
        except ValueError:
            raise ShapeError(f"{self.where}: not a JSON manifest") from None
        if not isinstance(document, dict):
            raise ShapeError(f"{self.where}: not a manifest (a JSON object)")
        return document

    def entries(self) -> list[Descriptor]:
        """The manifests a list (or an OCI index: a platform list, a referrers index) names, each once
        (an entry named again is counted once), at most MAX_ENTRIES; a ShapeError naming the list when
        it is not one."""
        document = self._document()
        entries = document.get("manifests")
        if not isinstance(entries, list):
            raise ShapeError(f"{self.where}: not a manifest list or index (no list of manifests)")
        found: dict[str, Descriptor] = {}
        for number, entry in enumerate(entries):
            descriptor = Descriptor.read(entry, f"{self.where}: manifests.{number}")
            found.setdefault(descriptor.digest, descriptor)
            if len(found) > MAX_ENTRIES:
                raise ShapeError(f"{self.where}: names more than {MAX_ENTRIES} manifests; ngcbuild reads at most that")
        return list(found.values())

    def image(self) -> ImageManifest:
        """The descriptors of an image or artifact manifest; a ShapeError naming it when it is not one."""
        document = self._document()
        layers = document.get("layers")
        if not isinstance(layers, list) or len(layers) > MAX_ENTRIES:
            raise ShapeError(f"{self.where}: not an image manifest (no list of layers)")
        subject = document.get("subject")
        artifact_type = document.get("artifactType")
        annotations = document.get("annotations") or {}
        if artifact_type is not None and not isinstance(artifact_type, str):
            raise ShapeError(f"{self.where}: the artifactType is not a media type")
        if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
            raise ShapeError(f"{self.where}: the annotations are not an object of strings")
        return ImageManifest(
            Descriptor.read(document.get("config"), f"{self.where}: config"),
            tuple(Descriptor.read(layer, f"{self.where}: layers.{n}") for n, layer in enumerate(layers)),
            Descriptor.read(subject, f"{self.where}: subject") if subject is not None else None,
            artifact_type, annotations)


def media_type_of(body: bytes, declared: str) -> str:
    """The body's own mediaType when it states one (a header could call an image a list), else `declared`."""
    try:
        stated = load_json(body).get("mediaType")
    except (ValueError, AttributeError):
        return declared
    return stated if isinstance(stated, str) and stated else declared


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
    """One registry host. Its credentials are the keychain's for this host (registry/auth.py), or
    `credentials` when given (a test's), asked for only when the host answers 401."""

    def __init__(self, host: str, credentials: Credentials | None = None, session: requests.Session | None = None):
        self.host = host
        self.url = base_url(host)
        self._given = credentials
        self.session = session if session is not None else registry_session()
        self._token: str | None = None
        self._basic: tuple[str, str] | None = None

    def without_retries(self) -> Registry:
        """The same registry and credentials on a session that retries nothing by itself: for requests whose
        body streams from a file (put_blob_file), retried whole by the caller."""
        from ngcbuild.core.http import retry_policy

        return Registry(self.host, self._given, new_session(retry_policy(attempts=1)))

    # --- manifests ---

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        """The manifest (or list) served for a tag or digest, or None when there is none. Its digest is
        the sha256 of the bytes served: for a digest asked, those bytes must hash to it; a
        Docker-Content-Digest header that names another digest is a lie, refused either way."""
        self._checked(repository, reference)
        where = f"{self.host}/{repository}{'@' if is_digest(reference) else ':'}{reference}"
        answer = self._request("GET", f"/v2/{repository}/manifests/{reference}", headers={"Accept": ACCEPT},
                               limit=MAX_MANIFEST, deadline_s=MANIFEST_DEADLINE_S, what=f"GET {where}")
        if answer.status == 404:
            return None
        self._check(answer, f"GET {where}")
        digest = digest_of(answer.body)
        if is_digest(reference) and digest != reference:
            raise DigestMismatch(f"{where}: the registry served a manifest whose bytes are {digest}, not the "
                                 "digest asked for (altered or replaced); refused")
        header = answer.headers.get("Docker-Content-Digest", "")
        if header.startswith("sha256:") and header != digest:
            raise DigestMismatch(f"{where}: the registry says the manifest is {safe(header, 80)}, but its bytes are "
                                 f"{digest}; refused")
        media_type = media_type_of(answer.body, answer.headers.get("Content-Type", "").split(";")[0].strip())
        return Manifest(answer.body, media_type, digest, f"{self.host}/{repository}@{digest}")

    def digest(self, repository: str, reference: str) -> str | None:
        """The digest of the manifest served for a tag or digest (its bytes, hashed), or None when absent."""
        manifest = self.manifest(repository, reference)
        return manifest.digest if manifest is not None else None

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Store a manifest under a tag or its digest; returns its digest (the one the registry says it
        stored must be the same)."""
        self._checked(repository, reference)
        where = f"{self.host}/{repository}:{reference}"
        for attempt in range(1, ATTEMPTS + 1):
            answer = self._request("PUT", f"/v2/{repository}/manifests/{reference}", data=body,
                                   headers={"Content-Type": media_type}, limit=MAX_SMALL_ANSWER,
                                   deadline_s=MANIFEST_DEADLINE_S, what=f"PUT {where}")
            if attempt == ATTEMPTS or not _names_an_unknown_reference(answer):
                break
            # what the manifest names was written before it, and the registry may not see it yet: a write
            # of the same object still in flight (an earlier client's, interrupted, or a retried request's)
            # rewrites its link in place, and distribution's filesystem store reads it empty meanwhile
            # (DIGEST_INVALID, MANIFEST_BLOB_UNKNOWN); an eventually consistent store lags. The one
            # schedule of retries; one that stays unknown is the error below.
            time.sleep(BACKOFF_S * 2 ** (attempt - 1))
        self._check(answer, f"PUT {where}", retried=attempt - 1)
        served = answer.headers.get("Docker-Content-Digest")
        if served and served != digest_of(body):
            raise DigestMismatch(f"{where}: the registry says the manifest is {safe(served, 80)}, but its bytes are "
                                 f"{digest_of(body)}; refused")
        return digest_of(body)

    def put_and_read_back(self, repository: str, reference: str, body: bytes, media_type: str) -> Manifest:
        """put_manifest, then the manifest served for `reference` read back: it must be these very bytes."""
        digest = self.put_manifest(repository, reference, body, media_type)
        served = self.manifest(repository, reference)
        if served is None or served.digest != digest:
            raise DigestMismatch(f"{self.host}/{repository}:{reference}: wrote {digest} but the registry serves "
                                 f"{served.digest if served else 'nothing'}")
        return served

    # --- blobs ---

    def blob(self, repository: str, digest: str, limit: int) -> bytes | None:
        """The blob of `digest` (None when absent), read to at most `limit` bytes; a blob that is larger,
        or whose bytes are not those of its digest (truncated, replaced), is a BlobMismatch."""
        self._checked(repository, digest, digest_only=True)
        where = f"{self.host}/{repository}: blob {digest}"
        deadline = blob_deadline_s(limit)  # sized to the most it may be: a trickled signature ends in a minute
        try:
            answer = self._request("GET", f"/v2/{repository}/blobs/{digest}", headers={}, limit=limit,
                                   deadline_s=deadline, what=f"GET blob {digest[:19]} ({_allowed(limit, deadline)})")
        except AnswerOverLimit:
            raise BlobMismatch(f"{where} is over {limit} bytes") from None
        if answer.status == 404:
            return None
        self._check(answer, f"GET blob {digest[:19]}")
        if digest_of(answer.body) != digest:
            raise BlobMismatch(f"{where} holds {len(answer.body)} bytes whose digest is {digest_of(answer.body)} "
                               "(truncated or replaced)")
        return answer.body

    def has_blob(self, repository: str, digest: str) -> bool:
        return self.blob_size(repository, digest) is not None

    def holds_blob(self, repository: str, digest: str, size: int) -> bool:
        """Whether the registry holds the blob `digest` as `size` bytes, by a HEAD: present, its
        Content-Length that size and any Docker-Content-Digest that digest. A blob it says it holds at another
        size, or under another digest, is not held (what "already in the registry" must mean)."""
        return self.blob_size(repository, digest) == size

    def blob_size(self, repository: str, digest: str) -> int | None:
        """The size the registry says it holds the blob `digest` at (a HEAD's Content-Length), or None when it
        has none, says it under another digest, or names no size."""
        self._checked(repository, digest, digest_only=True)
        answer = self._request("HEAD", f"/v2/{repository}/blobs/{digest}", headers={}, limit=MAX_SMALL_ANSWER,
                               deadline_s=MANIFEST_DEADLINE_S, what=f"HEAD blob {digest[:19]}")
        if answer.status == 404:
            return None
        self._check(answer, f"HEAD blob {digest[:19]}")
        named = answer.headers.get("Docker-Content-Digest")
        length = answer.headers.get("Content-Length", "")
        if (named and named != digest) or not (length.isascii() and length.isdigit() and len(length) <= 16):
            return None
        return int(length)

    def read_blob(self, repository: str, digest: str, size: int, sink) -> None:
        """The blob `digest` of `size` bytes streamed to `sink(chunk)` (never held whole), within a deadline
        sized to it (blob_deadline_s); a BlobMismatch when it is absent, of another size, or its bytes are
        not those of its digest."""
        self._checked(repository, digest, digest_only=True)
        where = f"{self.host}/{repository}: blob {digest}"
        hashed, count = hashlib.sha256(), 0

        def take(chunk: bytes) -> None:
            nonlocal count
            count += len(chunk)
            if count <= size:  # what is past the size is counted, never passed on
                hashed.update(chunk)
                sink(chunk)

        deadline = blob_deadline_s(size)
        try:
            answer = self._request("GET", f"/v2/{repository}/blobs/{digest}", headers={},
                                   limit=max(size, MAX_SMALL_ANSWER),  # an error's answer is read too
                                   deadline_s=deadline, what=f"GET blob {digest[:19]} ({_allowed(size, deadline)})",
                                   sink=take)
        except AnswerOverLimit:
            raise BlobMismatch(f"{where} is over the {size} bytes its descriptor names") from None
        if answer.status == 404:
            raise BlobMismatch(f"{where} is not in the registry")
        self._check(answer, f"GET blob {digest[:19]}")
        if count != size:
            raise BlobMismatch(f"{where} holds {count} bytes, not the {size} its descriptor names (truncated or "
                               "replaced)")
        if "sha256:" + hashed.hexdigest() != digest:
            raise BlobMismatch(f"{where} holds {count} bytes whose digest is sha256:{hashed.hexdigest()} "
                               "(truncated or replaced)")

    def put_blob(self, repository: str, data: bytes) -> str:
        """Upload `data` as a blob (unless the registry has it already, its bytes read back: serves_blob):
        open an upload, PUT it whole."""
        digest = digest_of(data)
        claimed = self.holds_blob(repository, digest, len(data))
        if claimed and self.serves_blob(repository, digest, len(data)):
            return digest
        self._upload(repository, digest, data, len(data))
        self._served_after_upload(repository, digest, len(data), claimed)
        return digest

    def put_blob_file(self, repository: str, path, digest: str, size: int, stop=None) -> bool:
        """Upload the file at `path` (`size` bytes whose sha256 is `digest`) as a blob, unless the registry
        has it already; whether it was sent. The body streams from the file: a session that retries
        requests by itself would send a read file's end again, so the caller's session for this retries
        nothing (it begins the whole upload again on its own schedule: publish/push.py). `stop()`, when
        given, is asked before each read of the file: True ends the upload there (UploadStopped)."""
        self._checked(repository, digest, digest_only=True)
        claimed = self.holds_blob(repository, digest, size)
        if claimed and self.serves_blob(repository, digest, size):
            return False
        with open(path, "rb") as data:
            self._upload(repository, digest, data if stop is None else _StoppableFile(data, stop), size)
        self._served_after_upload(repository, digest, size, claimed)
        return True

    def serves_blob(self, repository: str, digest: str, size: int) -> bool:
        """Whether the blob the registry says it holds (holds_blob: a HEAD with this digest and size) is, read
        back whole under its deadline (read_blob: streamed through sha256, never held), `size` bytes whose
        digest is `digest`. A HEAD cannot tell other bytes of the same size: "already in the registry" is
        what was read back, so a registry that lies about a blob is sent it (issue 54 item 3)."""
        try:
            self.read_blob(repository, digest, size, lambda chunk: None)
        except BlobMismatch:
            return False
        return True

    def _served_after_upload(self, repository: str, digest: str, size: int, claimed: bool) -> None:
        """A blob the registry claimed to hold with other bytes, sent: read back again, and a DigestMismatch
        (a failure no retry mends) when it still serves other bytes under its digest."""
        if claimed and not self.serves_blob(repository, digest, size):
            raise DigestMismatch(f"{self.host}/{repository}: blob {digest} is served as other bytes than its "
                                 f"digest's, before and after it was sent ({size} bytes): the registry does not "
                                 "keep what is pushed to it")

    def _upload(self, repository: str, digest: str, data, size: int) -> None:
        """A monolithic upload: POST opens it, one PUT of the whole body with its digest closes it."""
        opened = self._request("POST", f"/v2/{repository}/blobs/uploads/", headers={}, limit=MAX_SMALL_ANSWER,
                               deadline_s=MANIFEST_DEADLINE_S, what="POST blob upload")
        self._check(opened, "POST blob upload")
        location = opened.headers.get("Location", "")
        if not location:
            raise RegistryError(f"{self.host}: POST blob upload: no Location in the answer")
        url = location if "://" in location else self.url + location
        if not url.startswith(self.url + "/"):  # our credentials go to this registry only
            raise RegistryError(f"{self.host}: the blob upload was sent elsewhere ({shown_url(url)[:120]})")
        separator = "&" if "?" in url else "?"
        answer = self._request("PUT", f"{url}{separator}digest={digest}", data=data, absolute=True,
                               headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
                               limit=MAX_SMALL_ANSWER, deadline_s=blob_deadline_s(size),
                               what=f"PUT blob {digest[:19]} ({_allowed(size, blob_deadline_s(size))})")
        self._check(answer, f"PUT blob {digest[:19]}")

    def _checked(self, repository: str, reference: str, digest_only: bool = False) -> None:
        """A repository and a tag or digest as the distribution grammar has them, before they go into a
        URL (a record's "digest" that is a path never reaches one)."""
        text = f"{repository}@{reference}" if is_digest(reference) else f"{repository}:{reference}"
        try:
            parsed = ImageRef.parse(text)
        except ReferenceProblem:
            parsed = None
        if parsed is None or parsed.repository != repository or (digest_only and not is_digest(reference)):
            raise RegistryError(f"{self.host}: {safe(repository, 80)} {safe(reference, 80)} is not a repository and "
                                f"a {'digest' if digest_only else 'tag or digest'}")

    # --- one request, authenticated when the registry asks ---

    def _request(self, method: str, path: str, *, headers: dict, limit: int, deadline_s: float, what: str,
                 data=None, absolute: bool = False, sink=None) -> Answer:
        url = path if absolute else self.url + path
        for attempt in range(2):
            if hasattr(data, "seek"):  # a file body, sent again after a challenge: from its first byte
                data.seek(0)
            sent = dict(headers)
            if self._token:
                sent["Authorization"] = f"Bearer {self._token}"
            try:
                answer = fetch(self.session, method, url, limit=limit, deadline_s=deadline_s, headers=sent,
                               data=data, auth=self._basic if not self._token else None, sink=sink)
            except AnswerTooLarge as exc:
                raise AnswerOverLimit(f"{self.host}: {what}: {_after_host(str(exc))}") from None
            except HttpFailure as exc:  # unreachable after the retries, or no whole answer within the deadline
                raise RegistryError(f"{self.host}: {what}: {_after_host(str(exc))}") from None
            if answer.status != 401 or attempt:
                return answer
            if not self._authenticate(answer.headers.get("WWW-Authenticate", "")):
                return answer
        return answer

    def _credentials(self) -> Credentials | None:
        return self._given if self._given is not None else keychain().for_host(self.host)

    def _authenticate(self, header: str) -> bool:
        """Answer a 401's challenge; whether the request is worth sending again."""
        challenge = Challenge.parse(header)
        if challenge.scheme == "basic":
            credentials = self._credentials()
            if credentials is None or credentials.identity_token or self._basic is not None:
                return False
            self._basic = (credentials.username, credentials.password)
            return True
        if challenge.scheme == "bearer":
            self._token = self._fetch_token(challenge)
            return True
        return False

    def _fetch_token(self, challenge: Challenge) -> str:
        params = dict(challenge.params)
        realm = params.pop("realm", "")
        shown = shown_url(realm)[:160]
        if not realm.startswith(("https://", "http://")):
            raise RegistryError(f"{self.host}: its token service {shown!r} is not an http(s) URL; refused")
        credentials = None
        if realm_may_get_credentials(realm, self.url):
            credentials = self._credentials()
        wanted = {k: v for k, v in params.items() if k in ("service", "scope")}
        try:
            if credentials is not None and credentials.identity_token:
                answer = fetch(self.session, "POST", realm, limit=MAX_SMALL_ANSWER, deadline_s=MANIFEST_DEADLINE_S,
                               data=_form({**wanted, "grant_type": "refresh_token", "client_id": "ngcbuild",
                                           "refresh_token": credentials.identity_token}),
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
            else:
                basic = (credentials.username, credentials.password) if credentials is not None else None
                answer = fetch(self.session, "GET", realm, limit=MAX_SMALL_ANSWER, deadline_s=MANIFEST_DEADLINE_S,
                               params=wanted, auth=basic)
        except HttpFailure as exc:
            raise RegistryError(f"{self.host}: its token service: {_after_host(str(exc))}") from None
        if answer.status in (401, 403):
            withheld = "" if credentials is not None or not self._credentials_exist() else (
                f"; credentials for {self.host} were not sent to it (plain HTTP on another host)")
            raise RegistryError(f"{self.host}: its token service {shown} refused a token ({answer.status}){withheld}; "
                                f"{LOGIN_HELP}")
        if answer.status >= 300:
            raise RegistryError(f"{self.host}: its token service {shown} answered HTTP {answer.status}"
                                f"{_error_codes(answer.body)}")
        return read_token(answer.body, f"{self.host}: its token service {shown}")

    def _credentials_exist(self) -> bool:
        try:
            return self._credentials() is not None
        except OperationError:
            return False

    def _check(self, answer: Answer, what: str, retried: int = 0) -> None:
        if answer.status in (401, 403):
            raise RegistryError(f"{self.host}: {what}: access denied ({answer.status}){_error_codes(answer.body)}; "
                                f"{LOGIN_HELP}")
        if answer.status >= 300:
            again = f" (the same after {retried} retries)" if retried else ""
            raise RegistryError(f"{self.host}: {what}: HTTP {answer.status}{_error_codes(answer.body)}{again}")


class UploadStopped(Exception):
    """An upload whose caller asked it to stop (put_blob_file's `stop`): the registry got part of a blob."""


class _StoppableFile:
    """A file body that asks `stop()` before each read: the HTTP layer reads it a block at a time."""

    def __init__(self, data, stop):
        self._data, self._stop = data, stop

    def read(self, size: int = -1) -> bytes:
        if self._stop():
            raise UploadStopped("the upload was stopped")
        return self._data.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._data.seek(offset, whence)

    def tell(self) -> int:
        return self._data.tell()

    def fileno(self) -> int:  # the HTTP layer learns the body's length from it (and checks the mode)
        return self._data.fileno()

    @property
    def mode(self) -> str:
        return self._data.mode


def read_token(body: bytes, where: str) -> str:
    """A token service's answer: {"token": ...} or {"access_token": ...}, a printable ASCII word."""
    try:
        document = load_json(body, where)
        token = document.get("token") or document.get("access_token")
    except (ValueError, AttributeError):
        raise RegistryError(f"{where} answered something that is not a token (not JSON with a token)") from None
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise RegistryError(f"{where} answered something that is not a token (its token is "
                            f"{'missing' if token is None else 'not a word of printable ASCII'})")
    return token


def _form(fields: dict) -> bytes:
    from urllib.parse import urlencode

    return urlencode(fields).encode()


def _error_codes(body: bytes) -> str:
    """The registry's error codes (MANIFEST_UNKNOWN, DENIED...) from its error body: never the body
    itself, whose text is the registry's to choose (escape sequences, pages of HTML, a secret)."""
    try:
        errors = load_json(body).get("errors")
        codes = [e.get("code") for e in errors[:3] if isinstance(e, dict)]
    except (ValueError, AttributeError, TypeError):
        return ""
    codes = list(dict.fromkeys(c for c in codes if isinstance(c, str) and _ERROR_CODE.fullmatch(c)))  # each once
    return f" ({', '.join(codes)})" if codes else ""


def _names_an_unknown_reference(answer: Answer) -> bool:
    """A manifest PUT refused because a blob or manifest it names is unknown to the registry."""
    codes = _error_codes(answer.body).strip(" ()").split(", ")
    return answer.status == 400 and any(code in _UNKNOWN_REFERENCE for code in codes)


def _after_host(message: str) -> str:
    """core/http's message without the URL it starts with (ours names the host and the request)."""
    _, sep, rest = message.partition(": ")
    return rest if sep else message
