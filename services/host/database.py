"""The host's store, called from the event loop: blocking work on a bounded pool (§10).

A database that stops answering becomes UNAVAILABLE / DATABASE_UNAVAILABLE (shared.data.db.OffLoop), never
INTERNAL and never with the driver's words: the caller retries (on this replica once it is back, or on
another one), and the outage is logged once when it starts, now and then while it lasts, once when it ends.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from services.host.ports import HostStorage
from shared.data.db import OffLoop, Outage


class AsyncStore(OffLoop):
    def __init__(self, store: HostStorage, pool: ThreadPoolExecutor, outage: Outage | None = None) -> None:
        super().__init__(pool, outage or Outage("host database"))
        self.store = store
