"""The broker's store keeps plain values, and remembers cancelled turns.

- intents.surface_json: where an intent was asked for, as JSON (before: a serialised SurfaceRef). Rows
  there are converted; a surface without a surface id (which never had events) becomes none.
- outbox.event_json and outbox.intent_id: an event's body as plain values, made into the host's message
  when it is sent (before: the serialised PublishIntentEventRequest, built inside the transaction). Rows
  queued before this keep their `request` and are sent as they are.
- cancelled_turns: a turn cancelled by its agent; a request of it arriving afterwards is refused instead of
  waiting for a person who will never see it.

Revision ID: 0007
Revises: 0006
"""

import json

import sqlalchemy as sa
from alembic import op

from services.capabilities.messages import publish_request
from services.capabilities.store import OutboxEvent
from tessera.capabilities.v1 import capabilities_pb2

revision = "0007"
down_revision = "0006"
_BATCH = 500
_SURFACE_FIELDS = ("surface_id", "revision_id", "node_id", "command_id")
_INTENTS = sa.table("intents", sa.column("intent_id"), sa.column("surface"), sa.column("surface_json"))
_OUTBOX = sa.table("outbox", sa.column("sequence"), sa.column("event_id"), sa.column("request"),
                   sa.column("event_json"))


def upgrade() -> None:
    with op.batch_alter_table("intents") as batch:
        batch.add_column(sa.Column("surface_json", sa.Text, nullable=True))
    connection = op.get_bind()
    _rewrite_surfaces(connection, "surface", "surface_json", _surface_json)
    with op.batch_alter_table("intents") as batch:
        batch.drop_column("surface")
    with op.batch_alter_table("outbox") as batch:
        batch.alter_column("request", existing_type=sa.LargeBinary, nullable=True)
        batch.add_column(sa.Column("intent_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("event_json", sa.Text, nullable=True))
    op.create_table(
        "cancelled_turns",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("actor_id", sa.String(128), primary_key=True),
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("turn_id", sa.String(64), primary_key=True),
        sa.Column("cancelled_at", sa.Float, nullable=False),
    )
    op.create_index("ix_cancelled_turns_at", "cancelled_turns", ["cancelled_at"])


def downgrade() -> None:
    connection = op.get_bind()
    op.drop_table("cancelled_turns")
    # The code before this sends `request` as stored: events queued since get theirs made now.
    for row in connection.execute(sa.select(_OUTBOX).where(_OUTBOX.c.event_json.is_not(None))).all():
        request = publish_request(OutboxEvent(row.sequence, row.event_id, json.loads(row.event_json)))
        connection.execute(_OUTBOX.update().where(_OUTBOX.c.sequence == row.sequence).values(
            request=request.SerializeToString()))
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("event_json")
        batch.drop_column("intent_id")
        batch.alter_column("request", existing_type=sa.LargeBinary, nullable=False)
    with op.batch_alter_table("intents") as batch:
        batch.add_column(sa.Column("surface", sa.LargeBinary, nullable=True))
    _rewrite_surfaces(connection, "surface_json", "surface", _surface_bytes)
    with op.batch_alter_table("intents") as batch:
        batch.drop_column("surface_json")


def _rewrite_surfaces(connection, source: str, target: str, convert) -> None:
    """Set `target` from `source` on every intent that has one, _BATCH rows at a time in id order."""
    after = ""
    while True:
        rows = connection.execute(sa.select(_INTENTS.c.intent_id, _INTENTS.c[source]).where(
            _INTENTS.c[source].is_not(None), _INTENTS.c.intent_id > after)
            .order_by(_INTENTS.c.intent_id).limit(_BATCH)).all()
        if not rows:
            return
        connection.execute(_INTENTS.update().where(_INTENTS.c.intent_id == sa.bindparam("id")).values(
            {target: sa.bindparam("value")}), [{"id": row[0], "value": convert(row[1])} for row in rows])
        after = rows[-1][0]


def _surface_json(stored: bytes) -> str | None:
    surface = capabilities_pb2.SurfaceRef.FromString(stored)
    if not surface.surface_id:
        return None
    return json.dumps({name: getattr(surface, name) for name in _SURFACE_FIELDS}, sort_keys=True)


def _surface_bytes(stored: str) -> bytes:
    return capabilities_pb2.SurfaceRef(**json.loads(stored)).SerializeToString()
