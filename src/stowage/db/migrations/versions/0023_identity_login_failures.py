"""`identity_login_failures`: failed password logins per user, for the lockout.

`[identity] lockout_failure_attempts` locks a user out after that many
wrong passwords in a row, as Keystone's `[security_compliance]` does; every
API worker must count the same failures, so they live in the database, one
row per user with failures (the settings file's users included, hence no
foreign key). A successful login deletes the row.

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "identity_login_failures",
        sa.Column("user_id", _exact(64), primary_key=True),
        sa.Column("failed_count", sa.Integer, nullable=False),
        sa.Column("failed_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("identity_login_failures")
