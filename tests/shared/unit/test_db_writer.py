"""Writers of one process on a SQLite file take turns before BEGIN IMMEDIATE: every write lands, a failed
transaction gives its turn back, and a writer that cannot get its turn fails as SQLite's own wait would."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from shared.data import db

SQLITE_OWN_WAIT = db.SQLITE_BUSY_SECONDS  # the engine's busy timeout, fixed when it was made


@pytest.fixture
def engine(tmp_path):
    engine = db.engine_for(f"sqlite:///{tmp_path / 'writer.sqlite'}")
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE counter (n INTEGER)")
        connection.exec_driver_sql("INSERT INTO counter VALUES (0)")
    yield engine
    engine.dispose()


def _count(engine) -> int:
    with engine.connect() as connection:
        return connection.exec_driver_sql("SELECT n FROM counter").scalar()


def test_concurrent_writers_each_land_once(engine):
    writer = db.Writer(engine)

    def increment(_: int) -> None:
        with writer.begin() as connection:  # read, then write: lost updates if two ran at once
            n = connection.exec_driver_sql("SELECT n FROM counter").scalar()
            connection.exec_driver_sql("UPDATE counter SET n = ?", (n + 1,))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(increment, range(200)))
    assert _count(engine) == 200


def test_a_failed_transaction_gives_its_turn_back(engine, monkeypatch):
    monkeypatch.setattr(db, "SQLITE_BUSY_SECONDS", 0.5)
    writer = db.Writer(engine)
    with pytest.raises(RuntimeError), writer.begin() as connection:
        connection.exec_driver_sql("UPDATE counter SET n = 5")
        raise RuntimeError("the store's own failure")
    with writer.begin() as connection:  # not locked out: it would fail after 0.5 s
        connection.exec_driver_sql("UPDATE counter SET n = n + 1")
    assert _count(engine) == 1  # the failed one was rolled back


def test_a_writer_that_cannot_get_its_turn_fails_as_sqlites_wait_would(engine, monkeypatch):
    monkeypatch.setattr(db, "SQLITE_BUSY_SECONDS", 0.2)
    writer = db.Writer(engine)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with writer.begin():
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        started = time.monotonic()
        with pytest.raises(sa.exc.OperationalError, match="database is locked"), writer.begin():
            pass
        assert time.monotonic() - started < SQLITE_OWN_WAIT / 3  # refused by the turn, not by SQLite's 30 s wait
    finally:
        release.set()
        holder.join(30)
    with writer.begin() as connection:  # the holder's turn ended with its transaction
        connection.exec_driver_sql("UPDATE counter SET n = 7")
    assert _count(engine) == 7


def test_another_store_on_the_same_engine_shares_the_turns(engine, monkeypatch):
    monkeypatch.setattr(db, "SQLITE_BUSY_SECONDS", 0.2)
    first, second = db.Writer(engine), db.Writer(engine)
    with first.begin():
        started = time.monotonic()
        with pytest.raises(sa.exc.OperationalError, match="database is locked"), second.begin():
            pass
        assert time.monotonic() - started < SQLITE_OWN_WAIT / 3
