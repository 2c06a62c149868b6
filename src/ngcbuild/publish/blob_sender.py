"""Layer blobs sent while the rest of the image is still being made: push hands each blob over as soon as it
exists (compressed, or found in the layer store), and one thread sends it, so the upload runs beside the save,
the rewrite and the compression instead of after them (on cuda-dev, gigabytes that would otherwise go out only
once the last layer is compressed).

Only what the registry says it lacks is sent here: a blob it claims to hold is left to the upload after
(push._upload), which reads it back before believing it. That upload skips what was sent here and does the
rest on the one retry schedule; so a registry's or a file's failure here is not reported, it only leaves the
blob to the upload after, which reports its own (a registry that refuses the credentials refuses them there
too). Any other exception is a fault of ours: raised by finish(), not hidden by the upload after."""

from __future__ import annotations

import queue
import threading

from ngcbuild.image.blobs import Blob
from ngcbuild.registry.client import RegistryError, UploadStopped


class BlobSender:
    """`offer(blob)` from any thread; `finish()` waits for what was offered so far and answers the digests
    sent. Leaving the block stops the thread: a blob being sent is cut within a read of its file, the
    waiting ones are never sent."""

    def __init__(self, registry, repository_path: str, say):
        self._registry = registry  # its own session (Registry.without_retries): this thread's alone
        self._repository = repository_path
        self._say = say
        self._blobs: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._sent: set[str] = set()
        self._offered: set[str] = set()
        self._failed = False
        self._fault: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="send-blobs")

    def __enter__(self) -> BlobSender:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._blobs.put(None)
        # a read of a file, or a request under its own deadline: a command interrupted meanwhile is not held for
        # it (the thread is a daemon, and ends with the process)
        self._thread.join(5)

    def offer(self, blob: Blob) -> None:
        if blob.digest not in self._offered:
            self._offered.add(blob.digest)
            self._blobs.put(blob)

    def finish(self) -> frozenset[str]:
        """Once every blob offered so far has been sent or left: the digests this sender sent."""
        self._blobs.join()  # an interrupt wakes this wait at once (then __exit__ stops the thread)
        if self._fault is not None:
            raise self._fault
        return frozenset(self._sent)

    def _run(self) -> None:
        while True:
            blob = self._blobs.get()
            try:
                if blob is None:
                    return
                self._send(blob)
            finally:
                self._blobs.task_done()

    def _send(self, blob: Blob) -> None:
        if self._stop.is_set() or self._failed:
            return
        try:
            if self._registry.holds_blob(self._repository, blob.digest, blob.size):
                return  # the upload after reads it back, and sends it if the registry lied
            self._registry.put_blob_file(self._repository, blob.path, blob.digest, blob.size, stop=self._stop.is_set)
        except (RegistryError, OSError, UploadStopped):  # left to the upload after, which retries and says why
            self._failed = True  # after one failure the rest waits for the upload after too
            return
        except Exception as exc:  # noqa: BLE001 -- a fault of ours: the caller's finish() raises it
            self._fault, self._failed = exc, True
            return
        self._sent.add(blob.digest)
        self._say(f"    sent {blob.digest[:19]} ({blob.size / 1e6:.1f} MB) while the image is made")
