"""The broker's records of people's web sessions (§2): what makes signing out count on every web replica.

One row per sign-in, in the broker's database beside the passkeys (table `web_sessions`, migration 0008).
The cookie's secret is kept only as its SHA-256, so the table holds no usable session. Rows stay bounded:
a person keeps at most MAX_PER_PERSON sessions (the oldest go when a new one opens), and expired rows, or
rows ended more than ENDED_KEPT_SECONDS ago, are purged by the broker's sweep, except each person's newest:
it says when they last signed in, which the next sign-in's "passkeys added since" notice counts from.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from services.capabilities.store import web_sessions
from shared.data import db

MAX_PER_PERSON = 50  # browsers and devices of one person at once; the oldest sign-in goes first beyond it
ENDED_KEPT_SECONDS = 3600.0  # an ended session still says "ended" (not "unknown") for this long


@dataclass(frozen=True)
class WebSessionRecord:
    session_id: str
    tenant_id: str
    actor_id: str
    display_name: str
    signed_in_with: str  # "link" or "oidc"
    created_at: float
    expires_at: float
    revoked_at: float | None


class WebSessionStore:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.writer = db.Writer(engine)

    def open(self, record: WebSessionRecord, secret_sha256: str) -> float | None:
        """Keep a new session (the person's oldest go beyond MAX_PER_PERSON); when the person's previous session
        opened, or None when none is on record."""
        with self.writer.begin() as connection:
            previous = connection.execute(sa.select(sa.func.max(web_sessions.c.created_at)).where(
                web_sessions.c.tenant_id == record.tenant_id, web_sessions.c.actor_id == record.actor_id)).scalar()
            kept = connection.execute(sa.select(web_sessions.c.session_id).where(
                web_sessions.c.tenant_id == record.tenant_id, web_sessions.c.actor_id == record.actor_id)
                .order_by(web_sessions.c.created_at.desc()).offset(MAX_PER_PERSON - 1)).scalars().all()
            if kept:
                connection.execute(web_sessions.delete().where(web_sessions.c.session_id.in_(kept)))
            connection.execute(web_sessions.insert().values(
                session_id=record.session_id, secret_sha256=secret_sha256, tenant_id=record.tenant_id,
                actor_id=record.actor_id, display_name=record.display_name, signed_in_with=record.signed_in_with,
                created_at=record.created_at, expires_at=record.expires_at, revoked_at=None))
            return previous

    def find(self, secret_sha256: str) -> WebSessionRecord | None:
        """The session whose secret has this hash, in whatever state it is (one read, no transaction)."""
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(web_sessions).where(
                web_sessions.c.secret_sha256 == secret_sha256)).first()
        return _record(row) if row else None

    def end(self, secret_sha256: str, now: float) -> WebSessionRecord | None:
        """End the open session with this secret's hash; the session ended, or None (none open)."""
        with self.writer.begin() as connection:
            row = connection.execute(sa.select(web_sessions).where(
                web_sessions.c.secret_sha256 == secret_sha256, web_sessions.c.revoked_at.is_(None),
                web_sessions.c.expires_at > now).with_for_update()).first()
            if row is None:
                return None
            connection.execute(web_sessions.update().where(web_sessions.c.session_id == row.session_id)
                               .values(revoked_at=now))
            return _record(row)

    def end_all_of(self, tenant_id: str, actor_id: str, now: float) -> int:
        """End every open session of a person; how many were open."""
        with self.writer.begin() as connection:
            return end_sessions_of(connection, tenant_id, actor_id, now)

    def purge(self, now: float) -> int:
        """Remove expired sessions and those ended long enough ago, but each person's newest; how many went."""
        newer = web_sessions.alias("newer")
        has_newer = sa.exists().where(newer.c.tenant_id == web_sessions.c.tenant_id,
                                      newer.c.actor_id == web_sessions.c.actor_id,
                                      sa.or_(newer.c.created_at > web_sessions.c.created_at,
                                             sa.and_(newer.c.created_at == web_sessions.c.created_at,
                                                     newer.c.session_id > web_sessions.c.session_id)))
        with self.writer.begin() as connection:
            return connection.execute(web_sessions.delete().where(sa.or_(
                web_sessions.c.expires_at <= now, web_sessions.c.revoked_at <= now - ENDED_KEPT_SECONDS),
                has_newer)).rowcount


def end_sessions_of(connection, tenant_id: str, actor_id: str, now: float) -> int:
    """Inside a transaction: end every open session of a person (sign-out by the operator, or a change of their
    passkeys in the same transaction); how many were open."""
    return connection.execute(web_sessions.update().where(
        web_sessions.c.tenant_id == tenant_id, web_sessions.c.actor_id == actor_id,
        web_sessions.c.revoked_at.is_(None), web_sessions.c.expires_at > now).values(revoked_at=now)).rowcount


def _record(row) -> WebSessionRecord:
    return WebSessionRecord(row.session_id, row.tenant_id, row.actor_id, row.display_name, row.signed_in_with,
                            row.created_at, row.expires_at, row.revoked_at)
