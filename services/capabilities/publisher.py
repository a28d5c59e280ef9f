"""Delivers the broker's host events (approval requests, receipts) from the outbox, in order, at least once.

The host publishes a repeated event id once, so re-sending after a crash or a
lost reply is safe. A transient failure stops the round (order is kept) and
retries with backoff; an event the host can never accept (its surface is gone)
is set aside as dropped, with the reason, instead of blocking the queue.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

import grpc

from services.capabilities.store import BrokerStore
from shared.errors import error_details
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.broker.publisher")
_PERMANENT = {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED}
IDLE_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0


class HostPublisher:
    def __init__(self, store: BrokerStore, pool: ThreadPoolExecutor, host) -> None:
        self.store = store
        self.pool = pool
        self.host = host
        self.wake = asyncio.Event()

    async def _db(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def publish_pending(self) -> bool:
        """One round; False when a transient failure stopped it."""
        for row in await self._db(self.store.pending_events):
            request = host_pb2.PublishIntentEventRequest.FromString(row.request)
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
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=backoff or IDLE_SECONDS)
            except TimeoutError:
                pass
            self.wake.clear()
            try:
                delivered = await self.publish_pending()
            except Exception:  # the broker database hiccuped: try again later, never die
                logger.exception("publishing host events failed")
                delivered = False
            backoff = 0.0 if delivered else min(MAX_BACKOFF_SECONDS, max(1.0, backoff * 2))
