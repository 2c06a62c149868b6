"""engine/container.py: the one way a container is run once (smoke suite, Python version, SBOM
inventory): a deadline, the output captured, the container removed in every case. The client is a
stand-in recording the calls (the real engine runs it in tests/integration: smoke, sbom)."""

import ast

import docker.errors
import pytest
import requests

from ngcbuild.core.errors import OperationError, SmokeFailed
from ngcbuild.engine.container import run_once
from ngcbuild.supply.sbom import SbomFailed

from ..conftest import REPO


class Client:
    def __init__(self, start_error=None, wait_error=None, exit_code=0, stdout=b"out\n", stderr=b"err\n"):
        self.start_error, self.wait_error = start_error, wait_error
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr
        self.calls, self.created = [], {}

    def create_host_config(self, **kwargs):
        return {"made": kwargs}

    def create_container(self, image, **kwargs):
        self.created = {"image": image, **kwargs}
        self.calls.append("create")
        return {"Id": "c1"}

    def start(self, container):
        self.calls.append("start")
        if self.start_error:
            raise self.start_error

    def wait(self, container, timeout):
        self.calls.append(("wait", timeout))
        if self.wait_error:
            raise self.wait_error
        return {"StatusCode": self.exit_code}

    def logs(self, container, stdout=True, stderr=True, stream=False, follow=False):
        if stream:
            self.calls.append("follow")
            return iter([self.stdout, self.stderr])
        return (self.stdout if stdout else b"") + (self.stderr if stderr else b"")

    def remove_container(self, container, force):
        assert force
        self.calls.append("remove")


def test_output_is_captured_apart_and_the_container_removed():
    client = Client(exit_code=3)
    ran = run_once(client, "img", ["-c", "x"], entrypoint=["python3"], what="w", deadline_s=60)
    assert (ran.exit_code, ran.stdout, ran.stderr) == (3, "out\n", "err\n")
    assert client.calls == ["create", "start", ("wait", 60), "remove"]
    assert client.created["host_config"] == {"made": {"network_mode": "none"}}  # no network unless asked
    assert client.created["entrypoint"] == ["python3"] and client.created["command"] == ["-c", "x"]


@pytest.mark.parametrize("error", [requests.exceptions.ReadTimeout("read timed out"),
                                   requests.exceptions.ConnectionError("engine gone")])
@pytest.mark.parametrize("failure", [SmokeFailed, SbomFailed, OperationError])
def test_past_the_deadline_is_the_callers_failure_and_the_container_is_removed(error, failure):
    client = Client(wait_error=error)
    with pytest.raises(failure, match=r"^the inventory did not finish within 2\.5s \((ReadTimeout|ConnectionError)\)$"):
        run_once(client, "img", [], what="the inventory", deadline_s=2.5, failure=failure)
    assert client.calls[-1] == "remove"


def test_a_refused_start_is_the_engines_error_after_the_removal():
    client = Client(start_error=docker.errors.APIError("rlimit memlock"))
    with pytest.raises(docker.errors.APIError):
        run_once(client, "img", [], what="w", deadline_s=1)
    assert client.calls == ["create", "start", "remove"]


def test_an_interrupt_while_waiting_still_removes_the_container():
    client = Client(wait_error=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        run_once(client, "img", [], what="w", deadline_s=1)
    assert client.calls[-1] == "remove"


def test_progress_is_handed_on_as_it_comes_and_captured_all_the_same():
    client, shown = Client(), []
    ran = run_once(client, "img", [], what="w", deadline_s=1, host_config={"given": True}, on_output=shown.append)
    assert shown == ["out\n", "err\n"] and ran.stdout == "out\n"
    assert client.created["host_config"] == {"given": True}


def test_no_other_module_runs_a_container():
    """One helper: only engine/container.py creates a container."""
    others = []
    for path in sorted((REPO / "src" / "ngcbuild").rglob("*.py")):
        if path.name == "container.py" or "checks" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "create_container":
                others.append(f"{path.name}: {node.attr}")
    assert not others
