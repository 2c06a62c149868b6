"""Bytes handed from one thread to another through memory: a writer (a layer's rewrite) and a reader (its
compression) run at once on the two cores, and nothing is written to disk between them. At most LIMIT bytes
wait; the writer waits beyond that. Either side may end it: the writer's failure is raised to the reader
where it reads (as the writer raised it), the reader's leaving is a PipeAbandoned at the writer's next
write."""

from __future__ import annotations

import threading

CHUNK = 1 << 20  # small writes (tar headers) are gathered into pieces of this size before they are handed over
LIMIT = 16 << 20


class PipeAbandoned(Exception):
    """The reader has gone (its compression failed or was stopped): what is written goes nowhere."""


class Pipe:
    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self._pieces: list[bytes] = []
        self._waiting = 0  # bytes in _pieces
        self._gathered = bytearray()
        self._current, self._at = b"", 0
        self._closed = False
        self._failure: BaseException | None = None
        self._abandoned = False
        self._changed = threading.Condition()

    # --- the writer's side ---------------------------------------------------------------------------

    def write(self, data) -> int:
        size = len(data)
        if size >= CHUNK and not self._gathered:
            self._hand(bytes(data))
        else:
            self._gathered += data
            if len(self._gathered) >= CHUNK:
                self._hand(bytes(self._gathered))
                self._gathered.clear()
        return size

    def close(self) -> None:
        """The end of what is written: the reader reads what waits, then b""."""
        if self._gathered:
            self._hand(bytes(self._gathered))
            self._gathered.clear()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def fail(self, failure: BaseException) -> None:
        """The writer failed: `failure` is raised at the reader's next read."""
        with self._changed:
            self._failure, self._closed = failure, True
            self._changed.notify_all()

    def _hand(self, piece: bytes) -> None:
        with self._changed:
            while self._waiting >= self.limit and not self._abandoned:
                self._changed.wait()
            if self._abandoned:
                raise PipeAbandoned("the reader has gone")
            self._pieces.append(piece)
            self._waiting += len(piece)
            self._changed.notify_all()

    # --- the reader's side ---------------------------------------------------------------------------

    def read(self, size: int = -1) -> bytes:
        """At most `size` bytes (fewer when fewer wait), b"" at the end; the writer's failure raised."""
        if self._at >= len(self._current):
            with self._changed:
                while not self._pieces and not self._closed:
                    self._changed.wait()
                if self._failure is not None:
                    raise self._failure
                if not self._pieces:
                    return b""
                self._current, self._at = self._pieces.pop(0), 0
                self._waiting -= len(self._current)
                self._changed.notify_all()
        if size is None or size < 0:
            size = len(self._current) - self._at
        piece = self._current[self._at:self._at + size]
        self._at += len(piece)
        return piece

    def abandon(self) -> None:
        """The reader has gone: the writer's next write (or the one waiting) raises PipeAbandoned."""
        with self._changed:
            self._abandoned = True
            self._pieces.clear()
            self._changed.notify_all()
