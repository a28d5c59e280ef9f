"""Read-only warehouse connections with a statement timeout (§5).

SQLite opens the file with `mode=ro`; PostgreSQL sessions default to
read-only transactions, and every transaction also runs `SET TRANSACTION
READ ONLY` plus a `statement_timeout`; DuckDB opens its file read-only.
A statement that runs past the timeout is interrupted and reported as
DEADLINE_EXCEEDED / QUERY_TIMEOUT.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa
from duckdb_engine import Dialect as DuckDBDialect
from sqlalchemy import event
from sqlalchemy.dialects import registry

from services.resources.deadlines import Deadline, DeadlineWatcher
from shared.data.db import check_idle_connection, ping, unreachable
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Refusal, TimedOut


class CachingDuckDBDialect(DuckDBDialect):
    """duckdb_engine's dialect with SQLAlchemy's compiled-statement cache on, and no transactions.

    duckdb_engine leaves the cache off (it has not declared support), so every
    analysis recompiled its statement: about 1 ms per grouped query with
    a derived metric. The statements the query compiler builds carry every value as a bound
    or post-compile parameter and every fixed word in the statement itself, which is
    what the cache needs; the semantic suite runs on DuckDB with it on.

    The warehouse file is opened read-only and every checkout runs one statement, which DuckDB
    runs in a transaction of its own (its connections autocommit). SQLAlchemy's BEGIN and the
    ROLLBACK when a connection is released added about 2 ms per query and guarded nothing.
    """

    supports_statement_cache = True

    def do_begin(self, dbapi_connection) -> None:
        pass

    def do_rollback(self, dbapi_connection) -> None:
        pass

    def do_commit(self, dbapi_connection) -> None:
        pass


registry.register("duckdb.cached", __name__, "CachingDuckDBDialect")


class WarehouseUnavailable(Exception):
    """The warehouse cannot be opened; the message says what to do."""

    def __init__(self, message: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable  # no server answered (yet): worth waiting for


def _timeout_error(seconds: float) -> Refusal:
    return TimedOut("QUERY_TIMEOUT",
                    f"the query ran longer than the {seconds:g} s policy limit and was stopped",
                    metadata(bound=seconds))


class Warehouse:
    def __init__(self, url: str, statement_timeout_seconds: float, connections: int = 8) -> None:
        self.url = sa.make_url(url)
        self.timeout = statement_timeout_seconds
        # Every thread that queries at once holds its own connection: the query workers and the
        # side queries (a result's time span) beside them. Threads beyond it wait for one.
        self.connections = connections
        self.dialect = self.url.get_backend_name()
        self._deadlines = DeadlineWatcher("warehouse-deadlines")
        if self.dialect == "sqlite":
            self.engine = self._sqlite_engine()
        elif self.dialect == "postgresql":
            self.engine = self._postgres_engine()
        elif self.dialect == "duckdb":
            self.engine = self._duckdb_engine()
        else:
            raise WarehouseUnavailable(f"unsupported warehouse {self.dialect!r}: use sqlite, postgresql or duckdb")
        try:
            with self.engine.connect() as connection:
                connection.execute(sa.select(1))
        except sa.exc.DBAPIError as exc:
            raise WarehouseUnavailable(f"cannot open the warehouse {self.url.render_as_string()}: "
                                       f"{str(exc.orig).splitlines()[0]}", unreachable(exc)) from None

    # --- engines ----------------------------------------------------------

    def _sqlite_engine(self) -> sa.Engine:
        path = Path(self.url.database or "")
        if not self.url.database or not path.exists():
            raise WarehouseUnavailable(f"no warehouse at {path} (run 'tessera seed')")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        # A pool of its own size, not the per-thread pool SQLAlchemy gives a creator-made SQLite engine:
        # that one closes the connections of other threads once more threads than its size have used it.
        def connect() -> sqlite3.Connection:
            connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
            # LIKE as on PostgreSQL and DuckDB: case-sensitive, so a metric's starts_with('PROMO') or
            # like(x, 'LARGE%') counts the same rows on every backend.
            connection.execute("PRAGMA case_sensitive_like = ON")
            # SQLite's lower() lowers A-Z only; a value-match must lower "Île-de-France" as the others do.
            connection.create_function("tessera_lower", 1, lambda v: v.lower() if isinstance(v, str) else v,
                                       deterministic=True)
            return connection

        engine = sa.create_engine("sqlite://", creator=connect,
                                  poolclass=sa.pool.QueuePool, pool_size=self.connections, max_overflow=2,
                                  pool_reset_on_return=None)
        return engine

    def _postgres_engine(self) -> sa.Engine:
        timeout_ms = int(self.timeout * 1000)
        engine = sa.create_engine(self.url, pool_size=self.connections, max_overflow=2, connect_args={
            "options": f"-c default_transaction_read_only=on -c statement_timeout={timeout_ms}"})
        # A dead pooled connection is found without a round trip per analysis (pre-ping cost one each).
        sa.event.listen(engine, "checkout", check_idle_connection)

        @event.listens_for(engine, "begin")
        def read_only_transaction(connection):
            connection.exec_driver_sql("SET TRANSACTION READ ONLY")

        return engine

    def _duckdb_engine(self) -> sa.Engine:
        if not self.url.database or not Path(self.url.database).exists():
            raise WarehouseUnavailable(f"no warehouse at {self.url.database} (run 'tessera seed --url ...')")
        # Read-only connections carry no transaction state worth resetting: skip the rollback
        # SQLAlchemy would issue each time a connection returns to the pool.
        return sa.create_engine(self.url.set(drivername="duckdb+cached"), connect_args={"read_only": True},
                                pool_size=self.connections, max_overflow=2, pool_reset_on_return=None)

    # --- execution --------------------------------------------------------

    def fetch(self, statement: sa.Executable, max_rows: int) -> tuple[list[tuple], float]:
        """Run one read-only statement; never hold more than `max_rows` rows."""
        rows, elapsed, _ = self.fetch_with_fingerprint(statement, max_rows)
        return rows, elapsed

    def fetch_with_fingerprint(self, statement: sa.Executable, max_rows: int) -> tuple[list[tuple], float, str]:
        """Like fetch, plus the SHA-256 of the SQL text and parameters that actually ran."""
        started = time.perf_counter()
        with self.engine.connect() as connection:
            raw = connection.connection.dbapi_connection
            deadline = self._arm_timeout(raw)
            try:
                result = connection.execute(statement)
                if self.dialect == "duckdb":
                    # DuckDB's rows are plain tuples of Python values already; SQLAlchemy's row objects added
                    # about 1.7 ms per 500 rows. normalize_rows gives every backend's values one form.
                    rows = result.cursor.fetchmany(max_rows)
                else:
                    rows = [tuple(row) for row in result.fetchmany(max_rows)]
                executed = f"{result.context.statement}\n{result.context.parameters!r}"
                result.close()
            except sa.exc.DBAPIError as exc:
                if self._is_timeout(exc, deadline):
                    raise _timeout_error(self.timeout) from None
                raise
            finally:
                if deadline is not None:
                    deadline.cancel()
                if self.dialect == "sqlite":
                    raw.set_progress_handler(None, 0)
        return rows, time.perf_counter() - started, hashlib.sha256(executed.encode()).hexdigest()

    def _arm_timeout(self, raw) -> Deadline | None:
        """A deadline for SQLite (progress handler) and DuckDB (interrupt); PostgreSQL has its own."""
        if self.dialect == "sqlite":
            deadline = time.monotonic() + self.timeout
            raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 20_000)
        elif self.dialect == "duckdb":
            return self._deadlines.arm(self.timeout, raw.interrupt)
        return None

    def _is_timeout(self, exc: sa.exc.DBAPIError, deadline: Deadline | None) -> bool:
        text = str(exc.orig).lower()
        if self.dialect == "sqlite":
            return "interrupted" in text
        if self.dialect == "postgresql":
            return "statement timeout" in text or "canceling statement" in text
        return (deadline is not None and deadline.expired) or "interrupt" in text

    def lowered(self, column: sa.ColumnElement) -> sa.ColumnElement:
        """A text column in lower case by Unicode's rules on every backend."""
        return sa.func.tessera_lower(column) if self.dialect == "sqlite" else sa.func.lower(column)

    def ping(self) -> str | None:
        return ping(self.engine, "warehouse")

    def close(self) -> None:
        self._deadlines.close()
        self.engine.dispose()
