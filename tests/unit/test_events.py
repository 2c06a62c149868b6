"""Stream parsers against event streams recorded from a real engine (tests/data/streams/)."""

import json

import pytest

from ngcbuild.engine.events import BuildStream, PushStream
from ngcbuild.publish.push import is_transient

from ..conftest import REPO

STREAMS = REPO / "tests" / "data" / "streams"


def feed(parser, events):
    shown = []
    for event in events:
        shown += parser.feed(event)
    return shown


def test_successful_build_gives_steps_and_image_id():
    events = json.loads((STREAMS / "build.json").read_text())["ok"]
    stream = BuildStream()
    shown = feed(stream, events)
    assert stream.error is None
    assert stream.image_id and stream.image_id.startswith("sha256:")
    assert (stream.step, stream.steps) == (3, 3)
    assert "[2/3] RUN echo hello-from-step-2" in shown
    assert "    hello-from-step-2" in shown


def test_failed_build_names_the_step_and_keeps_the_tail():
    events = json.loads((STREAMS / "build.json").read_text())["failed"]
    stream = BuildStream()
    shown = feed(stream, events)
    assert stream.image_id is None
    assert "returned a non-zero code: 7" in stream.error
    assert stream.failed_step == "step 2/2: RUN echo about-to-fail && exit 7"
    assert "about-to-fail" in stream.tail
    assert shown[-1].startswith("ERROR: ")


def test_error_detail_alone_is_a_failure():
    stream = BuildStream()
    stream.feed({"errorDetail": {"message": "no space left on device"}})
    assert stream.error == "no space left on device"


def test_tail_keeps_the_last_40_lines_without_ansi_or_dpkg_noise():
    stream = BuildStream()
    stream.feed({"stream": "Step 1/1 : RUN x\n"})
    for i in range(100):
        stream.feed({"stream": f"\x1b[91mline {i}\x1b[0m\n(Reading database ... 5%\n"})
    assert len(stream.tail) == 40
    assert list(stream.tail)[-1] == "line 99"


def test_push_stream_reads_the_digest():
    events = json.loads((STREAMS / "push.json").read_text())["ok"]
    stream = PushStream()
    feed(stream, events)
    assert stream.error is None
    assert stream.digest.startswith("sha256:") and stream.size == 529


def test_push_error_inside_the_stream_is_caught_and_transient():
    events = json.loads((STREAMS / "push.json").read_text())["refused"]
    stream = PushStream()
    feed(stream, events)
    assert stream.digest is None
    assert "connection refused" in stream.error
    assert is_transient(stream.error)


def test_denied_is_never_transient():
    assert not is_transient("unauthorized: authentication required; retrying after timeout")
    assert not is_transient("manifest invalid")


def test_every_stage_image_is_read_from_a_multi_stage_build():
    events = json.loads((STREAMS / "build.json").read_text())
    cold, cached = BuildStream(), BuildStream()
    feed(cold, events["multistage_cold"])
    feed(cached, events["multistage_cached"])
    assert list(cold.stages()) == ["runtime", "builder", "final"]
    assert cold.stages()["final"] == cold.image_id
    assert cold.stages()["runtime"] != cold.stages()["builder"]
    # the same images, every step but the FROMs from the cache
    assert cached.stages() == cold.stages()
    assert (cold.cached_steps, cached.cached_steps) == (0, 4)


def test_a_build_that_failed_mid_stage_names_no_stages():
    events = json.loads((STREAMS / "build.json").read_text())["multistage_cold"]
    stream = BuildStream()
    cut = next(i for i, e in enumerate(events) if e.get("stream", "").startswith("Step 7/7"))
    feed(stream, events[:cut + 1] + [{"error": "boom", "errorDetail": {"message": "boom"}}])
    assert stream.stages() == {}


@pytest.mark.parametrize("message, denied, transient", [
    ('Get "http://127.0.0.1:40369/v2/": dial tcp 127.0.0.1:40369: connect: connection refused', False, True),
    ("Get http://127.0.0.1:5401/v2/: net/http: TLS handshake timeout", False, True),
    ("blob upload unknown: sha256:5025034031d0 unknown", False, False),
    ("error parsing HTTP 403 response body: unexpected end of JSON input", True, False),
    ("received unexpected HTTP status: 503 Service Unavailable", False, True),
    ("unauthorized: authentication required", True, False),
    # ngcbuild's own push: core/http's words for a connection refused or cut before the answer
    ("PUT blob sha256:417af349123a: cannot be reached after 1 attempt(s) (RemoteDisconnected: 'Remote end closed "
     "connection without response')", False, True),
    ("HEAD blob sha256:f320b57d62a7: cannot be reached after 1 attempt(s) (ConnectionRefusedError: '[Errno 111] "
     "Connection refused')", False, True),
    ("PUT 127.0.0.1:5000/nvidia/pytorch:dev-py3: HTTP 400 (MANIFEST_BLOB_UNKNOWN) (the same after 3 retries)",
     False, False),
    ("POST blob upload: access denied (401) (UNAUTHORIZED); log in with docker login", True, False),
])
def test_a_status_code_is_a_number_of_its_own_never_digits_of_a_port_or_digest(message, denied, transient):
    from ngcbuild.publish.push import is_denied

    assert (is_denied(message), is_transient(message)) == (denied, transient)


def test_the_engines_words_reach_no_terminal_raw():
    # an error that carries escape sequences and a second line, and a step's output with an OSC sequence
    stream = BuildStream()
    stream.feed({"stream": "Step 1/1 : RUN x\n"})
    shown = stream.feed({"stream": "\x1b]0;owned\x07title\n"})
    shown += stream.feed({"error": "refused\x1b[2J\nERROR: a second line", "errorDetail": {"message": "x"}})
    assert not any("\x1b" in line or "\x07" in line or "\n" in line for line in shown), shown
    assert "\x1b" not in stream.error and "\n" not in stream.error
    assert "refused\\x1b[2J\\x0aERROR: a second line" == stream.error
