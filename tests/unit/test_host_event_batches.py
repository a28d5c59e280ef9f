"""The broker's intent events, appended in batches per surface: once per event id, each with its own cursor, on
SQLite and PostgreSQL; a failed batch fails each of its callers and the next batch goes on."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from services.host.database import AsyncStore
from services.host.envelopes import envelope_builder
from services.host.event_batches import EventBatches
from services.host.store import HostStore, engine_for, migrate
from shared.errors import TesseraError
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.fixtures.postgres import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    engine = engine_for(database_url(request, tmp_path, "host_event_batches"))
    migrate(engine)
    yield HostStore(engine)
    engine.dispose()


class CountingStore:
    """The real store, counting the transactions that publish events."""

    def __init__(self, store: HostStore, fail_first: int = 0) -> None:
        self._store, self.transactions, self.fail_first = store, 0, fail_first

    def publish_events(self, *args):
        self.transactions += 1
        if self.transactions <= self.fail_first:
            raise TesseraError(grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE", "the host database is away")
        return self._store.publish_events(*args)


def _build(intent_id: str):
    status = host_pb2.ActionStatus(intent_id=intent_id, status=common_pb2.INTENT_STATUS_RUNNING)
    return envelope_builder("srf_1", "action_status", status, f'{{"intent_id": "{intent_id}"}}')


def _batches(store, fail_first: int = 0):
    counting = CountingStore(store, fail_first)
    pool = ThreadPoolExecutor(max_workers=4)
    fanout = _RecordingFanout()
    return EventBatches(AsyncStore(counting, pool), fanout), counting, fanout, pool


class _RecordingFanout:
    def __init__(self) -> None:
        self.appended: list = []

    async def published(self, surface_id, appended) -> None:
        self.appended.append(appended)


def _cursor(reply: bytes) -> tuple[int, int]:
    cursor = host_pb2.PublishIntentEventResponse.FromString(reply).cursor
    return cursor.epoch, cursor.sequence


def _journal(store: HostStore) -> dict[str, int]:
    """intent id → journal sequence of every event on the surface."""
    envelopes = [host_pb2.SurfaceEnvelope.FromString(data) for data in store.events_after("srf_1", 1, 0)]
    return {e.action_status.intent_id: e.sequence for e in envelopes}


def test_concurrent_events_share_transactions_and_each_gets_its_own_cursor(store):
    async def scenario():
        batches, counting, fanout, pool = _batches(store)
        try:
            replies = await asyncio.gather(*(
                batches.publish("ses_1", "srf_1", f"event:e{n}", "hash", _build(f"e{n}")) for n in range(40)))
        finally:
            pool.shutdown()
        journal = _journal(store)
        assert sorted(journal.values()) == list(range(1, 41))  # each once, no gap
        assert [_cursor(r) for r in replies] == [(1, journal[f"e{n}"]) for n in range(40)]
        assert counting.transactions < 40  # what waited went in together
        # The fan-out heard every batch, in journal order.
        assert [a.last for a in fanout.appended] == sorted(a.last for a in fanout.appended)
        assert sum(len(a.envelopes) for a in fanout.appended) == 40

    asyncio.run(scenario())


def test_an_event_id_sent_again_is_published_once(store):
    async def scenario():
        batches, counting, fanout, pool = _batches(store)
        try:
            first = await batches.publish("ses_1", "srf_1", "event:x", "hash", _build("x"))
            # Resent in one batch with other events, and resent later on its own: the first cursor each time.
            replies = await asyncio.gather(*(
                batches.publish("ses_1", "srf_1", key, "hash", _build(key[6:]))
                for key in ("event:x", "event:y", "event:x", "event:y", "event:z")))
            again = await batches.publish("ses_1", "srf_1", "event:y", "hash", _build("y"))
        finally:
            pool.shutdown()
        journal = _journal(store)
        assert journal == {"x": 1, "y": 2, "z": 3}
        assert [_cursor(r) for r in (first, *replies, again)] == [(1, 1), (1, 1), (1, 2), (1, 1), (1, 2), (1, 3),
                                                                   (1, 2)]
        assert sum(len(a.envelopes) for a in fanout.appended) == 3

    asyncio.run(scenario())


def test_a_failed_batch_fails_each_caller_and_the_next_batch_goes_on(store):
    async def scenario():
        batches, counting, fanout, pool = _batches(store, fail_first=1)
        try:
            outcomes = await asyncio.gather(*(
                batches.publish("ses_1", "srf_1", f"event:f{n}", "hash", _build(f"f{n}")) for n in range(5)),
                return_exceptions=True)
            retried = await batches.publish("ses_1", "srf_1", "event:f0", "hash", _build("f0"))
        finally:
            pool.shutdown()
        failed = [o for o in outcomes if isinstance(o, TesseraError)]
        assert failed and all(o.reason == "DATABASE_UNAVAILABLE" for o in failed)
        assert _cursor(retried) == (1, _journal(store)["f0"])  # nothing of the failed batch was written twice
        assert len(_journal(store)) == 5 - len(failed) + 1

    asyncio.run(scenario())


def test_a_caller_that_leaves_does_not_stop_the_write(store):
    async def scenario():
        batches, counting, fanout, pool = _batches(store)
        try:
            caller = asyncio.create_task(batches.publish("ses_1", "srf_1", "event:gone", "hash", _build("gone")))
            await asyncio.sleep(0)  # it has queued its event
            caller.cancel()
            # The broker resends: the same cursor as the write the first caller started.
            reply = await batches.publish("ses_1", "srf_1", "event:gone", "hash", _build("gone"))
        finally:
            pool.shutdown()
        assert _journal(store) == {"gone": 1}
        assert _cursor(reply) == (1, 1)

    asyncio.run(scenario())
