"""A service's own database never makes it hang: a statement whose reply is lost (a frozen network path)
ends at the bound with an error the services read as DATABASE_UNAVAILABLE, its worker thread is free again,
and once the path thaws the same engine works without a restart. An outage is logged once, not per call."""

from __future__ import annotations

import logging
import threading
import time

import pytest
import sqlalchemy as sa

from cli.launcher import free_ports
from shared.data import db
from shared.rpc.refusals import Unavailable
from tests.fixtures.forwarder import TcpForwarder
from tests.fixtures.postgres import postgres_database
from tests.fixtures.waiting import wait_until

BOUND = 1.0  # statement timeout of the engine under test; the frozen-statement bound adds FROZEN_GRACE_SECONDS


@pytest.fixture
def relayed(request):
    url = sa.make_url(postgres_database(request, "tessera_timeouts"))
    (port,) = free_ports(1)
    relay = TcpForwarder(port, (url.host or "127.0.0.1", url.port or 5432))
    engine = db.engine_for(url.set(host="127.0.0.1", port=port).render_as_string(hide_password=False), BOUND)
    yield engine, relay
    engine.dispose()
    relay.close(connections=True)


def _select(engine: sa.Engine, statement: str = "SELECT 1") -> object:
    with engine.connect() as connection:
        return connection.execute(sa.text(statement)).scalar()


def test_a_statement_whose_reply_is_lost_ends_at_the_bound_and_the_engine_recovers(relayed):
    engine, relay = relayed
    assert _select(engine) == 1  # a pooled connection, used once before the path freezes
    relay.dropping.set()
    outcome: list[BaseException | object] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: outcome.append(_attempt(engine)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    waited = time.monotonic() - started
    assert not worker.is_alive(), "a statement through a frozen path never ended"
    (error,) = outcome
    assert isinstance(error, sa.exc.DBAPIError) and db.connection_lost(error), error
    # Ended by us (the server's own timeout cannot reach us), not much later than the bound.
    assert BOUND + db.FROZEN_GRACE_SECONDS - 0.5 <= waited < BOUND + db.FROZEN_GRACE_SECONDS + 10, waited
    relay.dropping.clear()
    wait_until(lambda: _attempt(engine) == 1, 60, what="the same engine answering once the path thaws")


def test_a_server_that_accepts_and_never_answers_fails_the_connect_within_its_timeout(relayed):
    engine, relay = relayed
    relay.dropping.set()
    started = time.monotonic()
    error = _attempt(engine)  # no pooled connection yet: a new one, through the frozen path
    assert isinstance(error, sa.exc.DBAPIError) and db.connection_lost(error), error
    assert time.monotonic() - started < db.CONNECT_TIMEOUT_SECONDS + 10


def test_short_statements_back_to_back_are_never_taken_for_a_frozen_one(relayed):
    engine, _ = relayed
    deadline = time.monotonic() + BOUND + db.FROZEN_GRACE_SECONDS + 2.5  # past the bound, and a look after it
    with engine.connect() as connection:
        statements = 0
        while time.monotonic() < deadline:
            connection.execute(sa.text("SELECT pg_sleep(0.2)"))
            statements += 1
    assert statements >= 10


def test_the_operators_url_settings_come_after_ours(request):
    url = sa.make_url(postgres_database(request, "tessera_url_options"))
    given = url.update_query_dict({"options": "-c search_path=custom -c lock_timeout=1234"})
    engine = db.engine_for(given.render_as_string(hide_password=False), BOUND)
    try:
        with engine.connect() as connection:
            shown = [connection.exec_driver_sql(f"SHOW {name}").scalar()
                     for name in ("search_path", "lock_timeout", "statement_timeout")]
    finally:
        engine.dispose()
    assert shown == ["custom", "1234ms", "1s"], shown


def test_the_server_ends_a_slow_statement_at_the_statement_timeout(relayed):
    engine, _ = relayed
    error = _attempt(engine, "SELECT pg_sleep(30)")
    assert isinstance(error, sa.exc.OperationalError) and "statement timeout" in str(error.orig)


def _attempt(engine: sa.Engine, statement: str = "SELECT 1") -> object:
    try:
        return _select(engine, statement)
    except sa.exc.DBAPIError as exc:
        return exc


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_said_once_then_now_and_then_and_its_end_once(caplog):
    clock, lost = _Clock(), sa.exc.OperationalError("SELECT 1", {}, Exception("connection refused"))
    outage = db.Outage("test database", clock)
    with caplog.at_level(logging.INFO, logger="tessera.db"):
        for _ in range(50):  # fifty failed calls within a second: one line
            with pytest.raises(Unavailable) as refused, outage.guard():
                raise lost
            clock.now += 0.02
        clock.now += db.OUTAGE_REPEAT_SECONDS
        with pytest.raises(Unavailable), outage.guard():
            raise lost
        with outage.guard():
            pass
        with outage.guard():
            pass
    said = [r.getMessage() for r in caplog.records]
    assert said == ["test database is not answering", "test database is still not answering",
                    "test database is answering again"], said
    assert refused.value.reason == db.DATABASE_UNAVAILABLE
    assert "connection refused" not in refused.value.message  # the driver's words are for the log only


@pytest.mark.parametrize("text, lost", [("unable to open database file", True), ("database is locked", True),
                                        ("database or disk is full", True), ("near \"x\": syntax error", False),
                                        ("no such table: revisions", False)])
def test_sqlite_errors_that_mean_the_database_is_away(text, lost):
    import sqlite3

    error = sa.exc.OperationalError("SELECT 1", {}, sqlite3.OperationalError(text))
    assert db.connection_lost(error) is lost


def test_postgres_errors_are_told_apart_by_their_sqlstate(request):
    """Refusals the server files under OperationalError (a value too large, a lock not available) are the
    request's; a statement ended at the timeout, a server shutting down and a dead connection are an outage."""
    engine = db.engine_for(postgres_database(request, "tessera_sqlstates"), BOUND)
    outcomes = {}
    try:
        for name, statement in [("too large", "SELECT repeat('x', 2000000)::tsvector"),
                                ("timeout", "SELECT pg_sleep(5)"),
                                ("terminated", "SELECT pg_terminate_backend(pg_backend_pid())"),
                                ("syntax", "SELEC 1")]:
            outcomes[name] = db.connection_lost(_attempt(engine, statement))
    finally:
        engine.dispose()
    assert outcomes == {"too large": False, "timeout": True, "terminated": True, "syntax": False}, outcomes
