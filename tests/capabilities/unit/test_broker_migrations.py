"""Broker migration 0007 (plain records) upgrades a database that holds data and downgrades to what the older
broker reads, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from services.capabilities.messages import publish_request
from services.capabilities.store import MIGRATIONS, BrokerStore, Surface, engine_for, migrate
from shared.data import db
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.fixtures.postgres import BACKENDS, database_url

_RUNNING = common_pb2.INTENT_STATUS_RUNNING
_OLD_SURFACE = capabilities_pb2.SurfaceRef(surface_id="srf_1", revision_id="rev_1", node_id="flag", command_id="cmd_1")
_QUEUED = host_pb2.PublishIntentEventRequest(session_id="ses_1", surface_id="srf_1", command_id="cmd_1",
                                             node_id="flag", event_id="evt_old",
                                             receipt=common_pb2.Receipt(intent_id="int_old", status=_RUNNING))


def _insert_intent(connection, intent_id: str, surface: bytes | None) -> None:
    connection.execute(sa.text(
        "INSERT INTO intents (intent_id, claim, tenant_id, actor_id, session_id, action_id, effect, input_json,"
        " arguments_json, arguments_sha256, status, approval_id, surface, dry_run, accepted_at, updated_at)"
        " VALUES (:id, :id, 'acme', 'alice', 'ses_1', 'orders.flag_for_review', 2, '{}', '{}', :sha, :status, '',"
        " :surface, false, 1, 1)"), {"id": intent_id, "sha": "a" * 64, "status": _RUNNING, "surface": surface})


@pytest.fixture(params=BACKENDS)
def upgraded(request, tmp_path):
    """A database written by the broker at 0006 (intents with and without a surface, an event still
    queued), then migrated to head."""
    engine = engine_for(database_url(request, tmp_path, "broker_migrations"))
    migrate(engine, "0006")
    with engine.begin() as connection:
        _insert_intent(connection, "int_old", _OLD_SURFACE.SerializeToString())
        _insert_intent(connection, "int_bare", None)
        _insert_intent(connection, "int_no_id", capabilities_pb2.SurfaceRef(node_id="n").SerializeToString())
        connection.execute(sa.text("INSERT INTO outbox (event_id, request, state, attempts) "
                                   "VALUES ('evt_old', :request, 'pending', 0)"),
                           {"request": _QUEUED.SerializeToString()})
    migrate(engine)
    yield BrokerStore(engine)
    engine.dispose()


def test_0007_keeps_surfaces_and_sends_events_queued_before_it_as_they_were(upgraded):
    store = upgraded
    assert store.intent("int_old").surface == Surface("srf_1", "rev_1", "flag", "cmd_1")
    # No surface id: it never had events, and now it has no surface.
    assert store.intent("int_bare").surface is None and store.intent("int_no_id").surface is None
    (queued,) = store.pending_events()
    assert queued.body is None and publish_request(queued) == _QUEUED


def test_events_queued_after_0007_are_the_same_messages_and_downgrade_to_them(upgraded):
    store = upgraded
    fields = {"tenant_id": "acme", "actor_id": "alice", "session_id": "ses_1", "action_id": "orders.flag_for_review",
              "effect": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE, "input_json": "{}", "arguments_json": "{}",
              "arguments_sha256": "b" * 64, "dry_run": False, "surface": Surface("srf_1", "rev_2", "flag", "cmd_2")}
    intent, _ = store.create("claim-new", fields, 600, "reversible-write")
    approval, _ = store.approval(intent.approval_id)
    _, asked = store.pending_events()
    sent = publish_request(asked)
    assert (sent.session_id, sent.surface_id, sent.command_id, sent.node_id, sent.event_id) == (
        "ses_1", "srf_1", "cmd_2", "flag", asked.event_id)
    assert sent.approval_requested.approval_id == intent.approval_id
    assert sent.approval_requested.arguments_sha256 == "b" * 64 and sent.approval_requested.node_id == "flag"
    assert sent.approval_requested.expires_at.ToNanoseconds() == int(approval.expires_at * 1e9)

    db.downgrade(store.engine, MIGRATIONS, "0006")
    with store.engine.connect() as connection:
        requests = dict(connection.execute(sa.text("SELECT event_id, request FROM outbox")).all())
        surfaces = dict(connection.execute(sa.text("SELECT intent_id, surface FROM intents")).all())
    assert host_pb2.PublishIntentEventRequest.FromString(requests[asked.event_id]) == sent
    assert host_pb2.PublishIntentEventRequest.FromString(requests["evt_old"]) == _QUEUED
    assert capabilities_pb2.SurfaceRef.FromString(surfaces["int_old"]) == _OLD_SURFACE
    assert capabilities_pb2.SurfaceRef.FromString(surfaces[intent.intent_id]) == capabilities_pb2.SurfaceRef(
        surface_id="srf_1", revision_id="rev_2", node_id="flag", command_id="cmd_2")
    assert surfaces["int_bare"] is None
