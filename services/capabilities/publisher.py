"""Delivers the broker's host events (approval requests, receipts) from the outbox, in order, at least once.

With several broker replicas, one drains the outbox at a time (the others find it taken and idle).

The host publishes a repeated event id once, so re-sending after a crash or a
lost reply is safe. A transient failure stops the round (order is kept) and
retries with backoff; an event the host can never accept (its surface is gone)
is set aside as dropped, with the reason, instead of blocking the queue. A broker
database that does not answer is such a transient failure, said by its Outage.
"""

from __future__ import annotations

import asyncio
import logging

import grpc

from services.capabilities.database import BrokerDatabase, database_away
from services.capabilities.messages import publish_request
from services.capabilities.ports import Outbox
from shared.rpc.errors import error_details

logger = logging.getLogger("tessera.broker.publisher")
_PERMANENT = {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED}
IDLE_SECONDS = 1.0
# Another replica was draining: look again soon, in case it read the queue before our new event landed.
TAKEN_RETRY_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 30.0


class HostPublisher:
    def __init__(self, store: Outbox, database: BrokerDatabase, host) -> None:
        self.store = store
        self.database = database
        self.host = host
        self.wake = asyncio.Event()
        self.taken_elsewhere = False  # the last round found another replica draining

    async def _db(self, fn, *args):
        return await self.database(fn, *args)

    async def publish_pending(self) -> bool:
        """One round, if it is this replica's turn (another replica draining counts as done); False when a
        transient failure stopped it. Two guards against doubles: one drainer at a time here, and the host
        publishes an event id once."""
        turn = await self.database.perhaps(self.store.outbox_turn)
        self.taken_elsewhere = turn is None
        if turn is None:
            return True
        try:
            return await self._drain()
        finally:
            await self.database.perhaps(turn.release)

    async def _drain(self) -> bool:
        # Read under the turn: whatever an earlier drainer marked published is no longer pending here.
        for row in await self._db(self.store.pending_events):
            request = publish_request(row)
            try:
                await self.host.PublishIntentEvent(request, timeout=10)
            except grpc.aio.AioRpcError as exc:
                details = error_details(exc)
                message = f"{exc.code().name} {details.reason}: {details.message}"
                if exc.code() in _PERMANENT:
                    logger.warning("host refused event %s for good: %s", row.event_id, message)
                    await self._db(self.store.event_done, row.sequence, "dropped", message[:300])
                    continue
                await self._db(self.store.event_failed, row.sequence, message)
                return False
            await self._db(self.store.event_done, row.sequence, "published")
        return True

    async def run(self) -> None:
        backoff = 0.0
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11, wait_for returns the result of a wait that ends as
            # the task is cancelled and drops the cancel, and the service's stop then waits for this loop forever.
            try:
                async with asyncio.timeout(backoff or (TAKEN_RETRY_SECONDS if self.taken_elsewhere else IDLE_SECONDS)):
                    await self.wake.wait()
            except TimeoutError:
                pass
            self.wake.clear()
            try:
                delivered = await self.publish_pending()
            except Exception as exc:  # the broker database hiccuped: try again later, never die
                if not database_away(exc):  # (an outage is said by the database's Outage)
                    logger.exception("publishing host events failed")
                delivered = False
            backoff = 0.0 if delivered else min(MAX_BACKOFF_SECONDS, max(1.0, backoff * 2))
