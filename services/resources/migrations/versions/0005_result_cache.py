"""The result cache's index: which pinned result answers a draft, read when, reusable until when.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    op.create_table(
        "result_cache",
        # SHA-256 of the resolved draft, the catalog fingerprint, the row cap and the data's version.
        sa.Column("cache_key", sa.String(64), primary_key=True),
        sa.Column("resource_id", sa.String(40), nullable=False),  # the pinned result a reuse copies
        sa.Column("read_at", sa.Float, nullable=False),  # when the rows were read from the warehouse
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("query_fingerprint", sa.String(64), nullable=False),
        sa.Column("elapsed", sa.Float, nullable=False),  # how long the read took, as its evidence says
        sa.Column("interpretation", sa.LargeBinary, nullable=False),  # the caption, a serialized Interpretation
    )
    op.create_index("ix_result_cache_expires_at", "result_cache", ["expires_at"])


def downgrade() -> None:
    op.drop_table("result_cache")
