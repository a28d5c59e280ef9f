"""External reads of each run (session), screened: taint, flags and the card's last reads.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.create_table(
        "run_reads",
        sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),  # e.g. tickets.get_ticket
        sa.Column("ref", sa.String(300), nullable=False),  # e.g. ticket_id=4821
        # The screened text exactly as the model got it (external data, never warehouse rows).
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("clipped", sa.Boolean, nullable=False),
        sa.Column("matches_json", sa.Text, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_run_reads_session", "run_reads", ["session_id", "sequence"])


def downgrade() -> None:
    op.drop_table("run_reads")
