"""Work spread over threads that an interrupt stops at once: the audit's questions to the index, the
mutants built and tested side by side.

concurrent.futures' pool will not do: its threads are joined when the interpreter exits, and a
`with` block waits for every queued job, so a Ctrl-C waits for every worker to finish its retries
and backoff (minutes). Here the workers are daemon threads taking jobs from a queue: the first
interrupt (raised in the main thread, core/interrupts.py) stops the hand-out of new jobs, and the
caller's cleanup runs at once; `wait` gives the workers a bounded time to finish what they hold
(their own cleanup in `finally`), and a worker still busy then is left to end with the process.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Workers:
    """`work(item)` for every item on at most `count` threads; `as_done()` yields (index, item, result)
    as each finishes and raises in the caller the first exception a job raised.

    No job runs before `as_done()` is first called: a job may use the object its caller is still
    assigning (mutate's jobs ask `workers.stopping`), so the threads start only once it is bound."""

    def __init__(self, items: Iterable[Item], work: Callable[[Item], Result], count: int, name: str = "worker"):
        self.items = list(items)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = threading.Event()
        for index, item in enumerate(self.items):
            self._jobs.put((index, item))
        self._threads = [threading.Thread(target=self._run, args=(work,), daemon=True, name=f"{name}-{n}")
                         for n in range(max(1, min(count, len(self.items))))]
        self._started = False

    def _start(self) -> None:
        if not self._started:
            self._started = True
            for thread in self._threads:
                thread.start()

    def _run(self, work) -> None:
        while not self._stop.is_set():
            try:
                index, item = self._jobs.get_nowait()
            except queue.Empty:
                return
            try:
                self._done.put((index, item, work(item), None))
            except BaseException as exc:  # handed to the caller, who decides
                self._done.put((index, item, None, exc))

    def as_done(self) -> Iterator[tuple[int, Item, Result]]:
        self._start()
        try:
            for _ in self.items:
                index, item, result, failure = self._done.get()  # an interrupt wakes this wait at once
                if failure is not None:
                    raise failure
                yield index, item, result
        finally:
            self.stop()

    def results(self) -> list[Result]:
        """Every result, in the order of the items."""
        found = {index: result for index, _, result in self.as_done()}
        return [found[index] for index in range(len(self.items))]

    def stop(self) -> None:
        """No job starts from now on; the ones running go on until they return."""
        self._stop.set()

    def stopping(self) -> bool:
        """Whether stop() was called: a long job checks it between its steps, and starts no new one."""
        return self._stop.is_set()

    def wait(self, seconds: float) -> bool:
        """Wait at most `seconds` for the running jobs to return; whether they all did."""
        if not self._started:
            return True
        ends = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(max(0.0, ends - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)
