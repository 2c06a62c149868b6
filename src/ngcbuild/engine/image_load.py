"""An image loaded into the engine (`POST /images/load`) as its archive is made: each layer is sent
as soon as its file is written, so the engine unpacks one layer while the next is still being
rewritten (the engine reads the whole archive before it reads manifest.json, which comes last).

The request runs in a thread of its own and is fed through a queue; a layer's file is removed once
sent, so the disk holds a layer the engine has not yet read, not the whole image twice.
"""

from __future__ import annotations

import json
import queue
import tarfile
import threading
from pathlib import Path

from ngcbuild.core.errors import BuildFailed

_CHUNK = 1 << 20
_END, _ABORT = object(), object()
_ABORT_WAIT_S = 30


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
        self._queue.put((name, path))

    def finish(self, config_name: str, config: bytes, entry: dict) -> None:
        """The config and manifest.json sent, the archive ended, the engine's answer waited for."""
        self._queue.put((config_name, config))
        self._queue.put(("manifest.json", json.dumps([entry]).encode()))
        self._queue.put(_END)
        self._thread.join()
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
                continue
            with what.open("rb") as data:
                yield from _member(name, what.stat().st_size, iter(lambda: data.read(_CHUNK), b""))
            what.unlink()
        yield b"\0" * (2 * tarfile.BLOCKSIZE)


def _member(name: str, size: int, chunks):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    yield info.tobuf(format=tarfile.PAX_FORMAT)
    yield from chunks
    if size % tarfile.BLOCKSIZE:
        yield b"\0" * (tarfile.BLOCKSIZE - size % tarfile.BLOCKSIZE)
