"""The host's store, called from the event loop: blocking work on a bounded pool (§10).

A database that stops answering becomes UNAVAILABLE / DATABASE_UNAVAILABLE (shared.db.Outage), never
INTERNAL and never with the driver's words: the caller retries (on this replica once it is back, or on
another one), and the outage is logged once when it starts, now and then while it lasts, once when it ends.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from services.host.ports import HostStorage
from shared.db import Outage


class AsyncStore:
    def __init__(self, store: HostStorage, pool: ThreadPoolExecutor, outage: Outage | None = None) -> None:
        self.store = store
        self._pool = pool
        self.outage = outage or Outage("host database")

    async def __call__(self, function, *args, **kwargs):
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, partial(self._guarded, function, *args, **kwargs))

    def _guarded(self, function, *args, **kwargs):
        with self.outage.guard():
            return function(*args, **kwargs)
