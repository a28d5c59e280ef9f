"""The broker's own database (§7, §10): intents, approvals, the outbox of host events, the audit trail.

Every state change is one transaction that also appends its audit record and,
for intents shown on a surface, the host event to publish — so a crash can
never leave a decision without its record or its event. SQLAlchemy Core;
SQLite under var/ by default (one process), PostgreSQL by URL (any number of
replicas: row claims and leases for intents and expiry, an advisory lock for
the outbox); schema by Alembic.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import sqlalchemy as sa

from services.capabilities.read_journal import ExternalRead
from shared.data import db
from shared.rpc.refusals import Conflict, Denied, NotFound
from tessera.common.v1 import common_pb2  # the intent statuses (enum values) only: the store builds no messages

MIGRATIONS = Path(__file__).parent / "migrations"
metadata = sa.MetaData()
intents = sa.Table(
    "intents", metadata, sa.Column("intent_id", sa.String, primary_key=True), sa.Column("claim", sa.String),
    sa.Column("tenant_id", sa.String), sa.Column("actor_id", sa.String), sa.Column("session_id", sa.String),
    sa.Column("action_id", sa.String), sa.Column("effect", sa.Integer), sa.Column("input_json", sa.Text),
    sa.Column("arguments_json", sa.Text), sa.Column("arguments_sha256", sa.String), sa.Column("status", sa.Integer),
    sa.Column("reason", sa.String), sa.Column("result_digest", sa.String), sa.Column("approval_id", sa.String),
    sa.Column("surface_json", sa.Text), sa.Column("dry_run", sa.Boolean), sa.Column("attempted", sa.Boolean),
    sa.Column("accepted_at", sa.Float), sa.Column("updated_at", sa.Float), sa.Column("turn_id", sa.String),
    sa.Column("lease_owner", sa.String), sa.Column("lease_until", sa.Float))
approvals = sa.Table(
    "approvals", metadata, sa.Column("approval_id", sa.String, primary_key=True), sa.Column("intent_id", sa.String),
    sa.Column("tenant_id", sa.String), sa.Column("state", sa.String), sa.Column("requested_at", sa.Float),
    sa.Column("expires_at", sa.Float), sa.Column("decided_at", sa.Float), sa.Column("decided_by", sa.String),
    sa.Column("decision_reason", sa.Text), sa.Column("approved_entries", sa.Text),
    sa.Column("decision_id", sa.String), sa.Column("decision_digest", sa.String),
    sa.Column("signed_with", sa.String))
outbox = sa.Table(
    "outbox", metadata, sa.Column("sequence", sa.Integer, primary_key=True), sa.Column("event_id", sa.String),
    sa.Column("request", sa.LargeBinary), sa.Column("state", sa.String), sa.Column("attempts", sa.Integer),
    sa.Column("last_error", sa.String), sa.Column("intent_id", sa.String), sa.Column("event_json", sa.Text))
cancelled_turns = sa.Table(
    "cancelled_turns", metadata, sa.Column("tenant_id", sa.String, primary_key=True),
    sa.Column("actor_id", sa.String, primary_key=True), sa.Column("session_id", sa.String, primary_key=True),
    sa.Column("turn_id", sa.String, primary_key=True), sa.Column("cancelled_at", sa.Float))
run_reads = sa.Table(
    "run_reads", metadata, sa.Column("sequence", sa.Integer, primary_key=True), sa.Column("session_id", sa.String),
    sa.Column("turn_id", sa.String), sa.Column("tenant_id", sa.String), sa.Column("source", sa.String),
    sa.Column("ref", sa.String), sa.Column("text", sa.Text), sa.Column("clipped", sa.Boolean),
    sa.Column("matches_json", sa.Text), sa.Column("at", sa.Float))
audit_events = sa.Table(
    "audit_events", metadata, sa.Column("sequence", sa.Integer, primary_key=True), sa.Column("at", sa.Float),
    sa.Column("tenant_id", sa.String), sa.Column("kind", sa.String), sa.Column("intent_id", sa.String),
    sa.Column("approval_id", sa.String), sa.Column("actor_id", sa.String), sa.Column("detail_json", sa.Text))

passkeys = sa.Table(
    "passkeys", metadata, sa.Column("credential_id", sa.String, primary_key=True),
    sa.Column("tenant_id", sa.String), sa.Column("actor_id", sa.String), sa.Column("public_key", sa.LargeBinary),
    sa.Column("sign_count", sa.BigInteger), sa.Column("aaguid", sa.String), sa.Column("created_at", sa.Float),
    sa.Column("last_used_at", sa.Float))
enrollments = sa.Table(
    "enrollments", metadata, sa.Column("token_sha256", sa.String, primary_key=True),
    sa.Column("tenant_id", sa.String), sa.Column("actor_id", sa.String), sa.Column("display_name", sa.String),
    sa.Column("created_by", sa.String), sa.Column("created_at", sa.Float), sa.Column("expires_at", sa.Float),
    sa.Column("redeemed_at", sa.Float), sa.Column("enrollment_id", sa.String), sa.Column("challenge", sa.LargeBinary),
    sa.Column("registered_at", sa.Float))
decision_nonces = sa.Table(
    "decision_nonces", metadata, sa.Column("nonce", sa.String, primary_key=True),
    sa.Column("approval_id", sa.String), sa.Column("tenant_id", sa.String), sa.Column("actor_id", sa.String),
    sa.Column("expires_at", sa.Float), sa.Column("used_at", sa.Float))
web_sessions = sa.Table(
    "web_sessions", metadata, sa.Column("session_id", sa.String, primary_key=True),
    sa.Column("secret_sha256", sa.String), sa.Column("tenant_id", sa.String), sa.Column("actor_id", sa.String),
    sa.Column("display_name", sa.String), sa.Column("signed_in_with", sa.String), sa.Column("created_at", sa.Float),
    sa.Column("expires_at", sa.Float), sa.Column("revoked_at", sa.Float))

TERMINAL = frozenset({common_pb2.INTENT_STATUS_SUCCEEDED, common_pb2.INTENT_STATUS_FAILED,
                      common_pb2.INTENT_STATUS_REJECTED, common_pb2.INTENT_STATUS_EXPIRED,
                      common_pb2.INTENT_STATUS_CANCELLED})


def engine_for(url: str) -> sa.Engine:
    return db.engine_for(url)


# Advisory lock key of the outbox drainer (any fixed 64-bit number, unique within the broker's database).
_OUTBOX_LOCK = 0x7E55E2A_0002
_DAY = 86_400.0


def migrate(engine: sa.Engine, target: str = "head") -> None:
    db.migrate(engine, MIGRATIONS, target)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


@dataclass(frozen=True)
class Surface:
    """Where an intent was asked for on a person's surface (the host's ids): its events go there."""

    surface_id: str
    revision_id: str = ""
    node_id: str = ""
    command_id: str = ""


@dataclass(frozen=True)
class OutboxEvent:
    """A queued host event: its body as the store wrote it, or (queued before migration 0007) the
    serialised request it was then."""

    sequence: int
    event_id: str
    body: dict | None
    legacy_request: bytes | None = None


@dataclass(frozen=True)
class Intent:
    intent_id: str
    tenant_id: str
    actor_id: str
    session_id: str
    action_id: str
    effect: int
    arguments_json: str
    arguments_sha256: str
    status: int
    reason: str
    result_digest: str
    approval_id: str
    surface: Surface | None
    dry_run: bool
    attempted: bool
    accepted_at: float
    updated_at: float

    @property
    def arguments(self) -> dict:
        return json.loads(self.arguments_json)


def receipt_fields(intent: Intent) -> dict:
    """What a receipt says of an intent, as plain values (times in seconds)."""
    return {"intent_id": intent.intent_id, "action_id": intent.action_id, "status": intent.status,
            "approval_id": intent.approval_id, "arguments_sha256": intent.arguments_sha256,
            "result_digest": intent.result_digest, "reason": intent.reason, "dry_run": intent.dry_run,
            "accepted_at": intent.accepted_at, "updated_at": intent.updated_at}


@dataclass(frozen=True)
class Approval:
    approval_id: str
    intent_id: str
    tenant_id: str
    state: str
    requested_at: float
    expires_at: float
    decided_at: float | None
    decided_by: str | None
    decision_reason: str | None
    approved_entries: list[str] | None
    decision_id: str | None = None  # the client's id of the decision, when it sent one
    decision_digest: str | None = None  # SHA-256 of what that decision said
    signed_with: str | None = None  # "passkey:<id>", "operator-key:<key id>" or "unsigned"

    @property
    def decision(self) -> str:
        return {"approved": "approve", "rejected": "reject"}.get(self.state, "")


def _intent(row) -> Intent:
    surface = Surface(**json.loads(row.surface_json)) if row.surface_json else None
    return Intent(row.intent_id, row.tenant_id, row.actor_id, row.session_id, row.action_id, row.effect,
                  row.arguments_json, row.arguments_sha256, row.status, row.reason, row.result_digest,
                  row.approval_id, surface, bool(row.dry_run), bool(row.attempted), row.accepted_at, row.updated_at)


def _approval(row) -> Approval:
    entries = json.loads(row.approved_entries) if row.approved_entries else None
    return Approval(row.approval_id, row.intent_id, row.tenant_id, row.state, row.requested_at, row.expires_at,
                    row.decided_at, row.decided_by, row.decision_reason, entries, row.decision_id,
                    row.decision_digest, row.signed_with)


def outcome(approval: Approval, intent: Intent) -> dict[str, str]:
    """How a decided approval ended, as ErrorInfo metadata: a refused retry still learns what happened."""
    decided_at = "" if approval.decided_at is None else \
        dt.datetime.fromtimestamp(approval.decided_at, dt.UTC).isoformat(timespec="milliseconds")
    found = {"approval_id": approval.approval_id, "approval_state": approval.state, "decision": approval.decision,
             "decided_by": approval.decided_by or "", "decided_at": decided_at,
             "signed_with": approval.signed_with or "", "intent_id": intent.intent_id,
             "intent_status": common_pb2.IntentStatus.Name(intent.status), "intent_reason": intent.reason}
    return {key: value for key, value in found.items() if value}


def _expired(approval: Approval, intent: Intent) -> Conflict:
    return Conflict("APPROVAL_EXPIRED",
                    "the approval expired; expiry counts as rejection", outcome(approval, intent))


def _replay_of(approval: Approval, intent: Intent, actor_id: str, decision_id: str, digest: str) -> Approval:
    """A decided approval: the recorded decision if this is a retry of it, else a refusal that says how it
    ended (so a client whose own decision went through unseen still learns the outcome)."""
    if approval.state == "expired":
        raise _expired(approval, intent)
    if decision_id and approval.decision_id == decision_id:
        if approval.decided_by == actor_id and approval.decision_digest == digest:
            return approval
        raise Conflict("DECISION_ID_CONFLICT",
                       "this decision id was already used for a different decision on this approval; "
                       "a new decision needs a new id", outcome(approval, intent))
    raise Conflict("APPROVAL_ALREADY_DECIDED",
                   f"the approval was already {approval.state}", outcome(approval, intent))


@dataclass(frozen=True)
class Signature:
    """What signed a decision, as verified before the deciding transaction: recorded with the decision."""

    signed_with: str  # "passkey:<credential id>", "operator-key:<key id>" or "unsigned"
    nonce: str = ""  # the BeginDecision nonce it quoted (empty: unsigned)
    passkey: PasskeyUse | None = None


@dataclass(frozen=True)
class PasskeyUse:
    """A verified assertion's credential and its new signature counter, recorded with the decision."""

    credential_id: str
    seen_count: int
    new_count: int


