"""An engine's pull (`repro --against REF`, a derived release's base) under one deadline for the whole pull,
sized to the layers it announces (issue 54 item 1): a pull the engine never answers, one that stalls in a
read, or one whose stream never ends is one OperationError saying so, never the client's hour per read."""

from __future__ import annotations

import threading
import time

import docker
import pytest

from ngcbuild.core.errors import OperationError
from ngcbuild.engine import client as engine_client
from ngcbuild.engine.client import PullDeadline, ensure_image


class _Engine:
    def __init__(self, pull):
        self._pull, self.released = pull, threading.Event()

    def inspect_image(self, ref):
        raise docker.errors.ImageNotFound("no such image")

    def pull(self, *args, **kwargs):
        return self._pull(self)


def _never_answers(engine):
    engine.released.wait(60)
    return iter(())


def _stalls_after_one_event(engine):
    yield {"status": "Pulling from x/y"}
    engine.released.wait(60)


def _endless(engine):
    while not engine.released.is_set():
        time.sleep(0.01)
        yield {"status": "Waiting", "id": "abc"}


@pytest.mark.parametrize("pull", [_never_answers, _stalls_after_one_event, _endless])
def test_a_pull_that_never_ends_is_cut_at_its_one_deadline(monkeypatch, pull):
    monkeypatch.setattr(engine_client, "PULL_START_S", 1)
    engine = _Engine(pull)
    started = time.monotonic()
    try:
        with pytest.raises(OperationError, match=r"--against x/y:t: the engine's pull of x/y:t did not end within 1s "
                                                 r"\(1s and 1 s per 2 MiB of the 0 bytes its layers announced\)"):
            ensure_image(engine, "x/y:t", "--against x/y:t")
    finally:
        engine.released.set()
    assert time.monotonic() - started < 5


def test_the_pull_deadline_grows_with_the_layers_announced_within_its_bounds(monkeypatch):
    monkeypatch.delenv("NGCBUILD_HTTP_DEADLINE_S", raising=False)
    pull = PullDeadline("p")
    assert pull.seconds() == engine_client.PULL_START_S
    for current in (1, 10 << 20):
        pull.feed({"id": "a", "status": "Downloading", "progressDetail": {"current": current, "total": 20 << 20}})
    pull.feed({"id": "b", "progressDetail": {"total": True}})  # not a size
    assert pull.seconds() == engine_client.PULL_START_S + 10
    pull.feed({"id": "c", "progressDetail": {"total": 1 << 49}})
    assert pull.seconds() == engine_client.MAX_PULL_S
    monkeypatch.setenv("NGCBUILD_HTTP_DEADLINE_S", "7")
    capped = PullDeadline("p")
    assert capped.seconds() == 7 and "NGCBUILD_HTTP_DEADLINE_S" in str(capped.late())
