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
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from shared.data import db
from shared.data.db import Writer, ping, reads

MIGRATIONS = Path(__file__).parent / "migrations"
metadata = sa.MetaData()
sessions = sa.Table("sessions", metadata, sa.Column("session_id", sa.String, primary_key=True),
                    sa.Column("surface_id", sa.String), sa.Column("actor_id", sa.String),
                    sa.Column("tenant_id", sa.String), sa.Column("request_id", sa.String),
                    sa.Column("created_at", sa.Float))
turns = sa.Table("turns", metadata, sa.Column("turn_id", sa.String, primary_key=True),
                 sa.Column("session_id", sa.String), sa.Column("question", sa.Text),
                 sa.Column("request_id", sa.String), sa.Column("created_at", sa.Float),
                 # how it ended, as the agent recorded it (FinishTurn); empty while it runs or if none was kept
                 sa.Column("outcome", sa.Integer), sa.Column("answer", sa.Text), sa.Column("suggested", sa.Text),
                 sa.Column("follows_turn_id", sa.String), sa.Column("finished_at", sa.Float),
                 # when someone asked the running turn to stop (RequestTurnCancel), from any agent replica
                 sa.Column("cancel_requested_at", sa.Float),
                 # when a replica last named it among the turns it runs (CancelledTurns)
                 sa.Column("seen_at", sa.Float))
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
                     sa.Column("request_hash", sa.String), sa.Column("a2ui_messages", sa.Text))
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
                          sa.Column("published_at", sa.Float), sa.Column("snapshot_key", sa.String))
# The broker's events, recorded in the transaction that appends them: each is published once per key.
published_events = sa.Table("published_events", metadata, sa.Column("session_id", sa.String, primary_key=True),
                            sa.Column("event_key", sa.String, primary_key=True),
                            sa.Column("request_hash", sa.String), sa.Column("epoch", sa.Integer),
                            sa.Column("sequence", sa.Integer), sa.Column("created_at", sa.Float))


# A revision row read under another name (proposal_context reads two in one statement).
RevisionRow = namedtuple("RevisionRow", revisions.c.keys())

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
class TurnEnd:
    """How a turn ended, as the agent recorded it."""
    outcome: int
    answer: str
    suggested: tuple[str, ...] = ()
    follows_turn_id: str = ""


@dataclass(frozen=True)
class TurnStop:
    """Where a turn asked to stop stands: its end, or whether a replica reports it running."""
    end: TurnEnd | None
    reported: bool  # no end yet, and a replica named it lately


@dataclass(frozen=True)
class TurnRecord:
    """A turn of a conversation as a person's thread shows it."""
    turn_id: str
    question: str
    asked_at: float
    end: TurnEnd | None  # None while it runs, or when no record was kept
    finished_at: float | None
    revision_id: str  # the last revision it committed ("" none)


class TurnFinished(Exception):
    """The turn's end was recorded already, differently."""


@dataclass(frozen=True)
class ProposalContext:
    """Everything a submitted proposal is checked against, read in one go (each read costs a hop)."""
    turn: Turn | None
    session: Session | None
    frozen_slice: tuple[bytes, bytes] | None  # (slice proto, the signed offers it was frozen with)
    earlier: RevisionRow | None  # the revision this proposal id already made (a retry)
    base: RevisionRow | None  # the revision the proposal says it builds on


@dataclass(frozen=True)
class NewEntry:
    """A journal entry before it has a place: the store gives it its epoch, sequence and revision."""
    payload_hash: str
    envelope: bytes  # a serialised SurfaceEnvelope without its place (see envelopes.py), opaque here
    # What a snapshot keeps of the entry (compact): None, nothing; "", the entry; a data-model path, the
    # path's last entry.
    snapshot_key: str | None = None


@dataclass(frozen=True)
class JournalEntry:
    """An entry read back with its place; envelopes.positioned() makes the envelope a subscriber gets."""
    epoch: int
    sequence: int
    revision_id: str
    envelope: bytes


