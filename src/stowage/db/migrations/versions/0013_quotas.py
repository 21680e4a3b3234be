"""Quota limits: `quotas` (a project's or one of its users') and `quota_classes`.

One row per owner and resource; the unique constraints make two admins
setting the same limit at once update one row rather than add two.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "quotas",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("user_id", _exact(255), nullable=False),
        sa.Column("resource", _exact(255), nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("project_id", "user_id", "resource",
                            name="uniq_quotas_owner_resource"),
    )
    op.create_table(
        "quota_classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("class_name", _exact(255), nullable=False),
        sa.Column("resource", _exact(255), nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("class_name", "resource", name="uniq_quota_classes_class_resource"),
    )


def downgrade() -> None:
    op.drop_table("quota_classes")
    op.drop_table("quotas")
