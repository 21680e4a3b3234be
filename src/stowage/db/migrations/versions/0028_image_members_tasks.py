"""Image members and tasks: `image_members` (who a shared image is offered to, and
their answer) and `image_tasks` (Glance's record of each image import).

Revision ID: 0028
Revises: 0027
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "image_members",
        sa.Column("image_id", _exact(36), primary_key=True),
        sa.Column("member", _exact(255), primary_key=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "image_tasks",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("type", sa.String(30), nullable=False),
        sa.Column("status", sa.String(30), nullable=False),
        sa.Column("owner", _exact(255), nullable=True),
        sa.Column("image_id", _exact(36), nullable=True),
        sa.Column("request_id", sa.String(64), nullable=True),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("input", sa.JSON, nullable=False),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_image_tasks_image_id", "image_tasks", ["image_id"])


def downgrade() -> None:
    op.drop_index("ix_image_tasks_image_id", table_name="image_tasks")
    op.drop_table("image_tasks")
    op.drop_table("image_members")
