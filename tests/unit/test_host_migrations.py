"""Host migrations upgrade a database that already holds data, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from services.host.store import HostStore, engine_for, migrate
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
