"""engine/image_load.py: a load fed layer by layer from another thread. The engine here is a stand-in
that reads the request's body as docker-py hands it over (a generator) and answers with events; the
real engine's load is tested by every build (tests/integration)."""

from __future__ import annotations

import io
import json
import tarfile
import threading

import pytest
import requests

from ngcbuild.core.errors import BuildFailed
from ngcbuild.engine.image_load import Loading


class Engine:
    """load_image as docker-py's: the body read as it comes, then the engine's events."""

    def __init__(self, events=(), fail_after: int | None = None):
        self.events, self.fail_after = list(events), fail_after
        self.body, self.read_first_member = b"", threading.Event()

    def load_image(self, chunks):
        for number, chunk in enumerate(chunks):
            if self.fail_after is not None and number >= self.fail_after:
                raise requests.exceptions.ConnectionError("Connection aborted: BrokenPipeError(32)")
            self.body += chunk
            if len(self.body) > 512:
                self.read_first_member.set()
        return iter(self.events or [{"stream": "Loaded image: memo:x\n"}])


def _layers(tmp_path, sizes=(513, 1024, 0)):
    paths = []
    for number, size in enumerate(sizes):
        path = tmp_path / f"{number}.tar"
        path.write_bytes(bytes([65 + number]) * size)
        paths.append(path)
    return paths


def test_the_archive_is_the_layers_as_sent_then_the_config_then_the_manifest(tmp_path):
    engine, paths = Engine(), _layers(tmp_path)
    expected = {f"{path.stem}/layer.tar": path.read_bytes() for path in paths}
    with Loading(engine) as loading:
        for path in paths:
            loading.send(f"{path.stem}/layer.tar", path)
        loading.finish("c.json", b'{"rootfs": {}}', {"Config": "c.json", "Layers": list(expected)})
    assert len(engine.body) % tarfile.BLOCKSIZE == 0
    with tarfile.open(fileobj=io.BytesIO(engine.body), mode="r:") as read:
        assert read.getnames() == [*expected, "c.json", "manifest.json"]
        assert {name: read.extractfile(name).read() for name in expected} == expected
        assert json.loads(read.extractfile("manifest.json").read()) == [{"Config": "c.json", "Layers": list(expected)}]
    assert not any(path.exists() for path in paths), "a layer's file stays once the engine read it"


def test_a_layer_is_read_by_the_engine_before_the_next_is_sent(tmp_path):
    engine, paths = Engine(), _layers(tmp_path)
    with Loading(engine) as loading:
        loading.send("0/layer.tar", paths[0])
        assert engine.read_first_member.wait(10), "the first layer waited for the archive's end"
        loading.send("1/layer.tar", paths[1])
        loading.finish("c.json", b"{}", {})


def test_the_engines_refusal_is_one_build_failure(tmp_path):
    engine = Engine(events=[{"errorDetail": {"message": "no space left on device"}, "error": "x"}])
    with pytest.raises(BuildFailed, match="refused the normalised image: no space left on device"), \
            Loading(engine) as loading:
        loading.send("0/layer.tar", _layers(tmp_path)[0])
        loading.finish("c.json", b"{}", {})


def test_a_connection_the_engine_cut_fails_the_next_send_or_the_finish(tmp_path):
    engine, paths = Engine(fail_after=1), _layers(tmp_path)
    with pytest.raises(BuildFailed, match="Connection aborted"), Loading(engine) as loading:
        loading.send("0/layer.tar", paths[0])
        loading._thread.join(10)  # the engine has given up by now
        loading.send("1/layer.tar", paths[1])


def test_an_error_on_our_side_gives_the_load_up_and_ends_its_thread(tmp_path):
    engine, paths = Engine(), _layers(tmp_path)
    with pytest.raises(KeyError), Loading(engine) as loading:
        loading.send("0/layer.tar", paths[0])
        raise KeyError("the rewrite failed")
    assert not loading._thread.is_alive()
    assert b"manifest.json" not in engine.body, "an aborted load was given an archive to load"


def test_any_failure_of_the_request_is_the_loads_failure_said_once(tmp_path, capsys):
    class Odd(Engine):
        def load_image(self, chunks):
            next(iter(chunks))
            raise ValueError("an answer docker-py could not read")

    with pytest.raises(BuildFailed, match="refused the normalised image: an answer docker-py could not read"), \
            Loading(Odd()) as loading:
        loading.send("0/layer.tar", _layers(tmp_path)[0])
        loading.finish("c.json", b"{}", {})
    assert "Traceback" not in capsys.readouterr().err


class SilentEngine(Engine):
    """Reads the whole archive, then never answers (until the test lets it go)."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def load_image(self, chunks):
        for chunk in chunks:
            self.body += chunk
        self.release.wait(60)
        return iter([{"stream": "Loaded image: memo:x\n"}])


class DeafEngine(Engine):
    """Takes the request and never reads a byte of its archive (until the test lets it go)."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def load_image(self, chunks):
        self.release.wait(60)
        return iter([])


@pytest.mark.parametrize("engine_kind, said", [
    (SilentEngine, r"did not answer the load .* within 2s of its end \(1543 bytes sent"),
    (DeafEngine, r"stopped reading the load .* within 2s of its end"),  # issue 54 item 1: not one byte read
], ids=["never-answers", "never-reads"])
def test_a_load_the_engine_never_answers_or_never_reads_ends_at_a_deadline_sized_to_it(tmp_path, monkeypatch,
                                                                                      engine_kind, said):
    import time

    from ngcbuild.engine import image_load

    monkeypatch.setattr(image_load, "ANSWER_START_S", 1)
    monkeypatch.setattr(image_load, "_ABORT_WAIT_S", 0.1)  # the request given up: not waited for here
    engine, paths = engine_kind(), _layers(tmp_path)
    started = time.monotonic()
    try:
        with pytest.raises(BuildFailed, match=said), Loading(engine) as loading:
            for path in paths:
                loading.send(f"{path.stem}/layer.tar", path)
            loading.finish("c.json", b"{}", {})
    finally:
        engine.release.set()
    assert time.monotonic() - started < 10
