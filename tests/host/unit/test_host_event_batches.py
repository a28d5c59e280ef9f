"""The broker's intent events, appended in batches per surface: once per event id, each with its own cursor, on
SQLite and PostgreSQL; a failed batch fails each of its callers and the next batch goes on."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from services.host import store as host_store
from services.host.database import AsyncStore
from services.host.envelopes import journal_entry, positioned
from services.host.event_batches import EventBatches
from services.host.store import HostStore, Position
from shared.rpc.refusals import Refusal, Unavailable
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.fixtures.postgres import BACKENDS, migrated_engine
from tests.fixtures.waiting import wait_until_async


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with migrated_engine(request, tmp_path, "host_event_batches", host_store) as engine:
        yield HostStore(engine)


class CountingStore:
    """The real store, counting the transactions that publish events; the first `fail_first` fail, and
    each waits for `proceed` (when given) after saying it has `entered`."""

    def __init__(self, store: HostStore, fail_first: int = 0, proceed: threading.Event | None = None) -> None:
        self._store, self.transactions, self.fail_first = store, 0, fail_first
        self.entered, self.proceed = threading.Event(), proceed

    def publish_events(self, *args):
        self.transactions += 1
        self.entered.set()
        if self.proceed is not None:
            assert self.proceed.wait(10)
        if self.transactions <= self.fail_first:
            raise Unavailable("DATABASE_UNAVAILABLE", "the host database is away")
        return self._store.publish_events(*args)


def _build(intent_id: str):
    status = host_pb2.ActionStatus(intent_id=intent_id, status=common_pb2.INTENT_STATUS_RUNNING)
    return journal_entry("srf_1", "action_status", status, f'{{"intent_id": "{intent_id}"}}')


def _batches(store, fail_first: int = 0, proceed: threading.Event | None = None):
    counting = CountingStore(store, fail_first, proceed)
    pool = ThreadPoolExecutor(max_workers=4)
    fanout = _RecordingFanout()
    return EventBatches(AsyncStore(counting, pool), fanout), counting, fanout, pool


class _RecordingFanout:
    def __init__(self) -> None:
        self.appended: list = []

    async def published(self, surface_id, appended) -> None:
        self.appended.append(appended)


def _cursor(place: Position) -> tuple[int, int]:
    return place.epoch, place.sequence


def _journal(store: HostStore) -> dict[str, int]:
    """intent id → journal sequence of every event on the surface."""
    envelopes = [positioned(entry) for entry in store.events_after("srf_1", 1, 0)]
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
        assert sum(len(a.entries) for a in fanout.appended) == 40

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
        assert sum(len(a.entries) for a in fanout.appended) == 3

    asyncio.run(scenario())


def test_a_failed_batch_fails_each_caller_and_the_next_batch_goes_on(store):
    async def scenario():
        proceed = threading.Event()
        batches, counting, fanout, pool = _batches(store, fail_first=1, proceed=proceed)
        loop = asyncio.get_running_loop()
        try:
            failing = [asyncio.ensure_future(batches.publish("ses_1", "srf_1", f"event:f{n}", "hash", _build(f"f{n}")))
                       for n in range(3)]
            await loop.run_in_executor(None, counting.entered.wait, 10)  # the first batch is being written
            queued = [asyncio.ensure_future(batches.publish("ses_1", "srf_1", f"event:q{n}", "hash", _build(f"q{n}")))
                      for n in range(2)]
            await asyncio.sleep(0)
            proceed.set()  # the first transaction fails; the events queued behind it still go in
            outcomes = await asyncio.gather(*failing, return_exceptions=True)
            replies = await asyncio.gather(*queued)
            retried = await batches.publish("ses_1", "srf_1", "event:f0", "hash", _build("f0"))
        finally:
            pool.shutdown()
        assert all(isinstance(o, Refusal) and o.reason == "DATABASE_UNAVAILABLE" for o in outcomes)
        journal = _journal(store)
        assert [_cursor(r) for r in replies] == [(1, journal["q0"]), (1, journal["q1"])]
        assert _cursor(retried) == (1, journal["f0"])
        assert sorted(journal) == ["f0", "q0", "q1"]  # nothing of the failed batch was written
        assert counting.transactions == 3

    asyncio.run(scenario())


def test_a_caller_that_leaves_does_not_stop_the_write(store):
    async def scenario():
        proceed = threading.Event()
        batches, counting, fanout, pool = _batches(store, proceed=proceed)
        loop = asyncio.get_running_loop()
        try:
            caller = asyncio.ensure_future(batches.publish("ses_1", "srf_1", "event:gone", "hash", _build("gone")))
            await loop.run_in_executor(None, counting.entered.wait, 10)  # its write is under way
            caller.cancel()
            proceed.set()
            await wait_until_async(lambda: not batches._writers, what="the abandoned write finishing")
            assert _journal(store) == {"gone": 1}  # written although nobody waits for it,
            assert [len(a.entries) for a in fanout.appended] == [1]  # and its viewers were woken
            # The broker resends: the cursor of the write the first caller started, and no second event.
            reply = await batches.publish("ses_1", "srf_1", "event:gone", "hash", _build("gone"))
        finally:
            pool.shutdown()
        assert _journal(store) == {"gone": 1}
        assert _cursor(reply) == (1, 1)
        assert caller.cancelled()

    asyncio.run(scenario())
