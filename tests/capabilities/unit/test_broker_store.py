"""The broker's database on SQLite and PostgreSQL: migrations, single-use decisions under concurrency,
replayed claims, the append-only audit trail, expiry, and the outbox."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from services.capabilities import store as broker_store
from services.capabilities.store import BrokerStore, engine_for, migrate
from shared.rpc.refusals import Conflict, Refusal
from tessera.common.v1 import common_pb2
from tests.fixtures.postgres import BACKENDS, migrated_engine
from tests.fixtures.race import race
from tests.fixtures.signing import verified_signature
from tests.fixtures.waiting import wait_until


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with migrated_engine(request, tmp_path, "broker", broker_store) as engine:
        yield BrokerStore(engine)


def _fields(**overrides):
    return {"tenant_id": "acme", "actor_id": "alice", "session_id": "ses_1", "action_id": "orders.flag_for_review",
            "effect": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE, "input_json": "{}", "arguments_json": "{}",
            "arguments_sha256": "a" * 64, "surface": None, "dry_run": False, **overrides}


def _decide(store, intent, approve=True, sha="a" * 64, tenant="acme", actor="alice"):
    return store.decide(intent.approval_id, tenant, actor, approve, "ok", sha, ["e1"],
                        signature=verified_signature(store, intent.approval_id, tenant, actor))


def test_a_claim_is_recorded_once_and_replays_the_original(store):
    first, replayed = store.create("claim-1", _fields(), 600, "reversible-write")
    again, replayed_again = store.create("claim-1", _fields(), 600, "reversible-write")
    assert not replayed and replayed_again and again.intent_id == first.intent_id
    assert first.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL and first.approval_id


def test_concurrent_decisions_on_one_approval_let_exactly_one_through(store):
    intent, _ = store.create("claim-2", _fields(), 600, "reversible-write")

    def decide(_):
        try:
            _decide(store, intent)
            return "decided"
        except Refusal as exc:
            return exc.reason

    outcomes = race(8, decide)
    assert sorted(outcomes) == ["APPROVAL_ALREADY_DECIDED"] * 7 + ["decided"]
    assert store.intent(intent.intent_id).status == common_pb2.INTENT_STATUS_RUNNING


def test_refusals_change_nothing(store):
    intent, _ = store.create("claim-3", _fields(), 600, "reversible-write")
    with pytest.raises(Refusal) as changed:
        _decide(store, intent, sha="b" * 64)
    assert changed.value.reason == "ARGUMENTS_CHANGED" and isinstance(changed.value, Conflict)
    for tenant, actor in (("other", "alice"), ("acme", "bob")):  # another tenant, or a colleague
        with pytest.raises(Refusal) as foreign:
            _decide(store, intent, tenant=tenant, actor=actor)
        assert foreign.value.reason == "APPROVAL_UNKNOWN"
    assert store.approval(intent.approval_id)[0].state == "pending"


def test_expiry_is_rejection_and_is_recorded_even_when_a_late_decision_finds_it(store):
    swept, _ = store.create("claim-4", _fields(), 0.05, "reversible-write")
    found_late, _ = store.create("claim-4b", _fields(), 0.05, "reversible-write")
    due = max(store.approval(i.approval_id)[0].expires_at for i in (swept, found_late))
    wait_until(lambda: time.time() >= due, 30, what="both approvals' expiry time passing")  # the store's clock
    with pytest.raises(Refusal) as late:  # the decision comes before the sweeper
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


def test_a_request_of_a_cancelled_turn_is_refused_and_one_made_before_the_cancel_replays(store):
    """A model's call still in flight when its turn is cancelled must not leave a request waiting for a
    person: the cancel marks the turn, and the call's create finds the mark in its own transaction."""
    turn = {"turn_id": "trn_1"}
    before, _ = store.create("claim-before", _fields(**turn), 600, "mutate")
    (cancelled,) = store.cancel_turn("acme", "alice", "ses_1", "trn_1")
    assert cancelled.intent_id == before.intent_id and cancelled.status == common_pb2.INTENT_STATUS_CANCELLED
    with pytest.raises(Conflict) as late:
        store.create("claim-late", _fields(**turn), 600, "mutate")
    assert late.value.reason == "TURN_CANCELLED"
    assert store.by_claim("claim-late") is None  # nothing recorded, nothing waiting
    replayed, was_replay = store.create("claim-before", _fields(**turn), 600, "mutate")
    assert was_replay and replayed.intent_id == before.intent_id
    assert store.cancel_turn("acme", "alice", "ses_1", "trn_1") == []  # cancelling again: nothing more
    # Only that turn of that person: another turn, or another person's turn of the same id, goes on.
    other_turn, _ = store.create("claim-other", _fields(turn_id="trn_2"), 600, "mutate")
    colleague, _ = store.create("claim-bob", _fields(actor_id="bob", **turn), 600, "mutate")
    assert {other_turn.status, colleague.status} == {common_pb2.INTENT_STATUS_AWAITING_APPROVAL}


def test_the_audit_trail_is_append_only(store):
    intent, _ = store.create("claim-5", _fields(), 600, "reversible-write")
    _decide(store, intent, approve=False)
    kinds = [row.kind for row in store.audit_after("acme", 0)]
    assert kinds == ["intent-accepted", "approval-requested", "approval-rejected"]
    for statement in ("UPDATE audit_events SET kind = 'x'", "DELETE FROM audit_events"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), store.writer.begin() as connection:
            connection.execute(sa.text(statement))
    assert [row.kind for row in store.audit_after("acme", 0)] == kinds


