"""The host's own database: canonical state, changed only in transactions (§6, §10).

SQLAlchemy Core over SQLite (default, under var/) or PostgreSQL; the schema
is created and upgraded by the Alembic migrations in `migrations/`. A
revision commit is one transaction: compare-and-swap on the branch head,
the immutable revision, and its surface events — all or nothing.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from shared import db
from shared.db import WRITE, ping
from tessera.host.v1 import host_pb2

MIGRATIONS = Path(__file__).parent / "migrations"
metadata = sa.MetaData()
sessions = sa.Table("sessions", metadata, sa.Column("session_id", sa.String, primary_key=True),
                    sa.Column("surface_id", sa.String), sa.Column("actor_id", sa.String),
                    sa.Column("tenant_id", sa.String), sa.Column("request_id", sa.String),
                    sa.Column("created_at", sa.Float))
turns = sa.Table("turns", metadata, sa.Column("turn_id", sa.String, primary_key=True),
                 sa.Column("session_id", sa.String), sa.Column("question", sa.Text),
                 sa.Column("request_id", sa.String), sa.Column("created_at", sa.Float))
slices = sa.Table("frozen_slices", metadata, sa.Column("turn_id", sa.String, primary_key=True),
                  sa.Column("slice_hash", sa.String, primary_key=True), sa.Column("slice_id", sa.String),
                  sa.Column("slice_proto", sa.LargeBinary), sa.Column("offers", sa.LargeBinary),
                  sa.Column("created_at", sa.Float))
revisions = sa.Table("revisions", metadata, sa.Column("revision_id", sa.String, primary_key=True),
                     sa.Column("surface_id", sa.String), sa.Column("parent_revision_id", sa.String),
                     sa.Column("turn_id", sa.String), sa.Column("proposal_id", sa.String),
                     sa.Column("content_hash", sa.String), sa.Column("document_json", sa.Text),
                     sa.Column("diagnostics", sa.LargeBinary), sa.Column("committed_at", sa.Float),
                     sa.Column("slice_hash", sa.String), sa.Column("bindings", sa.Text),
                     sa.Column("request_hash", sa.String))
grants = sa.Table("grants", metadata, sa.Column("grant_id", sa.String, primary_key=True),
                  sa.Column("surface_id", sa.String), sa.Column("node_id", sa.String),
                  sa.Column("revision_id", sa.String), sa.Column("resource_id", sa.String),
                  sa.Column("token", sa.LargeBinary), sa.Column("expires_at", sa.Float),
                  sa.Column("revoked", sa.Boolean))
commands = sa.Table("session_commands", metadata, sa.Column("session_id", sa.String, primary_key=True),
                    sa.Column("command_id", sa.String, primary_key=True), sa.Column("payload_hash", sa.String),
                    sa.Column("response", sa.LargeBinary), sa.Column("created_at", sa.Float))
branch_heads = sa.Table("branch_heads", metadata, sa.Column("surface_id", sa.String, primary_key=True),
                        sa.Column("revision_id", sa.String), sa.Column("epoch", sa.Integer),
                        sa.Column("sequence", sa.Integer))
surface_events = sa.Table("surface_events", metadata, sa.Column("surface_id", sa.String, primary_key=True),
                          sa.Column("epoch", sa.Integer, primary_key=True),
                          sa.Column("sequence", sa.Integer, primary_key=True), sa.Column("revision_id", sa.String),
                          sa.Column("payload_hash", sa.String), sa.Column("envelope", sa.LargeBinary),
                          sa.Column("published_at", sa.Float))


# The response of a command whose handler is still running (a claim); real replies are never empty.
PENDING = b""
# The PostgreSQL channel that wakes host replicas; the payload is "<surface_id> <epoch> <sequence> <replica>".
WAKE_CHANNEL = "tessera_surface"
READ_BATCH = 500  # journal envelopes per read; a full batch means there may be more


@dataclass(frozen=True)
class CommandClaim:
    status: str  # claimed | done | pending | reused | released
    response: bytes = b""


class RevisionConflict(Exception):
    """The branch head moved since the proposal's base revision."""

    def __init__(self, head: str | None) -> None:
        super().__init__(f"the current revision is {head or '(none)'}")
        self.head = head


@dataclass(frozen=True)
class Session:
    session_id: str
    surface_id: str
    actor_id: str
    tenant_id: str
    created_at: float


