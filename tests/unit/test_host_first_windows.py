"""The first windows of a revision go onto the stream only while that revision is shown (SQLite and
PostgreSQL), and a snapshot after compaction does not promise windows it no longer holds."""

from __future__ import annotations

import json

import pytest

from services.host.envelopes import data_model_update
from services.host.store import FIRST_WINDOWS_PATH, HostStore, engine_for, migrate
from tessera.host.v1 import host_pb2
from tests.fixtures.postgres import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    engine = engine_for(database_url(request, tmp_path, "host_first_windows"))
    migrate(engine)
    yield HostStore(engine)
    engine.dispose()


def _message(path: str, value) -> dict:
    return {"version": "v0.9", "updateDataModel": {"surfaceId": "srf_a", "path": path, "value": value}}


def _commit(store: HostStore, base: str | None, proposal: str, *messages: dict) -> str:
    return store.commit(surface_id="srf_a", expected_base=base, turn_id="trn_1", proposal_id=proposal,
                        content_hash=proposal, document_json="{}", diagnostics=b"[]",
                        events=[data_model_update("srf_a", m) for m in messages]).revision_id


def _paths(store: HostStore) -> list[str]:
    envelopes = [host_pb2.SurfaceEnvelope.FromString(e) for e in store.events_after("srf_a", 1, 0)]
    return [json.loads(e.a2ui.message_json)["updateDataModel"]["path"] for e in envelopes]


def test_first_windows_of_a_revision_no_longer_shown_are_not_published(store):
    first = _commit(store, None, "p1", _message(FIRST_WINDOWS_PATH, ["res_1|table|/resource|0"]))
    window = [data_model_update("srf_a", _message("/resources/res_1/window", {"node": "table", "rows": [[1]]}))]
    assert store.append_events_at("srf_a", first, window) is not None  # still shown: published
    second = _commit(store, first, "p2", _message("/resources/res_2", {}))
    # A late first window of the first revision (its answer was slower than the next commit) is dropped.
    assert store.append_events_at("srf_a", first, window) is None
    assert _paths(store) == [FIRST_WINDOWS_PATH, "/resources/res_1/window", "/resources/res_2"]
    assert store.head("srf_a") == second


def test_a_snapshot_keeps_neither_rows_nor_the_promise_of_them(store):
    revision = _commit(store, None, "p1", _message(FIRST_WINDOWS_PATH, ["res_1|table|/resource|0"]),
                       _message("/resources/res_1", {"rowCount": 1}))
    store.append_events_at("srf_a", revision, [data_model_update("srf_a", _message(
        "/resources/res_1/window", {"node": "table", "rows": [[1]]}))])
    epoch, last = store.compact("srf_a", 1)
    envelopes = [host_pb2.SurfaceEnvelope.FromString(e) for e in store.events_after("srf_a", epoch, 0)]
    paths = [json.loads(e.a2ui.message_json)["updateDataModel"]["path"] for e in envelopes]
    assert paths == ["/resources/res_1"] and last == 1