def _consume(connection: sa.Connection, nonce: str, approval_id: str, tenant_id: str, actor_id: str, now: float,
            use: PasskeyUse | None) -> None:
    """Inside the deciding transaction: use the nonce once, and advance the passkey's counter once.

    Both are checked again here (not only before) so two decisions racing with one signed challenge cannot
    both pass: the second finds the nonce used and the counter moved."""
    row = connection.execute(sa.select(decision_nonces).where(decision_nonces.c.nonce == nonce)
                             .with_for_update()).first()
    if row is None or (row.approval_id, row.tenant_id, row.actor_id) != (approval_id, tenant_id, actor_id):
        raise Conflict("NONCE_UNKNOWN",
                       "the decision quotes a nonce this approval did not give out; start the decision again")
    if row.used_at is not None:
        raise Conflict("ASSERTION_REPLAYED",
                       "this signed decision was used already; each signature decides once")
    if now >= row.expires_at:
        raise Conflict("NONCE_EXPIRED",
                       "the decision took too long to sign; start it again")
    connection.execute(decision_nonces.update().where(decision_nonces.c.nonce == nonce).values(used_at=now))
    if use is None:
        return
    moved = connection.execute(passkeys.update().where(
        passkeys.c.credential_id == use.credential_id, passkeys.c.sign_count == use.seen_count)
        .values(sign_count=use.new_count, last_used_at=now))
    if moved.rowcount != 1:
        raise Conflict("ASSERTION_REPLAYED",
                       "the passkey signed something else meanwhile; start the decision again")