@dataclass(frozen=True)
class Turn:
    turn_id: str
    session_id: str
    question: str


@dataclass(frozen=True)
class ProposalContext:
    """Everything a submitted proposal is checked against, read in one go (each read costs a hop)."""
    turn: Turn | None
    session: Session | None
    frozen_slice: tuple[bytes, bytes] | None  # (slice proto, the signed offers it was frozen with)
    earlier: sa.Row | None  # the revision this proposal id already made (a retry)
    base: sa.Row | None  # the revision the proposal says it builds on


@dataclass(frozen=True)
class Appended:
    epoch: int
    last: int  # the journal's last sequence after the append
    envelopes: list[bytes]  # what was appended, ending at `last` (the fan-out takes them as they are)


@dataclass(frozen=True)
class Committed(Appended):
    revision_id: str = ""
    dropped_grants: list[bytes] = field(default_factory=list)  # revoked: the new head no longer binds them


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def engine_for(url: str) -> sa.Engine:
    return db.engine_for(url)


def migrate(engine: sa.Engine, target: str = "head") -> None:
    db.migrate(engine, MIGRATIONS, target)


class HostStore:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine  # reads
        self.writer = engine.execution_options(**{WRITE: True})  # transactions that write
        self.replica = new_id("hst")  # names this process in its wake-ups, so it can skip its own

    def ping(self) -> str | None:
        return ping(self.engine, "host database")

    # --- sessions and turns ---------------------------------------------

    def _read_or_insert(self, table: sa.Table, where: list, values: dict) -> tuple[sa.Row, bool]:
        """Idempotent creation keyed by `where`: a row a concurrent retry inserted is read back, not an error."""
        for _ in range(2):
            with self.engine.connect() as connection:
                row = connection.execute(sa.select(table).where(*where)).first()
            if row is not None:
                return row, False
            try:
                with self.writer.begin() as connection:
                    connection.execute(table.insert().values(**values))
            except sa.exc.IntegrityError:
                continue
            with self.engine.connect() as connection:
                return connection.execute(sa.select(table).where(*where)).one(), True
        raise RuntimeError(f"{table.name}: row neither found nor created")

    @staticmethod
    def _session(row) -> Session:
        return Session(row.session_id, row.surface_id, row.actor_id, row.tenant_id, row.created_at)

    def open_session(self, actor_id: str, tenant_id: str, request_id: str) -> tuple[Session, bool]:
        """Idempotent per (actor, tenant, request id): a retry returns the same session."""
        row, created = self._read_or_insert(
            sessions, [sessions.c.actor_id == actor_id, sessions.c.tenant_id == tenant_id,
                       sessions.c.request_id == request_id],
            {"session_id": new_id("ses"), "surface_id": new_id("srf"), "actor_id": actor_id,
             "tenant_id": tenant_id, "request_id": request_id, "created_at": time.time()})
        return self._session(row), created

    def session(self, session_id: str) -> Session | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(sessions).where(sessions.c.session_id == session_id)).first()
        return None if row is None else self._session(row)

    def begin_turn(self, session_id: str, question: str, request_id: str) -> Turn:
        """Idempotent per (session, request id)."""
        row, _ = self._read_or_insert(
            turns, [turns.c.session_id == session_id, turns.c.request_id == request_id],
            {"turn_id": new_id("trn"), "session_id": session_id, "question": question, "request_id": request_id,
             "created_at": time.time()})
        return Turn(row.turn_id, row.session_id, row.question)

    def turn(self, turn_id: str) -> Turn | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(turns).where(turns.c.turn_id == turn_id)).first()
        return None if row is None else Turn(row.turn_id, row.session_id, row.question)

    # --- slices ------------------------------------------------------------

    def save_slice(self, turn_id: str, slice_id: str, slice_hash: str, data: bytes, offers: bytes = b"") -> None:
        try:
            with self.writer.begin() as connection:
                exists = connection.execute(sa.select(slices.c.slice_id).where(
                    slices.c.turn_id == turn_id, slices.c.slice_hash == slice_hash)).first()
                if exists is None:
                    connection.execute(slices.insert().values(turn_id=turn_id, slice_hash=slice_hash,
                                                              slice_id=slice_id, slice_proto=data, offers=offers,
                                                              created_at=time.time()))
        except sa.exc.IntegrityError:
            pass  # the same slice for the same turn, frozen concurrently: one copy is enough

    def load_slice(self, turn_id: str, slice_hash: str) -> tuple[bytes, bytes] | None:
        """(slice proto, the signed offers it was frozen with) of a slice frozen for this turn."""
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(slices.c.slice_proto, slices.c.offers).where(
                slices.c.turn_id == turn_id, slices.c.slice_hash == slice_hash)).first()
        return None if row is None else (row.slice_proto, row.offers or b"")

    # --- revisions -----------------------------------------------------------

    def head(self, surface_id: str) -> str | None:
        with self.engine.connect() as connection:
            return connection.execute(sa.select(branch_heads.c.revision_id).where(
                branch_heads.c.surface_id == surface_id)).scalar() or None

    def revision(self, revision_id: str):
        with self.engine.connect() as connection:
            return connection.execute(sa.select(revisions).where(revisions.c.revision_id == revision_id)).first()

    def revision_for_proposal(self, turn_id: str, proposal_id: str):
        with self.engine.connect() as connection:
            return self._revision_for_proposal(connection, turn_id, proposal_id)

    @staticmethod
    def _revision_for_proposal(connection, turn_id: str, proposal_id: str):
        return connection.execute(sa.select(revisions).where(revisions.c.turn_id == turn_id,
                                                             revisions.c.proposal_id == proposal_id)).first()

    def proposal_context(self, turn_id: str, slice_hash: str, proposal_id: str, base_id: str) -> ProposalContext:
        """The turn, its session, the frozen slice, an earlier revision of this proposal id and the base
        revision, on one connection: the reads of a SubmitProposal in one hop."""
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.select(turns.c.question, sessions, slices.c.slice_proto, slices.c.offers)
                .join(sessions, sessions.c.session_id == turns.c.session_id)
                .outerjoin(slices, sa.and_(slices.c.turn_id == turns.c.turn_id, slices.c.slice_hash == slice_hash))
                .where(turns.c.turn_id == turn_id)).first()
            if row is None:
                return ProposalContext(None, None, None, None, None)
            mine = sa.and_(revisions.c.turn_id == turn_id, revisions.c.proposal_id == proposal_id)
            found = connection.execute(sa.select(revisions).where(
                sa.or_(mine, revisions.c.revision_id == base_id) if base_id else mine)).all()
        earlier = next((r for r in found if r.turn_id == turn_id and r.proposal_id == proposal_id), None)
        base = next((r for r in found if base_id and r.revision_id == base_id), None)
        frozen = None if row.slice_proto is None else (row.slice_proto, row.offers or b"")
        return ProposalContext(Turn(turn_id, row.session_id, row.question), self._session(row), frozen, earlier, base)

    def commit(self, *, surface_id: str, expected_base: str | None, turn_id: str, proposal_id: str,
               content_hash: str, document_json: str, diagnostics: bytes, events: list, slice_hash: str = "",
               bindings: str = "[]", request_hash: str = "",
               keep_grants: set[tuple[str, str]] | None = None) -> Committed:
        """CAS on the branch head + immutable revision + its events, in one transaction; with `keep_grants`
        (the (node, resource) bindings of the new head), live grants of other bindings are revoked in it too.

        `events` are callables (revision_id, epoch, sequence) -> (payload_hash, envelope bytes).
        Raises RevisionConflict.
        """
        try:
            return self._commit(surface_id=surface_id, expected_base=expected_base, turn_id=turn_id,
                                proposal_id=proposal_id, content_hash=content_hash, document_json=document_json,
                                diagnostics=diagnostics, events=events, slice_hash=slice_hash, bindings=bindings,
                                request_hash=request_hash, keep_grants=keep_grants)
        except sa.exc.IntegrityError:
            # Two first revisions raced to create the head row (PostgreSQL reads no head in
            # both transactions); the loser is a conflict like any other.
            raise RevisionConflict(self.head(surface_id)) from None

    def _commit(self, *, surface_id, expected_base, turn_id, proposal_id, content_hash, document_json, diagnostics,
                events, slice_hash, bindings, request_hash, keep_grants) -> Committed:
        revision_id = new_id("rev")
        envelopes: list[bytes] = []
        now = time.time()
        with self.writer.begin() as connection:
            # FOR UPDATE: commits and journal appends on one surface take turns on the head row
            # (SQLite gets the same from BEGIN IMMEDIATE).
            head = connection.execute(sa.select(branch_heads).where(branch_heads.c.surface_id == surface_id)
                                      .with_for_update()).first()
            # A head row may exist before any revision (host events came first): "" means none.
            current = (head.revision_id or None) if head is not None else None
            if current != (expected_base or None):
                raise RevisionConflict(current)
            epoch, sequence = (head.epoch, head.sequence) if head is not None else (1, 0)
            connection.execute(revisions.insert().values(
                revision_id=revision_id, surface_id=surface_id, parent_revision_id=current, turn_id=turn_id,
                proposal_id=proposal_id, content_hash=content_hash, document_json=document_json,
                diagnostics=diagnostics, committed_at=now, slice_hash=slice_hash, bindings=bindings,
                request_hash=request_hash))
            sequence = self._append(connection, surface_id, revision_id, epoch, sequence, events, now, envelopes)
            if head is None:
                connection.execute(branch_heads.insert().values(surface_id=surface_id, revision_id=revision_id,
                                                                epoch=epoch, sequence=sequence))
            else:  # the swap, guarded once more by the head it read (the row lock already holds it)
                swapped = connection.execute(branch_heads.update().where(
                    branch_heads.c.surface_id == surface_id, branch_heads.c.revision_id == head.revision_id).values(
                    revision_id=revision_id, sequence=sequence))
                if swapped.rowcount != 1:
                    raise RevisionConflict(self.head(surface_id))
            dropped = [] if keep_grants is None else self._revoke_outside(connection, surface_id, keep_grants, now)
            self._wake(connection, surface_id, epoch, sequence)
        return Committed(epoch, sequence, envelopes, revision_id, dropped)

    def append_events(self, surface_id: str, events: list) -> Appended:
        """Host events that change no revision (e.g. `rejected`), appended in their own transaction."""

        def append() -> Appended:
            with self.writer.begin() as connection:
                return self._append_locked(connection, surface_id, events)

        return _retried(append)

    def _append_locked(self, connection, surface_id: str, events: list) -> Appended:
        """Append after the head row (created if missing) in `connection`'s transaction."""
        head = connection.execute(sa.select(branch_heads).where(branch_heads.c.surface_id == surface_id)
                                  .with_for_update()).first()
        if head is None:
            connection.execute(branch_heads.insert().values(surface_id=surface_id, revision_id="", epoch=1,
                                                            sequence=0))
            revision_id, epoch, sequence = "", 1, 0
        else:
            revision_id, epoch, sequence = head.revision_id, head.epoch, head.sequence
        envelopes: list[bytes] = []
        sequence = self._append(connection, surface_id, revision_id, epoch, sequence, events, time.time(), envelopes)
        connection.execute(branch_heads.update().where(branch_heads.c.surface_id == surface_id).values(
            sequence=sequence))
        self._wake(connection, surface_id, epoch, sequence)
        return Appended(epoch, sequence, envelopes)

    def publish_once(self, session_id: str, event_key: str, payload_hash: str, surface_id: str,
                     build) -> tuple[bytes, Appended | None]:
        """Append one event and record its key in the same transaction: exactly once per key.

        Returns (the PublishIntentEventResponse bytes, what was appended: None when it was published
        earlier). The head row lock orders concurrent senders, so the second one finds the first's record.
        """

        def publish() -> tuple[bytes, Appended | None]:
            with self.writer.begin() as connection:
                earlier = connection.execute(sa.select(commands.c.response).where(
                    commands.c.session_id == session_id, commands.c.command_id == event_key)).scalar()
                if earlier:
                    return earlier, None
                appended = self._append_locked(connection, surface_id, [build])
                response = host_pb2.PublishIntentEventResponse(
                    cursor=host_pb2.Cursor(epoch=appended.epoch, sequence=appended.last)).SerializeToString()
                connection.execute(commands.insert().values(
                    command_id=event_key, session_id=session_id, payload_hash=payload_hash, response=response,
                    created_at=time.time()))
                return response, appended

        return _retried(publish)

    @staticmethod
    def _append(connection, surface_id, revision_id, epoch, sequence, events, now, appended=None) -> int:
        """Append `events` after `sequence` in one statement; their envelopes also go to `appended` if given."""
        rows = []
        for build in events:
            sequence += 1
            payload_hash, envelope = build(revision_id, epoch, sequence)
            rows.append({"surface_id": surface_id, "epoch": epoch, "sequence": sequence, "revision_id": revision_id,
                         "payload_hash": payload_hash, "envelope": envelope, "published_at": now})
        if rows:
            connection.execute(surface_events.insert(), rows)
            if appended is not None:
                appended.extend(row["envelope"] for row in rows)
        return sequence

    # --- grants -------------------------------------------------------------

    def save_grant(self, *, grant_id: str, surface_id: str, node_id: str, revision_id: str, resource_id: str,
                   token: bytes, expires_at: float) -> None:
        with self.writer.begin() as connection:
            connection.execute(grants.insert().values(grant_id=grant_id, surface_id=surface_id, node_id=node_id,
                                                      revision_id=revision_id, resource_id=resource_id, token=token,
                                                      expires_at=expires_at, revoked=False))

    @staticmethod
    def _revoke_outside(connection, surface_id: str, keep: set[tuple[str, str]], now: float) -> list[bytes]:
        """Revoke live grants whose (node, resource) binding the head no longer has; return their tokens."""
        live = connection.execute(sa.select(grants).where(grants.c.surface_id == surface_id,
                                                          grants.c.revoked.is_(False),
                                                          grants.c.expires_at > now)).all()
        dropped = [g for g in live if (g.node_id, g.resource_id) not in keep]
        if dropped:
            connection.execute(grants.update().where(grants.c.grant_id.in_([g.grant_id for g in dropped]))
                               .values(revoked=True))
        return [g.token for g in dropped]

    # --- commands ------------------------------------------------------------

    def claim_command(self, session_id: str, command_id: str, payload_hash: str, lease: float) -> CommandClaim:
        """Reserve a command id before its handler runs, or learn who holds it.

        A claim is a row without a response (PENDING). A claim older than `lease` belongs
        to a process that died mid-command: it is taken over, in the same locked read.
        """
        try:
            with self.writer.begin() as connection:
                connection.execute(commands.insert().values(command_id=command_id, session_id=session_id,
                                                            payload_hash=payload_hash, response=PENDING,
                                                            created_at=time.time()))
            return CommandClaim("claimed")
        except sa.exc.IntegrityError:
            pass  # taken: see by whom and how far
        now = time.time()
        with self.writer.begin() as connection:
            row = connection.execute(sa.select(commands).where(
                commands.c.session_id == session_id, commands.c.command_id == command_id).with_for_update()).first()
            if row is None:
                return CommandClaim("released")
            if row.payload_hash != payload_hash:
                return CommandClaim("reused")
            if row.response != PENDING:
                return CommandClaim("done", row.response)
            if row.created_at >= now - lease:
                return CommandClaim("pending")
            connection.execute(commands.update().where(commands.c.session_id == session_id,
                                                       commands.c.command_id == command_id).values(created_at=now))
            return CommandClaim("claimed")

    def finish_command(self, session_id: str, command_id: str, response: bytes) -> None:
        """Store the reply of a claimed command; later retries read it."""
        with self.writer.begin() as connection:
            connection.execute(commands.update().where(
                commands.c.session_id == session_id, commands.c.command_id == command_id,
                commands.c.response == PENDING).values(response=response))

    def release_command(self, session_id: str, command_id: str) -> None:
        """A refused command took no effect: free its id for a corrected retry."""
        with self.writer.begin() as connection:
            connection.execute(commands.delete().where(
                commands.c.session_id == session_id, commands.c.command_id == command_id,
                commands.c.response == PENDING))

    def position(self, surface_id: str) -> tuple[int, int]:
        """(epoch, last sequence) of a surface's journal; (1, 0) before anything was published."""
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(branch_heads.c.epoch, branch_heads.c.sequence).where(
                branch_heads.c.surface_id == surface_id)).first()
        return (row.epoch, row.sequence) if row is not None else (1, 0)

    def positions(self, surface_ids: list[str]) -> dict[str, tuple[int, int]]:
        """(epoch, last sequence) of many surfaces in one query (those with a journal)."""
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(branch_heads.c.surface_id, branch_heads.c.epoch,
                                                branch_heads.c.sequence).where(
                branch_heads.c.surface_id.in_(surface_ids))).all()
        return {row.surface_id: (row.epoch, row.sequence) for row in rows}

    def compact(self, surface_id: str, retention: int) -> tuple[int, int]:
        """Start a new epoch that begins with a snapshot of the head revision; drop older epochs.

        The snapshot is the head revision's own A2UI messages, re-published at the new
        epoch; subscribers holding an older cursor are told `snapshot-required`.
        """
        now = time.time()
        with self.writer.begin() as connection:
            head = connection.execute(sa.select(branch_heads).where(branch_heads.c.surface_id == surface_id)
                                      .with_for_update()).first()
            if head is None or head.sequence < retention:  # another caller compacted already
                return (head.epoch, head.sequence) if head is not None else (1, 0)
            old = connection.execute(sa.select(surface_events.c.envelope).where(
                surface_events.c.surface_id == surface_id, surface_events.c.epoch == head.epoch,
                surface_events.c.revision_id == head.revision_id).order_by(surface_events.c.sequence)).scalars()
            snapshot = _latest_per_path([e for e in old if _is_revision_message(e)])
            epoch = head.epoch + 1
            for sequence, data in enumerate(snapshot, start=1):
                envelope = _reposition(data, epoch, sequence)
                connection.execute(surface_events.insert().values(
                    surface_id=surface_id, epoch=epoch, sequence=sequence, revision_id=head.revision_id,
                    payload_hash=envelope.payload_hash, envelope=envelope.SerializeToString(), published_at=now))
            connection.execute(surface_events.delete().where(surface_events.c.surface_id == surface_id,
                                                             surface_events.c.epoch < epoch))
            connection.execute(branch_heads.update().where(branch_heads.c.surface_id == surface_id).values(
                epoch=epoch, sequence=len(snapshot)))
            self._wake(connection, surface_id, epoch, len(snapshot))
        return epoch, len(snapshot)

    def _wake(self, connection, surface_id: str, epoch: int, sequence: int) -> None:
        """Tell other replicas (PostgreSQL) that the journal moved; delivered only if this transaction commits."""
        if connection.dialect.name == "postgresql":
            connection.execute(sa.select(sa.func.pg_notify(WAKE_CHANNEL,
                                                           f"{surface_id} {epoch} {sequence} {self.replica}")))

    def events_since(self, surface_id: str, epoch: int, sequence: int, limit: int = READ_BATCH) -> list:
        """Envelopes after (epoch, sequence), a later epoch's included, in journal order."""
        after = sa.or_(sa.and_(surface_events.c.epoch == epoch, surface_events.c.sequence > sequence),
                       surface_events.c.epoch > epoch)
        with self.engine.connect() as connection:
            return list(connection.execute(sa.select(surface_events.c.envelope).where(
                surface_events.c.surface_id == surface_id, after).order_by(
                surface_events.c.epoch, surface_events.c.sequence).limit(limit)).scalars())

    def events_after(self, surface_id: str, epoch: int, sequence: int, limit: int = READ_BATCH) -> list:
        with self.engine.connect() as connection:
            return list(connection.execute(sa.select(surface_events.c.envelope).where(
                surface_events.c.surface_id == surface_id, surface_events.c.epoch == epoch,
                surface_events.c.sequence > sequence).order_by(surface_events.c.sequence).limit(limit)).scalars())




