"""A turn's stop requested from any agent replica: CancelTurn reaches whichever replica runs it.

- turns.cancel_requested_at: when someone asked the running turn to stop (RequestTurnCancel); the replica
  running it reads it (CancelledTurns) and stops the turn.
- turns.seen_at: the last time a replica named the turn among those it runs (CancelledTurns): a stop asked for
  a turn no replica reports is answered at once (its agent went away, or it is an outside agent's turn).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("cancel_requested_at", sa.Float, nullable=True))
        batch.add_column(sa.Column("seen_at", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("seen_at")
        batch.drop_column("cancel_requested_at")
