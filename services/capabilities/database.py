"""The broker's own database as the broker reaches it: blocking calls on a bounded pool (§10), and one way of
telling that the database does not answer (shared.data.db.OffLoop).

Every call that touches it (the stores of intents and approvals, passkeys and web sessions, the read journal,
the outbox, lease renewals, the background sweeps) runs through one `BrokerDatabase`, so a database that stops
answering is always UNAVAILABLE / DATABASE_UNAVAILABLE (shared.data.db.Outage): never INTERNAL, never with the
driver's words or a file's path, logged once when it starts, now and then while it lasts and once when it ends.
The data changes' target (the customer's own tables) is another database: `DataChanges` answers for it
(CHANGE_TARGET_UNAVAILABLE), so its calls run here unguarded (`elsewhere`).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from functools import partial

from shared.data.db import DATABASE_UNAVAILABLE, OffLoop, Outage
from shared.rpc.refusals import Unavailable


class BrokerDatabase(OffLoop):
    def __init__(self, pool: Executor, outage: Outage | None = None) -> None:
        super().__init__(pool, outage or Outage("broker database"))

    async def perhaps(self, function, *args):
        """A call that may not reach the database at all (the outbox turn, which on SQLite holds nothing): a
        lost database is told as for any call, but a success says nothing of the database answering."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, partial(self._told, function, *args))

    def _told(self, function, *args):
        with self.outage.guard(success_tells=False):
            return function(*args)

    async def elsewhere(self, function, *args, **kwargs):
        """Blocking work on the pool that is not this database's (the change target answers for itself): a
        success there must not count as this database answering again."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, partial(function, *args, **kwargs))


def database_away(exc: BaseException) -> bool:
    """Whether a refusal only says the broker's database did not answer: nothing was decided or refused, so
    it is not put on the record as a refusal (nor could it be, with the database away)."""
    return isinstance(exc, Unavailable) and exc.reason == DATABASE_UNAVAILABLE
