"""Host migrations upgrade a database that already holds data, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from services.host.envelopes import journal_entry, positioned
from services.host.store import MIGRATIONS, EventToPublish, HostStore, Position, engine_for, migrate
from shared.data import db
from tessera.host.v1 import host_pb2
from tests.fixtures.postgres import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    return database_url(request, tmp_path, "migrations")


def test_upgrading_a_database_with_data_keeps_it(url):
    engine = engine_for(url)
    migrate(engine, "0003")
    with engine.execution_options(tessera_write=True).begin() as connection:
        connection.execute(sa.text("INSERT INTO sessions VALUES ('ses_1', 'srf_1', 'alice', 'acme', 'r1', 1.0)"))
        connection.execute(sa.text("INSERT INTO turns VALUES ('trn_1', 'ses_1', 'q', 't1', 1.0)"))
        connection.execute(sa.text("INSERT INTO slices (slice_hash, slice_id, turn_id, slice_proto, created_at) "
                                   "VALUES ('h', 's', 'trn_1', :p, 1.0)"), {"p": b"x"})
    migrate(engine)
    migrate(engine)  # idempotent
    store = HostStore(engine)
    assert store.session("ses_1").tenant_id == "acme" and store.turn("trn_1").question == "q"
    assert store.load_slice("trn_1", "h") == (b"x", b"")
    session, created = store.open_session("alice", "evil", "r1")  # the same retry key, another tenant
    assert created and session.session_id != "ses_1"
    engine.dispose()


def _legacy_envelope(epoch: int, sequence: int, revision_id: str, message: dict | None = None) -> bytes:
    """A journal row as the host wrote it before 0005: its place inside the envelope."""
    envelope = host_pb2.SurfaceEnvelope(surface_id="srf_1", epoch=epoch, sequence=sequence, revision_id=revision_id)
    if message is None:
        envelope.rejected.proposal_id = "p0"
    else:
        envelope.a2ui.message_json = json.dumps(message)
    return envelope.SerializeToString()


def _update(path: str, value) -> dict:
    return {"version": "v0.9", "updateDataModel": {"surfaceId": "srf_1", "path": path, "value": value}}


_LEGACY_JOURNAL = [  # (sequence, message); None is a host event (a rejected proposal)
    (1, {"version": "v0.9", "createSurface": {"surfaceId": "srf_1"}}),
    (2, _update("/firstWindows", ["res_1|table|/resource|0"])),
    (3, _update("/state", {"n": 1})),
    (4, _update("/resources/res_1/window", {"rows": [[1]]})),
    (5, None),
    (6, _update("/state", {"n": 2})),
]


def _fill_0004(engine) -> None:
    with engine.execution_options(tessera_write=True).begin() as connection:
        connection.execute(sa.text("INSERT INTO branch_heads VALUES ('srf_1', 'rev_1', 1, 6)"))
        for sequence, message in _LEGACY_JOURNAL:
            connection.execute(sa.text(
                "INSERT INTO surface_events VALUES ('srf_1', 1, :q, 'rev_1', 'h', :e, 1.0)"),
                {"q": sequence, "e": _legacy_envelope(1, sequence, "rev_1", message)})
        reply = host_pb2.PublishIntentEventResponse(cursor=host_pb2.Cursor(epoch=1, sequence=5))
        connection.execute(sa.text("INSERT INTO session_commands VALUES ('ses_1', 'event:evt_1', 'rh', :r, 1.0)"),
                           {"r": reply.SerializeToString()})
        connection.execute(sa.text("INSERT INTO session_commands VALUES ('ses_1', 'cmd_1', 'ch', :r, 1.0)"),
                           {"r": b"done"})


@pytest.fixture
def upgraded(url):
    """A store upgraded from 0004 with a journal and an event reply written by the host of then."""
    engine = engine_for(url)
    migrate(engine, "0004")
    _fill_0004(engine)
    migrate(engine)
    yield HostStore(engine)
    engine.dispose()


def test_0005_keys_old_journal_rows_and_moves_event_replies(upgraded):
    store, engine = upgraded, upgraded.engine
    with engine.connect() as connection:
        keys = connection.execute(sa.text("SELECT snapshot_key FROM surface_events ORDER BY sequence")).scalars()
        assert list(keys) == ["", None, "/state", None, None, "/state"]
    # Old rows read back as they were sent.
    assert [positioned(e).SerializeToString() for e in store.events_after("srf_1", 1, 0)] == [
        _legacy_envelope(1, q, "rev_1", m) for q, m in _LEGACY_JOURNAL]
    # The broker resending the event after the upgrade gets its first place; no second event.
    entry = journal_entry("srf_1", "rejected", host_pb2.Rejected(proposal_id="p0"), "{}")
    places, appended = store.publish_events("ses_1", "srf_1", [EventToPublish("event:evt_1", "rh", entry)])
    assert places == [Position(1, 5)] and appended is None
    assert store.claim_command("ses_1", "cmd_1", "ch", 60).response == b"done"  # commands stay
    # A compaction of old rows keeps the surface and the last state only.
    epoch, last = store.compact("srf_1", 1)
    snapshot = [positioned(e) for e in store.events_after("srf_1", epoch, 0)]
    assert (epoch, last) == (2, 2) and [(e.epoch, e.sequence, e.revision_id) for e in snapshot] == [
        (2, 1, "rev_1"), (2, 2, "rev_1")]
    assert json.loads(snapshot[1].a2ui.message_json)["updateDataModel"]["value"] == {"n": 2}


def test_0005_downgrades_to_what_the_older_host_reads(upgraded):
    store, engine = upgraded, upgraded.engine
    # Written after the upgrade: an envelope without its place, and an event key in its own table.
    entry = journal_entry("srf_1", "rejected", host_pb2.Rejected(proposal_id="p1"), "{}")
    store.publish_events("ses_1", "srf_1", [EventToPublish("event:evt_2", "rh2", entry)])
    db.downgrade(engine, MIGRATIONS, "0004")
    with engine.connect() as connection:
        newest = connection.execute(sa.text("SELECT envelope FROM surface_events WHERE sequence = 7")).scalar()
        replies = dict(connection.execute(sa.text(
            "SELECT command_id, response FROM session_commands WHERE command_id LIKE 'event:%'")).all())
    envelope = host_pb2.SurfaceEnvelope.FromString(newest)
    assert (envelope.epoch, envelope.sequence, envelope.revision_id) == (1, 7, "rev_1")
    assert {key: host_pb2.PublishIntentEventResponse.FromString(r).cursor.sequence
            for key, r in replies.items()} == {"event:evt_1": 5, "event:evt_2": 7}


def test_a_stop_is_answered_by_whether_a_replica_still_reports_the_turn(url):
    """A turn begun before 0007 gains the stop and report columns; a turn no replica names runs nowhere."""
    engine = engine_for(url)
    migrate(engine, "0006")
    with engine.execution_options(tessera_write=True).begin() as connection:
        connection.execute(sa.text("INSERT INTO sessions VALUES ('ses_1', 'srf_1', 'alice', 'acme', 'r1', 1.0)"))
        connection.execute(sa.text("INSERT INTO turns (turn_id, session_id, question, request_id, created_at) "
                                   "VALUES ('trn_old', 'ses_1', 'q', 't1', 1.0)"))
    migrate(engine)
    store = HostStore(engine)
    fresh = store.begin_turn("ses_1", "revenue?", "t2")
    # Begun long ago and never reported: it runs nowhere. Begun just now: it counts as reported.
    assert store.request_cancel("trn_old", 5.0).reported is False
    assert store.request_cancel(fresh.turn_id, 5.0).reported is True
    # Asked about by the replica running them: reported, and those asked to stop are named.
    assert sorted(store.cancelled_turns(["trn_old", fresh.turn_id])) == sorted(["trn_old", fresh.turn_id])
    assert store.request_cancel("trn_old", 5.0).reported is True
    assert store.request_cancel("trn_old", 0.0).reported is False  # nothing names it from now on
    engine.dispose()