# --- decision ids: a retried decision is answered with the recorded one --------------------------------------

def _decide_as(store, intent, decision_id, approve=True, digest="d" * 64, actor="alice"):
    return store.decide(intent.approval_id, "acme", actor, approve, "ok", "a" * 64, ["e1"],
                        decision_id, digest, verified_signature(store, intent.approval_id, actor=actor))


def test_a_retry_with_the_decision_id_gets_the_recorded_decision_and_records_nothing_new(store):
    intent, _ = store.create("claim-7", _fields(), 600, "reversible-write")
    first_intent, first, replayed = _decide_as(store, intent, "web-1")
    assert not replayed and first.decision_id == "web-1" and first.state == "approved"
    again_intent, again, replayed_again = _decide_as(store, intent, "web-1")
    assert replayed_again and again == first and again_intent == first_intent  # the same record, unchanged
    kinds = [row.kind for row in store.audit_after("acme", 0) if row.intent_id == intent.intent_id]
    assert kinds.count("approval-approved") == 1


def test_a_reused_decision_id_with_other_content_is_a_conflict_never_a_replay(store):
    intent, _ = store.create("claim-8", _fields(), 600, "reversible-write")
    _decide_as(store, intent, "cli-1", approve=False, digest="r" * 64)
    with pytest.raises(Refusal) as conflict:
        _decide_as(store, intent, "cli-1", approve=True, digest="x" * 64)
    assert isinstance(conflict.value, Conflict) and conflict.value.reason == "DECISION_ID_CONFLICT"
    assert conflict.value.metadata["approval_state"] == "rejected"
    assert store.intent(intent.intent_id).status == common_pb2.INTENT_STATUS_REJECTED


def test_another_decision_on_a_decided_approval_learns_how_it_ended(store):
    intent, _ = store.create("claim-9", _fields(), 600, "reversible-write")
    _decide_as(store, intent, "web-2")
    for other in ("web-3", ""):  # another click (or a caller that sends no id)
        with pytest.raises(Refusal) as decided:
            _decide_as(store, intent, other)
        assert decided.value.reason == "APPROVAL_ALREADY_DECIDED"
        outcome = decided.value.metadata
        assert (outcome["approval_state"], outcome["decision"], outcome["decided_by"], outcome["intent_id"],
                outcome["intent_status"]) == ("approved", "approve", "alice", intent.intent_id,
                                              "INTENT_STATUS_RUNNING")
        assert outcome["decided_at"].endswith("+00:00")


def test_a_refused_decision_leaves_its_id_unused(store):
    intent, _ = store.create("claim-10", _fields(), 600, "reversible-write")
    with pytest.raises(Refusal):
        store.decide(intent.approval_id, "acme", "alice", True, "ok", "b" * 64, ["e1"], "web-4", "d" * 64,
                     verified_signature(store, intent.approval_id))
    assert store.approval(intent.approval_id)[0].decision_id is None  # rolled back with the refusal
    _, decided, replayed = _decide_as(store, intent, "web-4", digest="e" * 64)
    assert not replayed and decided.decision_digest == "e" * 64


def test_concurrent_retries_of_one_decision_decide_once_and_all_see_it(store):
    intent, _ = store.create("claim-11", _fields(), 600, "reversible-write")

    def retry(_):
        _, approval, replayed = _decide_as(store, intent, "web-5")
        return replayed, approval.decision_id

    outcomes = race(8, retry)
    assert sorted(outcomes) == [(False, "web-5")] + [(True, "web-5")] * 7
    kinds = [row.kind for row in store.audit_after("acme", 0) if row.intent_id == intent.intent_id]
    assert kinds.count("approval-approved") == 1


def test_approvals_decided_before_the_migration_keep_working(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'old.sqlite'}")
    migrate(engine, "0003")
    with engine.begin() as connection:  # decided by a broker that knew no decision ids (nor leases)
        connection.execute(sa.text(
            "INSERT INTO intents (intent_id, claim, tenant_id, actor_id, session_id, action_id, effect, input_json,"
            " arguments_json, arguments_sha256, status, approval_id, dry_run, accepted_at, updated_at) VALUES"
            " ('int_old', 'claim-old', 'acme', 'alice', 'ses_1', 'orders.flag_for_review', 2, '{}', '{}', :sha,"
            " :running, 'apr_old', false, 1, 1)"), {"sha": "a" * 64, "running": common_pb2.INTENT_STATUS_RUNNING})
        connection.execute(sa.text(
            "INSERT INTO approvals (approval_id, intent_id, tenant_id, state, requested_at, expires_at, decided_by)"
            " VALUES ('apr_old', 'int_old', 'acme', 'approved', 1, 601, 'alice')"))
    migrate(engine)
    store = BrokerStore(engine)
    intent = store.intent("int_old")
    with pytest.raises(Refusal) as decided:
        _decide_as(store, intent, "web-6")
    assert decided.value.reason == "APPROVAL_ALREADY_DECIDED"
    # Running with no lease (approved before leases existed): up for taking, by exactly one claim.
    assert [i.intent_id for i in store.take_up()] == ["int_old"] and store.take_up() == []
    engine.dispose()
