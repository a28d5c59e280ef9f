"""External reads written behind the reply, in group commits (§8: taint and the reads an approval card shows).

A model's read through the broker is answered before its record is in the
database; anything that shows a person the run's reads, or asks them to
approve, waits for the records first (RunReads.recorded (reads.py)). One record per
transaction cost about 0.6-0.9 ms of CPU per read on these machines, in a
thread that competes with the event loop for the GIL, and that was the largest
part of what the broker added to a read. Here a write starts as soon as a read
arrives, as before (no added delay, so no wider window in which a crash could
lose a record), but the reads that arrive while one transaction is being
written go together into the next: under load, one commit carries many reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

logger = logging.getLogger("tessera.broker.reads")
MAX_BATCH = 200  # reads per transaction: bounds one write's time, and the rows a failed batch retries
CLOSE_SECONDS = 10.0


@dataclass(frozen=True)
class ExternalRead:
    """One screened external text a run read, as recorded (the screen's matches as dicts)."""

    tenant_id: str
    actor_id: str
    session_id: str
    turn_id: str
    source: str
    ref: str
    text: str
    clipped: bool
    matches: list[dict]


class ReadJournal:
    def __init__(self, write: Callable[[list[ExternalRead]], None], pool: Executor) -> None:
        self._write = write  # one transaction for all the reads it is given
        self._pool = pool
        self._queue: list[tuple[ExternalRead, asyncio.Future]] = []
        self._writer: asyncio.Task | None = None

    def add(self, read: ExternalRead) -> asyncio.Future:
        """Queue `read`; the future resolves once its transaction committed (or fails with its error)."""
        written = asyncio.get_running_loop().create_future()
        self._queue.append((read, written))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain(), name="broker-read-journal")
        return written

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        batch: list[tuple[ExternalRead, asyncio.Future]] = []
        try:
            while self._queue:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                try:
                    await loop.run_in_executor(self._pool, self._write, [read for read, _ in batch])
                except Exception as exc:  # noqa: BLE001 - each read's own future carries it to its retry
                    _settle(batch, exc)
                    continue
                _settle(batch, None)
        except asyncio.CancelledError:  # stopping: nobody may wait forever for a write that will not come
            _settle(batch + self._queue, ConnectionAbortedError("the read journal was stopped"))
            self._queue = []
            raise

    async def close(self) -> None:
        """Let the reads already queued reach the database (a stopping broker loses none it answered, unless
        the database does not take them within CLOSE_SECONDS: then they are logged as lost)."""
        if self._writer is not None and not self._writer.done():
            await asyncio.wait({self._writer}, timeout=CLOSE_SECONDS)
            if not self._writer.done():
                logger.error("%d external read record(s) not written at stop", len(self._queue) + 1)
                self._writer.cancel()


def _settle(batch: list[tuple[ExternalRead, asyncio.Future]], failure: BaseException | None) -> None:
    for _, written in batch:
        if written.done():
            continue
        if failure is None:
            written.set_result(None)
        else:
            written.set_exception(failure)
