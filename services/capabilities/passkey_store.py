"""The broker's record of people's passkeys, their one-time enrollment links and the decision nonces.

Tables beside the intents (store.py; same database, same Alembic history):
`passkeys` (public keys only), `enrollments` (a link's token is kept as its
SHA-256, so the database never holds a usable link) and `decision_nonces`
(single use; consumed in the transaction that records the decision).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlalchemy as sa

from services.capabilities.store import PasskeyUse, decision_nonces, enrollments, passkeys
from services.capabilities.web_session_store import end_sessions_of
from shared.data import db
from shared.rpc.refusals import AlreadyExists, Conflict, Denied, Exhausted, NotFound

MAX_OPEN_NONCES = 20  # per approval: each BeginDecision adds one; a page asking in a loop is refused, not stored


@dataclass(frozen=True)
class Passkey:
    credential_id: str
    tenant_id: str
    actor_id: str
    public_key: bytes
    sign_count: int
    aaguid: str = ""
    created_at: float = 0.0
    last_used_at: float | None = None


@dataclass(frozen=True)
class Enrollment:
    enrollment_id: str
    tenant_id: str
    actor_id: str
    display_name: str
    expires_at: float
    challenge: bytes
    registered: bool


class PasskeyStore:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.writer = db.Writer(engine)

    # --- enrollment links ---------------------------------------------------------------------------------

    def create_link(self, token_sha256: str, tenant_id: str, actor_id: str, display_name: str, created_by: str,
                    expires_at: float, replace: bool = False) -> tuple[int, list[str], int]:
        """Record a link (by its token's hash); (the person's passkey count, the credential ids revoked, the web
        sessions ended).

        `replace` revokes every passkey the person has, in the same transaction: the link then enrolls a first
        passkey again, which needs no existing one's signature. It ends the person's web sessions in that
        transaction too: whoever replaced a passkey the operator no longer trusts must not stay signed in."""
        with self.writer.begin() as connection:
            revoked, ended = [], 0
            if replace:
                revoked = list(connection.execute(sa.select(passkeys.c.credential_id).where(
                    passkeys.c.tenant_id == tenant_id, passkeys.c.actor_id == actor_id)).scalars())
                connection.execute(passkeys.delete().where(
                    passkeys.c.tenant_id == tenant_id, passkeys.c.actor_id == actor_id))
                ended = end_sessions_of(connection, tenant_id, actor_id, time.time())
            connection.execute(enrollments.insert().values(
                token_sha256=token_sha256, tenant_id=tenant_id, actor_id=actor_id, display_name=display_name,
                created_by=created_by, created_at=time.time(), expires_at=expires_at))
            return _count(connection, tenant_id, actor_id), revoked, ended

    def redeem_link(self, token_sha256: str, enrollment_id: str,
                    challenge: bytes) -> tuple[Enrollment, list[Passkey], list[Passkey]]:
        """Use a link once: (its enrollment, the person's passkeys, those registered since their previous sign-in
        by link, which they are shown). Unknown, used or expired → refused."""
        now = time.time()
        with self.writer.begin() as connection:
            row = connection.execute(sa.select(enrollments).where(enrollments.c.token_sha256 == token_sha256)
                                     .with_for_update()).first()
            if row is None:
                raise NotFound("LINK_UNKNOWN",
                               "this sign-in link is not one Tessera made; ask your operator for a new one")
            if row.redeemed_at is not None:
                raise Conflict("LINK_USED",
                               "this sign-in link was used already (each link works once); ask your operator "
                               "for a new one")
            if now >= row.expires_at:
                raise Conflict("LINK_EXPIRED",
                               "this sign-in link expired (links last 10 minutes); ask your operator for a new one")
            previous_sign_in = connection.execute(sa.select(sa.func.max(enrollments.c.redeemed_at)).where(
                enrollments.c.tenant_id == row.tenant_id, enrollments.c.actor_id == row.actor_id)).scalar()
            connection.execute(enrollments.update().where(enrollments.c.token_sha256 == token_sha256).values(
                redeemed_at=now, enrollment_id=enrollment_id, challenge=challenge))
            enrollment = Enrollment(enrollment_id, row.tenant_id, row.actor_id, row.display_name, row.expires_at,
                                    challenge, False)
            held = [_passkey(r) for r in connection.execute(sa.select(passkeys).where(
                passkeys.c.tenant_id == row.tenant_id, passkeys.c.actor_id == row.actor_id)
                .order_by(passkeys.c.created_at))]
            return enrollment, held, [p for p in held if p.created_at > (previous_sign_in or 0.0)]

    def enrollment(self, enrollment_id: str) -> Enrollment | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(enrollments).where(
                enrollments.c.enrollment_id == enrollment_id)).first()
        if row is None:
            return None
        return Enrollment(row.enrollment_id, row.tenant_id, row.actor_id, row.display_name, row.expires_at,
                          row.challenge, row.registered_at is not None)

    # --- passkeys -----------------------------------------------------------------------------------------

    def register(self, enrollment_id: str, credential_id: str, public_key: bytes, sign_count: int,
                 aaguid: str, signed_by: PasskeyUse | None = None) -> int:
        """Keep a verified credential for the enrollment's person, once per enrollment; their passkey count.

        A person who has a passkey adds another only with `signed_by`: a verified assertion of one of theirs over
        this enrollment, whose counter advances here (compare-and-set), in the transaction that adds the key."""
        try:
            return self._register(enrollment_id, credential_id, public_key, sign_count, aaguid, signed_by)
        except sa.exc.IntegrityError:  # the same credential registered through another link at this moment
            raise AlreadyExists("PASSKEY_ALREADY_REGISTERED",
                                "this passkey is registered already") from None

    def _register(self, enrollment_id: str, credential_id: str, public_key: bytes, sign_count: int,
                  aaguid: str, signed_by: PasskeyUse | None) -> int:
        now = time.time()
        with self.writer.begin() as connection:
            row = connection.execute(sa.select(enrollments).where(enrollments.c.enrollment_id == enrollment_id)
                                     .with_for_update()).one()
            if row.registered_at is not None:
                raise Conflict("ENROLLMENT_USED",
                               "this enrollment registered a passkey already; a new link adds another")
            if connection.execute(sa.select(passkeys.c.credential_id).where(
                    passkeys.c.credential_id == credential_id)).first() is not None:
                raise AlreadyExists("PASSKEY_ALREADY_REGISTERED",
                                    "this passkey is registered already")
            _countersigned(connection, row.tenant_id, row.actor_id, signed_by, now)
            connection.execute(passkeys.insert().values(
                credential_id=credential_id, tenant_id=row.tenant_id, actor_id=row.actor_id, public_key=public_key,
                sign_count=sign_count, aaguid=aaguid, created_at=now))
            connection.execute(enrollments.update().where(enrollments.c.enrollment_id == enrollment_id)
                               .values(registered_at=now))
            return _count(connection, row.tenant_id, row.actor_id)

    def passkeys_of(self, tenant_id: str, actor_id: str) -> list[Passkey]:
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(passkeys).where(
                passkeys.c.tenant_id == tenant_id, passkeys.c.actor_id == actor_id)
                .order_by(passkeys.c.created_at)).all()
        return [_passkey(r) for r in rows]

    def revoke(self, tenant_id: str, actor_id: str, credential_id: str) -> tuple[int, int]:
        """Remove one of a person's passkeys and, in the same transaction, end their web sessions (one may be
        the browser of whoever held the revoked key); (passkeys left, sessions ended). Not theirs (or none such)
        → refused, and nothing ends."""
        with self.writer.begin() as connection:
            removed = connection.execute(passkeys.delete().where(
                passkeys.c.credential_id == credential_id, passkeys.c.tenant_id == tenant_id,
                passkeys.c.actor_id == actor_id))
            if removed.rowcount != 1:
                raise NotFound("PASSKEY_UNKNOWN", "this person has no such passkey")
            ended = end_sessions_of(connection, tenant_id, actor_id, time.time())
            return _count(connection, tenant_id, actor_id), ended

    def passkey(self, credential_id: str) -> Passkey | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(passkeys).where(passkeys.c.credential_id == credential_id)).first()
        return _passkey(row) if row else None

    # --- decision nonces ----------------------------------------------------------------------------------

    def nonce_used(self, nonce: str) -> bool:
        with self.engine.connect() as connection:
            return connection.execute(sa.select(decision_nonces.c.used_at).where(
                decision_nonces.c.nonce == nonce)).scalar() is not None

    def issue_nonce(self, nonce: str, approval_id: str, tenant_id: str, actor_id: str, expires_at: float) -> None:
        now = time.time()
        with self.writer.begin() as connection:
            # Expired nonces of this approval go now; used ones stay as the record of what was consumed.
            connection.execute(decision_nonces.delete().where(
                decision_nonces.c.approval_id == approval_id, decision_nonces.c.expires_at <= now,
                decision_nonces.c.used_at.is_(None)))
            open_ = connection.execute(sa.select(sa.func.count()).select_from(decision_nonces).where(
                decision_nonces.c.approval_id == approval_id, decision_nonces.c.used_at.is_(None))).scalar_one()
            if open_ >= MAX_OPEN_NONCES:
                raise Exhausted("TOO_MANY_OPEN_DECISIONS",
                                f"at most {MAX_OPEN_NONCES} decisions may be open on one approval at a time; "
                                "finish one or wait a few minutes")
            connection.execute(decision_nonces.insert().values(
                nonce=nonce, approval_id=approval_id, tenant_id=tenant_id, actor_id=actor_id, expires_at=expires_at))


def _countersigned(connection, tenant_id: str, actor_id: str, signed_by: PasskeyUse | None, now: float) -> None:
    """Inside the registering transaction: a person who has a passkey needs one of theirs to have signed, and
    that passkey's counter advances once (a second registration racing with the same assertion finds it moved)."""
    if signed_by is None:
        if _count(connection, tenant_id, actor_id):
            raise Denied("PASSKEY_SIGNATURE_REQUIRED",
                         "you have a passkey already: adding another needs one of yours to sign the enrollment")
        return
    moved = connection.execute(passkeys.update().where(
        passkeys.c.credential_id == signed_by.credential_id, passkeys.c.tenant_id == tenant_id,
        passkeys.c.actor_id == actor_id, passkeys.c.sign_count == signed_by.seen_count)
        .values(sign_count=signed_by.new_count, last_used_at=now))
    if moved.rowcount != 1:
        raise Conflict("ASSERTION_REPLAYED",
                       "the existing passkey signed something else meanwhile (or was revoked); add the passkey again")


def _count(connection, tenant_id: str, actor_id: str) -> int:
    return connection.execute(sa.select(sa.func.count()).select_from(passkeys).where(
        passkeys.c.tenant_id == tenant_id, passkeys.c.actor_id == actor_id)).scalar_one()


def _passkey(row) -> Passkey:
    return Passkey(row.credential_id, row.tenant_id, row.actor_id, row.public_key, row.sign_count, row.aaguid,
                   row.created_at, row.last_used_at)
