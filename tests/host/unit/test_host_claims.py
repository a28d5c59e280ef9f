"""Command ids are reserved before their handler runs: the store's claims, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

from services.host import bindings
from services.host import store as host_store
from services.host.bindings import Binding
from services.host.store import HostStore, commands
from tests.fixtures.postgres import BACKENDS, migrated_engine
from tests.fixtures.race import race


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with migrated_engine(request, tmp_path, "host_claims", host_store) as engine:
        yield HostStore(engine)


def test_one_claim_per_command_id_among_racing_callers(store):
    outcomes = race(8, lambda _: store.claim_command("ses_1", "cmd", "hash", lease=60).status)
    assert sorted(outcomes) == ["claimed"] + ["pending"] * 7


def test_a_claim_is_finished_released_or_taken_over(store):
    assert store.claim_command("ses_1", "a", "h", lease=60).status == "claimed"
    assert store.claim_command("ses_1", "a", "other", lease=60).status == "reused"
    store.finish_command("ses_1", "a", b"reply")
    assert store.claim_command("ses_1", "a", "h", lease=60).response == b"reply"
    store.release_command("ses_1", "a")  # a finished command is never released
    assert store.claim_command("ses_1", "a", "h", lease=60).status == "done"

    assert store.claim_command("ses_1", "b", "h", lease=60).status == "claimed"
    store.release_command("ses_1", "b")  # refused: the id is free again
    assert store.claim_command("ses_1", "b", "h", lease=60).status == "claimed"
    # A claim older than the lease belongs to a replica that died mid-command: exactly one caller takes it.
    assert store.claim_command("ses_1", "b", "h", lease=0).status == "claimed"
    assert store.claim_command("ses_1", "b", "h", lease=60).status == "pending"
    assert store.claim_command("ses_2", "b", "h", lease=60).status == "claimed"  # ids are per session


def test_racing_callers_take_over_a_dead_claim_once(store):
    assert store.claim_command("ses_1", "c", "h", lease=60).status == "claimed"
    with store.writer.begin() as connection:  # its replica died long ago
        connection.execute(commands.update().values(created_at=commands.c.created_at - 1_000))
    outcomes = race(8, lambda _: store.claim_command("ses_1", "c", "h", lease=60).status)
    assert sorted(outcomes) == ["claimed"] + ["pending"] * 7


def test_bindings_keep_their_stored_form():
    stored = [{"node": "table", "prop": "resource", "kind": "resource", "resource_id": "res_1", "version_id": "v1",
               "content_hash": "c" * 64, "columns": ["region", "revenue"]},
              {"node": "go", "prop": "action", "kind": "action", "action_id": "refund", "input_schema": "{}"},
              {"node": "pick", "prop": "value", "kind": "state", "state": "state-000001", "value_schema": "{}"},
              {"node": "note", "prop": "evidence", "kind": "evidence"}]
    loaded = bindings.loads(json.dumps(stored))
    assert loaded[0] == Binding("table", "resource", "resource", resource_id="res_1", version_id="v1",
                                content_hash="c" * 64, columns=("region", "revenue"))
    assert json.loads(bindings.dumps(loaded)) == stored