def _one_at_a_time_per_turn(connection: sa.Connection, turn: dict) -> None:
    """Inside a transaction: wait for any other transaction on this turn's requests or its cancel to end.

    Without it, on PostgreSQL a request recorded while its turn is being cancelled could miss the cancel's
    mark while the cancel missed the new request, and it would wait for a person. A transaction-scoped
    advisory lock per turn puts the two in some order. (SQLite runs one write transaction at a time.)"""
    if connection.dialect.name != "postgresql":
        return
    named = json.dumps([turn["tenant_id"], turn["actor_id"], turn["session_id"], turn["turn_id"]])
    key = int.from_bytes(hashlib.sha256(named.encode()).digest()[:8], "big", signed=True)
    connection.execute(sa.select(sa.func.pg_advisory_xact_lock(key)))


class OutboxTurn:
    """This replica's turn at draining the outbox: an open transaction holding a PostgreSQL advisory lock.

    An advisory lock rather than row claims: events must reach the host in order, so one replica drains the
    whole queue at a time; and a lock tied to a transaction dies with its connection, so a replica that
    crashes mid-round never leaves the outbox locked (a lease would, until it ran out). On SQLite (one
    process) there is nothing to exclude and the turn holds nothing."""

    def __init__(self, connection: sa.Connection | None) -> None:
        self._connection = connection

    def release(self) -> None:
        if self._connection is None:
            return
        try:
            self._connection.rollback()  # ends the transaction, and with it the lock
        finally:
            self._connection.close()


