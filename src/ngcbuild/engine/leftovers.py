"""The intermediate containers of a build, and removing them when the build does not finish.

The classic builder runs every RUN step in a container of its own and, with `forcerm`, removes it
itself, also when a step fails. Two faults leave one behind: the client goes away (Ctrl-C), and the
engine removes the container only a moment after our process has exited; or the engine dies
mid-step, and when it comes back the container is still there, stopped. So the ids the build log
names are journaled in build/R/ as they appear; every build removes what its log named before it
returns, and the next build of the release removes what a dead engine could not.
"""

from __future__ import annotations

import time
from pathlib import Path

import docker

from ngcbuild.core.files import exists, read_text
from ngcbuild.workspace.release_dir import JOURNAL, ReleaseDir

# How long to keep trying: the engine may itself be removing a container it was cancelling.
GRACE_S = 20
MAX_BYTES = 1_000_000


class Journal:
    """build/R/.intermediate-containers: one container id a line."""

    def __init__(self, directory: Path):
        self.directory = ReleaseDir.of(directory)
        self.path = self.directory.file(JOURNAL)
        self._written: set[str] = set()

    def read(self) -> list[str]:
        if not exists(self.path):
            return []
        text = read_text(self.path, MAX_BYTES, "a list of container ids", "", within=self.path.parent)
        return [line for line in (raw.strip() for raw in text.splitlines()) if line.isalnum()]

    def add(self, ids) -> None:
        new = [i for i in ids if i not in self._written]
        if not new:
            return
        # the whole list each time, through the one writer: a crash leaves the last list whole
        known = [i for i in self.read() if i not in new]
        self.directory.write(JOURNAL, "".join(f"{i}\n" for i in (*known, *new)))
        self._written.update(new)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
        self._written.clear()


def remove_containers(client: docker.APIClient, ids, grace_s: float = GRACE_S, sleep=time.sleep) -> list[str]:
    """Force-remove the containers `ids` (only these: they are ours) and wait until they are gone.
    Returns the ids still there after `grace_s`."""
    pending = list(dict.fromkeys(ids))
    deadline = time.monotonic() + grace_s
    while pending:
        for container in list(pending):
            try:
                client.remove_container(container, force=True)
                pending.remove(container)
            except docker.errors.NotFound:
                pending.remove(container)
            except docker.errors.APIError as exc:
                # 409: the engine is already removing it (it cancels the step of a dropped build)
                if exc.status_code != 409:
                    raise
        if pending:
            if time.monotonic() > deadline:
                break
            sleep(0.5)
    return pending
