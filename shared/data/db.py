"""Database helpers every stateful service uses: engines with timeouts, Alembic migrations, readiness,
and the one way a database that does not answer is told (DATABASE_UNAVAILABLE, logged once per outage)."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import socket
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from shared.logs import log
from shared.rpc.refusals import Unavailable

logger = logging.getLogger("tessera.db")

# Execution option of connections that write: on SQLite they BEGIN IMMEDIATE.
WRITE = "tessera_write"

# The one reason every service gives when its own database does not answer (UNAVAILABLE, retryable).
DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
# Bounds on a service's own PostgreSQL database. A question waits at most the agent's 30 s for everything, so
# no one statement of ours may take more than a third of it; a server that accepts the TCP connection but never
# answers the handshake is given up after CONNECT_TIMEOUT_SECONDS.
CONNECT_TIMEOUT_SECONDS = 5
STATEMENT_TIMEOUT_SECONDS = 10
IDLE_IN_TRANSACTION_SECONDS = 30
# A statement the server's own timeout cannot end (its reply is lost: a frozen network path) is ended by us
# this long after the server would have: the connection's socket is shut, which fails the waiting call.
FROZEN_GRACE_SECONDS = 2
SQLITE_BUSY_SECONDS = 30  # a writer waits this long for another's write lock before the write fails
OUTAGE_REPEAT_SECONDS = 60  # an outage that lasts is logged again this often, never on every failed call

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
        and any(kind.__name__ == "OperationalError" for kind in type(original).__mro__)  # ConnectionTimeout too


# The writers of one process on a SQLite file take turns here (Writer) before BEGIN IMMEDIATE.
_WRITE_TURNS: weakref.WeakKeyDictionary[sa.Engine, threading.Lock] = weakref.WeakKeyDictionary()


class Writer:
    """Transactions that write (a store's `writer.begin()`). On a SQLite file the writers of one process take turns
    on a lock before BEGIN IMMEDIATE: SQLite's own wait for its lock sleeps 1, 2, 5, 10 ms ... however soon the lock
    frees, which cost a commit on a busy host several milliseconds whenever a journal append held the lock. Other
    processes on the same file still queue on SQLite's lock; PostgreSQL needs no turns (row locks)."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine.execution_options(**{WRITE: True})
        self._turns = _WRITE_TURNS.get(engine)

    @contextmanager
    def begin(self) -> Iterator[sa.Connection]:
        if self._turns is None:
            with self._engine.begin() as connection:
                yield connection
            return
        if not self._turns.acquire(timeout=SQLITE_BUSY_SECONDS):  # as SQLite's own wait would have ended
            raise sa.exc.OperationalError("BEGIN IMMEDIATE", None, Exception("database is locked"))
        try:
            with self._engine.begin() as connection:
                yield connection
        finally:
            self._turns.release()


def check_encoded(parsed: sa.URL) -> None:
    """A password holding an unencoded @ leaves its tail in the host name, which driver errors print."""
    if "@" in (parsed.host or ""):
        raise ValueError("the database URL's password must be percent-encoded (an @ in it is written %40)")


def engine_for(url: str, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS) -> sa.Engine:
    """An engine for a service's own database; SQLite files get WAL and queue writers at BEGIN; PostgreSQL
    statements end after `statement_timeout` seconds, even when the path to the server froze."""
    parsed = sa.make_url(url)
    check_encoded(parsed)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_SECONDS})
        _WRITE_TURNS[engine] = threading.Lock()

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
    # sits idle (about a minute), which the checkout check below sees like any other closed connection;
    # tcp_user_timeout does the same for data sent and never acknowledged. The server ends our statements and
    # forgotten transactions itself; FrozenStatements ends the ones whose end never reaches us.
    engine = sa.create_engine(parsed, connect_args=_postgres_settings(parsed, statement_timeout))
    # Instead of pool_pre_ping (a round trip per checkout): a pooled connection the server closed,
    # terminated or restarted under has something to read (its FATAL message, EOF) while it sits idle.
    sa.event.listen(engine, "checkout", check_idle_connection)
    FrozenStatements.watch(engine, statement_timeout + FROZEN_GRACE_SECONDS)
    return engine


