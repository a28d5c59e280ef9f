"""Scope idempotency keys and slices correctly.

- sessions: a retry key is unique per (actor, tenant), not per actor across tenants;
- slices: the same slice hash may be frozen by many turns (frozen_slices, keyed by turn and hash);
- commands: command ids are unique per session (session_commands);
- revisions: remember the hash of the request that created them, to tell a replay from a reuse.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:  # SQLite: table copy; PostgreSQL: ALTER TABLE
        batch.drop_constraint("uq_sessions_actor_request", type_="unique")
        batch.create_unique_constraint("uq_sessions_actor_tenant_request", ["actor_id", "tenant_id", "request_id"])
    op.create_table(
        "frozen_slices",
        sa.Column("turn_id", sa.String(64), sa.ForeignKey("turns.turn_id"), primary_key=True),
        sa.Column("slice_hash", sa.String(64), primary_key=True),
        sa.Column("slice_id", sa.String(64), nullable=False),
        sa.Column("slice_proto", sa.LargeBinary, nullable=False),
        sa.Column("offers", sa.LargeBinary, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.execute("INSERT INTO frozen_slices (turn_id, slice_hash, slice_id, slice_proto, offers, created_at) "
               "SELECT turn_id, slice_hash, slice_id, slice_proto, offers, created_at FROM slices")
    op.drop_table("slices")
    op.create_table(
        "session_commands",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("command_id", sa.String(128), primary_key=True),
        sa.Column("payload_hash", sa.String(64), nullable=False),
        sa.Column("response", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.execute("INSERT INTO session_commands (session_id, command_id, payload_hash, response, created_at) "
               "SELECT session_id, command_id, payload_hash, response, created_at FROM commands")
    op.drop_table("commands")
    with op.batch_alter_table("revisions") as batch:
        batch.add_column(sa.Column("request_hash", sa.String(64), nullable=False, server_default=""))


def downgrade() -> None:
    raise NotImplementedError("0004 is not reversible: keys were widened")
