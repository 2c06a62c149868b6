"""The one HTTP session policy (core/http.py) on the registry session (registry/client.py): urllib3's Retry on a requests Session,
against a real HTTP server on the loopback that answers as scripted: connect errors and 5xx are
retried with backoff, Retry-After is honoured (within a bound), what cannot help is not retried.
The sleeps are recorded, not slept: no timing here."""

import hashlib
import http.server
import socket
import threading

import pytest
import urllib3.util.retry

from ngcbuild.core.http import ATTEMPTS, BACKOFF_S, MAX_RETRY_AFTER_S, new_session
from ngcbuild.registry.client import Registry, RegistryError, registry_session

BODY = b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}'
DIGEST = "sha256:" + hashlib.sha256(BODY).hexdigest()


class Scripted(http.server.ThreadingHTTPServer):
    """Answers each request with the next (status, headers) of `script`; the last one repeats. A 200
    to a GET carries BODY (a manifest whose digest is DIGEST)."""

    def __init__(self, script):
        self.script, self.seen = list(script), []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(handler):
                self.seen.append((handler.command, handler.path))
                status, headers = self.script.pop(0) if len(self.script) > 1 else self.script[0]
                body = BODY if status == 200 and handler.command == "GET" else b""
                handler.send_response(status)
                for key, value in headers.items():
                    handler.send_header(key, value)
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            do_GET = do_HEAD = do_PUT = _answer

            def log_message(handler, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def host(self):
        return f"127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.shutdown()
        self.server_close()


@pytest.fixture
def sleeps(monkeypatch):
    slept = []
    monkeypatch.setattr(urllib3.util.retry.time, "sleep", slept.append)
    return slept


@pytest.fixture
def server_of():
    made = []

    def make(script):
        made.append(Scripted(script))
        return made[-1]

    yield make
    for server in made:
        server.close()


def test_5xx_is_retried_with_backoff_then_succeeds(server_of, sleeps):
    server = server_of([(503, {}), (502, {}), (200, {"Docker-Content-Digest": DIGEST})])
    assert Registry(server.host).digest("nvidia/pytorch", "dev-py3") == DIGEST
    assert len(server.seen) == 3 and server.seen[0] == ("GET", "/v2/nvidia/pytorch/manifests/dev-py3")
    assert sleeps == [BACKOFF_S * 2]  # urllib3: none after the first failure, then doubling


def test_retry_after_is_honoured_and_bounded(server_of, sleeps):
    server = server_of([(503, {"Retry-After": "7"}), (429, {"Retry-After": "86400"}),
                        (503, {"Retry-After": "not a date"}), (200, {"Docker-Content-Digest": DIGEST})])
    assert Registry(server.host).digest("nvidia/pytorch", "dev-py3") == DIGEST
    # a registry cannot park us for a day: a minute at most, and never past the request's deadline (a
    # minute for a manifest, counted from the first attempt)
    assert sleeps[0] == 7 and MAX_RETRY_AFTER_S - 1 < sleeps[1] <= MAX_RETRY_AFTER_S
    assert len(server.seen) == 4


def test_a_5xx_that_persists_is_reported_after_every_attempt(server_of, sleeps):
    server = server_of([(500, {})])
    with pytest.raises(RegistryError, match="HTTP 500"):
        Registry(server.host).digest("nvidia/pytorch", "dev-py3")
    assert len(server.seen) == ATTEMPTS


@pytest.mark.parametrize("status", [404, 401, 403, 400])
def test_answers_that_a_retry_cannot_change_are_not_retried(server_of, sleeps, status):
    server = server_of([(status, {})])
    registry = Registry(server.host)
    if status == 404:
        assert registry.digest("nvidia/pytorch", "dev-py3") is None
    else:
        with pytest.raises(RegistryError):
            registry.digest("nvidia/pytorch", "dev-py3")
    assert len(server.seen) == 1 and sleeps == []


def test_a_manifest_put_is_retried_too(server_of, sleeps):
    server = server_of([(503, {}), (201, {})])
    body = b'{"schemaVersion": 2}'
    assert Registry(server.host).put_manifest("nvidia/pytorch", "dev-py3", body, "application/json").startswith("sha256:")
    assert [method for method, _ in server.seen] == ["PUT", "PUT"]


def test_connect_errors_are_retried_then_reported_once(sleeps):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RegistryError, match=rf"127.0.0.1:{port}: GET .*: cannot be reached after {ATTEMPTS} attempt"):
        Registry(f"127.0.0.1:{port}").digest("nvidia/pytorch", "dev-py3")
    assert len(sleeps) == ATTEMPTS - 2  # backoff before every retry but the first


def test_publish_promote_and_the_build_lookup_share_one_session():
    assert Registry("127.0.0.1:5000").session is registry_session() is Registry("registry.example").session
    adapter = registry_session().get_adapter("https://registry.example/v2/")
    assert adapter.max_retries.total == ATTEMPTS - 1 and 503 in adapter.max_retries.status_forcelist
    assert new_session() is not registry_session()