@dataclass(frozen=True)
class EventToPublish:
    event_key: str  # the event is appended once per key and session
    request_hash: str
    entry: NewEntry


@dataclass(frozen=True)
class Position:
    epoch: int
    sequence: int


@dataclass(frozen=True)
class Appended:
    epoch: int
    last: int  # the journal's last sequence after the append
    entries: list[JournalEntry]  # what was appended, ending at `last`


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
        self.engine = engine
        self.reads = reads(engine)  # one statement each, no transaction around it
        self.writer = Writer(engine)
        self.replica = new_id("hst")  # names this process in its wake-ups, so it can skip its own

    def ping(self) -> str | None:
        return ping(self.engine, "host database")

    # --- sessions and turns ---------------------------------------------

    def _read_or_insert(self, table: sa.Table, where: list, values: dict) -> tuple[sa.Row, bool]:
        """Idempotent creation keyed by `where`: a row a concurrent retry inserted is read back, not an error."""
        for _ in range(2):
            with self.reads.connect() as connection:
                row = connection.execute(sa.select(table).where(*where)).first()
            if row is not None:
                return row, False
            try:
                with self.writer.begin() as connection:
                    connection.execute(table.insert().values(**values))
            except sa.exc.IntegrityError:
                continue
            with self.reads.connect() as connection:
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
        with self.reads.connect() as connection:
            row = connection.execute(sa.select(sessions).where(sessions.c.session_id == session_id)).first()
        return None if row is None else self._session(row)

    def begin_turn(self, session_id: str, question: str, request_id: str) -> Turn:
        """Idempotent per (session, request id)."""
        row, _ = self._read_or_insert(
            turns, [turns.c.session_id == session_id, turns.c.request_id == request_id],
            {"turn_id": new_id("trn"), "session_id": session_id, "question": question, "request_id": request_id,
             "created_at": time.time()})
        return Turn(row.turn_id, row.session_id, row.question)

    def earlier_turns(self, turn_id: str, limit: int = 5) -> list[tuple[str, str]]:
        """(turn id, question) of the turns of the turn's session begun before it, oldest first (the last
        `limit`)."""
        this = turns.alias("this")
        with self.reads.connect() as connection:
            rows = connection.execute(
                sa.select(turns.c.turn_id, turns.c.question).join(this, this.c.session_id == turns.c.session_id)
                .where(this.c.turn_id == turn_id, turns.c.created_at < this.c.created_at)
                .order_by(turns.c.created_at.desc()).limit(limit)).all()
        return [(row.turn_id, row.question) for row in reversed(rows)]

    def finish_turn(self, turn_id: str, end: TurnEnd) -> bool:
        """Keep how the turn ended, once: True when kept now, False when the same end was kept before; raises
        TurnFinished when another was."""
        suggested = json.dumps(list(end.suggested))
        with self.writer.begin() as connection:
            kept = connection.execute(turns.update().where(turns.c.turn_id == turn_id, turns.c.outcome.is_(None))
                                      .values(outcome=end.outcome, answer=end.answer, suggested=suggested,
                                              follows_turn_id=end.follows_turn_id or None,
                                              finished_at=time.time())).rowcount
        if kept:
            return True
        with self.reads.connect() as connection:
            row = connection.execute(sa.select(turns).where(turns.c.turn_id == turn_id)).one()
        if _end(row) != end:
            raise TurnFinished(turn_id)
        return False

    def request_cancel(self, turn_id: str, stale_seconds: float) -> TurnStop:
        """Ask the running turn to stop (kept once), and say where it stands: how it ended, or whether a replica
        reported it running within `stale_seconds` (a turn just begun counts as reported)."""
        now = time.time()
        with self.writer.begin() as connection:
            connection.execute(turns.update().where(turns.c.turn_id == turn_id, turns.c.outcome.is_(None),
                                                    turns.c.cancel_requested_at.is_(None))
                               .values(cancel_requested_at=now))
            row = connection.execute(sa.select(turns).where(turns.c.turn_id == turn_id)).one()
        last_sign = row.seen_at or row.created_at
        return TurnStop(_end(row), row.outcome is None and now - last_sign <= stale_seconds)

    def cancelled_turns(self, turn_ids: list[str]) -> list[str]:
        """Note that a replica runs `turn_ids`; those whose stop was requested."""
        with self.writer.begin() as connection:
            running = [turns.c.turn_id.in_(turn_ids), turns.c.outcome.is_(None)]
            connection.execute(turns.update().where(*running).values(seen_at=time.time()))
            return list(connection.execute(sa.select(turns.c.turn_id).where(
                *running, turns.c.cancel_requested_at.is_not(None))).scalars())

    def list_turns(self, session_id: str, limit: int, before_turn_id: str = "") -> list[TurnRecord]:
        """The session's turns, newest first (those begun before `before_turn_id`, when given), each with the
        last revision it committed."""
        last = (sa.select(revisions.c.revision_id).where(revisions.c.turn_id == turns.c.turn_id)
                .order_by(revisions.c.committed_at.desc()).limit(1).scalar_subquery())
        query = sa.select(turns, last.label("revision_id")).where(turns.c.session_id == session_id)
        if before_turn_id:  # (by time, then id: two turns begun in the same instant are both listed)
            before = sa.select(turns.c.created_at).where(turns.c.turn_id == before_turn_id,
                                                         turns.c.session_id == session_id).scalar_subquery()
            query = query.where(sa.tuple_(turns.c.created_at, turns.c.turn_id) < sa.tuple_(before, before_turn_id))
        with self.reads.connect() as connection:
            rows = connection.execute(query.order_by(turns.c.created_at.desc(), turns.c.turn_id.desc())
                                      .limit(limit)).all()
        return [TurnRecord(row.turn_id, row.question, row.created_at, _end(row), row.finished_at,
                           row.revision_id or "") for row in rows]

    def turn(self, turn_id: str) -> Turn | None:
        with self.reads.connect() as connection:
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
        with self.reads.connect() as connection:
            row = connection.execute(sa.select(slices.c.slice_proto, slices.c.offers).where(
                slices.c.turn_id == turn_id, slices.c.slice_hash == slice_hash)).first()
        return None if row is None else (row.slice_proto, row.offers or b"")

    # --- revisions -----------------------------------------------------------

    def head(self, surface_id: str) -> str | None:
        with self.reads.connect() as connection:
            return connection.execute(sa.select(branch_heads.c.revision_id).where(
                branch_heads.c.surface_id == surface_id)).scalar() or None

    def revision(self, revision_id: str):
        with self.reads.connect() as connection:
            return connection.execute(sa.select(revisions).where(revisions.c.revision_id == revision_id)).first()

    def revision_for_proposal(self, turn_id: str, proposal_id: str):
        with self.reads.connect() as connection:
            return self._revision_for_proposal(connection, turn_id, proposal_id)

    @staticmethod
    def _revision_for_proposal(connection, turn_id: str, proposal_id: str):
        return connection.execute(sa.select(revisions).where(revisions.c.turn_id == turn_id,
                                                             revisions.c.proposal_id == proposal_id)).first()

    def proposal_context(self, turn_id: str, slice_hash: str, proposal_id: str, base_id: str) -> ProposalContext:
        """The turn, its session, the frozen slice, an earlier revision of this proposal id and the base
        revision: the reads of a SubmitProposal in one statement (each statement costs a hop)."""
        with self.reads.connect() as connection:
            row = connection.execute(_PROPOSAL_CONTEXT, {"turn_id": turn_id, "slice_hash": slice_hash,
                                                         "proposal_id": proposal_id, "base_id": base_id}).first()
        if row is None:
            return ProposalContext(None, None, None, None, None)
        frozen = None if row.slice_proto is None else (row.slice_proto, row.offers or b"")
        return ProposalContext(Turn(turn_id, row.session_id, row.question), self._session(row), frozen,
                               _unprefixed(row, "earlier"), _unprefixed(row, "base"))

    def commit(self, *, surface_id: str, expected_base: str | None, turn_id: str, proposal_id: str,
               content_hash: str, document_json: str, diagnostics: bytes, events: list[NewEntry],
               slice_hash: str = "", bindings: str = "[]", a2ui_messages: str = "[]", request_hash: str = "",
               keep_grants: set[tuple[str, str]] | None = None) -> Committed:
        """CAS on the branch head + immutable revision + its events, in one transaction; with `keep_grants`
        (the (node, resource) bindings of the new head), live grants of other bindings are revoked in it too.
        Raises RevisionConflict.
        """
        try:
            return self._commit(surface_id=surface_id, expected_base=expected_base, turn_id=turn_id,
                                proposal_id=proposal_id, content_hash=content_hash, document_json=document_json,
                                diagnostics=diagnostics, events=events, slice_hash=slice_hash, bindings=bindings,
                                a2ui_messages=a2ui_messages, request_hash=request_hash, keep_grants=keep_grants)
        except sa.exc.IntegrityError:
            # Two first revisions raced to create the head row (PostgreSQL reads no head in
            # both transactions); the loser is a conflict like any other.
            raise RevisionConflict(self.head(surface_id)) from None

    def _commit(self, *, surface_id, expected_base, turn_id, proposal_id, content_hash, document_json, diagnostics,
                events, slice_hash, bindings, a2ui_messages, request_hash, keep_grants) -> Committed:
        revision_id = new_id("rev")
        now = time.time()
        with self.writer.begin() as connection:
            # The swap first: the head row moves only while it is still the proposal's base, in one statement
            # that also takes the row lock (SQLite: BEGIN IMMEDIATE) so that commits and journal appends on one
            # surface take turns. A head row may exist before any revision (host events came first): "" is none.
            moved = self._advance(connection, surface_id, len(events),
                                  sa.func.coalesce(branch_heads.c.revision_id, "") == (expected_base or ""),
                                  revision_id=revision_id)
            if moved is None:  # a conflict, or the surface's first head row
                current = connection.execute(sa.select(branch_heads.c.revision_id).where(
                    branch_heads.c.surface_id == surface_id)).first()
                if current is not None or expected_base:
                    raise RevisionConflict(None if current is None else current.revision_id or None)
                moved = self._first_head(connection, surface_id, revision_id, len(events))
            connection.execute(revisions.insert().values(
                revision_id=revision_id, surface_id=surface_id, parent_revision_id=expected_base or None,
                turn_id=turn_id, proposal_id=proposal_id, content_hash=content_hash, document_json=document_json,
                diagnostics=diagnostics, committed_at=now, slice_hash=slice_hash, bindings=bindings,
                a2ui_messages=a2ui_messages, request_hash=request_hash))
            appended = self._append(connection, surface_id, revision_id, moved, events, now)
            dropped = [] if keep_grants is None else self._revoke_outside(connection, surface_id, keep_grants, now)
        return Committed(moved.epoch, moved.sequence, appended, revision_id, dropped)

    def _advance(self, connection, surface_id: str, count: int, *where, **values):
        """Move a surface's journal on by `count` entries in its head row (and set `values`) if the row matches
        `where`: row lock, compare-and-swap and the wake-up of other replicas in one statement. The row after
        the move, or None if none matched."""
        return connection.execute(branch_heads.update().where(branch_heads.c.surface_id == surface_id, *where)
                                  .values(sequence=branch_heads.c.sequence + count, **values)
                                  .returning(*self._head_and_wake(connection))).first()

    def _first_head(self, connection, surface_id: str, revision_id: str, count: int):
        """The head row of a surface that has none, after `count` entries (a concurrent creator of the same row
        makes this raise IntegrityError)."""
        return connection.execute(branch_heads.insert().values(
            surface_id=surface_id, revision_id=revision_id, epoch=1, sequence=count)
            .returning(*self._head_and_wake(connection))).first()

    def _head_and_wake(self, connection) -> list:
        """What a write of a head row returns: its revision, epoch and sequence, and on PostgreSQL the NOTIFY
        that wakes other replicas ("<surface_id> <epoch> <sequence> <replica>"), delivered only if the
        transaction commits."""
        returning = [branch_heads.c.revision_id, branch_heads.c.epoch, branch_heads.c.sequence]
        if connection.dialect.name == "postgresql":
            returning.append(sa.func.pg_notify(WAKE_CHANNEL, sa.func.concat_ws(
                " ", branch_heads.c.surface_id, branch_heads.c.epoch, branch_heads.c.sequence, self.replica)))
        return returning

    def append_events(self, surface_id: str, events: list[NewEntry]) -> Appended:
        """Host events that change no revision (e.g. `rejected`), appended in their own transaction."""

        def append() -> Appended:
            with self.writer.begin() as connection:
                return self._append_locked(connection, surface_id, events)

        return _retried(append)

    def append_events_at(self, surface_id: str, revision_id: str, events: list[NewEntry],
                         grant_rows: list[dict] | None = None) -> Appended | None:
        """Events of one revision (its first windows), appended only while it is the surface's head: the
        check is the compare-and-swap of the statement that moves the journal on. None when it moved on.
        `grant_rows` (as save_grants takes them: the grants the windows were read under) are remembered in the same
        transaction, so they are kept exactly when the windows went out, and a later commit revokes them."""

        def append() -> Appended | None:
            with self.writer.begin() as connection:
                head = self._advance(connection, surface_id, len(events), branch_heads.c.revision_id == revision_id)
                if head is None:
                    return None
                appended = self._append(connection, surface_id, head.revision_id, head, events, time.time())
                if grant_rows:
                    self._insert_grants(connection, revision_id, grant_rows)
                return Appended(head.epoch, head.sequence, appended)

        return _retried(append)

    def _append_locked(self, connection, surface_id: str, events: list[NewEntry]) -> Appended:
        """Append after the head row (created if missing) in `connection`'s transaction."""
        head = self._advance(connection, surface_id, len(events)) or self._first_head(connection, surface_id, "",
                                                                                       len(events))
        return Appended(head.epoch, head.sequence,
                        self._append(connection, surface_id, head.revision_id, head, events, time.time()))

    def publish_events(self, session_id: str, surface_id: str,
                       events: list[EventToPublish]) -> tuple[list[Position], Appended | None]:
        """Append events and record their keys in one transaction: exactly once per key.

        Returns each event's place in the journal (the first send's for a key seen before, in this batch or
        earlier) and what was appended (None if nothing was new). The head row lock orders concurrent
        senders: one that read the keys before another's commit fails on the key's row and is retried, and
        then finds it.
        """

        def publish() -> tuple[list[Position], Appended | None]:
            with self.writer.begin() as connection:
                places = {row.event_key: Position(row.epoch, row.sequence) for row in connection.execute(
                    sa.select(published_events).where(
                        published_events.c.session_id == session_id,
                        published_events.c.event_key.in_(sorted({e.event_key for e in events}))))}
                new: dict[str, EventToPublish] = {}
                for event in events:  # a key sent twice in one batch is new once
                    if event.event_key not in places:
                        new.setdefault(event.event_key, event)
                if not new:
                    return [places[e.event_key] for e in events], None
                appended = self._append_locked(connection, surface_id, [e.entry for e in new.values()])
                places.update((key, Position(entry.epoch, entry.sequence))
                              for key, entry in zip(new, appended.entries, strict=True))
                connection.execute(published_events.insert(), [
                    {"session_id": session_id, "event_key": key, "request_hash": event.request_hash,
                     "epoch": places[key].epoch, "sequence": places[key].sequence, "created_at": time.time()}
                    for key, event in new.items()])
                return [places[e.event_key] for e in events], appended

        return _retried(publish)

    @staticmethod
    def _append(connection, surface_id: str, revision_id: str, head, events: list[NewEntry],
                now: float) -> list[JournalEntry]:
        """Append `events` in one statement so that the last ends at the moved `head`'s sequence."""
        first = head.sequence - len(events) + 1
        placed = [JournalEntry(head.epoch, sequence, revision_id, event.envelope)
                  for sequence, event in enumerate(events, start=first)]
        if events:
            connection.execute(surface_events.insert(), [
                {"surface_id": surface_id, "epoch": entry.epoch, "sequence": entry.sequence,
                 "revision_id": revision_id, "payload_hash": event.payload_hash, "envelope": event.envelope,
                 "snapshot_key": event.snapshot_key, "published_at": now}
                for entry, event in zip(placed, events, strict=True)])
        return placed

    # --- grants -------------------------------------------------------------

    def save_grants(self, revision_id: str, rows: list[dict]) -> None:
        """Remember issued grants (grant_id, surface_id, node_id, resource_id, token, expires_at) in one
        transaction, so a revision that drops their binding can revoke them."""
        with self.writer.begin() as connection:
            self._insert_grants(connection, revision_id, rows)

    @staticmethod
    def _insert_grants(connection, revision_id: str, rows: list[dict]) -> None:
        connection.execute(grants.insert(), [{**row, "revision_id": revision_id, "revoked": False} for row in rows])

    @staticmethod
    def _revoke_outside(connection, surface_id: str, keep: set[tuple[str, str]], now: float) -> list[bytes]:
        """Revoke live grants whose (node, resource) binding the head no longer has; return their tokens."""
        return list(connection.execute(grants.update().where(
            grants.c.surface_id == surface_id, grants.c.revoked.is_(False), grants.c.expires_at > now,
            sa.tuple_(grants.c.node_id, grants.c.resource_id).not_in(sorted(keep)))
            .values(revoked=True).returning(grants.c.token)).scalars())

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
        with self.reads.connect() as connection:
            row = connection.execute(sa.select(branch_heads.c.epoch, branch_heads.c.sequence).where(
                branch_heads.c.surface_id == surface_id)).first()
        return (row.epoch, row.sequence) if row is not None else (1, 0)

    def positions(self, surface_ids: list[str]) -> dict[str, tuple[int, int]]:
        """(epoch, last sequence) of many surfaces in one query (those with a journal)."""
        with self.reads.connect() as connection:
            rows = connection.execute(sa.select(branch_heads.c.surface_id, branch_heads.c.epoch,
                                                branch_heads.c.sequence).where(
                branch_heads.c.surface_id.in_(surface_ids))).all()
        return {row.surface_id: (row.epoch, row.sequence) for row in rows}

    def compact(self, surface_id: str, retention: int) -> tuple[int, int]:
        """Start a new epoch that begins with a snapshot of the head revision; drop older epochs.

        The snapshot is the head revision's entries that their snapshot key keeps, re-published at the new
        epoch; subscribers holding an older cursor are told `snapshot-required`.
        """
        now = time.time()
        with self.writer.begin() as connection:
            head = connection.execute(sa.select(branch_heads).where(branch_heads.c.surface_id == surface_id)
                                      .with_for_update()).first()
            if head is None or head.sequence < retention:  # another caller compacted already
                return (head.epoch, head.sequence) if head is not None else (1, 0)
            snapshot = _snapshot(connection.execute(sa.select(surface_events).where(
                surface_events.c.surface_id == surface_id, surface_events.c.epoch == head.epoch,
                surface_events.c.revision_id == head.revision_id, surface_events.c.snapshot_key.is_not(None))
                .order_by(surface_events.c.sequence)).all())
            epoch = head.epoch + 1
            if snapshot:
                connection.execute(surface_events.insert(), [
                    {"surface_id": surface_id, "epoch": epoch, "sequence": sequence, "revision_id": head.revision_id,
                     "payload_hash": row.payload_hash, "envelope": row.envelope, "snapshot_key": row.snapshot_key,
                     "published_at": now} for sequence, row in enumerate(snapshot, start=1)])
            connection.execute(surface_events.delete().where(surface_events.c.surface_id == surface_id,
                                                             surface_events.c.epoch < epoch))
            connection.execute(branch_heads.update().where(branch_heads.c.surface_id == surface_id).values(
                epoch=epoch, sequence=len(snapshot)).returning(*self._head_and_wake(connection)))
        return epoch, len(snapshot)

    def events_since(self, surface_id: str, epoch: int, sequence: int, limit: int = READ_BATCH) -> list[JournalEntry]:
        """Entries after (epoch, sequence), a later epoch's included, in journal order."""
        after = sa.or_(sa.and_(surface_events.c.epoch == epoch, surface_events.c.sequence > sequence),
                       surface_events.c.epoch > epoch)
        return self._entries(sa.and_(surface_events.c.surface_id == surface_id, after), limit)

    def events_after(self, surface_id: str, epoch: int, sequence: int, limit: int = READ_BATCH) -> list[JournalEntry]:
        """Entries after (epoch, sequence) in that epoch only."""
        return self._entries(sa.and_(surface_events.c.surface_id == surface_id, surface_events.c.epoch == epoch,
                                     surface_events.c.sequence > sequence), limit)

    def _entries(self, where, limit: int) -> list[JournalEntry]:
        with self.reads.connect() as connection:
            rows = connection.execute(sa.select(
                surface_events.c.epoch, surface_events.c.sequence, surface_events.c.revision_id,
                surface_events.c.envelope).where(where).order_by(
                surface_events.c.epoch, surface_events.c.sequence).limit(limit)).all()
        return [JournalEntry(row.epoch, row.sequence, row.revision_id or "", row.envelope) for row in rows]


