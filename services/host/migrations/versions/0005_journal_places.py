"""The store appends journal entries without reading or building envelopes.

- surface_events.snapshot_key: what a compaction keeps of an entry, decided when the entry is made (before,
  the store parsed every envelope of the head revision while compacting). Filled here for the rows there are.
  From now on a row's envelope is stored without its place; the row's epoch, sequence and revision are
  written into it when it is read. Older rows hold their place in the envelope too: the same values.
- published_events: the broker's event keys and where each event went in the journal (before, a
  serialised PublishIntentEventResponse among the session's commands). The rows there are move here.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

from services.host.envelopes import snapshot_key_of
from tessera.host.v1 import host_pb2

revision = "0005"
down_revision = "0004"
_BATCH = 500
_EVENT_KEYS = "event:%"  # how the host named the broker's events among a session's commands
_EVENTS = sa.table("surface_events", sa.column("surface_id"), sa.column("epoch"), sa.column("sequence"),
                   sa.column("revision_id"), sa.column("envelope"), sa.column("snapshot_key"))


def upgrade() -> None:
    with op.batch_alter_table("surface_events") as batch:
        batch.add_column(sa.Column("snapshot_key", sa.String(512), nullable=True))
    op.create_table(
        "published_events",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("event_key", sa.String(128), primary_key=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("sequence", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    _key_existing_entries(op.get_bind())
    _move_event_replies(op.get_bind())


def _key_existing_entries(connection) -> None:
    for rows in _pages(connection):
        _rewrite(connection, "snapshot_key", [
            (row, snapshot_key_of(host_pb2.SurfaceEnvelope.FromString(row.envelope))) for row in rows])


def _pages(connection):
    """The journal's rows, _BATCH at a time in key order (a journal can be large: never all in memory)."""
    after = ("", 0, 0)
    while True:
        rows = connection.execute(sa.select(_EVENTS).where(
            sa.tuple_(_EVENTS.c.surface_id, _EVENTS.c.epoch, _EVENTS.c.sequence) > sa.tuple_(*after))
            .order_by(_EVENTS.c.surface_id, _EVENTS.c.epoch, _EVENTS.c.sequence).limit(_BATCH)).all()
        if not rows:
            return
        yield rows
        after = (rows[-1].surface_id, rows[-1].epoch, rows[-1].sequence)


def _rewrite(connection, column: str, values: list) -> None:
    """Set `column` of each (row, value)."""
    connection.execute(_EVENTS.update().where(
        _EVENTS.c.surface_id == sa.bindparam("s"), _EVENTS.c.epoch == sa.bindparam("e"),
        _EVENTS.c.sequence == sa.bindparam("q")).values({column: sa.bindparam("value")}),
        [{"s": row.surface_id, "e": row.epoch, "q": row.sequence, "value": value} for row, value in values])


def _move_event_replies(connection) -> None:
    commands = sa.table("session_commands", sa.column("session_id"), sa.column("command_id"),
                        sa.column("payload_hash"), sa.column("response"), sa.column("created_at"))
    replies = connection.execute(sa.select(commands).where(commands.c.command_id.like(_EVENT_KEYS),
                                                           commands.c.response != b"")).all()
    moved = []
    for row in replies:
        cursor = host_pb2.PublishIntentEventResponse.FromString(row.response).cursor
        moved.append({"session_id": row.session_id, "event_key": row.command_id, "request_hash": row.payload_hash,
                      "epoch": cursor.epoch, "sequence": cursor.sequence, "created_at": row.created_at})
    if moved:
        op.bulk_insert(sa.table("published_events", *(sa.column(name) for name in moved[0])), moved)
    connection.execute(commands.delete().where(commands.c.command_id.like(_EVENT_KEYS)))


def downgrade() -> None:
    connection = op.get_bind()
    published = connection.execute(sa.text(
        "SELECT session_id, event_key, request_hash, epoch, sequence, created_at FROM published_events")).all()
    if published:
        op.bulk_insert(sa.table("session_commands", sa.column("session_id"), sa.column("command_id"),
                                sa.column("payload_hash"), sa.column("response"), sa.column("created_at")), [
            {"session_id": row.session_id, "command_id": row.event_key, "payload_hash": row.request_hash,
             "response": host_pb2.PublishIntentEventResponse(cursor=host_pb2.Cursor(
                 epoch=row.epoch, sequence=row.sequence)).SerializeToString(), "created_at": row.created_at}
            for row in published])
    op.drop_table("published_events")
    # Envelopes written since the upgrade lack their place, and the code before it sends them as stored.
    _place_envelopes(connection)
    with op.batch_alter_table("surface_events") as batch:
        batch.drop_column("snapshot_key")


def _place_envelopes(connection) -> None:
    for rows in _pages(connection):
        _rewrite(connection, "envelope", [(row, _placed(row)) for row in rows])


def _placed(row) -> bytes:
    envelope = host_pb2.SurfaceEnvelope.FromString(row.envelope)
    envelope.epoch, envelope.sequence, envelope.revision_id = row.epoch, row.sequence, row.revision_id or ""
    return envelope.SerializeToString()
