"""The lease on a running intent: which broker replica runs its effect, and until when it answers for it.

A replica renews the lease while the effect runs; a surviving replica takes up a running intent only once
its lease ran out (its replica died or lost the database), never one a live replica is still running.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    with op.batch_alter_table("intents") as batch:
        # Null for intents that never ran (and those approved before this migration: up for taking).
        batch.add_column(sa.Column("lease_owner", sa.String(64), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("intents") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("lease_owner")
