"""The standard-library engine client facing a socket that is not a Docker engine: one message, no
traceback (the real engine: tests/integration/test_local_engine.py; a missing, stale or silent
socket: tests/integration/test_faults.py)."""

import socketserver
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from ngcbuild.core.errors import EngineUnavailable
from ngcbuild.engine.local_engine import LocalEngine


class _NotDocker(BaseHTTPRequestHandler):
    """A web server on a unix socket: it answers, but not as an engine does (no API-Version)."""

    def do_GET(self):  # noqa: N802 - the name http.server calls
        body = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet; a unix peer has no address to log
        pass


class _PingsThenRambles(_NotDocker):
    """Pings like an engine, then answers with what no engine says: a page, or too much."""

    def do_GET(self):  # noqa: N802
        if self.path == "/_ping":
            body, extra = b"OK", {"API-Version": "1.41"}
        else:
            body, extra = b"<html>not json</html>" * (100 if "/images/big" in self.path else 1), {}
        self.send_response(200)
        for name, value in {**extra, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class _Garbage(socketserver.StreamRequestHandler):
    """Something that is not HTTP at all."""

    def handle(self):
        self.rfile.readline()
        self.wfile.write(b"SSH-2.0-OpenSSH_9.2\r\n")


@pytest.mark.parametrize("handler, reason", [
    (_NotDocker, "the answer to a ping was 200: this is not a Docker engine"),
    (_Garbage, "the connection was closed without an answer: this is not a Docker engine"),
])
def test_a_socket_that_is_no_engine_is_one_clear_message(tmp_path, handler, reason):
    path = tmp_path / "docker.sock"
    server = socketserver.ThreadingUnixStreamServer(str(path), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = LocalEngine.for_environment({"DOCKER_HOST": f"unix://{path}"})
        with pytest.raises(EngineUnavailable) as failed:
            local.images()
    finally:
        server.shutdown()
        server.server_close()
    message = str(failed.value)
    assert message.startswith(f"cannot reach the Docker engine at unix://{path} ({reason}")
    assert "`bash .ci/engine`" in message and "\n" not in message


@pytest.mark.parametrize("call, limit, expected", [
    (lambda local: local.images(), None, "answered GET /images/json with something that is not JSON"),
    (lambda local: local.inspect_image("big:y"), 100, "answered GET /v1.41/images/big:y/json with more than 100 bytes"),
])
def test_an_answer_no_engine_gives_is_one_clear_message(tmp_path, monkeypatch, call, limit, expected):
    from ngcbuild.engine import local_engine

    if limit:
        monkeypatch.setattr(local_engine, "MAX_ANSWER_BYTES", limit)
    path = tmp_path / "docker.sock"
    server = socketserver.ThreadingUnixStreamServer(str(path), _PingsThenRambles)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = LocalEngine.for_environment({"DOCKER_HOST": f"unix://{path}"}).connect()
        assert local.api_version == "1.41"
        with pytest.raises(EngineUnavailable) as failed:
            call(local)
    finally:
        server.shutdown()
        server.server_close()
    assert expected in str(failed.value) and str(failed.value).endswith("this is not a Docker engine")
