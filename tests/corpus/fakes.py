"""A fake registry and a fake token service that misbehave on purpose (the package index is the tests'
one, tests/fake_index.py, with its `answers`), for the hostile cases of the trust chain (hostile.py's `trust_cases`): headers that lie, bytes that are not
the digest asked for, bodies that trickle or never end, answers of the wrong shape, 401 challenges
pointing elsewhere, error bodies full of escape sequences.

Each server runs on its own port of the loopback (the token service "on another host" on 127.0.0.2)
in the test process, and writes every request it gets (its method, path and Authorization header) to
a log file under the case's `outside` folder: the cases' checks read it to prove where credentials
went, and where they never went. The content (image manifests, a referrers index, a signed
provenance) is made here with cryptography and json alone, independent of the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..fake_index import FakeIndex, endless, send, trickle  # noqa: F401 - the one fake index, and its answers

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = b"{}"
DSSE = "application/vnd.dsse.envelope.v1+json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
REPOSITORY = "nvidia/pytorch"


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def descriptor(media_type: str, data: bytes, **extra) -> dict:
    return {"mediaType": media_type, "digest": digest_of(data), "size": len(data), **extra}


# --- content: images, and a signed provenance of one --------------------------------------------------

def image_manifest(seed: str) -> bytes:
    """An image manifest of a config blob (`seed` makes each one different); its blob is config_of(seed)."""
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                       "config": descriptor("application/vnd.oci.image.config.v1+json", config_of(seed)),
                       "layers": []}, sort_keys=True).encode()


def config_of(seed: str) -> bytes:
    return json.dumps({"architecture": "amd64", "os": "linux", "seed": seed}).encode()


def statement(digest: str, **changes) -> dict:
    """An in-toto statement v1 with a SLSA provenance predicate about `digest`, as ngcbuild makes one."""
    made = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"registry/{REPOSITORY}", "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {"buildType": "https://ngcbuild.invalid/build-types/image/v1",
                                "externalParameters": {"release": "dev", "platform": "linux/amd64"},
                                "internalParameters": {"context_sha256": "0" * 64, "ngcbuild_version": "0.1.0"},
                                "resolvedDependencies": [{"uri": "file:manifests/dev.yaml", "digest": {"sha256": "1" * 64}}]},
            "runDetails": {"builder": {"id": "https://builder.example/ci"},
                           "byproducts": [{"name": "smoke", "annotations": {"verdict": "passed", "passed": 3}}]},
        },
    }
    for path, value in changes.items():  # "predicate.runDetails.byproducts" = "xx"
        node = made
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    return made


def envelope(payload: bytes, private, keyid: str | None = None) -> bytes:
    """A DSSE envelope of `payload` signed with `private` (Ed25519)."""
    kind = PAYLOAD_TYPE.encode()
    signed = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
    return json.dumps({"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
                       "signatures": [{"keyid": keyid if keyid is not None else "sha256:fake",
                                       "sig": base64.b64encode(private.sign(signed)).decode()}]}).encode()


@dataclass
class Content:
    """What a registry holds: manifests by digest (bytes, media type), tags, blobs."""

    manifests: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    blobs: dict = field(default_factory=dict)

    def add_manifest(self, body: bytes, media_type: str, tag: str | None = None) -> str:
        digest = digest_of(body)
        self.manifests[digest] = (body, media_type)
        if tag:
            self.tags[tag] = digest
        return digest

    def add_blob(self, data: bytes) -> str:
        self.blobs[digest_of(data)] = data
        return digest_of(data)

    def attest(self, subject: str, private, payload: bytes | None = None, keyid: str | None = None) -> None:
        """A signed provenance of the image manifest `subject`, laid out as ngcbuild lays it out: an
        artifact manifest whose layer is the envelope, found by the referrers tag sha256-<hex>."""
        document = envelope(payload if payload is not None else json.dumps(statement(subject)).encode(), private,
                            keyid)
        self.add_blob(EMPTY)
        self.add_blob(document)
        artifact = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": DSSE,
            "config": descriptor("application/vnd.oci.empty.v1+json", EMPTY),
            "layers": [descriptor(DSSE, document, annotations={"org.opencontainers.image.title":
                                                               "provenance.intoto.dsse.json"})],
            "subject": {"mediaType": OCI_MANIFEST, "digest": subject, "size": len(self.manifests[subject][0])},
            "annotations": {"io.ngcbuild.attachment": "provenance"}}, sort_keys=True).encode()
        self.add_manifest(artifact, OCI_MANIFEST)
        index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
            descriptor(OCI_MANIFEST, artifact, artifactType=DSSE,
                       annotations={"io.ngcbuild.attachment": "provenance"})]}).encode()
        self.add_manifest(index, OCI_INDEX, tag=subject.replace(":", "-"))


# --- the servers ---------------------------------------------------------------------------------------

class FakeServer:
    """A threaded HTTP/1.1 server on `address` whose answers `answer(handler)` decides; every request
    is logged (method, path, Authorization) to `log`."""

    def __init__(self, log: Path, address: str = "127.0.0.1"):
        self.log = log
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                server.record(self)
                length = int(self.headers.get("Content-Length") or 0)
                self.body = self.rfile.read(length) if length else b""  # a write's, for a fake that stores
                try:
                    server.answer(self)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True  # the client hung up (at its deadline, as it must)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _any

        self.httpd = http.server.ThreadingHTTPServer((address, 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{host}:{port}"

    def record(self, handler) -> None:
        line = json.dumps({"method": handler.command, "path": handler.path,
                           "authorization": handler.headers.get("Authorization")})
        with self._lock, self.log.open("a", encoding="utf-8") as out:
            out.write(line + "\n")

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def answer(self, handler) -> None:
        send(handler, 404, b"{}")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeRegistry(FakeServer):
    """A distribution registry of `content` that also stores what is pushed to it (blob uploads, opened by
    POST and closed by one PUT with the digest; manifests PUT by tag), as hostile as asked:

    auth: None, ("basic", {user: password}) or ("bearer", realm URL) with tokens from FakeTokens;
    lie: a Docker-Content-Digest to send for every manifest instead of the true one;
    swap: {digest: bytes} served for that digest instead of its own (`swap_all`: every manifest altered);
    raw: {path or "METHOD path": callable(handler)} for a path answered otherwise (trickled, endless, an
    error body, an upload sent elsewhere)."""

    def __init__(self, log: Path, content: Content, auth=None, lie: str | None = None, swap: dict | None = None,
                 raw: dict | None = None, address: str = "127.0.0.1"):
        self.content, self.auth, self.lie, self.swap, self.raw = content, auth, lie, swap or {}, raw or {}
        self.swap_all = False  # every manifest served as other bytes (one space more), whatever its digest
        self.token = "fake-token-" + hashlib.sha256(str(id(self)).encode()).hexdigest()[:16]
        super().__init__(log, address)

    def authorized(self, handler) -> bool:
        if self.auth is None:
            return True
        given = handler.headers.get("Authorization") or ""
        if self.auth[0] == "basic":
            return any(given == "Basic " + base64.b64encode(f"{u}:{p}".encode()).decode()
                       for u, p in self.auth[1].items())
        return given == f"Bearer {self.token}"

    def challenge(self) -> str:
        if self.auth[0] == "basic":
            return 'Basic realm="fake"'
        return f'Bearer realm="{self.auth[1]}",service="fake",scope="repository:{REPOSITORY}:pull"'

    def answer(self, handler) -> None:
        path = handler.path.split("?")[0]
        raw = self.raw.get(f"{handler.command} {path}") or self.raw.get(path)
        if raw is not None:
            return raw(handler)
        if not self.authorized(handler):
            return send(handler, 401, b'{"errors": [{"code": "UNAUTHORIZED"}]}',
                        {"WWW-Authenticate": self.challenge(), "Content-Type": "application/json"})
        if path == "/v2/":
            return send(handler, 200, b"{}")
        prefix = f"/v2/{REPOSITORY}/"
        if path.startswith(prefix + "blobs/uploads/"):
            return self.upload(handler, prefix)
        if path.startswith(prefix + "manifests/") and handler.command == "PUT":
            digest = self.content.add_manifest(handler.body, handler.headers.get("Content-Type", ""),
                                               tag=path[len(prefix + "manifests/"):])
            return send(handler, 201, b"", {"Docker-Content-Digest": self.lie or digest})
        if path.startswith(prefix + "manifests/"):
            reference = path[len(prefix + "manifests/"):]
            digest = self.content.tags.get(reference, reference)
            if digest not in self.content.manifests:
                return send(handler, 404, b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}')
            body, media_type = self.content.manifests[digest]
            body = self.swap.get(digest, body)
            if self.swap_all:
                body = body.replace(b'"schemaVersion": 2', b'"schemaVersion":  2')
            return send(handler, 200, body, {"Content-Type": media_type,
                                             "Docker-Content-Digest": self.lie or digest_of(body)})
        if path.startswith(prefix + "blobs/"):
            digest = path[len(prefix + "blobs/"):]
            if digest not in self.content.blobs:
                return send(handler, 404, b'{"errors": [{"code": "BLOB_UNKNOWN"}]}')
            return send(handler, 200, self.swap.get(digest, self.content.blobs[digest]),
                        {"Docker-Content-Digest": digest})
        return send(handler, 404, b"{}")

    def upload(self, handler, prefix: str) -> None:
        if handler.command == "POST":
            return send(handler, 202, b"", {"Location": f"{prefix}blobs/uploads/upload-{len(self.content.blobs)}"})
        digest = parse_qs(urlsplit(handler.path).query).get("digest", [""])[0]
        if handler.command != "PUT" or digest != digest_of(handler.body):
            return send(handler, 400, b'{"errors": [{"code": "DIGEST_INVALID"}]}')
        self.content.add_blob(handler.body)
        return send(handler, 201, b"", {"Docker-Content-Digest": digest})


class FakeTokens(FakeServer):
    """A token service: a token for `users`' Basic credentials (or for anyone, `anonymous`), or the
    `body` given (a token of the wrong shape), or `raw(handler)`."""

    def __init__(self, log: Path, registry: FakeRegistry | None = None, users: dict | None = None,
                 anonymous: bool = False, body: bytes | None = None, raw=None, address: str = "127.0.0.1"):
        self.registry, self.users, self.anonymous, self.body, self.raw = registry, users or {}, anonymous, body, raw
        super().__init__(log, address)

    def answer(self, handler) -> None:
        token_answer(handler, self.registry, self.users, self.anonymous, self.body, self.raw)


def token_answer(handler, registry: FakeRegistry, users: dict, anonymous: bool, body: bytes | None, raw) -> None:
    """A token service's answer: `raw(handler)`, else `body`, else a token for `users`' Basic
    credentials (or anyone's, `anonymous`), else 401."""
    if raw is not None:
        return raw(handler)
    if body is not None:
        return send(handler, 200, body, {"Content-Type": "application/json"})
    given = handler.headers.get("Authorization") or ""
    ok = anonymous or any(given == "Basic " + base64.b64encode(f"{u}:{p}".encode()).decode() for u, p in users.items())
    if not ok:
        return send(handler, 401, b'{"details": "who are you"}', {"WWW-Authenticate": 'Basic realm="tokens"'})
    return send(handler, 200, json.dumps({"token": registry.token}).encode(), {"Content-Type": "application/json"})


def project_json(version: str, vulnerabilities: list | None = None) -> bytes:
    return json.dumps({"info": {"version": version}, "vulnerabilities": vulnerabilities or []}).encode()


def other_host_available() -> bool:
    """127.0.0.2 answers on this machine's loopback (Linux routes all of 127.0.0.0/8 there)."""
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False
