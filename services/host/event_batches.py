"""The broker's intent events for a surface, appended in batches: one transaction for all that are waiting.

An append to a surface's journal holds the surface's head row lock until its transaction commits, so appends
to one surface run one after another, on every replica. One transaction per event caps a surface at a few
hundred events/s, and far fewer while this replica's event loop is busy fanning out: between statements the
database threads wait for the interpreter lock. A burst of events (the receipts of a bulk action) therefore
goes in as few transactions as possible: whatever arrived for a surface while its previous batch was being
written is written next, together. Exactly once per event id still holds: the ids are recorded in the same
transaction as the events (HostStore.publish_events).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from services.host.database import AsyncStore
from services.host.fanout import SurfaceFanout
from services.host.store import EventToPublish, NewEntry, Position

logger = logging.getLogger("tessera.host.event_batches")
MAX_BATCH = 64  # events per transaction: a bounded statement and a bounded wait for the first of them


@dataclass
class _Waiting:
    event: EventToPublish
    reply: asyncio.Future


class EventBatches:
    def __init__(self, db: AsyncStore, fanout: SurfaceFanout) -> None:
        self._db = db
        self._fanout = fanout
        self._waiting: dict[tuple[str, str], list[_Waiting]] = {}  # (session, surface) → events not yet written
        self._writers: dict[tuple[str, str], asyncio.Task] = {}

    async def publish(self, session_id: str, surface_id: str, event_key: str, request_hash: str,
                      entry: NewEntry) -> Position:
        """Append one event once per `event_key`; its place in the journal (the first send's, for a repeated
        key). The write goes on if the caller goes away: the broker's retry then finds it done."""
        reply = asyncio.get_running_loop().create_future()
        reply.add_done_callback(_consume)  # a caller that left leaves no "never retrieved" warning behind
        key = (session_id, surface_id)
        self._waiting.setdefault(key, []).append(_Waiting(EventToPublish(event_key, request_hash, entry), reply))
        if key not in self._writers:
            self._writers[key] = asyncio.create_task(self._write(key))
        return await asyncio.shield(reply)

    async def _write(self, key: tuple[str, str]) -> None:
        session_id, surface_id = key
        batch: list[_Waiting] = []
        try:
            while waiting := self._waiting.pop(key, None):
                batch = waiting[:MAX_BATCH]
                if len(waiting) > MAX_BATCH:
                    self._waiting[key] = waiting[MAX_BATCH:]  # before any await: later arrivals queue behind
                try:
                    replies, appended = await self._db(self._db.store.publish_events, session_id, surface_id,
                                                       [w.event for w in batch])
                except Exception as exc:  # nothing of this batch was written: each caller hears why
                    for w in batch:
                        _settle(w.reply, exc=exc)
                    continue
                if appended is not None:
                    await self._wake_viewers(surface_id, appended)
                for w, reply in zip(batch, replies, strict=True):
                    _settle(w.reply, result=reply)
        finally:  # stopping (cancelled) or failing: nobody is left waiting for ever
            for w in batch + self._waiting.pop(key, []):
                w.reply.cancel()
            del self._writers[key]

    async def _wake_viewers(self, surface_id: str, appended) -> None:
        """The events are committed whatever happens here: a failed wake-up costs latency (the safety re-read
        brings them), never the caller's acknowledgement."""
        try:
            await self._fanout.published(surface_id, appended)
        except Exception as exc:  # e.g. the database went away, or its pool stopped with the replica
            logger.warning("published events, but could not wake local viewers at once: %s", exc)


def _settle(reply: asyncio.Future, result: Position | None = None, exc: BaseException | None = None) -> None:
    if reply.done():
        return
    if exc is not None:
        reply.set_exception(exc)
    else:
        reply.set_result(result)


def _consume(reply: asyncio.Future) -> None:
    if not reply.cancelled():
        reply.exception()
