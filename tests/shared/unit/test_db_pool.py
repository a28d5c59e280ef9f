"""shared.data.db engines on PostgreSQL: a pooled connection the server ended is replaced at checkout without a
round trip (no pre-ping: the idle socket has the server's last words to read), reads run outside transactions,
and a database that is away fails the checkout with the driver's error (the services report it unavailable)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from cli.launcher import free_ports
from shared.data.db import engine_for, reads
from tests.fixtures.forwarder import TcpForwarder
from tests.fixtures.postgres import postgres_database
from tests.fixtures.waiting import wait_until


@pytest.fixture
def engine(request):
    engine = engine_for(postgres_database(request, "tessera_db_pool"))
    yield engine
    engine.dispose()


def _end_backend(engine: sa.Engine, pid: int) -> None:
    """End a server process and wait until it is gone: pg_terminate_backend only signals it, and on a busy
    machine the process may still answer for a moment after the call returns."""
    admin = engine_for(engine.url.render_as_string(hide_password=False))
    try:
        with admin.connect() as connection:
            connection.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})

        def gone() -> bool:
            with admin.connect() as connection:
                return not connection.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"),
                                              {"pid": pid}).scalar()

        wait_until(gone, 60, what=f"server process {pid} ending")
    finally:
        admin.dispose()


def test_a_connection_the_server_ended_is_replaced_at_checkout(engine):
    with engine.connect() as connection:
        first = connection.execute(sa.text("SELECT pg_backend_pid()")).scalar()
    _end_backend(engine, first)
    with engine.connect() as connection:  # the pooled connection has the server's last words to read
        second = connection.execute(sa.text("SELECT pg_backend_pid()")).scalar()
    assert second != first  # a fresh connection, and no error for the caller


def test_a_database_that_went_away_fails_the_checkout_with_the_drivers_error(request, engine):
    """The pooled connection is ended and nothing answers on its address any more: the caller gets the
    driver's OperationalError (which the services report as DATABASE_UNAVAILABLE), whichever of the checkout
    check or the statement notices first, never a pool error of another kind."""
    port = free_ports(1)[0]
    relay = TcpForwarder(port, (engine.url.host or "127.0.0.1", engine.url.port or 5432))
    request.addfinalizer(relay.close)
    through_relay = engine_for(engine.url.set(port=port).render_as_string(hide_password=False))
    request.addfinalizer(through_relay.dispose)
    with through_relay.connect() as connection:
        pid = connection.execute(sa.text("SELECT pg_backend_pid()")).scalar()
    relay.close()  # the database "goes away": no new connections on its address
    _end_backend(engine, pid)
    with pytest.raises(sa.exc.OperationalError):
        with through_relay.connect() as connection:
            connection.execute(sa.text("SELECT 1"))


def test_reads_run_outside_a_transaction_and_writes_inside_one(engine):
    with reads(engine).connect() as connection:
        in_transaction = connection.execute(sa.text(
            "SELECT xact_start = query_start FROM pg_stat_activity WHERE pid = pg_backend_pid()")).scalar()
    assert in_transaction  # autocommit: each statement is its own transaction
    with engine.begin() as connection:
        connection.execute(sa.text("SELECT 1"))
        held = connection.execute(sa.text(
            "SELECT xact_start = query_start FROM pg_stat_activity WHERE pid = pg_backend_pid()")).scalar()
    assert not held  # a transaction spans both statements


def test_a_warehouse_connection_the_server_ended_is_replaced_without_a_pre_ping(engine):
    """The warehouse's read-only engine finds a dead pooled connection the same way, with no round trip per
    analysis: the next query runs on a fresh connection and the caller sees no error."""
    from services.resources.warehouse import Warehouse

    warehouse = Warehouse(engine.url.render_as_string(hide_password=False), statement_timeout_seconds=30)
    try:
        rows, _ = warehouse.fetch(sa.text("SELECT pg_backend_pid()"), 1)
        first = rows[0][0]
        _end_backend(engine, first)
        rows, _ = warehouse.fetch(sa.text("SELECT pg_backend_pid()"), 1)
        assert rows[0][0] != first
        assert not warehouse.engine.pool._pre_ping
    finally:
        warehouse.close()
