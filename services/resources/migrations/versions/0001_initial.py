"""Pinned results: the gateway's schema as `create_all` made it before migrations.

A store created that way already holds this table (and no alembic_version): it is
adopted as revision 0001 after checking its columns, never re-created.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

COLUMNS = {"resource_id", "version_id", "content_hash", "session_id", "turn_id", "columns_json", "rows_blob",
           "row_count", "truncated", "created_at"}


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if inspector.has_table("pinned_results"):
        found = {column["name"] for column in inspector.get_columns("pinned_results")}
        if found != COLUMNS:
            raise RuntimeError(f"pinned_results exists but is not the gateway's table (columns {sorted(found)})")
        return
    op.create_table(
        "pinned_results",
        sa.Column("resource_id", sa.String(40), primary_key=True),
        sa.Column("version_id", sa.String(40), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("turn_id", sa.String(128), nullable=False),
        sa.Column("columns_json", sa.Text, nullable=False),
        # zlib-compressed canonical JSON of the rows.
        sa.Column("rows_blob", sa.LargeBinary, nullable=False),
        sa.Column("row_count", sa.Integer, nullable=False),
        sa.Column("truncated", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pinned_results")
