"""When a running turn was last reported by the agent replica running it: a stop asked for a turn no replica
reports is answered at once (its agent went away, or the turn is an outside agent's), not waited for.

- turns.seen_at: the last time a replica named the turn among those it runs (CancelledTurns).

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("seen_at", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("seen_at")
