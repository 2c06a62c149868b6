"""The engine on the local socket answering badly: trickling, the wrong shape, a hostile error body.
A real unix socket served by a thread of this test (no engine needed)."""

from __future__ import annotations

import shutil
import socket
import threading
import time

import pytest

from ngcbuild.core.errors import EngineUnavailable
from ngcbuild.engine import local_engine
from ngcbuild.engine.local_engine import EngineReplied, LocalEngine

PING = b"HTTP/1.1 200 OK\r\nAPI-Version: 1.41\r\nContent-Length: 2\r\n\r\nOK"


class FakeEngine:
    """Answers a ping, then every other request with `answer(request) -> bytes` (or trickles)."""

    def __init__(self, path, body: bytes = b"", status: int = 200, trickle: bool = False, declared: int | None = None,
                 hang: bool = False):
        self.body, self.status, self.trickle, self.stop = body, status, trickle, threading.Event()
        self.hang = hang  # every request but the ping read and never answered
        self.declared = len(body) if declared is None else declared  # the Content-Length it sends
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(8)
        self.path = str(path)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        with conn:
            request = conn.recv(65536)
            if b"/_ping" in request:
                conn.sendall(PING)
                return
            if self.hang:
                self.stop.wait(30)
                return
            head = f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\n"
            if self.trickle:
                conn.sendall((head + "Content-Length: 1000000\r\n\r\n").encode())
                for _ in range(600):  # a byte every 50 ms for half a minute: each read is quick, the call never ends
                    if self.stop.is_set():
                        return
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        return
                    time.sleep(0.05)
                return
            conn.sendall((head + f"Content-Length: {self.declared}\r\n\r\n").encode() + self.body)

    def close(self):
        self.stop.set()
        self.server.close()


@pytest.fixture
def short_socket(tmp_path_factory):
    import tempfile

    # a socket's path must be short (108 bytes), shorter than pytest's tmp_path; removed afterwards
    folder = tempfile.mkdtemp(prefix="ngc-eng-")
    yield f"{folder}/e.sock"
    shutil.rmtree(folder, ignore_errors=True)


def _images_refused(path, **engine) -> str:
    """What LocalEngine.images() raises against a FakeEngine(path, **engine), in words."""
    fake = FakeEngine(path, **engine)
    try:
        with pytest.raises(EngineUnavailable) as caught:
            LocalEngine(path).images()
    finally:
        fake.close()
    return str(caught.value)


def test_an_engine_that_trickles_its_answer_is_cut_at_the_calls_deadline(short_socket, monkeypatch):
    monkeypatch.setattr(local_engine, "CALL_TIMEOUT_S", 1)
    said = _images_refused(short_socket, trickle=True)
    assert "no answer within 1s" in said, said


class _LingeringTimer(threading.Timer):
    """A timer whose thread is still alive a while after its function ran: as on a loaded machine."""

    def run(self):
        super().run()
        if self.finished.is_set():
            time.sleep(1.5)


@pytest.mark.parametrize("trickle", [False, True], ids=["silent", "trickling"])
def test_the_deadline_is_told_from_a_closed_connection_while_its_timer_thread_lingers(short_socket, monkeypatch,
                                                                                       trickle):
    """The deadline shuts the socket, so the read ends as if the engine had closed it (no answer, or
    an answer cut short): the call must still say the deadline fell, however late the timer's thread ends."""
    monkeypatch.setattr(local_engine, "CALL_TIMEOUT_S", 1)
    monkeypatch.setattr(local_engine.threading, "Timer", _LingeringTimer)
    said = _images_refused(short_socket, hang=not trickle, trickle=trickle)
    assert "no answer within 1s" in said, said


@pytest.mark.parametrize("body", [b"[]", b"[" + b" " * 5000])
def test_an_answer_cut_short_of_its_length_is_a_broken_connection_not_json(short_socket, body):
    """`[]` is a whole list of images: read as one, an engine that died mid-answer would say there are none."""
    said = _images_refused(short_socket, body=body, declared=len(body) + 100)
    assert "the connection was closed without an answer" in said, said


@pytest.mark.parametrize("body", [b"{}", b'"images"', b"[1, 2]", b'[{"Id": 7}]', b'[{"Id": "x", "RepoTags": "a"}]'],
                         ids=["object", "string", "numbers", "id-a-number", "tags-a-string"])
def test_a_list_of_images_of_the_wrong_shape_is_one_message(short_socket, body):
    assert "not a list of images" in _images_refused(short_socket, body=body)


@pytest.mark.parametrize("body", [b"[]", b'{"Id": null}', b'{"Id": "x", "RepoTags": {}}'])
def test_an_inspect_of_the_wrong_shape_is_one_message(short_socket, body):
    engine = FakeEngine(short_socket, body=body)
    try:
        with pytest.raises(EngineUnavailable, match="not an image"):
            LocalEngine(short_socket).inspect_image("x")
    finally:
        engine.close()


def test_an_engines_error_body_is_bounded_and_escaped(short_socket):
    body = ('{"message": "' + "\\u001b[31m\\r\\nforged line " * 500 + '"}').encode()
    engine = FakeEngine(short_socket, body=body, status=500)
    try:
        with pytest.raises(EngineReplied) as caught:
            LocalEngine(short_socket).inspect_image("x")
    finally:
        engine.close()
    text = str(caught.value)
    assert "\x1b" not in text and "\n" not in text and "\r" not in text and len(text) < 500


@pytest.mark.parametrize("exc, words", [
    (BlockingIOError(11, "Resource temporarily unavailable"), "it accepts no more connections: the engine is hung"),
    (TimeoutError("timed out"), "no answer within 10s"),
    (OSError("odd failure at SOCKET (details)"), "odd failure at the address"),
])
def test_why_an_engine_is_unreachable_is_said_in_words_without_the_address_twice(exc, words, tmp_path):
    from ngcbuild.engine.address import unreachable_reason

    socket_path = tmp_path / "docker.sock"
    socket_path.touch()  # there: not "does not exist"
    exc.args = tuple(str(arg).replace("SOCKET", str(socket_path)) for arg in exc.args)
    reason = unreachable_reason(f"unix://{socket_path}", exc)
    assert words in reason and str(socket_path) not in reason
