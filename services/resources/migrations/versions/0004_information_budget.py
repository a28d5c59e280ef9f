"""The information budget: analyses per session, the searched variants of each draft shape a session asked, and
the audit of refused analyses.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "session_budgets",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("used", sa.Integer, nullable=False),
        # First spend: the budget is renewed this long after it began (a session may last for days).
        sa.Column("started_at", sa.Float, nullable=False),
    )
    op.create_index("ix_session_budgets_started_at", "session_budgets", ["started_at"])
    op.create_table(
        "shape_variants",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("shape", sa.String(64), primary_key=True),  # SHA-256 of the literal-free shape
        sa.Column("variant", sa.String(64), primary_key=True),  # SHA-256 of its searched literals
        sa.Column("first_at", sa.Float, nullable=False),
    )
    op.create_index("ix_shape_variants_first_at", "shape_variants", ["first_at"])
    op.create_table(
        "analysis_refusals",
        sa.Column("refusal_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("refused_at", sa.Float, nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("turn_id", sa.String(128), nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),  # ANALYSIS_BUDGET_SPENT, ORACLE_PATTERN
        sa.Column("budget", sa.String(16), nullable=False),  # turn, session, shape, searches
        sa.Column("shape", sa.String(64), nullable=False),
        sa.Column("count", sa.Integer, nullable=False),  # units or variants used when refused
        sa.Column("bound", sa.Integer, nullable=False),
    )
    op.create_index("ix_analysis_refusals_session", "analysis_refusals", ["session_id", "refused_at"])
    op.create_index("ix_analysis_refusals_refused_at", "analysis_refusals", ["refused_at"])


def downgrade() -> None:
    op.drop_table("analysis_refusals")
    op.drop_table("shape_variants")
    op.drop_table("session_budgets")
