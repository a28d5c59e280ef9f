"""Revisions remember their slice and their resolved bindings, so commands can grant windows.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    with op.batch_alter_table("revisions") as batch:
        batch.add_column(sa.Column("slice_hash", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("bindings", sa.Text, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("revisions") as batch:
        batch.drop_column("bindings")
        batch.drop_column("slice_hash")
