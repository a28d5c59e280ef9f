"""The host's store, called from the event loop: blocking work on a bounded pool (§10).

A database that stops answering becomes UNAVAILABLE with a stable reason, never INTERNAL:
the caller retries (on this replica once it is back, or on another one).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import grpc
import sqlalchemy as sa

from services.host.ports import HostStorage
from shared.errors import TesseraError

DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"


class AsyncStore:
    def __init__(self, store: HostStorage, pool: ThreadPoolExecutor) -> None:
        self.store = store
        self._pool = pool

    async def __call__(self, function, *args, **kwargs):
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, partial(function, *args, **kwargs))
        except sa.exc.DBAPIError as exc:
            if not lost(exc):
                raise
            raise unavailable(exc) from None


def lost(exc: sa.exc.DBAPIError) -> bool:
    """The connection failed (server gone, restarting, network), as opposed to a refused statement."""
    return exc.connection_invalidated or isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)


def unavailable(exc: BaseException) -> TesseraError:
    first = str(getattr(exc, "orig", exc)).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return TesseraError(grpc.StatusCode.UNAVAILABLE, DATABASE_UNAVAILABLE,
                        f"the host database is not answering ({first}); retry shortly", {"retryable": "true"})
