"""Compute flavors (with extra specs and access lists) and Image records.

Revision ID: 0003
Revises: 0002
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _exact(length: int) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


def _timestamps() -> list[sa.Column[Any]]:
    return [sa.Column("created_at", sa.DateTime, nullable=False),
            sa.Column("updated_at", sa.DateTime, nullable=True)]


def upgrade() -> None:
    op.create_table(
        "flavors",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("flavorid", _exact(255), nullable=False),
        sa.Column("name", _exact(255), nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("root_gb", sa.Integer, nullable=False),
        sa.Column("ephemeral_gb", sa.Integer, nullable=False),
        sa.Column("swap", sa.Integer, nullable=False),
        sa.Column("rxtx_factor", sa.Float, nullable=False),
        sa.Column("is_public", sa.Boolean, nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        *_timestamps(),
        sa.Column("deleted", sa.Integer, nullable=False),
        sa.UniqueConstraint("flavorid", "deleted", name="uniq_flavors_flavorid_deleted"),
        sa.UniqueConstraint("name", "deleted", name="uniq_flavors_name_deleted"))
    op.create_table(
        "flavor_extra_specs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), nullable=False),
        sa.Column("key", _exact(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("flavor_id", "key", name="uniq_flavor_extra_specs_flavor_key"))
    op.create_table(
        "flavor_projects",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), nullable=False),
        sa.Column("project_id", _exact(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("flavor_id", "project_id",
                            name="uniq_flavor_projects_flavor_project"))
    op.create_table(
        "images",
        sa.Column("id", _exact(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("status", sa.String(30), nullable=False),
        sa.Column("visibility", sa.String(20), nullable=False),
        sa.Column("owner", _exact(255), nullable=True),
        sa.Column("min_disk", sa.Integer, nullable=False),
        sa.Column("min_ram", sa.Integer, nullable=False),
        sa.Column("disk_format", sa.String(30), nullable=True),
        sa.Column("container_format", sa.String(30), nullable=True),
        sa.Column("size", sa.BigInteger, nullable=True),
        sa.Column("protected", sa.Boolean, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("properties", sa.JSON, nullable=False),
        *_timestamps())


def downgrade() -> None:
    for name in ("images", "flavor_projects", "flavor_extra_specs", "flavors"):
        op.drop_table(name)