def _postgres_settings(url: sa.URL, statement_timeout: float) -> dict:
    """Our connection settings, under the operator's: a setting in the URL's query wins, and the URL's own
    `options` come after ours (PostgreSQL takes the last -c of a name). Behind a pooler that refuses the
    `options` startup parameter (PgBouncer in transaction mode), set the timeouts on the role instead
    (ALTER ROLE ... SET statement_timeout) and give the URL `options=` with nothing in it."""
    ours = (f"-c statement_timeout={round(statement_timeout * 1000)} "
            f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_SECONDS * 1000}")
    settings = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3,
                "tcp_user_timeout": round((statement_timeout + FROZEN_GRACE_SECONDS) * 1000),
                "connect_timeout": CONNECT_TIMEOUT_SECONDS, "options": ours}
    given = {key: value for key, value in url.query.items() if key in settings}
    if "options" in given:
        theirs = given.pop("options")
        theirs = theirs if isinstance(theirs, str) else " ".join(theirs)
        settings["options"] = f"{ours} {theirs}" if theirs.strip() else None
    settings.update(given)
    return {key: value for key, value in settings.items() if value is not None}


class FrozenStatements:
    """Ends statements whose reply never comes. The server's statement_timeout ends a slow statement, but when
    the path to the server freezes (packets dropped, a relay or NAT that stops forwarding) neither its reply
    nor its timeout error arrives, and TCP sees nothing wrong while a middlebox still acknowledges. Every
    statement, COMMIT and ROLLBACK notes when it began; a thread per engine looks every second, and a
    connection still busy with a command that began more than `bound` ago gets its socket shut down, so the
    call waiting on it fails at once (the pool then drops the connection) and its worker thread is free again.
    A connection running short statements back to back is never ended: each one starts the clock again."""

    # Connections whose statements may take as long as they need (a migration, and the wait for another
    # replica's): never ended by the watch.
    unbounded: weakref.WeakSet = weakref.WeakSet()

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self._began: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # DBAPI connection -> monotonic
        self._lock = threading.Lock()

    @classmethod
    def watch(cls, engine: sa.Engine, bound: float) -> FrozenStatements:
        watcher = cls(bound)
        sa.event.listen(engine, "before_cursor_execute",
                        lambda _conn, cursor, *_rest: watcher.began(cursor.connection))
        for ending in ("commit", "rollback"):
            sa.event.listen(engine, ending, lambda conn: watcher.began(_dbapi(conn)))
        thread = threading.Thread(target=watcher._run, args=(weakref.ref(engine),), daemon=True,
                                  name="frozen-statements")
        thread.start()
        return watcher

    def began(self, connection, now: float | None = None) -> None:
        if connection is not None:
            with self._lock:
                self._began[connection] = time.monotonic() if now is None else now

    def _run(self, engine_ref: weakref.ref) -> None:
        while engine_ref() is not None:  # the engine's owner let go of it: so does this thread
            self.check(time.monotonic())
            time.sleep(1.0)

    def check(self, now: float) -> int:
        """Shut the sockets of connections busy with one command past the bound; how many."""
        with self._lock:
            began = list(self._began.items())
        ended = 0
        for connection, since in began:
            if now - since < self.bound or connection in self.unbounded or not _busy(connection):
                continue
            if _shut(connection):
                ended += 1
                self.began(connection, now)  # said once; the pool drops the connection once its call fails
                log(logger, logging.WARNING, "a database statement got no reply; its connection was ended",
                    waited_seconds=round(now - since, 1))
        return ended


def _dbapi(connection: sa.Connection):
    """The DBAPI connection under a SQLAlchemy one, or None once it was closed or invalidated."""
    try:
        return connection.connection.dbapi_connection
    except sa.exc.SQLAlchemyError:
        return None


def _busy(connection) -> bool:
    """Whether a psycopg connection has a command in flight (libpq's transaction status ACTIVE)."""
    try:
        import psycopg.pq

        return not connection.closed and connection.info.transaction_status == psycopg.pq.TransactionStatus.ACTIVE
    except Exception:  # another driver, or a connection going away under us: nothing to end
        return False


