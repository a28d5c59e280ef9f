"""Budgets of several kinds per turn (probes, analyses): one table keyed by kind, the probe budgets moved in.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "turn_budgets",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("turn_id", sa.String(128), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("used", sa.Integer, nullable=False),
        # Last spend: turns idle longer than the budget's lifetime are swept.
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_turn_budgets_updated_at", "turn_budgets", ["updated_at"])
    op.execute("INSERT INTO turn_budgets (session_id, turn_id, kind, used, updated_at) "
               "SELECT session_id, turn_id, 'probe', used, updated_at FROM probe_budgets")
    op.drop_table("probe_budgets")


def downgrade() -> None:
    op.create_table(
        "probe_budgets",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("turn_id", sa.String(128), primary_key=True),
        sa.Column("used", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_probe_budgets_updated_at", "probe_budgets", ["updated_at"])
    op.execute("INSERT INTO probe_budgets (session_id, turn_id, used, updated_at) "
               "SELECT session_id, turn_id, used, updated_at FROM turn_budgets WHERE kind = 'probe'")
    op.drop_table("turn_budgets")
