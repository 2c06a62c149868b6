"""An image loaded into the engine (`POST /images/load`) as its archive is made: each layer is sent
as soon as its file is written, so the engine unpacks one layer while the next is still being
rewritten (the engine reads the whole archive before it reads manifest.json, which comes last).

The request runs in a thread of its own and is fed through a queue; a layer's file is removed once
sent, so the disk holds a layer the engine has not yet read, not the whole image twice.
"""

from __future__ import annotations

import json
import math
import queue
import tarfile
import threading
from pathlib import Path

from ngcbuild.core.errors import BuildFailed

_CHUNK = 1 << 20
_END, _ABORT = object(), object()
_ABORT_WAIT_S = 30
# the engine's answer to a load comes once it has unpacked the last layer it was sent: at most this long
# after the archive's end, and a second for every ANSWER_RATE bytes of it (it may still be unpacking)
ANSWER_START_S = 300
ANSWER_RATE = 8 << 20


def answer_deadline_s(sent: int) -> float:
    return float(ANSWER_START_S + math.ceil(sent / ANSWER_RATE))


def takes_partial_load(client) -> bool:
    """Whether the engine takes a load that leaves out layers it holds already (by their chain): Docker's
    own image store does; Podman and Docker's containerd image store refuse one ("Some layer tarfiles are
    missing in the tarball")."""
    components = client.version().get("Components") or []
    if any("podman" in str(part.get("Name", "")).lower() for part in components if isinstance(part, dict)):
        return False
    status = client.info().get("DriverStatus") or []
    return not any("containerd.snapshotter" in str(value) for pair in status for value in pair)


class _Aborted(Exception):
    """Raised inside the request's body: the load is given up, the engine keeps nothing of it."""


class Loading:
    """One load, fed layer by layer: `send(name, path)` each layer file, then `finish(config, entry)`
    (or `abort()`)."""

    def __init__(self, client):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._sent, self._bytes = threading.Event(), 0  # the whole archive handed to the engine; its bytes
        self._queued = 0  # bytes of the layers given to send()
        self._thread = threading.Thread(target=self._run, args=(client,), name="ngcbuild-load", daemon=True)
        self._thread.start()

    def __enter__(self) -> Loading:
        return self

    def __exit__(self, kind, value, trace) -> None:
        if kind is not None and self._thread.is_alive():
            self.abort()

    def send(self, name: str, path: Path) -> None:
        """The file `path` as the archive's member `name` (removed once the engine has read it)."""
        self._raise_failure()
        self._queued += path.stat().st_size
        self._queue.put((name, path))

    def finish(self, config_name: str, config: bytes, entry: dict) -> None:
        """The config and manifest.json sent, the archive ended, the engine's answer waited for: within one
        deadline sized to what was sent (answer_deadline_s), else a BuildFailed saying so (the request's
        thread, a daemon, is left to the engine: it holds the process no longer)."""
        self._queue.put((config_name, config))
        self._queue.put(("manifest.json", json.dumps([entry]).encode()))
        self._queue.put(_END)
        # what is still queued, read by the engine within a deadline sized to it; then its answer, within another
        reading = answer_deadline_s(self._queued)
        if not self._sent.wait(reading):
            raise BuildFailed(f"the engine stopped reading the load of the normalised image: not all of its "
                              f"{self._queued} bytes read within {reading:.0f}s of its end; nothing was tagged")
        deadline = answer_deadline_s(self._bytes)
        self._thread.join(deadline)
        if self._thread.is_alive():
            raise BuildFailed(f"the engine did not answer the load of the normalised image within {deadline:.0f}s "
                              f"of its end ({self._bytes} bytes sent: {ANSWER_START_S}s and 1 s per "
                              f"{ANSWER_RATE >> 20} MiB); nothing was tagged")
        self._raise_failure()

    def abort(self) -> None:
        """The request given up mid-archive (the engine loads nothing of it); waits a while for the
        thread (a daemon: an engine that stopped reading does not hold the process)."""
        self._queue.put(_ABORT)
        self._thread.join(_ABORT_WAIT_S)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure = self._failure
            if isinstance(failure, BuildFailed):
                raise failure
            raise BuildFailed(f"the engine refused the normalised image: {failure}")

    def _run(self, client) -> None:
        try:
            self._load(client)
        finally:
            self._sent.set()  # however the request ended: finish() waits on its answer, or its failure, now

    def _load(self, client) -> None:
        try:
            for event in client.load_image(self._archive()):
                detail = event.get("errorDetail", {}).get("message") or event.get("error")
                if detail:
                    raise BuildFailed(f"the engine refused the normalised image: {detail}")
        except _Aborted:
            pass
        except Exception as exc:  # noqa: BLE001 - whatever ends the request is the load's failure, said once
            self._failure = exc

    def _archive(self):
        while (item := self._queue.get()) is not _END:
            if item is _ABORT:
                raise _Aborted()
            name, what = item
            if isinstance(what, bytes):
                yield from _member(name, len(what), [what])
                self._bytes += len(what)
                continue
            with what.open("rb") as data:
                size = what.stat().st_size
                yield from _member(name, size, iter(lambda: data.read(_CHUNK), b""))
            self._bytes += size
            what.unlink()
        yield b"\0" * (2 * tarfile.BLOCKSIZE)
        self._sent.set()


def _member(name: str, size: int, chunks):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    yield info.tobuf(format=tarfile.PAX_FORMAT)
    yield from chunks
    if size % tarfile.BLOCKSIZE:
        yield b"\0" * (tarfile.BLOCKSIZE - size % tarfile.BLOCKSIZE)
