"""Intermediate containers of a build that did not finish: named by the log, journaled, removed."""

import docker
import pytest

from ngcbuild.engine.events import BuildStream
from ngcbuild.engine.leftovers import Journal, remove_containers

# What the classic builder streams for a RUN step that is then cut short (recorded from dockerd 20.10).
EVENTS = [
    {"stream": "Step 1/3 : FROM debian:bookworm-slim"}, {"stream": "\n"}, {"stream": " ---> f655e8aac282\n"},
    {"stream": "Step 2/3 : RUN echo start && sleep 20"}, {"stream": "\n"},
    {"stream": " ---> Running in 5ff14128f5c5\n"}, {"stream": "start\n"},
]


def test_the_stream_names_the_containers_it_runs_steps_in():
    stream = BuildStream()
    for event in EVENTS:
        stream.feed(event)
    assert stream.containers == ["5ff14128f5c5"]
    assert stream.failed_step == "step 2/3: RUN echo start && sleep 20"


def test_journal_appends_once_and_clears(tmp_path):
    journal = Journal(tmp_path / "build" / "r")
    journal.add(["aaa111", "bbb222"])
    journal.add(["aaa111", "bbb222", "ccc333"])
    assert journal.read() == ["aaa111", "bbb222", "ccc333"]
    assert Journal(tmp_path / "build" / "r").read() == ["aaa111", "bbb222", "ccc333"]  # a later build reads it
    journal.clear()
    assert journal.read() == [] and not journal.path.exists()


class FakeEngine:
    """remove_container as the engine answers it: 404 when gone, 409 while it removes it itself."""

    def __init__(self, busy_rounds: dict, fail: int | None = None):
        self.busy_rounds, self.fail, self.calls = dict(busy_rounds), fail, []

    def remove_container(self, container, force):
        assert force
        self.calls.append(container)
        if self.fail:
            raise docker.errors.APIError("boom", response=type("R", (), {"status_code": self.fail})())
        if container not in self.busy_rounds:
            raise docker.errors.NotFound("gone")
        if self.busy_rounds[container] > 0:
            self.busy_rounds[container] -= 1
            raise docker.errors.APIError("removal in progress", response=type("R", (), {"status_code": 409})())
        del self.busy_rounds[container]


def test_remove_waits_out_a_removal_in_progress():
    engine = FakeEngine({"running1": 2, "stopped2": 0})
    assert remove_containers(engine, ["running1", "stopped2", "gone3"], sleep=lambda s: None) == []
    assert engine.calls.count("running1") == 3 and engine.busy_rounds == {}


def test_remove_gives_up_after_the_grace_period_and_says_which():
    engine = FakeEngine({"stuck": 10**9})
    assert remove_containers(engine, ["stuck"], grace_s=0, sleep=lambda s: None) == ["stuck"]


def test_other_engine_errors_are_not_swallowed():
    with pytest.raises(docker.errors.APIError):
        remove_containers(FakeEngine({"x": 0}, fail=500), ["x"], sleep=lambda s: None)
