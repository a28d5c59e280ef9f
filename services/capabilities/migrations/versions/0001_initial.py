"""The broker's state: intents, approvals, the outbox of host events, and the append-only audit trail.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

_APPEND_ONLY_SQLITE = """
CREATE TRIGGER audit_events_{op}_refused BEFORE {OP} ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END
"""
_APPEND_ONLY_POSTGRES = (
    """CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'audit_events is append-only'; END $$""",
    """CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
       FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()""",
)


def upgrade() -> None:
    op.create_table(
        "intents",
        sa.Column("intent_id", sa.String(64), primary_key=True),
        # SHA-256 of (tenant, actor or "", action, input, key): a replay finds the original record.
        sa.Column("claim", sa.String(64), nullable=False, unique=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("action_id", sa.String(128), nullable=False),
        sa.Column("effect", sa.Integer, nullable=False),
        sa.Column("input_json", sa.Text, nullable=False),
        # The prepared arguments a person approves (canonical JSON) and their SHA-256.
        sa.Column("arguments_json", sa.Text, nullable=False),
        sa.Column("arguments_sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("reason", sa.String(128), nullable=False, server_default=""),
        sa.Column("result_digest", sa.String(64), nullable=False, server_default=""),
        sa.Column("approval_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("surface", sa.LargeBinary, nullable=True),
        sa.Column("dry_run", sa.Boolean, nullable=False),
        # Set in its own transaction just before the effect runs: after a crash it tells
        # "never started" (run it) from "may have run" (reconcile, never blindly repeat).
        sa.Column("attempted", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("accepted_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_intents_status", "intents", ["status"])
    op.create_table(
        "approvals",
        sa.Column("approval_id", sa.String(64), primary_key=True),
        sa.Column("intent_id", sa.String(64), sa.ForeignKey("intents.intent_id"), nullable=False, unique=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        # pending → approved | rejected | expired; each approval is decided once.
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("requested_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("decided_at", sa.Float, nullable=True),
        sa.Column("decided_by", sa.String(128), nullable=True),
        sa.Column("decision_reason", sa.Text, nullable=True),
        sa.Column("approved_entries", sa.Text, nullable=True),
    )
    op.create_index("ix_approvals_tenant_state", "approvals", ["tenant_id", "state"])
    op.create_table(
        "outbox",
        sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(64), nullable=False, unique=True),
        sa.Column("request", sa.LargeBinary, nullable=False),  # a PublishIntentEventRequest
        sa.Column("state", sa.String(16), nullable=False),  # pending | published | dropped
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_error", sa.String(300), nullable=True),
    )
    op.create_index("ix_outbox_state", "outbox", ["state"])
    op.create_table(
        "audit_events",
        sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("intent_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("approval_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("actor_id", sa.String(128), nullable=False, server_default=""),
        sa.Column("detail_json", sa.Text, nullable=False),
    )
    op.create_index("ix_audit_events_tenant", "audit_events", ["tenant_id", "sequence"])
    if op.get_context().dialect.name == "postgresql":
        for statement in _APPEND_ONLY_POSTGRES:
            op.execute(statement)
    else:
        for name in ("update", "delete"):
            op.execute(_APPEND_ONLY_SQLITE.format(op=name, OP=name.upper()))


def downgrade() -> None:
    op.drop_table("audit_events")
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP FUNCTION audit_events_append_only()")
    op.drop_table("outbox")
    op.drop_table("approvals")
    op.drop_table("intents")
