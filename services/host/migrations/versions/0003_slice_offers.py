"""Slices keep the signed resource offers they were frozen with, so a commit can check them again.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    with op.batch_alter_table("slices") as batch:
        batch.add_column(sa.Column("offers", sa.LargeBinary, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("slices") as batch:
        batch.drop_column("offers")