def _shut(connection) -> bool:
    try:
        duplicate = socket.socket(fileno=os.dup(connection.fileno()))
    except Exception:
        return False
    try:
        duplicate.shutdown(socket.SHUT_RDWR)  # the same socket libpq waits on: its wait ends with an error
        return True
    except OSError:
        return False
    finally:
        duplicate.close()


def reads(engine: sa.Engine) -> sa.Engine:
    """`engine` for single-statement reads: on PostgreSQL they run without a transaction, which spares the
    BEGIN and ROLLBACK round trips and sees what one statement in a transaction would (its own snapshot)."""
    if engine.dialect.name != "postgresql":
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def check_idle_connection(dbapi_connection, _record, _proxy) -> None:
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
        raw = connection.connection.dbapi_connection if engine.dialect.name == "postgresql" else None
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()  # ends SQLAlchemy's autobegun (empty) transaction
        try:
            with connection.execution_options(**{WRITE: True}).begin():
                if engine.dialect.name == "postgresql":  # the lock ends with this transaction (or connection)
                    # A replica waits for another's migration, and a migration may rewrite a large table:
                    # neither is a statement a question waits for, so neither has the services' bound.
                    connection.exec_driver_sql("SET LOCAL statement_timeout = 0")
                    FrozenStatements.unbounded.add(raw)
                    connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_migration_lock(migrations))))
                config.attributes["connection"] = connection
                step(config, target)
        finally:
            if raw is not None:
                FrozenStatements.unbounded.discard(raw)
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


# How a service treats its schema at start (TESSERA_<SVC>_MIGRATIONS): "run" brings it to this release's version
# itself (its database role owns the schema); "await" only checks it, waiting not ready until the migration Job
# (`python -m services.<svc> migrate`, as a role that may change it) has brought it there: the service's own role
# then needs no DDL.
MIGRATIONS_RUN = "run"


class SchemaBehind(Exception):
    """The schema is older than this release's (or empty), and the service does not migrate: worth waiting."""


class SchemaUnknown(Exception):
    """The schema is at a version that is neither this release's nor a later one of the same service."""


def prepare_schema(engine: sa.Engine, migrations: Path, mode: str) -> None:
    """Migrate (MIGRATIONS_RUN), or check that the schema is this release's ("await": SchemaBehind if not).

    A schema a later release has migrated is served as it is, with a warning, in either mode: a release's
    migrations keep the previous release working, so its pods can restart (or be rolled back to) mid-update.
    Revisions are numbered 0001, 0002 ... in each service, which is how "later" is told."""
    scripts = ScriptDirectory(str(migrations))
    head, current = scripts.get_current_head(), schema_version(engine)
    if current not in {script.revision for script in scripts.walk_revisions()} | {None}:
        if not (current.isdigit() and head.isdigit() and int(current) > int(head)):
            raise SchemaUnknown(f"the schema is at version {current}, which is neither this release's ({head}) nor "
                                f"a later one of this service: is this the service's own database?")
        log(logger, logging.WARNING, "the schema is at a later release's version: serving on it (migrations keep "
            "the previous release working)", schema=current, release=head)
        return
    if mode == MIGRATIONS_RUN:
        migrate(engine, migrations)
    elif current != head:
        raise SchemaBehind(f"the schema is at version {current or 'none (empty)'}, this release needs {head}: "
                           f"waiting for its migrations (`python -m services.<service> migrate`, the migrate Job)")


