"""The gateway's own database behind a small port: pinned results, the result cache's index, budgets, asked shapes,
refusals, revoked grants.

Replicas share it (PostgreSQL in production), so a result pinned on one replica
is served by another, a turn's and a session's budgets (probes, analyses) and the
variants of a draft shape a session asked are counted atomically across all of them,
a refused analysis is audited once, a result one replica read is reused by every replica
(result_cache.py), and a revocation holds everywhere (each replica asks again within a bound: revocations.py).
Its schema is Alembic's (migrations/).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from services.resources.ports import Admission, AnalysisLimits, AnalysisRefusal, CachedResult, Search
from services.resources.query_compiler import OutputColumn
from services.resources.results import PinnedResult, content_hash
from shared.data import db
from shared.data.bounded_json import canonical
from shared.data.caches import SharedMemo, bounded_lru

MIGRATIONS = Path(__file__).parent / "migrations"
CACHE_ENTRIES = 16  # pinned results are immutable: a replica may keep the recent ones in memory
SWEEP_INTERVAL_SECONDS = 60.0
AUDIT_RETENTION_SECONDS = 90 * 86_400.0  # refusal records outlive the sessions they name, for review
SESSION_LIFETIME_SECONDS = 12 * 3_600.0  # a session's budget period, unless the gateway's settings say otherwise

_METADATA = sa.MetaData()
PINNED = sa.Table(
    "pinned_results", _METADATA,
    sa.Column("resource_id", sa.String(40), primary_key=True), sa.Column("version_id", sa.String(40)),
    sa.Column("content_hash", sa.String(64)), sa.Column("session_id", sa.String(128)),
    sa.Column("turn_id", sa.String(128)), sa.Column("columns_json", sa.Text), sa.Column("rows_blob", sa.LargeBinary),
    sa.Column("row_count", sa.Integer), sa.Column("truncated", sa.Boolean), sa.Column("created_at", sa.Float))
BUDGETS = sa.Table(
    "turn_budgets", _METADATA,
    sa.Column("session_id", sa.String(128), primary_key=True), sa.Column("turn_id", sa.String(128), primary_key=True),
    sa.Column("kind", sa.String(16), primary_key=True), sa.Column("used", sa.Integer),
    sa.Column("updated_at", sa.Float))
SESSION_BUDGETS = sa.Table(
    "session_budgets", _METADATA,
    sa.Column("session_id", sa.String(128), primary_key=True), sa.Column("kind", sa.String(16), primary_key=True),
    sa.Column("used", sa.Integer), sa.Column("started_at", sa.Float))
# Since the review of issue 38, `shape` holds a searched target's fingerprint (its rows: the target's variants) or
# ASKED (its rows: the session's distinct oracle-prone drafts), not a draft's shape; the table kept its name.
VARIANTS = sa.Table(
    "shape_variants", _METADATA,
    sa.Column("session_id", sa.String(128), primary_key=True), sa.Column("shape", sa.String(64), primary_key=True),
    sa.Column("variant", sa.String(64), primary_key=True), sa.Column("first_at", sa.Float))
REFUSALS = sa.Table(
    "analysis_refusals", _METADATA,
    sa.Column("refusal_id", sa.Integer, primary_key=True, autoincrement=True), sa.Column("refused_at", sa.Float),
    sa.Column("session_id", sa.String(128)), sa.Column("turn_id", sa.String(128)), sa.Column("reason", sa.String(32)),
    sa.Column("budget", sa.String(16)), sa.Column("shape", sa.String(64)), sa.Column("count", sa.Integer),
    sa.Column("bound", sa.Integer))
RESULT_CACHE = sa.Table(
    "result_cache", _METADATA,
    sa.Column("cache_key", sa.String(64), primary_key=True), sa.Column("resource_id", sa.String(40)),
    sa.Column("read_at", sa.Float), sa.Column("expires_at", sa.Float), sa.Column("query_fingerprint", sa.String(64)),
    sa.Column("elapsed", sa.Float), sa.Column("interpretation", sa.LargeBinary))
REVOKED = sa.Table(
    "revoked_grants", _METADATA,
    sa.Column("grant_id", sa.Text, primary_key=True), sa.Column("expires_at", sa.Float))
ASKED = "asked"
_CACHED_FIELDS = tuple(CachedResult.__dataclass_fields__)
_CACHED_COLUMNS = ("cache_key", *_CACHED_FIELDS[1:])  # CachedResult.key is the column cache_key
_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
# What a store that went away raises: no connection, a dropped one, a full pool, a locked file.


class StoreUnavailable(Exception):
    """The store cannot be opened or migrated at start-up; one line, never the URL's credential."""

    def __init__(self, message: str, unreachable: bool) -> None:
        super().__init__(message)
        self.unreachable = unreachable  # no server answered (yet): worth waiting for


