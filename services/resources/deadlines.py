"""Deadlines for running statements, watched by one thread.

A DuckDB statement has no timeout of its own: it is stopped by calling `interrupt()` on its
connection from another thread. Starting a thread per statement cost about 1.5 ms on a busy
2-core machine (the starter waits until the new thread has run), more than a whole small query;
one watcher thread serves every statement instead.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Deadline:
    """One armed deadline: `cancel()` once the statement has finished; `expired` says whether it fired."""

    def __init__(self, watcher: DeadlineWatcher, at: float, on_expiry: Callable[[], None]) -> None:
        self._watcher = watcher
        self.at = at
        self.on_expiry = on_expiry
        self.expired = False
        self.cancelled = False

    def cancel(self) -> None:
        """After this returns, `on_expiry` is not running and never will (it may have run already)."""
        self._watcher.cancel(self)


class DeadlineWatcher:
    def __init__(self, name: str = "deadlines") -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()  # ties never compare Deadline objects
        self._name = name
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, seconds: float, on_expiry: Callable[[], None]) -> Deadline:
        deadline = Deadline(self, time.monotonic() + seconds, on_expiry)
        with self._lock:
            if self._closed:
                raise RuntimeError("the deadline watcher is closed")
            if self._thread is None:  # started on first use: a gateway that never queries DuckDB needs none
                self._thread = threading.Thread(target=self._watch, daemon=True, name=self._name)
                self._thread.start()
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._heap[0][2] is deadline:
                self._lock.notify()
        return deadline

    def cancel(self, deadline: Deadline) -> None:
        # The watcher runs on_expiry while holding the lock, so taking it waits out a firing callback.
        with self._lock:
            deadline.cancelled = True
            # Cancelled entries leave the heap when they reach its top; a long timeout would keep many
            # waiting (and their connections' interrupt methods) alive, so they are swept when they pile up.
            if len(self._heap) > 64 and len(self._heap) > 2 * sum(not d.cancelled for _, _, d in self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)

    def close(self) -> None:
        """Stop the watcher thread; deadlines still armed never fire."""
        with self._lock:
            self._closed = True
            self._heap.clear()
            self._lock.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        with self._lock:
            while not self._closed:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._lock.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._lock.wait(wait)
                    continue
                _, _, due = heapq.heappop(self._heap)
                due.expired = True
                try:
                    due.on_expiry()
                except Exception:  # noqa: BLE001 - a failed interrupt must not stop the watcher for everyone
                    pass
