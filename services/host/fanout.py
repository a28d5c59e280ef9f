"""Surface journal fan-out of one host replica: cursors, tails and wake-ups (§6, §10a).

The journal in the database is the source of truth. Per watched surface this replica
keeps a tail of recent envelopes, read once per change and shared by every local
subscriber; subscribers only read the journal themselves when they are behind the tail.
Changes are pushed, never polled per viewer: a local commit refreshes the tail at once,
and on PostgreSQL a commit on any replica NOTIFYs the others (sent inside the commit
transaction, so only committed work wakes anyone). A lost notification costs latency,
never an event: every watched surface is re-read every `safety_seconds` and after the
LISTEN connection reconnects.

Waking costs the replica per reply, not per envelope, so the subscribers of a surface many watch are
woken at most once per wake interval (a change after a quiet spell at once), a slice at a time, and the
interval stretches while a round of wake-ups takes more than half of it: under a burst each viewer gets
everything new in one reply, and commits, which share the event loop, keep their turn. A surface with
few viewers (a person and their tabs) is woken at once for every change: its replies cost little, and
its person is waiting for each one (the rows of a table, a figure of the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial

import psycopg
import sqlalchemy as sa

from services.host.database import AsyncStore
from services.host.envelopes import positioned
from services.host.store import READ_BATCH, WAKE_CHANNEL, Appended
from shared.rpc.refusals import Refusal, Unavailable
from shared.rpc.wake_rounds import WakeRounds
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.host.fanout")
TAIL_EVENTS = 1_000
COALESCE_VIEWERS = 32  # a surface with more viewers than this is woken at most once per interval (wake_rounds.py)
RECONNECT_SECONDS = (0.2, 5.0)  # first and longest pause before the LISTEN connection is opened again
LISTEN_CHECK_SECONDS = 5.0  # a LISTEN connection that does not answer a trivial query this fast is reopened


@dataclass
class _Surface:
    epoch: int
    last: int  # the last journal sequence this replica has read
    rounds: WakeRounds  # how its subscribers are woken
    # (epoch, sequence, response) of the latest envelopes, consecutive sequences of one epoch
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_EVENTS))
    # Batched responses by (epoch, first sequence, last sequence): viewers at the same position share one.
    groups: dict = field(default_factory=dict)
    changes: int = 0  # how often subscribers were woken: one that saw this number change missed no wake-up
    waiters: list = field(default_factory=list)  # futures of the subscribers waiting for the next wake-up
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    viewers: int = 0


class SurfaceFanout:
    def __init__(self, db: AsyncStore, retention: int, listen_url: str | None = None,
                 safety_seconds: float = 5.0, wake_interval: float = 0.0,
                 coalesce_viewers: int = COALESCE_VIEWERS) -> None:
        self._db = db
        self._retention = retention
        self._safety_seconds = safety_seconds
        self._wake_interval = wake_interval
        self._coalesce_viewers = coalesce_viewers
        self._listen_url = listen_url  # PostgreSQL: wake-ups from other replicas
        self._surfaces: dict[str, _Surface] = {}
        self._scheduled: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self.listening = False

    # --- what the servicer calls ------------------------------------------------

    async def watch(self, surface_id: str) -> tuple[int, int]:
        """Start watching for one more subscriber; return the journal's (epoch, last sequence)."""
        state = self._surfaces.get(surface_id)
        if state is None:
            epoch, last = await self._db(self._db.store.position, surface_id)
            state = self._surfaces.setdefault(surface_id, _Surface(
                epoch, last, WakeRounds(self._wake_interval, self._coalesce_viewers)))
        state.viewers += 1
        try:
            await self.refresh(surface_id)
        except BaseException:
            self.unwatch(surface_id)
            raise
        return state.epoch, state.last

    def watched(self, surface_id: str) -> bool:
        """Someone on this replica is subscribed to the surface."""
        state = self._surfaces.get(surface_id)
        return state is not None and state.viewers > 0

    def unwatch(self, surface_id: str) -> None:
        state = self._surfaces[surface_id]
        state.viewers -= 1
        if not state.viewers:  # the last viewer left: forget the surface's tail
            del self._surfaces[surface_id]
            state.rounds.cancel()

    async def published(self, surface_id: str, appended: Appended) -> None:
        """This replica appended to the journal: compact past retention, then wake local subscribers.

        If the tail ends right before what was appended, it joins the tail without reading the journal
        back (the usual case: one writer at a time)."""
        if appended.last >= self._retention:
            await self._db(self._db.store.compact, surface_id, self._retention)
        elif await self._extend(surface_id, appended):
            return
        await self.refresh(surface_id)

    async def _extend(self, surface_id: str, appended: Appended) -> bool:
        """Append committed envelopes that follow the tail directly; False when they do not follow it."""
        state = self._surfaces.get(surface_id)
        if state is None:
            return True  # nobody watches it here
        after = appended.last - len(appended.entries)
        async with state.lock:
            if state.epoch == appended.epoch and state.last >= appended.last:
                return True  # a read of the journal has already brought them
            if (state.epoch, state.last) != (appended.epoch, after):
                return False  # another commit came between: read the journal in order
            for entry in appended.entries:
                envelope = positioned(entry)
                state.tail.append((envelope.epoch, envelope.sequence, host_pb2.SubscribeResponse(envelope=envelope)))
                state.last = envelope.sequence
        self._wake(state)
        return True

    async def stream(self, surface_id: str, epoch: int, after: int,
                     max_envelopes: int = 1) -> AsyncIterator[host_pb2.SubscribeResponse]:
        """Every envelope after (epoch, after), in order, once; `snapshot-required` when the epoch moves on.

        With `max_envelopes` > 1, a subscriber that is behind gets up to that many envelopes per response
        (the first in `envelope`, the rest in `following`): under load a response costs the replica far
        more than an envelope, so a slow subscriber catches up in fewer of them.
        The caller has watched the surface and unwatches it when the stream ends.
        """
        state = self._surfaces[surface_id]
        while True:
            seen = state.changes  # taken first: a wake-up during the reads below is not missed
            if epoch != state.epoch:  # the journal was compacted under us
                yield snapshot_required(surface_id, state.epoch, "the journal moved to a new epoch")
                epoch, after = state.epoch, 0
                continue
            batch = await self._batch(surface_id, state, epoch, after)
            if max_envelopes > 1 and len(batch) > 1:
                for start in range(0, len(batch), max_envelopes):
                    group = batch[start:start + max_envelopes]
                    after = group[-1].envelope.sequence
                    yield self._group(state, group)
            else:
                for response in batch:
                    after = response.envelope.sequence
                    yield response
            if not batch or (state.rounds.due_at is not None and len(batch) < READ_BATCH):
                # Nothing new, or more is due at the end of the wake interval: take it then, in one reply. A
                # viewer that kept pulling would send a reply per change however busy the replica is. (One
                # reading the journal itself, far behind, reads on at once.)
                await self._next_wake(state, seen)

    @staticmethod
    def _group(state: _Surface, group: list) -> host_pb2.SubscribeResponse:
        """One response for consecutive envelopes, built once for every viewer at the same position."""
        first, last = group[0].envelope, group[-1].envelope
        key = (first.epoch, first.sequence, last.sequence)
        response = state.groups.get(key)
        if response is None:
            if len(state.groups) >= TAIL_EVENTS:  # positions long passed: start over
                state.groups.clear()
            response = state.groups[key] = host_pb2.SubscribeResponse(
                envelope=first, following=[r.envelope for r in group[1:]])
        return response

    async def _batch(self, surface_id: str, state: _Surface, epoch: int, after: int) -> list:
        tail = state.tail
        if tail and tail[0][0] == epoch and tail[0][1] <= after + 1:
            # Sequences in the tail are consecutive: where `after` ends is known without a scan.
            return [response for _, _, response in itertools.islice(tail, after + 1 - tail[0][1], None)]
        if after >= state.last:
            return []
        # Behind the tail (a resumed cursor, a slow reader): this viewer reads the journal itself.
        return [host_pb2.SubscribeResponse(envelope=positioned(entry))
                for entry in await self._db(self._db.store.events_after, surface_id, epoch, after)]

    # --- keeping tails current ---------------------------------------------------

    async def refresh(self, surface_id: str) -> None:
        """Read a watched surface's new journal entries once into its tail and wake its subscribers."""
        state = self._surfaces.get(surface_id)
        if state is None:
            return  # nobody watches it here
        async with state.lock:
            moved = False
            while True:
                rows = await self._db(self._db.store.events_since, surface_id, state.epoch, state.last)
                for entry in rows:
                    envelope = positioned(entry)
                    if envelope.epoch != state.epoch:  # compacted: the new epoch starts with a snapshot
                        state.tail.clear()
                        state.groups.clear()
                        state.epoch = envelope.epoch
                    state.tail.append((envelope.epoch, envelope.sequence,
                                       host_pb2.SubscribeResponse(envelope=envelope)))
                    state.last = envelope.sequence
                moved = moved or bool(rows)
                if len(rows) < READ_BATCH:
                    break
        if moved:
            self._wake(state)

    def _wake(self, state: _Surface) -> None:
        """Wake the surface's subscribers (at once, or once per wake interval when many watch: wake_rounds.py).
        Under a burst every viewer wakes at most once per interval and takes everything new in one reply (when
        it asked for batches), which costs the replica per reply rather than per envelope (§6)."""
        state.rounds.wake(state.viewers, partial(self._wake_now, state))

    @staticmethod
    async def _next_wake(state: _Surface, seen: int) -> None:
        if state.changes != seen:
            return  # woken while it was reading or sending
        waiter = asyncio.get_running_loop().create_future()
        state.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            with contextlib.suppress(ValueError):  # not there if a wake-up took the list meanwhile
                state.waiters.remove(waiter)  # the stream ended: no dead futures pile up on a quiet surface
            raise

    @staticmethod
    def _wake_now(state: _Surface) -> None:
        state.rounds.begin()
        state.changes += 1
        waiters, state.waiters = state.waiters, []
        state.rounds.release(waiters, _resolve)

    def notified(self, payload: str) -> None:
        """A wake-up: "<surface_id> <epoch> <sequence> <replica>". Unknown surfaces are ignored, and so are
        this replica's own (its commits reach its tails directly; the safety re-read covers a failure)."""
        surface_id, epoch, sequence, replica = (payload.split(" ") + ["", "", ""])[:4]
        state = self._surfaces.get(surface_id)
        if state is None or replica == self._db.store.replica:
            return
        try:
            epoch, sequence = int(epoch), int(sequence)
        except ValueError:
            epoch, sequence = state.epoch + 1, 0  # unreadable position: read the journal to be sure
        if (epoch, sequence) > (state.epoch, state.last):
            self._schedule(surface_id)

    def _schedule(self, surface_id: str) -> None:
        """One refresh per surface at a time; notifications arriving meanwhile schedule one more."""
        if surface_id in self._scheduled:
            return
        self._scheduled.add(surface_id)

        async def run() -> None:
            self._scheduled.discard(surface_id)
            try:
                await self.refresh(surface_id)
            except Unavailable:  # the outage is logged where it was noticed; the safety re-read catches up later
                pass
            except (Refusal, sa.exc.SQLAlchemyError) as exc:
                logger.warning("surface refresh failed: %s", exc)

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _refresh_all(self) -> None:
        for surface_id in list(self._surfaces):
            self._schedule(surface_id)

    # --- background work -----------------------------------------------------

    async def safety_reads(self) -> None:
        """Check every watched surface now and then: a lost wake-up costs latency, never an event."""
        while True:
            await asyncio.sleep(self._safety_seconds)
            try:
                await self._check_positions()
            except Unavailable:  # the database is away (logged once, where noticed): next round
                pass
            except (Refusal, sa.exc.SQLAlchemyError) as exc:
                logger.warning("surface safety re-read failed: %s", exc)

    async def _check_positions(self) -> None:
        """One query per 500 watched surfaces; only those that moved are read."""
        watched = list(self._surfaces)
        for start in range(0, len(watched), 500):
            positions = await self._db(self._db.store.positions, watched[start:start + 500])
            for surface_id, position in positions.items():
                state = self._surfaces.get(surface_id)
                if state is not None and position != (state.epoch, state.last):
                    self._schedule(surface_id)

    async def listen(self) -> None:
        """PostgreSQL only: hold a LISTEN connection, reopened whenever it fails."""
        pause = RECONNECT_SECONDS[0]
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._listen_url, autocommit=True,
                                                                 connect_timeout=5) as connection:
                    await connection.execute(f"LISTEN {WAKE_CHANNEL}")
                    self.listening, pause = True, RECONNECT_SECONDS[0]
                    self._refresh_all()  # whatever was committed while nobody listened
                    while True:
                        async for notification in connection.notifies(timeout=self._safety_seconds):
                            self.notified(notification.payload)
                        # A quiet spell: is the connection still there? Through a path that froze, it would
                        # wait for notifications forever while TCP (or a relay) sees nothing wrong.
                        await asyncio.wait_for(connection.execute("SELECT 1"), LISTEN_CHECK_SECONDS)
            except (psycopg.Error, OSError, TimeoutError) as exc:
                logger.warning("surface wake-ups: the LISTEN connection failed: %s",
                               (str(exc).splitlines() or [type(exc).__name__])[0][:200])
            finally:
                self.listening = False
            await asyncio.sleep(pause)
            pause = min(pause * 2, RECONNECT_SECONDS[1])

    async def listener_ready(self) -> str | None:
        """Readiness: without its LISTEN connection a replica would hear other replicas only slowly."""
        if self._listen_url is None or self.listening:
            return None
        return "surface wake-ups: the LISTEN connection to the host database is not open"


def _resolve(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def listen_url(database_url: str) -> str | None:
    """The libpq URL of a PostgreSQL database (None for SQLite: one process, in-process wake-ups)."""
    url = sa.make_url(database_url)
    if url.get_backend_name() != "postgresql":
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def snapshot_required(surface_id: str, epoch: int, reason: str) -> host_pb2.SubscribeResponse:
    """Tells the client to drop its state: a full snapshot of `epoch` follows."""
    return host_pb2.SubscribeResponse(envelope=host_pb2.SurfaceEnvelope(
        surface_id=surface_id, epoch=epoch, sequence=0,
        snapshot_required=host_pb2.SnapshotRequired(reason=reason, epoch=epoch)))