def engine_for(url: str) -> sa.Engine:
    return db.engine_for(url)


def migrate(engine: sa.Engine, target: str = "head") -> None:
    db.migrate(engine, MIGRATIONS, target)


def open_store(url: str, budget_lifetime: float, session_lifetime: float = SESSION_LIFETIME_SECONDS,
               migrations: str = db.MIGRATIONS_RUN) -> ResourceStore:
    """The store at `url`, migrated to head (a store made by `create_all` before migrations is adopted), or
    checked to be there ("await": db.prepare_schema)."""
    try:
        backend = sa.make_url(url).get_backend_name()
    except sa.exc.ArgumentError:
        raise StoreUnavailable("TESSERA_RESOURCES_STORE_URL: not a database URL", False) from None
    if backend not in _INSERT:
        raise StoreUnavailable(f"TESSERA_RESOURCES_STORE_URL: the result store runs on SQLite or PostgreSQL, "
                               f"not {backend}", False)
    try:
        engine = engine_for(url)
        db.prepare_schema(engine, MIGRATIONS, migrations)
    except Exception as exc:  # a database that cannot be reached or migrated
        raise StoreUnavailable(f"TESSERA_RESOURCES_STORE_URL: cannot prepare the result store: "
                               f"{str(exc).splitlines()[0][:200]}", db.worth_waiting(exc)) from None
    return ResourceStore(engine, budget_lifetime, session_lifetime=session_lifetime)


