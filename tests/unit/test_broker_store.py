"""The broker's database on SQLite and PostgreSQL: migrations, single-use decisions under concurrency,
replayed claims, the append-only audit trail, expiry, and the outbox."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
import sqlalchemy as sa

from services.capabilities.store import BrokerStore, engine_for, migrate
from shared.errors import TesseraError
from tessera.common.v1 import common_pb2
from tests.fixtures.postgres import postgres_database


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'broker.sqlite'}"
    else:
        url = postgres_database(request, "tessera_broker")
    engine = engine_for(url)
    migrate(engine)
    yield BrokerStore(engine)
    engine.dispose()


def _fields(**overrides):
    return {"tenant_id": "acme", "actor_id": "alice", "session_id": "ses_1", "action_id": "orders.flag_for_review",
            "effect": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE, "input_json": "{}", "arguments_json": "{}",
            "arguments_sha256": "a" * 64, "surface": None, "dry_run": False, **overrides}


def _decide(store, intent, approve=True, sha="a" * 64, tenant="acme", actor="alice"):
    return store.decide(intent.approval_id, tenant, actor, approve, "ok", sha, lambda _: ["e1"])


def test_a_claim_is_recorded_once_and_replays_the_original(store):
    first, replayed = store.create("claim-1", _fields(), 600, "reversible-write")
    again, replayed_again = store.create("claim-1", _fields(), 600, "reversible-write")
    assert not replayed and replayed_again and again.intent_id == first.intent_id
    assert first.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL and first.approval_id


def test_concurrent_decisions_on_one_approval_let_exactly_one_through(store):
    intent, _ = store.create("claim-2", _fields(), 600, "reversible-write")
    outcomes = []

    def decide():
        try:
            _decide(store, intent)
            outcomes.append("decided")
        except TesseraError as exc:
            outcomes.append(exc.reason)

    threads = [threading.Thread(target=decide) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["APPROVAL_ALREADY_DECIDED"] * 7 + ["decided"]
    assert store.intent(intent.intent_id).status == common_pb2.INTENT_STATUS_RUNNING


def test_refusals_change_nothing(store):
    intent, _ = store.create("claim-3", _fields(), 600, "reversible-write")
    with pytest.raises(TesseraError) as changed:
        _decide(store, intent, sha="b" * 64)
    assert changed.value.reason == "ARGUMENTS_CHANGED" and changed.value.code == grpc.StatusCode.FAILED_PRECONDITION
    for tenant, actor in (("other", "alice"), ("acme", "bob")):  # another tenant, or a colleague
        with pytest.raises(TesseraError) as foreign:
            _decide(store, intent, tenant=tenant, actor=actor)
        assert foreign.value.reason == "APPROVAL_UNKNOWN"
    assert store.approval(intent.approval_id)[0].state == "pending"


def test_expiry_is_rejection_and_is_recorded_even_when_a_late_decision_finds_it(store):
    swept, _ = store.create("claim-4", _fields(surface=b""), 0.05, "reversible-write")
    found_late, _ = store.create("claim-4b", _fields(surface=b""), 0.05, "reversible-write")
    time.sleep(0.1)
    with pytest.raises(TesseraError) as late:  # the decision comes before the sweeper
        _decide(store, found_late)
    assert late.value.reason == "APPROVAL_EXPIRED"
    assert store.intent(found_late.intent_id).status == common_pb2.INTENT_STATUS_EXPIRED  # committed
    (expired,) = store.expire_due()
    assert expired.approval_id == swept.approval_id
    assert store.intent(swept.intent_id).status == common_pb2.INTENT_STATUS_EXPIRED
    assert [r.kind for r in store.audit_after("acme", 0)].count("approval-expired") == 2


def test_an_intent_that_ended_keeps_its_first_outcome(store):
    intent, _ = store.create("claim-6", _fields(), 600, "reversible-write")
    _decide(store, intent)
    first = store.finish(intent.intent_id, common_pb2.INTENT_STATUS_SUCCEEDED, "", "d" * 64)
    second = store.finish(intent.intent_id, common_pb2.INTENT_STATUS_FAILED, "VERSION_CONFLICT", "")
    assert first.status == second.status == common_pb2.INTENT_STATUS_SUCCEEDED and second.reason == ""


def test_the_audit_trail_is_append_only(store):
    intent, _ = store.create("claim-5", _fields(), 600, "reversible-write")
    _decide(store, intent, approve=False)
    kinds = [row.kind for row in store.audit_after("acme", 0)]
    assert kinds == ["intent-accepted", "approval-requested", "approval-rejected"]
    for statement in ("UPDATE audit_events SET kind = 'x'", "DELETE FROM audit_events"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), store.writer.begin() as connection:
            connection.execute(sa.text(statement))
    assert [row.kind for row in store.audit_after("acme", 0)] == kinds