def _retried(write):
    """Run a write transaction again when a concurrent writer took the same key first (two first
    appends both creating a surface's head row, two senders of one event): the retry sees theirs."""
    for attempt in range(5):
        try:
            return write()
        except sa.exc.IntegrityError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


def _is_revision_message(data: bytes) -> bool:
    """What a snapshot keeps: the revision's A2UI messages and state, never window rows."""
    envelope = host_pb2.SurfaceEnvelope.FromString(data)
    if envelope.WhichOneof("payload") != "a2ui":
        return False
    update = json.loads(envelope.a2ui.message_json).get("updateDataModel")
    return update is None or not str(update.get("path", "")).endswith("/window")


def _latest_per_path(entries: list[bytes]) -> list[bytes]:
    """A data-model path written many times needs only its last value in a snapshot."""
    last: dict[str, int] = {}
    for index, data in enumerate(entries):
        update = json.loads(host_pb2.SurfaceEnvelope.FromString(data).a2ui.message_json).get("updateDataModel")
        if update is not None:
            last[str(update.get("path", "/"))] = index
    keep = set(last.values())
    return [data for index, data in enumerate(entries)
            if index in keep or "updateDataModel" not in host_pb2.SurfaceEnvelope.FromString(data).a2ui.message_json]


def _reposition(data: bytes, epoch: int, sequence: int) -> host_pb2.SurfaceEnvelope:
    envelope = host_pb2.SurfaceEnvelope.FromString(data)
    envelope.epoch, envelope.sequence = epoch, sequence
    return envelope
