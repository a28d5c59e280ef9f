"""Database helpers every stateful service uses: engines, Alembic migrations, readiness."""

from __future__ import annotations

import select
import zlib
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

# Execution option of connections that write: on SQLite they BEGIN IMMEDIATE.
WRITE = "tessera_write"

# What libpq says when no server answers (yet): refused, no such host, a timeout, a server
# still starting or stopping. A wrong password or a missing database is not among them.
_UNREACHABLE = ("connection refused", "could not translate host name", "name or service not known",
                "temporary failure in name resolution", "timeout expired", "no route to host",
                "the database system is starting up", "the database system is shutting down",
                "network is unreachable", "could not connect to server")


def unreachable(error: BaseException) -> bool:
    """The database did not answer (worth waiting for), as opposed to answering with a refusal."""
    original = getattr(error, "orig", None) or error
    return isinstance(original, Exception) and any(text in str(original).lower() for text in _UNREACHABLE) \
        and type(original).__name__ == "OperationalError"


def engine_for(url: str) -> sa.Engine:
    """An engine for a service's own database; SQLite files get WAL and queue writers at BEGIN."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(parsed, connect_args={"timeout": 30})

        @sa.event.listens_for(engine, "connect")
        def _sqlite(dbapi_connection, _record):
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA foreign_keys=ON")

        @sa.event.listens_for(engine, "begin")
        def _begin(connection):
            # Writers queue at BEGIN instead of failing on a lock upgrade mid-transaction;
            # readers run without a transaction and never hold the write lock.
            if connection.get_execution_options().get(WRITE):
                connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    if parsed.get_backend_name() != "postgresql":
        return sa.create_engine(parsed, pool_pre_ping=True)
    # TCP keepalives: a connection a NAT or proxy dropped without a word turns into a socket error while it
    # sits idle (about a minute), which the checkout check below sees like any other closed connection.
    engine = sa.create_engine(parsed, connect_args={"keepalives": 1, "keepalives_idle": 30,
                                                    "keepalives_interval": 10, "keepalives_count": 3})
    # Instead of pool_pre_ping (a round trip per checkout): a pooled connection the server closed,
    # terminated or restarted under has something to read (its FATAL message, EOF) while it sits idle.
    sa.event.listen(engine, "checkout", _check_idle_connection)
    return engine


def reads(engine: sa.Engine) -> sa.Engine:
    """`engine` for single-statement reads: on PostgreSQL they run without a transaction, which spares the
    BEGIN and ROLLBACK round trips and sees what one statement in a transaction would (its own snapshot)."""
    if engine.dialect.name != "postgresql":
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def _check_idle_connection(dbapi_connection, _record, _proxy) -> None:
    """A pooled PostgreSQL connection is usable unless it is closed or its socket has something to read:
    an idle connection gets nothing unasked but the server's last words (FATAL on shutdown, termination or
    an idle timeout) or EOF. Such a connection is replaced, like a failed pre-ping, and so are the others
    checked in before it; a server that still does not answer then fails the checkout (the caller reports
    the database unavailable). Costs no round trip. A rare harmless message (a NOTICE) costs a reconnect."""
    if dbapi_connection.closed or getattr(dbapi_connection, "broken", False):
        raise sa.exc.InvalidatePoolError("the connection is closed")
    poller = select.poll()
    try:
        poller.register(dbapi_connection.fileno(), select.POLLIN | select.POLLPRI)
    except Exception as exc:  # no socket to look at (psycopg: "the connection is lost")
        raise sa.exc.InvalidatePoolError(str(exc)) from None
    if poller.poll(0):
        raise sa.exc.InvalidatePoolError("the server spoke to (or closed) an idle connection")


def migrate(engine: sa.Engine, migrations: Path, target: str = "head") -> None:
    """Upgrade the schema to `target` with the Alembic scripts in `migrations`, in one transaction.

    SQLite cannot alter tables in place, so Alembic copies them; foreign-key
    enforcement is paused for that (the copies keep the same rows and keys).
    Replicas starting together on PostgreSQL take turns: the first migrates under a
    transaction-scoped advisory lock, the others wait for it and then find nothing to do.
    """
    _run(engine, migrations, command.upgrade, target)


def downgrade(engine: sa.Engine, migrations: Path, target: str) -> None:
    """Take the schema back to `target` (what an operator rolling back runs; services only ever upgrade),
    in one transaction and under the same lock and SQLite precautions as `migrate`."""
    _run(engine, migrations, command.downgrade, target)


def _run(engine: sa.Engine, migrations: Path, step, target: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(migrations))
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()  # ends SQLAlchemy's autobegun (empty) transaction
        try:
            with connection.execution_options(**{WRITE: True}).begin():
                if engine.dialect.name == "postgresql":  # the lock ends with this transaction (or connection)
                    connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_migration_lock(migrations))))
                config.attributes["connection"] = connection
                step(config, target)
        finally:
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


def _migration_lock(migrations: Path) -> int:
    """A fixed advisory-lock key per service's migrations (its folder's parent names the service)."""
    return 0x7E55E4A_0000 + zlib.crc32(migrations.resolve().parent.name.encode())


def ping(engine: sa.Engine, what: str) -> str | None:
    """None when `engine` answers a trivial query, else one line saying why not (for readiness)."""
    try:
        with engine.connect() as connection:
            connection.execute(sa.select(1))
    except sa.exc.DBAPIError as exc:
        return f"{what} unreachable: {str(exc.orig).splitlines()[0][:200]}"
    return None
