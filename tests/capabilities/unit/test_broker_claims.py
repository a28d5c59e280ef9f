"""Claims between broker replicas on one database, raced on threads: leases on running intents, the
take-up of orphans, expiry, and the outbox turn (PostgreSQL; SQLite where one process is the design)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from services.capabilities import store as broker_store
from services.capabilities.broker import Broker
from services.capabilities.database import BrokerDatabase
from services.capabilities.publisher import HostPublisher
from services.capabilities.store import BrokerStore, Surface, engine_for, migrate
from shared.rpc.refusals import Conflict
from tessera.common.v1 import common_pb2
from tests.fixtures.postgres import BACKENDS, migrated_engine, postgres_database
from tests.fixtures.race import race
from tests.fixtures.signing import verified_signature
from tests.fixtures.waiting import wait_until_async

REPLICAS = 4


@pytest.fixture(params=BACKENDS)
def engine(request, tmp_path):
    with migrated_engine(request, tmp_path, "claims", broker_store) as engine:
        yield engine


@pytest.fixture
def pg_engine(request):
    engine = engine_for(postgres_database(request, "tessera_claims"))
    migrate(engine)
    yield engine
    engine.dispose()


def _fields(surface: str = "", **overrides):
    ref = Surface(surface_id=surface, node_id="n1") if surface else None
    return {"tenant_id": "acme", "actor_id": "alice", "session_id": "ses_1", "action_id": "orders.flag_for_review",
            "effect": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE, "input_json": "{}", "arguments_json": "{}",
            "arguments_sha256": "a" * 64, "surface": ref, "dry_run": False, **overrides}


def _approved(store: BrokerStore, claim: str):
    intent, _ = store.create(claim, _fields(), 600, "reversible-write")
    intent, _, _ = store.decide(intent.approval_id, "acme", "alice", True, "ok", "a" * 64, ["e1"],
                                signature=verified_signature(store, intent.approval_id))
    return intent


def test_a_live_lease_is_never_taken_up_and_an_expired_one_moves_to_exactly_one_replica(engine):
    runner = BrokerStore(engine, lease_seconds=30)
    intent = _approved(runner, "claim-live")
    others = [BrokerStore(engine) for _ in range(REPLICAS)]
    assert race(REPLICAS, lambda i: others[i].take_up()) == [[]] * REPLICAS  # its replica still answers for it
    assert runner.renew(intent.intent_id) and not others[0].renew(intent.intent_id)

    dead = BrokerStore(engine, lease_seconds=-1)  # a replica whose lease has already run out
    orphan = _approved(dead, "claim-orphan")
    taken = race(REPLICAS, lambda i: others[i].take_up())
    winners = [i for i, found in enumerate(taken) if found]
    assert len(winners) == 1 and [t.intent_id for t in taken[winners[0]]] == [orphan.intent_id]
    assert not dead.renew(orphan.intent_id)  # the dead replica, back, learns it no longer runs it
    assert others[winners[0]].renew(orphan.intent_id)
    kinds = [r.kind for r in runner.audit_after("acme", 0) if r.intent_id == orphan.intent_id]
    assert kinds.count("intent-taken-up") == 1


def test_many_orphans_racing_replicas_split_them_each_to_one(engine):
    dead = BrokerStore(engine, lease_seconds=-1)
    orphans = {_approved(dead, f"claim-{n}").intent_id for n in range(12)}
    replicas = [BrokerStore(engine) for _ in range(REPLICAS)]

    def drain(index):
        mine = []
        while found := replicas[index].take_up(limit=3):
            mine += [i.intent_id for i in found]
        return mine

    taken = [intent_id for found in race(REPLICAS, drain) for intent_id in found]
    assert sorted(taken) == sorted(orphans)  # every orphan once: none lost, none twice


def test_a_finished_intent_is_no_longer_renewed_nor_taken_up(engine):
    store = BrokerStore(engine, lease_seconds=-1)
    intent = _approved(store, "claim-done")
    store.finish(intent.intent_id, common_pb2.INTENT_STATUS_SUCCEEDED, "", "d" * 64)
    assert not store.renew(intent.intent_id) and BrokerStore(engine).take_up() == []


def test_racing_expiry_sweeps_expire_each_approval_once(engine):
    store = BrokerStore(engine)
    created = [store.create(f"claim-exp-{n}", _fields(), 600, "reversible-write")[0] for n in range(10)]
    replicas = [BrokerStore(engine) for _ in range(REPLICAS)]
    swept = race(REPLICAS, lambda i: [a.approval_id for a in replicas[i].expire_due(now=10**10)])
    assert sorted(a for found in swept for a in found) == sorted(i.approval_id for i in created)
    expired = [r.approval_id for r in store.audit_after("acme", 0) if r.kind == "approval-expired"]
    assert sorted(expired) == sorted(i.approval_id for i in created)


def test_one_replica_at_a_time_holds_the_outbox_on_postgresql(pg_engine):
    first, second = BrokerStore(pg_engine), BrokerStore(pg_engine)
    turns = race(REPLICAS, lambda _: first.outbox_turn())
    assert sum(turn is not None for turn in turns) == 1
    assert second.outbox_turn() is None
    next(turn for turn in turns if turn is not None).release()
    again = second.outbox_turn()
    assert again is not None
    again.release()


def test_on_sqlite_the_lone_process_always_has_the_outbox(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'broker.sqlite'}")
    migrate(engine)
    store = BrokerStore(engine)
    turn = store.outbox_turn()
    assert turn is not None and store.outbox_turn() is not None
    turn.release()
    engine.dispose()


class _Host:
    """Records every event it is sent, taking a moment per call (so a second drainer would overlap)."""

    def __init__(self):
        self.sent: list[str] = []

    async def PublishIntentEvent(self, request, timeout):  # noqa: N802  (the gRPC method name)
        self.sent.append(request.event_id)
        await asyncio.sleep(0.002)


def test_two_replicas_draining_one_outbox_publish_each_event_once_in_order(pg_engine):
    store = BrokerStore(pg_engine)
    for n in range(40):
        store.create(f"claim-out-{n}", _fields(surface="srf_1"), 600, "reversible-write")
    expected = [row.event_id for row in store.pending_events(limit=1000)]
    host = _Host()
    pools = [ThreadPoolExecutor(2) for _ in range(2)]
    publishers = [HostPublisher(BrokerStore(pg_engine), BrokerDatabase(pool), host) for pool in pools]

    async def drain():
        while store.pending_events():
            await asyncio.gather(*(p.publish_pending() for p in publishers))

    try:
        asyncio.run(asyncio.wait_for(drain(), 60))
    finally:
        for pool in pools:
            pool.shutdown()
    assert host.sent == expected  # each once, in the order they were queued


def test_lease_renewals_go_on_while_every_effect_thread_is_busy(tmp_path):
    """A slow warehouse can hold all of the broker's database threads; renewals have a thread of their own,
    so the lease of a live replica never lapses because of it."""
    engine = engine_for(f"sqlite:///{tmp_path / 'broker.sqlite'}")
    migrate(engine)
    store = BrokerStore(engine, lease_seconds=0.3)
    intent = _approved(store, "claim-busy")
    pool, release = ThreadPoolExecutor(1), threading.Event()
    pool.submit(release.wait, 30)  # the one effect thread, stuck
    broker = Broker(policy=None, store=store, changes=None, pool=pool, approval_ttl=600, dry_run=False, metrics=None,
                    gate=None, signatures=None)

    def lease_until():
        with engine.connect() as connection:
            return connection.exec_driver_sql("SELECT lease_until FROM intents WHERE intent_id = ?",
                                              (intent.intent_id,)).scalar()

    async def hold_for_a_while():
        first = lease_until()
        holding = asyncio.ensure_future(broker.execution.hold_lease(intent.intent_id))
        await wait_until_async(lambda: lease_until() >= first + 3 * store.lease_seconds, 60,
                               what="the lease renewed several times over", detail=lambda: (first, lease_until()))
        holding.cancel()

    try:
        asyncio.run(hold_for_a_while())
    finally:
        release.set()
        pool.shutdown()
        broker.execution.lease_pool.shutdown()
        engine.dispose()


def test_a_request_racing_the_cancel_of_its_turn_never_waits_for_a_person(pg_engine):
    """The agent cancels a turn while a call of it is being recorded on another replica: whichever goes first,
    the request ends refused or cancelled, never awaiting approval (PostgreSQL: two connections racing)."""
    stores = [BrokerStore(pg_engine), BrokerStore(pg_engine)]
    for n in range(20):
        turn = f"trn_race_{n}"

        def step(index, turn=turn, claim=f"claim-race-{n}"):
            if index == 0:
                return stores[0].cancel_turn("acme", "alice", "ses_1", turn)
            try:
                return stores[1].create(claim, _fields(turn_id=turn), 600, "mutate")[0]
            except Conflict as refused:
                return refused.reason

        _, made = race(2, step)
        if made != "TURN_CANCELLED":
            assert stores[0].intent(made.intent_id).status == common_pb2.INTENT_STATUS_CANCELLED, n
