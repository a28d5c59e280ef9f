"""People's web sessions as records, so signing out (or the operator's `tessera persons sign-out`) ends a
session on every web replica: the secret the cookie carries is kept only as its SHA-256.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        # Only the cookie secret's SHA-256: the database never holds a usable session.
        sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(128), nullable=False),
        sa.Column("signed_in_with", sa.String(16), nullable=False),  # "link" or "oidc"
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("revoked_at", sa.Float, nullable=True),
    )
    op.create_index("web_sessions_by_person", "web_sessions", ["tenant_id", "actor_id"])
    op.create_index("web_sessions_by_expiry", "web_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("web_sessions_by_expiry", "web_sessions")
    op.drop_index("web_sessions_by_person", "web_sessions")
    op.drop_table("web_sessions")
