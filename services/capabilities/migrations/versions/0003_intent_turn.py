"""The turn an intent was asked for in, so cancelling a turn can cancel its pending requests.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    with op.batch_alter_table("intents") as batch:
        batch.add_column(sa.Column("turn_id", sa.String(64), nullable=False, server_default=""))
    op.create_index("ix_intents_turn", "intents", ["session_id", "turn_id"])


def downgrade() -> None:
    op.drop_index("ix_intents_turn", "intents")
    with op.batch_alter_table("intents") as batch:
        batch.drop_column("turn_id")
