"""The host's canonical state: sessions, turns, slices, revisions, heads, events, grants, commands.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("surface_id", sa.String(64), nullable=False, unique=True),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("actor_id", "request_id", name="uq_sessions_actor_request"),
    )
    op.create_table(
        "turns",
        sa.Column("turn_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.session_id"), nullable=False, index=True),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("session_id", "request_id", name="uq_turns_session_request"),
    )
    op.create_table(
        "slices",
        sa.Column("slice_hash", sa.String(64), primary_key=True),
        sa.Column("slice_id", sa.String(64), nullable=False),
        sa.Column("turn_id", sa.String(64), sa.ForeignKey("turns.turn_id"), nullable=False, index=True),
        sa.Column("slice_proto", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "revisions",
        sa.Column("revision_id", sa.String(64), primary_key=True),
        sa.Column("surface_id", sa.String(64), nullable=False, index=True),
        sa.Column("parent_revision_id", sa.String(64), nullable=True),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("proposal_id", sa.String(128), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("document_json", sa.Text, nullable=False),
        sa.Column("diagnostics", sa.LargeBinary, nullable=False),
        sa.Column("committed_at", sa.Float, nullable=False),
        sa.UniqueConstraint("turn_id", "proposal_id", name="uq_revisions_turn_proposal"),
    )
    op.create_table(
        "branch_heads",
        sa.Column("surface_id", sa.String(64), primary_key=True),
        sa.Column("revision_id", sa.String(64), nullable=False),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("sequence", sa.Integer, nullable=False),
    )
    op.create_table(
        "surface_events",
        sa.Column("surface_id", sa.String(64), primary_key=True),
        sa.Column("epoch", sa.Integer, primary_key=True),
        sa.Column("sequence", sa.Integer, primary_key=True),
        sa.Column("revision_id", sa.String(64), nullable=False),
        sa.Column("payload_hash", sa.String(64), nullable=False),
        sa.Column("envelope", sa.LargeBinary, nullable=False),
        sa.Column("published_at", sa.Float, nullable=False),
    )
    op.create_table(
        "grants",
        sa.Column("grant_id", sa.String(64), primary_key=True),
        sa.Column("surface_id", sa.String(64), nullable=False, index=True),
        sa.Column("node_id", sa.String(64), nullable=False),
        sa.Column("revision_id", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(64), nullable=False),
        sa.Column("token", sa.LargeBinary, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False, default=False),
    )
    op.create_table(
        "commands",
        sa.Column("command_id", sa.String(128), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("payload_hash", sa.String(64), nullable=False),
        sa.Column("response", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for table in ("commands", "grants", "surface_events", "branch_heads", "revisions", "slices", "turns", "sessions"):
        op.drop_table(table)
