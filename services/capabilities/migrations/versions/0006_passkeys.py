"""People sign their decisions: their registered passkeys, the one-time enrollment links that let them
register one, the single-use nonces a signed decision quotes, and which signature decided each approval.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    op.create_table(
        "passkeys",
        sa.Column("credential_id", sa.String(1400), primary_key=True),  # base64url of up to 1023 bytes
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("public_key", sa.LargeBinary, nullable=False),  # COSE, as the authenticator gave it
        sa.Column("sign_count", sa.BigInteger, nullable=False),
        sa.Column("aaguid", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("last_used_at", sa.Float, nullable=True),
    )
    op.create_index("passkeys_by_person", "passkeys", ["tenant_id", "actor_id"])
    op.create_table(
        "enrollments",
        # Only the link token's SHA-256 is kept: the database never holds a usable link.
        sa.Column("token_sha256", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(128), nullable=False),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("redeemed_at", sa.Float, nullable=True),
        sa.Column("enrollment_id", sa.String(64), nullable=True, unique=True),
        sa.Column("challenge", sa.LargeBinary, nullable=True),
        sa.Column("registered_at", sa.Float, nullable=True),
    )
    op.create_table(
        "decision_nonces",
        sa.Column("nonce", sa.String(64), primary_key=True),
        sa.Column("approval_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("actor_id", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("used_at", sa.Float, nullable=True),
    )
    op.create_index("decision_nonces_by_approval", "decision_nonces", ["approval_id"])
    with op.batch_alter_table("approvals") as batch:
        # "passkey:<credential id>", "operator-key:<key id>" or "unsigned" (a rejection); null until decided.
        batch.add_column(sa.Column("signed_with", sa.String(256), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("signed_with")
    op.drop_index("decision_nonces_by_approval", "decision_nonces")
    op.drop_table("decision_nonces")
    op.drop_table("enrollments")
    op.drop_index("passkeys_by_person", "passkeys")
    op.drop_table("passkeys")
