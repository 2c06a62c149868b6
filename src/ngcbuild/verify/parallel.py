"""verify's worker threads and the processes they start. Reading an index page or a wheel's metadata
waits on the network far more than it computes, so verify reads many at once; an interrupt (Ctrl-C)
must still end the command within a second: the main thread waits in short steps, so the signal
handler runs at once; the workers are daemon threads nobody waits for, take no new item once the work
is cancelled, and every process they started (a source archive's metadata build) is killed."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from ngcbuild.core.errors import OperationError

WORKERS = 16
WAIT_STEP_S = 0.1

Item = TypeVar("Item")
Result = TypeVar("Result")


class Cancelled(Exception):
    """The work was cancelled (an interrupt in the main thread)."""


class Work:
    """One verify run's workers and child processes."""

    def __init__(self, workers: int = WORKERS):
        self.workers = workers
        self.cancelled = threading.Event()
        self._processes: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    def each(self, function: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
        """function(item) for every item, at most `workers` at a time, the results in the items' order.
        An exception a call raised is raised here (the first, in the items' order)."""
        items = list(items)
        if not items:
            return []
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for position, item in enumerate(items):
            todo.put((position, item))
        results: list = [None] * len(items)
        errors: dict[int, BaseException] = {}
        left = [len(items)]
        finished = threading.Event()

        def worker():
            while not self.cancelled.is_set():
                try:
                    position, item = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[position] = function(item)
                except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
                    errors[position] = exc
                with self._lock:
                    left[0] -= 1
                    if left[0] == 0:
                        finished.set()

        for _ in range(min(self.workers, len(items))):
            threading.Thread(target=worker, daemon=True, name="verify-worker").start()
        try:
            while not finished.wait(WAIT_STEP_S):  # short steps: an interrupt is handled at once
                pass
        except BaseException:
            self.cancel()
            raise
        if errors:
            raise errors[min(errors)]
        return results

    def run(self, command: list[str], *, timeout: float, **options) -> subprocess.CompletedProcess:
        """A child process in its own process group, its output captured; killed (with its children) at
        the timeout or when the work is cancelled."""
        if self.cancelled.is_set():
            raise Cancelled()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, **options)
        with self._lock:
            self._processes.add(process)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            process.communicate()
            raise OperationError(f"{os.path.basename(command[0])} did not finish in {timeout:g}s") from None
        finally:
            with self._lock:
                self._processes.discard(process)
        if self.cancelled.is_set():
            raise Cancelled()
        return subprocess.CompletedProcess(command, process.returncode, out, err)

    def cancel(self) -> None:
        self.cancelled.set()
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            _kill(process)
        for process in processes:  # reaped here: the program may end before the worker's communicate() does
            try:
                process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
