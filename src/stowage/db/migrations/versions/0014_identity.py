"""The built-in identity service's tokens: `identity_tokens`, keyed by the token's hash.

Only tokens live in the database (users, projects and assignments come from
the settings file); several API workers validate the same tokens. Expired
rows are pruned as new tokens are issued, so `expires_at` is indexed.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "identity_tokens",
        sa.Column("token_hash", _exact(64), primary_key=True),
        sa.Column("user_id", _exact(64), nullable=False),
        sa.Column("project_id", _exact(64), nullable=True),
        sa.Column("domain_id", _exact(64), nullable=True),
        sa.Column("roles", sa.String(255), nullable=False),
        sa.Column("methods", sa.String(64), nullable=False),
        sa.Column("audit_id", _exact(32), nullable=False),
        sa.Column("parent_audit_id", _exact(32), nullable=True),
        sa.Column("issued_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_identity_tokens_expires_at", "identity_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_identity_tokens_expires_at", "identity_tokens")
    op.drop_table("identity_tokens")
