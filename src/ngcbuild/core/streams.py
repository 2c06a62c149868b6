"""A stream from an engine under one deadline for the whole operation, the wait before its first byte
included (issue 54 item 1). docker-py's calls block in a socket read whose only limit is the client's
per-read timeout (an hour: a build may print nothing that long), both when the request is made (a save or
pull answers its headers only when it starts) and between chunks; a deadline checked between reads never
fires while one read is blocked. So the request is made and read on a thread of its own and its items are
handed over through a short queue: the caller waits at most until the deadline, and is given `late()`
(the error that says so) when it falls. The reading thread, a daemon, is left to its blocked read (it
holds the process no longer)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator

AHEAD = 4  # items read ahead of the caller: a few chunks of a save, never the stream
_PUT_WAIT_S = 0.5  # how often the reading thread looks whether the caller has gone


def within(open_stream: Callable[[], Iterable], seconds: float | Callable[[], float],
           late: Callable[[], BaseException]) -> Iterator:
    """The items of `open_stream()` (called on the reading thread: the request too is under the deadline),
    each as it comes, all of them within `seconds` of the first item asked for; past that, `late()` is raised
    wherever the caller is waiting (before the first item, or between two). `seconds` may be a callable, asked
    again after each item: a deadline sized to what the stream has declared so far (a pull's layers), which
    the caller bounds. An error of the stream is raised as its own."""
    started = time.monotonic()

    def ends() -> float:
        return started + (seconds() if callable(seconds) else seconds)
    handed: queue.Queue = queue.Queue(maxsize=AHEAD)
    gone = threading.Event()

    def put(item) -> bool:
        while not gone.is_set():
            try:
                handed.put(item, timeout=_PUT_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in open_stream():
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there as it is
            put(("error", exc))

    threading.Thread(target=read, name="ngcbuild-stream", daemon=True).start()
    try:
        while True:
            left = ends() - time.monotonic()
            if left <= 0:
                raise late()
            try:
                kind, value = handed.get(timeout=left)
            except queue.Empty:
                raise late() from None
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        gone.set()