def schema_version(engine: sa.Engine) -> str | None:
    """The Alembic revision the database's schema is at (None: never migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def worth_waiting(error: BaseException) -> bool:
    """A database that does not answer yet, or whose schema its migration has not reached yet."""
    return isinstance(error, SchemaBehind) or unreachable(error)


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


# PostgreSQL's SQLSTATEs that mean the server or the path to it, not the request: connection exceptions
# (class 08), a server shutting down or restarting, too many connections, insufficient resources (disk full,
# out of memory: class 53), a statement ended at our timeout (the server too slow or stuck behind a lock), and
# a transaction that lost a race (serialization failure, deadlock: trying again succeeds).
_LOST_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57014", "40001", "40P01"})
_LOST_SQLSTATE_CLASSES = ("08", "53")
# What SQLite says when its file cannot be used (missing folder, full disk, a lock held past the busy timeout);
# everything else it says (a syntax error, a constraint, a missing table) is about the request or the schema.
_SQLITE_AWAY = ("unable to open database", "database is locked", "disk i/o error", "database or disk is full",
                "readonly database")


def connection_lost(exc: BaseException) -> bool:
    """The database did not answer or the connection broke (server gone, restarting, full, network, a frozen
    statement ended, no pooled connection free in time): retrying later may succeed. A statement the database
    refused (a constraint, a value too large, bad SQL, a missing table) is not."""
    if isinstance(exc, sa.exc.TimeoutError):  # the pool had no connection to give within its timeout
        return True
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, sa.exc.InterfaceError):
        return True
    original = exc.orig
    if type(original).__module__.split(".")[0] == "sqlite3":
        return isinstance(exc, sa.exc.OperationalError) and any(
            phrase in str(original).lower() for phrase in _SQLITE_AWAY)
    state = getattr(original, "sqlstate", None)
    if state is None:  # the driver's own (no server reply): the connection failed or timed out
        return isinstance(exc, sa.exc.OperationalError)
    return state in _LOST_SQLSTATES or state.startswith(_LOST_SQLSTATE_CLASSES)


class Outage:
    """What one service says about its own database going away: one warning when it stops answering (with
    the driver's first line, for the operator), again every OUTAGE_REPEAT_SECONDS while it lasts, one line
    when it answers again. Thread-safe; calls come from the service's worker threads."""

    def __init__(self, what: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._said_at = 0.0
        self._failures = 0

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> Unavailable:
        """Note a failure; the refusal to raise instead (no driver text: that is for the log)."""
        now = self._clock()
        with self._lock:
            self._failures += 1
            first = self._since is None
            if first:
                self._since = now
            due = first or now - self._said_at >= OUTAGE_REPEAT_SECONDS
            if due:
                self._said_at, failures, since = now, self._failures, self._since
        if due:
            log(logger, logging.WARNING, f"{self.what} is not answering" if first else
                f"{self.what} is still not answering", cause=_first_line(exc), failed_calls=failures,
                down_seconds=round(now - since, 1))
        return unavailable(self.what)

    def answered(self) -> None:
        if self._since is None:  # the common case: no lock, nothing to say
            return
        with self._lock:
            if self._since is None:
                return
            down, self._since, self._failures = self._clock() - self._since, None, 0
        log(logger, logging.INFO, f"{self.what} is answering again", down_seconds=round(down, 1))

    @contextmanager
    def guard(self, success_tells: bool = True) -> Iterator[None]:
        """Run database work: a lost database becomes DATABASE_UNAVAILABLE (Unavailable), said once.
        `success_tells=False` for work that may not reach the database at all: its success proves nothing."""
        try:
            yield
        except Exception as exc:
            if connection_lost(exc):
                raise self.failed(exc) from None
            raise
        if success_tells:
            self.answered()


class OffLoop:
    """A service's own database as its event loop reaches it (§10): blocking calls on a bounded pool, each
    under the process's one Outage, so a lost database is DATABASE_UNAVAILABLE wherever it is noticed."""

    def __init__(self, pool: Executor, outage: Outage) -> None:
        self.pool = pool
        self.outage = outage

    async def __call__(self, function, *args, **kwargs):
        """`function(*args, **kwargs)` on the pool, guarded."""
        return await self.on(self.pool, function, *args, **kwargs)

    async def on(self, executor: Executor, function, *args, **kwargs):
        """The same on another executor (say, one that must not queue behind the pool's slow work)."""
        return await asyncio.get_running_loop().run_in_executor(
            executor, partial(self.guarded, function, *args, **kwargs))

    def guarded(self, function, *args, **kwargs):
        """`function(*args, **kwargs)` in the calling thread, guarded: for work handed to a pool directly."""
        with self.outage.guard():
            return function(*args, **kwargs)


def unavailable(what: str) -> Unavailable:
    return Unavailable(DATABASE_UNAVAILABLE, f"Tessera's {what} is not answering right now; "
                       "try again in a few seconds", {"retryable": "true"})


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return (text.splitlines() or [type(exc).__name__])[0][:200]
