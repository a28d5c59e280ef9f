"""What replicas must share besides results: probe budgets per turn and revoked grants.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.create_table(
        "probe_budgets",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("turn_id", sa.String(128), primary_key=True),
        sa.Column("used", sa.Integer, nullable=False),
        # Last spend: turns idle longer than the budget's lifetime are swept.
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_probe_budgets_updated_at", "probe_budgets", ["updated_at"])
    op.create_table(
        "revoked_grants",
        sa.Column("grant_id", sa.Text, primary_key=True),
        # The grant's own expiry: after it the grant is refused anyway, so the row can go.
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("ix_revoked_grants_expires_at", "revoked_grants", ["expires_at"])


def downgrade() -> None:
    op.drop_table("revoked_grants")
    op.drop_table("probe_budgets")
