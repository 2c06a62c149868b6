"""Progress of image pulls and pushes, read from the engine's event stream.

Multi-GB layers take minutes: on a terminal one line is rewritten in place with the bytes done, the
total and the rate; in a log (CI) each layer gets one line when it is done, with its size, so the
log says what moved without a line per progress event.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# Statuses that end a layer's transfer, for pulls and pushes.
_LAYER_DONE = {"Pull complete", "Already exists", "Pushed", "Layer already exists"}
_MOVING = {"Downloading", "Pushing"}
REDRAW_S = 0.5


def human_bytes(count: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


@dataclass
class TransferProgress:
    """Follows a pull or push stream (`verb` says which) and shows its progress on `out`."""

    out: object
    verb: str = "pulling"
    clock: object = time.monotonic
    tty: bool | None = None
    error: str | None = None
    current: dict = field(default_factory=dict)  # layer -> bytes moved so far
    total: dict = field(default_factory=dict)  # layer -> its size, once the engine said it
    finished: dict = field(default_factory=dict)  # layer -> how it ended
    _started: float | None = None
    _drawn_at: float = float("-inf")
    _line_open: bool = False

    def __post_init__(self):
        if self.tty is None:
            isatty = getattr(self.out, "isatty", None)
            self.tty = bool(isatty and isatty())

    def feed(self, event: dict) -> None:
        if event.get("error") or event.get("errorDetail"):
            self.error = str(event.get("error") or (event.get("errorDetail") or {}).get("message") or event)
            return
        layer, status = event.get("id"), event.get("status") or ""
        if not layer or status.startswith(("Pulling from", "The push refers to")) or ":" in layer:
            return  # the repository or tag lines, not a layer
        if self._started is None:
            self._started = self.clock()
        detail = event.get("progressDetail") or {}
        if status in _MOVING and isinstance(detail.get("current"), int):
            self.current[layer] = detail["current"]
            if isinstance(detail.get("total"), int) and detail["total"] > 0:
                self.total[layer] = detail["total"]
        if (status in _LAYER_DONE or status.startswith("Mounted from")) and layer not in self.finished:
            self.finished[layer] = status
            if layer in self.total:
                self.current[layer] = self.total[layer]
            if not self.tty:
                size = f" ({human_bytes(self.total[layer])})" if layer in self.total else ""
                self._print(f"    {layer}: {status}{size}")
        if self.tty:
            self._redraw()

    def moved(self) -> int:
        return sum(self.current.values())

    def rate(self) -> float:
        elapsed = self.clock() - self._started if self._started is not None else 0.0
        return self.moved() / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        layers = len(set(self.current) | set(self.finished))
        return (f"    {self.verb}: {human_bytes(self.moved())} of {human_bytes(sum(self.total.values()))}, "
                f"{human_bytes(self.rate())}/s, {len(self.finished)}/{layers} layers done")

    def summary(self) -> str:
        elapsed = self.clock() - self._started if self._started is not None else 0.0
        reused = sum(1 for status in self.finished.values()
                     if status in ("Already exists", "Layer already exists") or status.startswith("Mounted from"))
        return (f"{len(self.finished)} layers, {reused} already there, {human_bytes(self.moved())} moved "
                f"in {elapsed:.1f}s")

    def done(self) -> None:
        """End the live line (terminal), so what follows starts on a line of its own."""
        if self.tty and self._line_open:
            self._redraw(force=True)
            self.out.write("\n")
            self.out.flush()
            self._line_open = False

    def _redraw(self, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now
        self.out.write("\r\x1b[K" + self.line())
        self.out.flush()
        self._line_open = True

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

