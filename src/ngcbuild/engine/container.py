"""Run a container of an image once and take what it printed: the one way ngcbuild runs a container
(the smoke suite, the image's Python version, the SBOM's inventory).

One behaviour for all of them: a deadline (the wait for the container's exit is bounded, and a
container still running then is a failure naming what it was), the output captured (stdout and
stderr apart, and handed on as it comes where the caller shows progress), and the container removed
in `finally`, whether it ran, failed to start, overran its deadline or was interrupted.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import requests

from ngcbuild.core.errors import OperationError

FOLLOWER_JOIN_S = 10  # the log stream ends with the container; this only bounds a stuck stream


@dataclass(frozen=True)
class Finished:
    exit_code: int
    stdout: str
    stderr: str


def run_once(client, image: str, command: list[str], *, what: str, deadline_s: float,
             failure: type[OperationError] = OperationError, entrypoint: list[str] | None = None,
             host_config: dict | None = None, labels: dict | None = None, environment: dict | None = None,
             on_output: Callable[[str], None] | None = None) -> Finished:
    """Create a container of `image` running `command`, start it, wait at most `deadline_s` seconds
    for it to exit, and return its exit code and output; the container is removed in every case.
    Without `host_config` it has no network. `on_output` receives the output (stdout and stderr) as
    it comes. Past the deadline (or with the engine's connection lost while waiting) it raises
    `failure`: "<what> did not finish within <deadline_s>s". A refused start is the engine's error
    (docker.errors.APIError), raised after the removal."""
    host_config = host_config if host_config is not None else client.create_host_config(network_mode="none")
    container = client.create_container(image, command=command, entrypoint=entrypoint, host_config=host_config,
                                        labels=labels or {}, environment=environment or {})
    try:
        client.start(container)
        follower = None
        if on_output is not None:
            follower = threading.Thread(target=_follow, args=(client, container, on_output), daemon=True)
            follower.start()
        try:
            status = client.wait(container, timeout=deadline_s)
        except requests.exceptions.RequestException as exc:  # ReadTimeout at the deadline, or a lost connection
            raise failure(f"{what} did not finish within {deadline_s:g}s ({type(exc).__name__})") from None
        if follower is not None:
            follower.join(timeout=FOLLOWER_JOIN_S)
        stdout = client.logs(container, stdout=True, stderr=False).decode("utf-8", "replace")
        stderr = client.logs(container, stdout=False, stderr=True).decode("utf-8", "replace")
        return Finished(int(status.get("StatusCode", 1)), stdout, stderr)
    finally:
        client.remove_container(container, force=True)


def _follow(client, container, on_output: Callable[[str], None]) -> None:
    import docker.errors

    try:
        for chunk in client.logs(container, stream=True, follow=True):
            on_output(chunk.decode("utf-8", "replace"))
    except (docker.errors.APIError, requests.exceptions.RequestException):
        pass  # the progress display ends; the captured output and the exit code still decide
