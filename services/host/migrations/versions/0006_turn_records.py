"""A conversation the person can come back to: how each turn ended, and what each revision was shown with.

- turns: the agent's record of how the turn ended (FinishTurn): outcome, its words, the questions it offered,
  the earlier turn it refines, when. Empty for turns begun before, and for turns whose agent went away.
- revisions.a2ui_messages: the A2UI messages a revision was shown with (no rows), so an earlier answer can be
  drawn again after its journal entries were compacted away. Empty for revisions committed before.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("outcome", sa.Integer, nullable=True))
        batch.add_column(sa.Column("answer", sa.Text, nullable=True))
        batch.add_column(sa.Column("suggested", sa.Text, nullable=True))
        batch.add_column(sa.Column("follows_turn_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("finished_at", sa.Float, nullable=True))
    with op.batch_alter_table("revisions") as batch:
        batch.add_column(sa.Column("a2ui_messages", sa.Text, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("revisions") as batch:
        batch.drop_column("a2ui_messages")
    with op.batch_alter_table("turns") as batch:
        for column in ("finished_at", "follows_turn_id", "suggested", "answer", "outcome"):
            batch.drop_column(column)