class BrokerStore:
    def __init__(self, engine: sa.Engine, owner: str = "", lease_seconds: float = 30.0) -> None:
        self.engine = engine
        self.writer = db.Writer(engine)
        self.owner = owner or new_id("rep")  # this process: the holder of the leases it takes
        self.lease_seconds = lease_seconds

    def ping(self) -> str | None:
        return db.ping(self.engine, "broker database")

    @property
    def sole_process(self) -> bool:
        """One broker process is the design here (SQLite): whatever runs was left by its previous life."""
        return self.engine.dialect.name == "sqlite"

    # --- writes: one transaction each, with audit record and host event -----------------------------------

    def _audit(self, connection, kind: str, intent: Intent, actor_id: str = "", approval_id: str = "",
               **detail) -> None:
        connection.execute(audit_events.insert().values(
            at=time.time(), tenant_id=intent.tenant_id, kind=kind, intent_id=intent.intent_id,
            approval_id=approval_id or intent.approval_id, actor_id=actor_id, detail_json=json.dumps(
                detail, sort_keys=True, separators=(",", ":"))))

    def _event(self, connection, intent: Intent, **event) -> None:
        """Queue a host event (`receipt=` or `approval_requested=` plain values) for an intent shown on a
        surface; the publisher makes the message and delivers it."""
        if intent.surface is None:
            return
        body = {"session_id": intent.session_id, "surface": asdict(intent.surface), **event}
        connection.execute(outbox.insert().values(
            event_id=new_id("evt"), intent_id=intent.intent_id, event_json=json.dumps(body, sort_keys=True),
            state="pending", attempts=0))

    def _receipt_event(self, connection, intent: Intent) -> None:
        self._event(connection, intent, receipt=receipt_fields(intent))

    def _load(self, connection, intent_id: str) -> Intent:
        return _intent(connection.execute(sa.select(intents).where(intents.c.intent_id == intent_id)).one())

    def by_claim(self, claim: str) -> Intent | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(intents).where(intents.c.claim == claim)).first()
        return _intent(row) if row else None

    def create(self, claim: str, fields: dict, approval_ttl: float | None,
               effect_label: str) -> tuple[Intent, bool]:
        """Record a new intent (awaiting approval when `approval_ttl` is set); (intent, replayed).

        An intent of a cancelled turn is refused (TURN_CANCELLED) in the same transaction that would record
        it, so a call still in flight when its turn was cancelled leaves no request waiting for a person;
        the same claim made before the cancel still finds its record."""
        now = time.time()
        intent_id = new_id("int")
        approval_id = new_id("apr") if approval_ttl is not None else ""
        status = common_pb2.INTENT_STATUS_AWAITING_APPROVAL if approval_id else common_pb2.INTENT_STATUS_ACCEPTED
        fields = dict(fields)
        surface = fields.pop("surface", None)
        try:
            with self.writer.begin() as connection:
                if fields.get("turn_id"):
                    _one_at_a_time_per_turn(connection, fields)
                if self._turn_cancelled(connection, fields):
                    earlier = connection.execute(sa.select(intents).where(intents.c.claim == claim)).first()
                    if earlier is not None:
                        return _intent(earlier), True
                    raise Conflict("TURN_CANCELLED", "the turn this call belongs to was cancelled")
                connection.execute(intents.insert().values(
                    intent_id=intent_id, claim=claim, status=status, approval_id=approval_id, reason="",
                    result_digest="", attempted=False, accepted_at=now, updated_at=now,
                    surface_json=json.dumps(asdict(surface), sort_keys=True) if surface else None, **fields))
                intent = self._load(connection, intent_id)
                self._audit(connection, "intent-accepted", intent, intent.actor_id, effect=effect_label,
                            action=intent.action_id, arguments_sha256=intent.arguments_sha256)
                if approval_id:
                    expires_at = now + approval_ttl
                    connection.execute(approvals.insert().values(
                        approval_id=approval_id, intent_id=intent_id, tenant_id=intent.tenant_id, state="pending",
                        requested_at=now, expires_at=expires_at))
                    self._audit(connection, "approval-requested", intent, intent.actor_id, expires_at=expires_at)
                    self._event(connection, intent, approval_requested={
                        "approval_id": approval_id, "intent_id": intent_id, "action_id": intent.action_id,
                        "effect": intent.effect, "node_id": intent.surface.node_id if intent.surface else "",
                        "arguments_sha256": intent.arguments_sha256, "expires_at": expires_at})
                else:
                    self._receipt_event(connection, intent)
        except sa.exc.IntegrityError:  # the same claim won a race: that one is the record
            earlier = self.by_claim(claim)
            if earlier is None:
                raise
            return earlier, True
        return intent, False

    @staticmethod
    def _turn_cancelled(connection, fields: dict) -> bool:
        if not fields.get("turn_id"):
            return False
        return connection.execute(sa.select(cancelled_turns.c.turn_id).where(
            cancelled_turns.c.tenant_id == fields["tenant_id"], cancelled_turns.c.actor_id == fields["actor_id"],
            cancelled_turns.c.session_id == fields["session_id"],
            cancelled_turns.c.turn_id == fields["turn_id"])).first() is not None

    def decide(self, approval_id: str, tenant_id: str, actor_id: str, approve: bool, reason: str,
               arguments_sha256: str, approved_entries: list[str], decision_id: str = "",
               decision_digest: str = "", signature: Signature | None = None) -> tuple[Intent, Approval, bool]:
        """Decide a pending approval once, as the person who asked for it; (intent, approval, replayed).

        `approved_entries`: what an approval covers, as the caller worked it out from the intent's (immutable)
        arguments; ignored for a rejection.

        The decision id and digest are written in the same transaction as the decision, so a retry finds
        exactly what was committed: same id and digest → that decision again (replayed, nothing new
        recorded). A signed decision's nonce is used up (and its passkey's counter advanced) in that same
        transaction. Refusals leave everything as it was, except a due expiry, which is recorded (committed)
        before the refusal is raised."""
        now = time.time()
        self._expire_if_due(approval_id, tenant_id, actor_id, now)
        with self.writer.begin() as connection:
            approval = self._locked(connection, approval_id)
            intent = self._load(connection, approval.intent_id)
            if approval.state != "pending":
                return intent, _replay_of(approval, intent, actor_id, decision_id, decision_digest), True
            if arguments_sha256 != intent.arguments_sha256:
                raise Conflict("ARGUMENTS_CHANGED",
                               "the decision quotes other arguments than the approval's; a change needs a new request")
            approved = list(approved_entries) if approve else []
            signature = signature or Signature("unsigned")
            if approve and not signature.nonce:  # the broker verified none: nothing approves unsigned
                raise Denied("DECISION_UNSIGNED",
                             "approving needs the person's own signature")
            if signature.nonce:
                _consume(connection, signature.nonce, approval_id, tenant_id, actor_id, now, signature.passkey)
            state = "approved" if approve else "rejected"
            status = common_pb2.INTENT_STATUS_RUNNING if approve else common_pb2.INTENT_STATUS_REJECTED
            connection.execute(approvals.update().where(approvals.c.approval_id == approval_id).values(
                state=state, decided_at=now, decided_by=actor_id, decision_reason=reason,
                approved_entries=json.dumps(approved) if approve else None, decision_id=decision_id or None,
                decision_digest=decision_digest or None, signed_with=signature.signed_with))
            # Approving hands the effect to this replica under a lease, in the same transaction: exactly
            # one replica runs it, and another takes it up only if this one stops renewing.
            connection.execute(intents.update().where(intents.c.intent_id == intent.intent_id).values(
                status=status, reason="" if approve else "REJECTED_BY_PERSON", updated_at=now,
                **(self._lease(now) if approve else {})))
            intent = self._load(connection, intent.intent_id)
            self._audit(connection, f"approval-{state}", intent, actor_id, reason=reason, entries=approved,
                        decision_id=decision_id, signed_with=signature.signed_with)
            self._receipt_event(connection, intent)
            approval = self._locked(connection, approval_id)
        return intent, approval, False

    @staticmethod
    def _locked(connection, approval_id: str) -> Approval:
        return _approval(connection.execute(sa.select(approvals).where(
            approvals.c.approval_id == approval_id).with_for_update()).one())

    def _expire_if_due(self, approval_id: str, tenant_id: str, actor_id: str, now: float) -> None:
        """Refuse an approval that is not the person's; record (commit) a due expiry, then refuse."""
        with self.writer.begin() as connection:
            row = connection.execute(sa.select(approvals).where(approvals.c.approval_id == approval_id)
                                     .with_for_update()).first()
            intent = self._load(connection, row.intent_id) if row is not None else None
            # Another person's approval (their run, their reads) does not exist for you.
            if intent is None or (intent.tenant_id, intent.actor_id) != (tenant_id, actor_id):
                raise NotFound("APPROVAL_UNKNOWN", "no such approval")
            approval = _approval(row)
            due = approval.state == "pending" and now >= approval.expires_at
            if due:
                self._expire(connection, approval, intent, now)
                approval, intent = self._locked(connection, approval_id), self._load(connection, intent.intent_id)
        if due:
            raise _expired(approval, intent)

    def _expire(self, connection, approval: Approval, intent: Intent, now: float) -> None:
        connection.execute(approvals.update().where(approvals.c.approval_id == approval.approval_id)
                           .values(state="expired", decided_at=now))
        connection.execute(intents.update().where(intents.c.intent_id == intent.intent_id).values(
            status=common_pb2.INTENT_STATUS_EXPIRED, reason="APPROVAL_EXPIRED", updated_at=now))
        expired = self._load(connection, intent.intent_id)
        self._audit(connection, "approval-expired", expired)
        self._receipt_event(connection, expired)

    def expire_due(self, now: float | None = None) -> list[Approval]:
        """Expire every pending approval past its time; the expired ones.

        Row claims with SKIP LOCKED: replicas sweeping at once split the due rows between them instead of
        queueing behind each other, and a row being decided right now is left to its decision."""
        now = time.time() if now is None else now
        with self.writer.begin() as connection:
            due = [_approval(r) for r in connection.execute(sa.select(approvals).where(
                approvals.c.state == "pending", approvals.c.expires_at <= now).with_for_update(skip_locked=True))]
            for approval in due:
                self._expire(connection, approval, self._load(connection, approval.intent_id), now)
        return due

    def cancel_turn(self, tenant_id: str, actor_id: str, session_id: str, turn_id: str) -> list[Intent]:
        """Cancel the turn's requests still waiting for a person; the cancelled ones. The turn is marked
        cancelled too, so a request of it arriving later is refused (see `create`)."""
        now = time.time()
        turn = {"tenant_id": tenant_id, "actor_id": actor_id, "session_id": session_id, "turn_id": turn_id}
        with self.writer.begin() as connection:
            _one_at_a_time_per_turn(connection, turn)
            # A turn's calls cannot arrive a day after it was cancelled: older marks are no longer needed.
            connection.execute(cancelled_turns.delete().where(cancelled_turns.c.cancelled_at < now - _DAY))
            if not self._turn_cancelled(connection, turn):
                connection.execute(cancelled_turns.insert().values(cancelled_at=now, **turn))
            waiting = [_intent(r) for r in connection.execute(sa.select(intents).where(
                intents.c.tenant_id == tenant_id, intents.c.actor_id == actor_id,
                intents.c.session_id == session_id, intents.c.turn_id == turn_id,
                intents.c.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL).with_for_update())]
            cancelled = []
            for intent in waiting:
                connection.execute(approvals.update().where(approvals.c.approval_id == intent.approval_id,
                                                            approvals.c.state == "pending")
                                   .values(state="cancelled", decided_at=now))
                connection.execute(intents.update().where(intents.c.intent_id == intent.intent_id).values(
                    status=common_pb2.INTENT_STATUS_CANCELLED, reason="TURN_CANCELLED", updated_at=now))
                done = self._load(connection, intent.intent_id)
                self._audit(connection, "intent-cancelled", done, actor_id, reason="TURN_CANCELLED")
                self._receipt_event(connection, done)
                cancelled.append(done)
        return cancelled

    def mark_attempted(self, intent_id: str) -> None:
        with self.writer.begin() as connection:
            connection.execute(intents.update().where(intents.c.intent_id == intent_id).values(
                attempted=True, updated_at=time.time()))

    def finish(self, intent_id: str, status: int, reason: str, result_digest: str, **detail) -> Intent:
        """Record how a running intent ended; an intent that already ended keeps its first outcome."""
        with self.writer.begin() as connection:
            changed = connection.execute(intents.update().where(
                intents.c.intent_id == intent_id, intents.c.status == common_pb2.INTENT_STATUS_RUNNING).values(
                status=status, reason=reason, result_digest=result_digest, updated_at=time.time())).rowcount
            intent = self._load(connection, intent_id)
            if not changed:
                return intent
            self._audit(connection, "intent-" + common_pb2.IntentStatus.Name(status).removeprefix(
                "INTENT_STATUS_").lower(), intent, reason=reason, result_digest=result_digest, **detail)
            self._receipt_event(connection, intent)
        return intent

    def record_read(self, tenant_id: str, actor_id: str, session_id: str, turn_id: str, source: str, ref: str,
                    text: str, clipped: bool, matches: list[dict]) -> None:
        """An external read of a run, screened, with its audit record (one transaction)."""
        self.record_reads([ExternalRead(tenant_id, actor_id, session_id, turn_id, source, ref, text, clipped,
                                        matches)])

    def record_reads(self, reads: list[ExternalRead]) -> None:
        """External reads, each with its audit record, in one transaction (statements compiled once: the rows
        go as parameters, not as values built into a new statement per read)."""
        now = time.time()
        with self.writer.begin() as connection:
            connection.execute(run_reads.insert(), [
                {"session_id": r.session_id, "turn_id": r.turn_id, "tenant_id": r.tenant_id, "source": r.source,
                 "ref": r.ref[:300], "text": r.text, "clipped": r.clipped, "matches_json": json.dumps(r.matches),
                 "at": now} for r in reads])
            connection.execute(audit_events.insert(), [
                {"at": now, "tenant_id": r.tenant_id, "kind": "external-read", "intent_id": "", "approval_id": "",
                 "actor_id": r.actor_id, "detail_json": json.dumps(
                     {"session_id": r.session_id, "source": r.source, "ref": r.ref[:300],
                      "flags": [m["rule"] for m in r.matches]}, sort_keys=True)} for r in reads])

    def audit(self, tenant_id: str, kind: str, actor_id: str = "", **detail) -> None:
        """A standalone audit record (e.g. a drift alert)."""
        with self.writer.begin() as connection:
            connection.execute(audit_events.insert().values(
                at=time.time(), tenant_id=tenant_id, kind=kind, intent_id="", approval_id="", actor_id=actor_id,
                detail_json=json.dumps(detail, sort_keys=True)))

    # --- reads --------------------------------------------------------------------------------------------

    def reads_of(self, session_id: str) -> list:
        """A run's external reads, newest first."""
        with self.engine.connect() as connection:
            return list(connection.execute(sa.select(run_reads).where(run_reads.c.session_id == session_id)
                                           .order_by(run_reads.c.sequence.desc())))

    def intent(self, intent_id: str) -> Intent | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(intents).where(intents.c.intent_id == intent_id)).first()
        return _intent(row) if row else None

    def approval(self, approval_id: str) -> tuple[Approval, Intent] | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(approvals).where(approvals.c.approval_id == approval_id)).first()
            if row is None:
                return None
            return _approval(row), self._load(connection, row.intent_id)

    def approval_of(self, approval_id: str, tenant_id: str, actor_id: str) -> tuple[Approval, Intent] | None:
        """The approval and its intent if the person asked for it; None for another person's as for none."""
        found = self.approval(approval_id)
        if found is None or (found[1].tenant_id, found[1].actor_id) != (tenant_id, actor_id):
            return None
        return found

    def approvals_of(self, tenant_id: str, actor_id: str, statuses: list[int], offset: int,
                     limit: int) -> list[tuple]:
        """The approvals a person asked for (through their agent or their surface), newest first."""
        query = (sa.select(approvals, intents).join(intents, intents.c.intent_id == approvals.c.intent_id)
                 .where(approvals.c.tenant_id == tenant_id, intents.c.actor_id == actor_id)
                 .order_by(approvals.c.requested_at.desc(),
                                                                      approvals.c.approval_id)
                 .offset(offset).limit(limit))
        if statuses:
            query = query.where(intents.c.status.in_(statuses))
        with self.engine.connect() as connection:
            return [(_approval(r), _intent(r)) for r in connection.execute(query)]

    # --- leases on running intents ----------------------------------------------------------------------

    def _lease(self, now: float) -> dict:
        return {"lease_owner": self.owner, "lease_until": now + self.lease_seconds}

    def renew(self, intent_id: str) -> bool:
        """Extend this replica's lease on a running intent; False when it is no longer ours to run."""
        now = time.time()
        with self.writer.begin() as connection:
            return connection.execute(intents.update().where(
                intents.c.intent_id == intent_id, intents.c.lease_owner == self.owner,
                intents.c.status == common_pb2.INTENT_STATUS_RUNNING).values(**self._lease(now))).rowcount == 1

    def take_up(self, limit: int = 10, any_lease: bool = False) -> list[Intent]:
        """Claim running intents whose lease ran out (their replica died): ours to run from now on.

        Row claims with FOR UPDATE SKIP LOCKED: each orphan goes to exactly one replica, and replicas
        recovering at once never wait for each other. `any_lease` takes every running intent whatever its
        lease: right for a lone process on SQLite at start (whatever runs was left by its previous life)."""
        now = time.time()
        due = sa.true() if any_lease else sa.or_(intents.c.lease_until.is_(None), intents.c.lease_until < now)
        with self.writer.begin() as connection:
            rows = connection.execute(sa.select(intents.c.intent_id).where(
                intents.c.status == common_pb2.INTENT_STATUS_RUNNING, due).order_by(intents.c.updated_at)
                .limit(limit).with_for_update(skip_locked=True)).scalars().all()
            if not rows:
                return []
            connection.execute(intents.update().where(intents.c.intent_id.in_(rows)).values(**self._lease(now)))
            taken = [self._load(connection, intent_id) for intent_id in rows]
            for intent in taken:
                self._audit(connection, "intent-taken-up", intent, replica=self.owner)
        return taken

    def audit_after(self, tenant_id: str, after: int, limit: int = 500) -> list:
        with self.engine.connect() as connection:
            # Records of the tenant, and system-wide ones (e.g. tool drift alerts) that carry no tenant data.
            return list(connection.execute(sa.select(audit_events).where(
                audit_events.c.tenant_id.in_([tenant_id, "system"]), audit_events.c.sequence > after)
                .order_by(audit_events.c.sequence).limit(limit)))

    # --- the outbox -----------------------------------------------------------------------------------------

    def outbox_turn(self) -> OutboxTurn | None:
        """This replica's turn at the outbox, or None while another replica drains it."""
        if self.engine.dialect.name != "postgresql":
            return OutboxTurn(None)
        connection = self.engine.connect()
        try:
            # The turn's transaction sits idle while events go out (each may wait for the host): it must not
            # be ended by the idle-in-transaction bound, or another replica would drain the same events.
            connection.exec_driver_sql("SET LOCAL idle_in_transaction_session_timeout = 0")
            if connection.execute(sa.select(sa.func.pg_try_advisory_xact_lock(_OUTBOX_LOCK))).scalar():
                return OutboxTurn(connection)
        except BaseException:
            connection.close()
            raise
        connection.rollback()
        connection.close()
        return None

    def pending_events(self, limit: int = 50) -> list[OutboxEvent]:
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(outbox).where(outbox.c.state == "pending")
                                      .order_by(outbox.c.sequence).limit(limit))
            return [OutboxEvent(row.sequence, row.event_id, json.loads(row.event_json) if row.event_json else None,
                                row.request) for row in rows]

    def event_done(self, sequence: int, state: str, error: str | None = None) -> None:
        with self.writer.begin() as connection:
            connection.execute(outbox.update().where(outbox.c.sequence == sequence).values(
                state=state, attempts=outbox.c.attempts + 1, last_error=error))

    def event_failed(self, sequence: int, error: str) -> None:
        with self.writer.begin() as connection:
            connection.execute(outbox.update().where(outbox.c.sequence == sequence).values(
                attempts=outbox.c.attempts + 1, last_error=error[:300]))