def _prefixed(revision) -> list:
    """The columns of an aliased revisions table, labelled with the alias's name."""
    return [column.label(f"{revision.name}_{column.name}") for column in revision.c]


def _end(row) -> TurnEnd | None:
    """A turn row's recorded end, or None."""
    if row.outcome is None:
        return None
    return TurnEnd(row.outcome, row.answer or "", tuple(json.loads(row.suggested or "[]")),
                   row.follows_turn_id or "")


def _unprefixed(row, name: str) -> RevisionRow | None:
    """The revision `_prefixed(<alias called name>)` read into `row`; None if the outer join found none."""
    values = RevisionRow(*(row._mapping[f"{name}_{field}"] for field in RevisionRow._fields))
    return None if values.revision_id is None else values


def _proposal_context() -> sa.Select:
    """HostStore.proposal_context's statement, built once (building it costs more than running it on SQLite)."""
    earlier, base = revisions.alias("earlier"), revisions.alias("base")
    return (sa.select(turns.c.question, sessions, slices.c.slice_proto, slices.c.offers, *_prefixed(earlier),
                      *_prefixed(base))
            .join(sessions, sessions.c.session_id == turns.c.session_id)
            .outerjoin(slices, sa.and_(slices.c.turn_id == turns.c.turn_id,
                                       slices.c.slice_hash == sa.bindparam("slice_hash")))
            .outerjoin(earlier, sa.and_(earlier.c.turn_id == turns.c.turn_id,
                                        earlier.c.proposal_id == sa.bindparam("proposal_id")))
            .outerjoin(base, base.c.revision_id == sa.bindparam("base_id"))  # no revision id is "" (no base)
            .where(turns.c.turn_id == sa.bindparam("turn_id")))


_PROPOSAL_CONTEXT = _proposal_context()


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


def _snapshot(rows: list) -> list:
    """The rows a snapshot keeps, in order: every one keyed "", and the last of each data-model path."""
    last = {row.snapshot_key: row.sequence for row in rows if row.snapshot_key}
    return [row for row in rows if not row.snapshot_key or last[row.snapshot_key] == row.sequence]