class ResourceStore:
    def __init__(self, engine: sa.Engine, budget_lifetime: float, clock: Callable[[], float] = time.time,
                 session_lifetime: float = SESSION_LIFETIME_SECONDS) -> None:
        self.engine = engine
        self.writer = db.Writer(engine)
        # A store that does not answer is a retryable refusal (DATABASE_UNAVAILABLE), said once per outage.
        self.outage = db.Outage("result store")
        self.budget_lifetime = budget_lifetime
        self.session_lifetime = session_lifetime
        self._clock = clock
        self._insert = _INSERT[engine.dialect.name]
        self._cache = SharedMemo(bounded_lru(CACHE_ENTRIES))  # pinned results are immutable: never stale
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def ping(self) -> str | None:
        return db.ping(self.engine, "result store")

    def close(self) -> None:
        self.engine.dispose()

    # --- pinned results --------------------------------------------------

    def pin(self, session_id: str, turn_id: str, columns: list[OutputColumn], rows: list[list],
            truncated: bool) -> PinnedResult:
        rows_json = canonical(rows)  # serialized once: for the hash and for the stored blob
        digest = content_hash(columns, rows, rows_json)
        result = PinnedResult(f"res_{secrets.token_hex(10)}", f"v1-{digest[:16]}", digest, session_id, turn_id,
                              columns, rows, truncated)
        with self.outage.guard(), self.writer.begin() as connection:
            connection.execute(PINNED.insert().values(
                resource_id=result.resource_id, version_id=result.version_id, content_hash=digest,
                session_id=session_id, turn_id=turn_id, columns_json=json.dumps([c.__dict__ for c in columns]),
                rows_blob=zlib.compress(rows_json.encode(), 1), row_count=len(rows), truncated=truncated,
                created_at=self._clock()))
        self._remember(result)
        return result

    def get(self, resource_id: str) -> PinnedResult | None:
        cached = self._cache.get(resource_id)
        if cached is not None:
            return cached
        with self.outage.guard(), self.engine.connect() as connection:
            row = connection.execute(sa.select(PINNED).where(PINNED.c.resource_id == resource_id)).first()
        if row is None:
            return None
        result = PinnedResult(row.resource_id, row.version_id, row.content_hash, row.session_id, row.turn_id,
                              [OutputColumn(**c) for c in json.loads(row.columns_json)],
                              json.loads(zlib.decompress(row.rows_blob)), row.truncated)
        self._remember(result)
        return result

    def remembered(self, resource_id: str) -> PinnedResult | None:
        """The result when this replica holds it in memory; None when only the database could say."""
        return self._cache.get(resource_id)

    def _remember(self, result: PinnedResult) -> None:
        self._cache.put(result.resource_id, result)

    def pin_copy(self, resource_id: str, session_id: str, turn_id: str) -> PinnedResult | None:
        """A pinned result again, for another turn (a reused result): the same rows, version and hash under an id
        of its own, so every offered resource belongs to the turn it was offered to. Copied inside the database
        (the rows are not sent back and forth); None when there is no such result."""
        source = self.get(resource_id)
        if source is None:
            return None
        copy = replace(source, resource_id=f"res_{secrets.token_hex(10)}", session_id=session_id, turn_id=turn_id)
        kept = ("version_id", "content_hash", "columns_json", "rows_blob", "row_count", "truncated")
        copied = sa.select(sa.literal(copy.resource_id, sa.String), *(PINNED.c[name] for name in kept),
                           sa.literal(session_id, sa.String), sa.literal(turn_id, sa.String),
                           sa.literal(self._clock(), sa.Float)).where(PINNED.c.resource_id == resource_id)
        names = ["resource_id", *kept, "session_id", "turn_id", "created_at"]
        with self.outage.guard(), self.writer.begin() as connection:
            inserted = connection.execute(PINNED.insert().from_select(names, copied).returning(PINNED.c.resource_id))
            if inserted.first() is None:  # gone since it was read: nothing to copy
                return None
        self._remember(copy)
        return copy

    # --- the result cache's index --------------------------------------

    def cached(self, key: str, now: float) -> CachedResult | None:
        """The result kept for `key`, unless it expired by `now` (the cache's clock decides)."""
        query = sa.select(*(RESULT_CACHE.c[name] for name in _CACHED_COLUMNS)).where(
            (RESULT_CACHE.c.cache_key == key) & (RESULT_CACHE.c.expires_at > now))
        with self.outage.guard(), self.engine.connect() as connection:
            row = connection.execute(query).first()
        return None if row is None else CachedResult(*row)

    def keep(self, entry: CachedResult) -> None:
        """Index a result under its key (a newer read of the same key replaces an older one)."""
        values = {name: getattr(entry, field) for name, field in zip(_CACHED_COLUMNS, _CACHED_FIELDS, strict=True)}
        statement = self._insert(RESULT_CACHE).values(**values)
        statement = statement.on_conflict_do_update(index_elements=[RESULT_CACHE.c.cache_key], set_={
            name: statement.excluded[name] for name in _CACHED_COLUMNS[1:]})
        with self.outage.guard(), self.writer.begin() as connection:
            connection.execute(statement)

    # --- turn budgets ----------------------------------------------------

    def spend(self, kind: str, session_id: str, turn_id: str, limit: int) -> int | None:
        """Take one unit of the turn's budget of `kind` (probe, analysis): the units used now, or None when none
        was left.

        One statement (insert, or add one where fewer than `limit` are used): the row lock on
        PostgreSQL, BEGIN IMMEDIATE on SQLite, so racing replicas cannot both take the last unit."""
        if limit < 1:
            return None
        self._sweep_when_due()
        with self.outage.guard(), self.writer.begin() as connection:
            return connection.execute(self._spending(kind, session_id, turn_id, limit, self._clock())).scalar()

    def _spending(self, kind: str, session_id: str, turn_id: str, limit: int, now: float):
        """Insert, or add one where fewer than `limit` are used; returns the units used, or no row."""
        statement = self._insert(BUDGETS).values(session_id=session_id, turn_id=turn_id, kind=kind, used=1,
                                                 updated_at=now)
        return statement.on_conflict_do_update(
            index_elements=[BUDGETS.c.session_id, BUDGETS.c.turn_id, BUDGETS.c.kind],
            set_={"used": BUDGETS.c.used + 1, "updated_at": now}, where=BUDGETS.c.used < limit,
        ).returning(BUDGETS.c.used)

    def refund(self, kind: str, session_id: str, turn_id: str) -> None:
        """A unit whose work did not run does not count."""
        key = self._budget(kind, session_id, turn_id) & (BUDGETS.c.used > 0)
        with self.outage.guard(), self.writer.begin() as connection:
            connection.execute(BUDGETS.update().where(key).values(used=BUDGETS.c.used - 1))

    def used(self, kind: str, session_id: str, turn_id: str) -> int:
        with self.outage.guard(), self.engine.connect() as connection:
            return connection.execute(sa.select(BUDGETS.c.used).where(
                self._budget(kind, session_id, turn_id))).scalar() or 0

    @staticmethod
    def _budget(kind: str, session_id: str, turn_id: str):
        return (BUDGETS.c.session_id == session_id) & (BUDGETS.c.turn_id == turn_id) & (BUDGETS.c.kind == kind)

    # --- analyses: the turn's and the session's budgets, the shapes asked -----

    def admit(self, session_id: str, turn_id: str, shape: str, search: Search | None,
              limits: AnalysisLimits) -> Admission:
        """Take one analysis of the session's and the turn's budgets and, for an oracle-prone draft (`search`
        given), record its variant of each target it searches and the draft as asked; or refuse, all or nothing,
        and audit the refusal.

        One transaction. On PostgreSQL its first statement locks the session's budget row, so a session's
        admissions are serialised across replicas (the variant counts below cannot race); SQLite's
        BEGIN IMMEDIATE serialises every writer. A variant asked before costs nothing new."""
        self._sweep_when_due()
        now = self._clock()
        try:
            with self.outage.guard(), self.writer.begin() as connection:
                session_used = self._take_session(connection, session_id, limits.per_session, now)
                turn_used = self._take_turn(connection, session_id, turn_id, limits.per_turn, now)
                if search is not None:
                    self._record_search(connection, session_id, search, limits, now)
                return Admission(turn_used, session_used)
        except _Refused as refused:
            record = AnalysisRefusal(now, session_id, turn_id, refused.reason, refused.budget,
                                     refused.fingerprint or shape, refused.count, refused.bound)
            with self.outage.guard(), self.writer.begin() as connection:
                connection.execute(REFUSALS.insert().values(**asdict(record)))
            return Admission(refused=record)

    def _take_session(self, connection, session_id: str, limit: int, now: float) -> int:
        statement = self._insert(SESSION_BUDGETS).values(session_id=session_id, kind="analysis", used=1,
                                                         started_at=now)
        statement = statement.on_conflict_do_update(
            index_elements=[SESSION_BUDGETS.c.session_id, SESSION_BUDGETS.c.kind],
            set_={"used": SESSION_BUDGETS.c.used + 1}, where=SESSION_BUDGETS.c.used < limit,
        ).returning(SESSION_BUDGETS.c.used)
        used = connection.execute(statement).scalar()
        if used is None:
            raise _Refused("ANALYSIS_BUDGET_SPENT", "session", self._session_used(connection, session_id), limit)
        return used

    def _take_turn(self, connection, session_id: str, turn_id: str, limit: int, now: float) -> int:
        used = connection.execute(self._spending("analysis", session_id, turn_id, limit, now)).scalar()
        if used is None:
            used_now = connection.execute(sa.select(BUDGETS.c.used).where(
                self._budget("analysis", session_id, turn_id))).scalar()
            raise _Refused("ANALYSIS_BUDGET_SPENT", "turn", used_now or 0, limit)
        return used

    def _record_search(self, connection, session_id: str, search: Search, limits: AnalysisLimits,
                       now: float) -> None:
        """Each target's distinct variants (what narrows one hidden value, however the rest of the draft is
        disguised) and the session's distinct oracle-prone drafts (all searches together) are bounded."""
        of_session = VARIANTS.c.session_id == session_id
        for target in search.targets:
            if not self._new(connection, session_id, target, search.variant, now):
                continue  # asked before: nothing new is learnt about this target
            variants = connection.execute(sa.select(sa.func.count()).where(
                of_session & (VARIANTS.c.shape == target))).scalar()
            if variants > limits.variants_per_target:
                raise _Refused("ORACLE_PATTERN", "target", variants - 1, limits.variants_per_target, target)
        if not self._new(connection, session_id, ASKED, search.asked, now):
            return
        searches = connection.execute(sa.select(sa.func.count()).where(
            of_session & (VARIANTS.c.shape == ASKED))).scalar()
        if searches > limits.searches_per_session:
            raise _Refused("ORACLE_PATTERN", "searches", searches - 1, limits.searches_per_session,
                           min(search.targets))

    def _new(self, connection, session_id: str, key: str, variant: str, now: float) -> bool:
        statement = self._insert(VARIANTS).values(session_id=session_id, shape=key, variant=variant, first_at=now)
        statement = statement.on_conflict_do_nothing(
            index_elements=[VARIANTS.c.session_id, VARIANTS.c.shape, VARIANTS.c.variant]).returning(VARIANTS.c.shape)
        return connection.execute(statement).first() is not None

    def release(self, session_id: str, turn_id: str) -> None:
        """An analysis that did not run gives its units back (its variant stays asked: the attempt is counted).
        Rows are taken in admit's order, the session's first, so a release and an admission cannot deadlock."""
        turn = self._budget("analysis", session_id, turn_id) & (BUDGETS.c.used > 0)
        session = (SESSION_BUDGETS.c.session_id == session_id) & (SESSION_BUDGETS.c.kind == "analysis") & \
            (SESSION_BUDGETS.c.used > 0)
        with self.outage.guard(), self.writer.begin() as connection:
            connection.execute(SESSION_BUDGETS.update().where(session).values(used=SESSION_BUDGETS.c.used - 1))
            connection.execute(BUDGETS.update().where(turn).values(used=BUDGETS.c.used - 1))

    def session_used(self, session_id: str) -> int:
        """Analyses the session ran in its current budget period."""
        with self.outage.guard(), self.engine.connect() as connection:
            return self._session_used(connection, session_id)

    @staticmethod
    def _session_used(connection, session_id: str) -> int:
        return connection.execute(sa.select(SESSION_BUDGETS.c.used).where(
            (SESSION_BUDGETS.c.session_id == session_id) & (SESSION_BUDGETS.c.kind == "analysis"))).scalar() or 0

    def refusals(self, session_id: str) -> list[AnalysisRefusal]:
        """The audit of a session's refused analyses, oldest first."""
        query = sa.select(*(REFUSALS.c[name] for name in AnalysisRefusal.__dataclass_fields__)).where(
            REFUSALS.c.session_id == session_id).order_by(REFUSALS.c.refusal_id)
        with self.outage.guard(), self.engine.connect() as connection:
            return [AnalysisRefusal(*row) for row in connection.execute(query)]

    # --- revoked grants --------------------------------------------------

    def revoke(self, grant_id: str, expires_at: float) -> bool:
        """Record a revocation until the grant's own expiry; False when it was already revoked."""
        statement = self._insert(REVOKED).values(grant_id=grant_id, expires_at=expires_at)
        statement = statement.on_conflict_do_nothing(index_elements=[REVOKED.c.grant_id]).returning(REVOKED.c.grant_id)
        with self.outage.guard(), self.writer.begin() as connection:
            return connection.execute(statement).first() is not None

    def revoked_among(self, grant_ids: list[str]) -> set[str]:
        """Which of `grant_ids` are revoked, in one query."""
        with self.outage.guard(), self.engine.connect() as connection:
            return set(connection.execute(sa.select(REVOKED.c.grant_id).where(
                REVOKED.c.grant_id.in_(sorted(grant_ids)))).scalars())

    # --- expiry ----------------------------------------------------------

    def _sweep_when_due(self) -> None:
        now = self._clock()
        with self._lock:
            if now < self._next_sweep:
                return
            self._next_sweep = now + SWEEP_INTERVAL_SECONDS
        self.sweep()

    def sweep(self) -> tuple[int, int]:
        """Forget budgets of turns idle past their lifetime, sessions' budgets and asked shapes past theirs (a
        session lasting longer starts a new period), old refusal records, revocations of expired grants and
        expired entries of the result cache (their pinned results stay: offers were made of them)."""
        now = self._clock()
        session_cutoff = now - self.session_lifetime
        with self.outage.guard(), self.writer.begin() as connection:
            budgets = connection.execute(BUDGETS.delete().where(BUDGETS.c.updated_at < now - self.budget_lifetime))
            connection.execute(SESSION_BUDGETS.delete().where(SESSION_BUDGETS.c.started_at < session_cutoff))
            connection.execute(VARIANTS.delete().where(VARIANTS.c.first_at < session_cutoff))
            connection.execute(REFUSALS.delete().where(REFUSALS.c.refused_at < now - AUDIT_RETENTION_SECONDS))
            revoked = connection.execute(REVOKED.delete().where(REVOKED.c.expires_at <= now))
            connection.execute(RESULT_CACHE.delete().where(RESULT_CACHE.c.expires_at <= now))
            return budgets.rowcount, revoked.rowcount


class _Refused(Exception):
    """Raised inside an admission to roll it back whole; recorded after."""

    def __init__(self, reason: str, budget: str, count: int, bound: int, fingerprint: str = "") -> None:
        super().__init__(reason)
        self.reason, self.budget, self.count, self.bound = reason, budget, count, bound
        self.fingerprint = fingerprint  # the searched target refused, when it is a threshold search
