"""Cells v2 mappings in the API database: cells, hosts, instances.

`cell_mappings` names each cell and the database URL its records live in
(`@api` when a cell shares the API database); `host_mappings` says which cell
a compute host belongs to, `instance_mappings` which cell holds a server. The
service fills them when it starts (compute/cells.py `bootstrap`): an existing
deployment's hosts and servers are mapped to a `cell1` on the API database
itself, so nothing moves. See docs/cells.md.

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    """Compared byte for byte on MySQL too (host names and uuids are case-sensitive)."""
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "cell_mappings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", _exact(36), nullable=False, unique=True),
        sa.Column("name", _exact(255), nullable=False, unique=True),
        sa.Column("database_connection", sa.Text, nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    )
    op.create_table(
        "host_mappings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("host", _exact(255), nullable=False, unique=True),
        sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "instance_mappings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("instance_uuid", _exact(36), nullable=False, unique=True),
        sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=True),
        sa.Column("project_id", sa.String(255), nullable=False, index=True),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("instance_mappings")
    op.drop_table("host_mappings")
    op.drop_table("cell_mappings")
