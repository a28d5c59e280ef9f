"""The client's decision id and a digest of what it decided, stored with the decision itself, so a retried
Decide (same id, same content) answers with the first outcome instead of deciding (or running) again.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        # Null for approvals decided without an id (or not decided): those are never replayed.
        batch.add_column(sa.Column("decision_id", sa.String(128), nullable=True))
        # SHA-256 over the decision's content (approve/reject, entries, reason, arguments hash): a reused id
        # with other content is a conflict, never a replay.
        batch.add_column(sa.Column("decision_digest", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("decision_digest")
        batch.drop_column("decision_id")
