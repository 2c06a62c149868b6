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
