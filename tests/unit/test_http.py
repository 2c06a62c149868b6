"""core/http.fetch against a real HTTP server on the loopback that misbehaves on purpose: the whole
call has one deadline (headers or body trickled a byte at a time are cut at it), an answer is read to
its size cap, and no message shows the credentials of the URL."""

import http.server
import threading
import time

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.http import (
    AnswerTooLarge,
    AnswerTooSlow,
    Deadline,
    HttpFailure,
    deadline_cap,
    fetch,
    new_session,
    retry_policy,
)


class Misbehaving(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - the standard library's name
        try:
            getattr(self, "answer_" + self.path.strip("/"))()
        except (BrokenPipeError, ConnectionResetError):  # the client hung up at its deadline, as it must
            pass

    def answer_ok(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def answer_headers(self):  # a status line, then a header a byte every 10 ms, forever
        self.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(100_000):
            self.wfile.write(b"X")
            self.wfile.flush()
            time.sleep(0.01)

    def answer_body(self):  # headers at once, then the body a byte every 10 ms (no length declared)
        self.send_response(200)
        self.end_headers()
        for _ in range(100_000):
            self.wfile.write(b"x")
            self.wfile.flush()
            time.sleep(0.01)

    def answer_declared(self):
        self.send_response(200)
        self.send_header("Content-Length", str(10 << 20))
        self.end_headers()

    def do_HEAD(self):  # noqa: N802 - what a GET of /declared would send, without its body
        self.answer_declared()

    def answer_undeclared(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"y" * 5000)


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def test_a_whole_answer_is_read(server):
    answer = fetch(new_session(), "GET", server + "/ok", limit=10, deadline_s=5)
    assert (answer.status, answer.body) == (200, b"ok")


@pytest.mark.parametrize("path", ["/headers", "/body"])
def test_a_trickled_answer_is_cut_at_the_deadline_of_the_whole_call(server, path):
    started = time.monotonic()
    with pytest.raises(AnswerTooSlow, match="no whole answer within 1s"):
        fetch(new_session(), "GET", server + path, limit=1 << 20, deadline_s=1)
    assert time.monotonic() - started < 5  # per-read timeouts alone would let it run for hours


@pytest.mark.parametrize("path", ["/declared", "/undeclared"])
def test_an_answer_over_the_cap_is_refused(server, path):
    with pytest.raises(AnswerTooLarge, match="over the 1000"):
        fetch(new_session(), "GET", server + path, limit=1000, deadline_s=5)


def test_a_head_declaring_a_large_body_is_answered(server):
    # a registry's HEAD of a 10 MB blob declares the blob's length and sends nothing: not over the cap
    answer = fetch(new_session(), "HEAD", server + "/declared", limit=1000, deadline_s=5)
    assert (answer.status, answer.body, answer.headers["Content-Length"]) == (200, b"", str(10 << 20))


def test_no_message_shows_the_credentials_of_the_url(server):
    host = server.partition("://")[2]
    with pytest.raises(AnswerTooSlow) as caught:
        fetch(new_session(), "GET", f"http://user:s3cr3t@{host}/body", limit=1 << 20, deadline_s=0.5)
    assert "s3cr3t" not in str(caught.value) and "***@" in str(caught.value)
    with pytest.raises(HttpFailure) as caught:  # nothing listens there: the library's message quotes the URL
        fetch(new_session(retry_policy(attempts=1)), "GET", "http://user:s3cr3t@127.0.0.1:9/x", limit=10,
              deadline_s=20)
    assert "s3cr3t" not in str(caught.value)


def test_the_deadline_variable_caps_every_request(server, monkeypatch):
    monkeypatch.setenv("NGCBUILD_HTTP_DEADLINE_S", "1")
    started = time.monotonic()
    with pytest.raises(AnswerTooSlow, match="no whole answer within 1s"):
        fetch(new_session(), "GET", server + "/body", limit=1 << 20, deadline_s=600)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "3601", "ten", "\u0663", " 5"])
def test_a_deadline_variable_that_is_not_seconds_is_refused(value):
    with pytest.raises(UserError, match="NGCBUILD_HTTP_DEADLINE_S"):
        deadline_cap({"NGCBUILD_HTTP_DEADLINE_S": value})
    assert deadline_cap({}) is None and deadline_cap({"NGCBUILD_HTTP_DEADLINE_S": "30"}) == 30


def test_a_streaming_request_can_read_under_the_same_deadline(server):
    """What a chunked upload or download does: its own request on a session of new_session(), under
    Deadline; the trickled answer is cut when the deadline falls."""
    session = new_session()
    started = time.monotonic()
    with pytest.raises(AnswerTooSlow, match="127.0.0.1"):
        with Deadline(server + "/body", 1) as call:
            with session.get(server + "/body", stream=True, timeout=call.timeouts) as response:
                try:
                    for _ in response.iter_content(1):
                        pass
                except Exception:  # the socket shut at the deadline
                    pass
            call.check()
    assert time.monotonic() - started < 5


def test_the_backoff_between_retries_stops_at_the_deadline():
    """Nothing listens: each attempt fails at once, and the backoff between them (2, 4, 8 s) would make
    14 s of a 1 s deadline; the retries are cut at the deadline instead."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(HttpFailure, match="127.0.0.1"):
        fetch(new_session(), "GET", f"http://127.0.0.1:{port}/x", limit=10, deadline_s=1)
    assert time.monotonic() - started < 4
